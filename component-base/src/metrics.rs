//! The process-wide Prometheus registry behind the `metrics` facade, rendered at `/metrics`.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the global recorder on first use and returns the handle that renders it.
///
/// If another recorder was installed first (a test harness, say), the handle still renders,
/// it only sees nothing recorded through the facade.
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_ok() {
            record_build_info();
        }
        handle
    })
}

/// Upstream's `kubernetes_build_info` gauge, which dashboards use to tell versions apart.
fn record_build_info() {
    let info = crate::version::info();
    metrics::gauge!(
        "kubernetes_build_info",
        "major" => info.major,
        "minor" => info.minor,
        "git_version" => info.git_version,
        "git_commit" => info.git_commit,
        "platform" => info.platform,
    )
    .set(1.0);
}

/// The Prometheus text exposition of every metric recorded so far.
pub fn render() -> String {
    handle().render()
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_recorded_metrics() {
        super::handle();
        metrics::counter!("component_base_test_total", "kind" => "x").increment(3);
        let text = super::render();
        assert!(
            text.contains("component_base_test_total{kind=\"x\"} 3"),
            "{text}"
        );
        assert!(text.contains("kubernetes_build_info{"), "{text}");
    }
}
