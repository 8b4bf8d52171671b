//! The process-wide Prometheus registry behind the `metrics` facade, rendered at `/metrics`.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Buckets of every `*_seconds` metric, upstream's for request latencies: durations are
/// histograms (aggregatable across instances), not summaries.
const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Installs the global recorder on first use and returns the handle that renders it.
///
/// If another recorder was installed first (a test harness, say), the handle still renders,
/// it only sees nothing recorded through the facade.
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            .map(|builder| builder.build_recorder())
            .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder());
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
        metrics::histogram!("component_base_test_duration_seconds").record(0.3);
        let text = super::render();
        assert!(
            text.contains("component_base_test_total{kind=\"x\"} 3"),
            "{text}"
        );
        assert!(text.contains("kubernetes_build_info{"), "{text}");
        assert!(
            text.contains("component_base_test_duration_seconds_bucket{le=\"0.4\"} 1"),
            "{text}"
        );
    }
}
