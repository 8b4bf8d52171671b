//! `/stats/summary` in the shape of upstream's `stats/v1alpha1.Summary` (node CPU, memory,
//! network, file systems and processes; per pod and container CPU and memory from their
//! cgroups, ephemeral storage and logs from their directories), and `/metrics/resource`.

pub mod cgroup;
pub mod proc;
mod resource_metrics;
mod summary;

pub use resource_metrics::render as resource_metrics;
pub use summary::{CpuSampler, Summary, summarize};

use super::host::HostInterface;
use super::http::{Body, json, with_type};
use http::{Response, StatusCode};
use std::sync::Arc;

pub async fn serve_summary(
    host: &Arc<dyn HostInterface>,
    sampler: &Arc<CpuSampler>,
) -> Response<Body> {
    json(&summarize(host, sampler).await)
}

pub async fn serve_resource_metrics(
    host: &Arc<dyn HostInterface>,
    sampler: &Arc<CpuSampler>,
) -> Response<Body> {
    let summary = summarize(host, sampler).await;
    with_type(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        super::http::full(resource_metrics(&summary)),
    )
}
