//! Carries out a [`Plan`]: creates first, then updates, then deletes (so endpoints moving
//! between slices are never absent), recording every write in the tracker.

use super::reconcile::Plan;
use super::tracker::Tracker;
use crate::controller::endpoint::pods::TRIGGER_TIME_ANNOTATION;
use anyhow::Context as _;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};

pub async fn apply(
    api: &Api<EndpointSlice>,
    tracker: &Tracker,
    service_key: &str,
    plan: Plan,
    trigger_time: Option<&str>,
) -> anyhow::Result<()> {
    let stamp = |slice: &mut EndpointSlice| {
        let annotations = slice.metadata.annotations.get_or_insert_default();
        match trigger_time {
            Some(t) => {
                annotations.insert(TRIGGER_TIME_ANNOTATION.into(), t.to_string());
            }
            None => {
                annotations.remove(TRIGGER_TIME_ANNOTATION);
            }
        }
    };
    for mut slice in plan.create {
        stamp(&mut slice);
        let created = api
            .create(&PostParams::default(), &slice)
            .await
            .with_context(|| format!("creating an EndpointSlice for {service_key}"))?;
        tracker.written(service_key, &created);
    }
    for mut slice in plan.update {
        stamp(&mut slice);
        let name = slice.metadata.name.clone().unwrap_or_default();
        let updated = api
            .replace(&name, &PostParams::default(), &slice)
            .await
            .with_context(|| format!("updating EndpointSlice {name} of {service_key}"))?;
        tracker.written(service_key, &updated);
    }
    for slice in plan.delete {
        let name = slice.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracker.deleted(service_key, &slice),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("deleting EndpointSlice {name} of {service_key}"));
            }
        }
    }
    Ok(())
}
