//! ControllerRef helpers and the claim (adopt / release) every workload controller runs over
//! the objects its selector matches, as upstream's `ControllerRefManager`.

use anyhow::Context as _;
use api_types::labels::Selector;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

/// The ownerReference with `controller: true`, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// The controller ownerReference pointing at `owner` (controller and blockOwnerDeletion set).
pub fn new_controller_ref(owner: &ObjectMeta, api_version: &str, kind: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// An ObjectReference to `meta` (what events are recorded about).
pub fn object_reference(meta: &ObjectMeta, api_version: &str, kind: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// The owner in a claim.
#[derive(Debug, Clone, Copy)]
pub struct ClaimOwner<'a> {
    pub meta: &'a ObjectMeta,
    pub api_version: &'a str,
    pub kind: &'a str,
}

/// What the claim decides for one candidate (pure, so it is testable without a server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimAction {
    /// Ours and still matching.
    Keep,
    /// An orphan that matches: adopt it.
    Adopt,
    /// Ours but no longer matching: release it.
    Release,
    /// Controlled by someone else, or not ours and not adoptable.
    Ignore,
}

/// Decides what to do with `obj` for `owner` and its `selector`.
pub fn claim_action(owner: &ObjectMeta, selector: &Selector, obj: &ObjectMeta) -> ClaimAction {
    let empty = BTreeMap::new();
    let matches = selector.matches(obj.labels.as_ref().unwrap_or(&empty));
    let owner_deleting = owner.deletion_timestamp.is_some();
    match controller_of(obj) {
        Some(r) if Some(&r.uid) == owner.uid.as_ref() => {
            if matches {
                ClaimAction::Keep
            } else if owner_deleting {
                // A controller being deleted keeps what it has: the garbage collector cleans up.
                ClaimAction::Ignore
            } else {
                ClaimAction::Release
            }
        }
        Some(_) => ClaimAction::Ignore,
        None => {
            if !matches || owner_deleting || obj.deletion_timestamp.is_some() {
                ClaimAction::Ignore
            } else {
                ClaimAction::Adopt
            }
        }
    }
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

fn is_unprocessable_or_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 422 || s.code == 409)
}

/// Claims the objects of `candidates` for `owner`: keeps its matching objects, adopts
/// matching orphans (strategic merge patch adding the controller ownerReference, with the
/// object's uid as precondition), releases its objects that no longer match (patch removing
/// the ownerReference), and ignores objects controlled by others. `can_adopt` runs at most
/// once, before the first adoption: upstream re-reads the owner live there so a controller
/// that was deleted (or replaced under the same name) adopts nothing. Returns the claimed
/// objects; an error if any adoption or release failed (after trying all of them).
pub async fn claim_objects<K, F, Fut>(
    api: &Api<K>,
    owner: ClaimOwner<'_>,
    selector: &Selector,
    candidates: Vec<Arc<K>>,
    can_adopt: F,
) -> anyhow::Result<Vec<Arc<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    F: FnOnce() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut claimed = Vec::with_capacity(candidates.len());
    let mut errors: Vec<anyhow::Error> = Vec::new();
    let mut can_adopt = Some(can_adopt);
    let mut adopt_verdict: Option<Result<(), String>> = None;
    let owner_uid = owner.meta.uid.clone().unwrap_or_default();
    for obj in candidates {
        let meta = obj.meta();
        let name = meta.name.clone().unwrap_or_default();
        match claim_action(owner.meta, selector, meta) {
            ClaimAction::Keep => claimed.push(obj),
            ClaimAction::Ignore => {}
            ClaimAction::Release => {
                let patch = json!({"metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
                    "uid": meta.uid,
                }});
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(_) => {}
                    // Gone, or its uid changed (a new object under the same name): nothing
                    // of ours to release.
                    Err(e) if is_not_found(&e) || is_unprocessable_or_conflict(&e) => {}
                    Err(e) => {
                        errors.push(anyhow::Error::new(e).context(format!("releasing {name}")))
                    }
                }
            }
            ClaimAction::Adopt => {
                if adopt_verdict.is_none() {
                    let check = can_adopt.take().map(|f| f());
                    adopt_verdict = Some(match check {
                        Some(fut) => fut.await.map_err(|e| format!("{e:#}")),
                        None => Ok(()),
                    });
                }
                if let Some(Err(why)) = &adopt_verdict {
                    errors.push(anyhow::anyhow!("cannot adopt {name}: {why}"));
                    continue;
                }
                let reference = new_controller_ref(owner.meta, owner.api_version, owner.kind);
                let patch = json!({"metadata": {
                    "ownerReferences": [reference],
                    "uid": meta.uid,
                }});
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(adopted) => claimed.push(Arc::new(adopted)),
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        errors.push(anyhow::Error::new(e).context(format!("adopting {name}")))
                    }
                }
            }
        }
    }
    match errors.into_iter().next() {
        None => Ok(claimed),
        Some(first) => Err(first).context("claiming objects"),
    }
}

/// The `can_adopt` check upstream uses: read the owner live (not from the cache) and refuse
/// when it is gone, is another object of the same name, or is being deleted.
pub async fn recheck_owner<O>(api: &Api<O>, name: &str, uid: Option<&str>) -> anyhow::Result<()>
where
    O: Resource + Clone + DeserializeOwned + Debug,
{
    let fresh = api
        .get(name)
        .await
        .with_context(|| format!("re-reading owner {name}"))?;
    if fresh.meta().uid.as_deref() != uid {
        anyhow::bail!("original {name} is gone: got uid {:?}", fresh.meta().uid);
    }
    if fresh.meta().deletion_timestamp.is_some() {
        anyhow::bail!("{name} has just been deleted");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn meta(
        uid: &str,
        labels: &[(&str, &str)],
        controller: Option<&str>,
        deleting: bool,
    ) -> ObjectMeta {
        ObjectMeta {
            name: Some(format!("obj-{uid}")),
            uid: Some(uid.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            owner_references: controller.map(|c| {
                vec![OwnerReference {
                    uid: c.into(),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            deletion_timestamp: deleting.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
            ..Default::default()
        }
    }

    #[test]
    fn claim_actions() {
        let selector = Selector::parse("app=web").unwrap_or_else(|_| Selector::nothing());
        let owner = meta("rs", &[], None, false);
        let deleting_owner = meta("rs", &[], None, true);
        let cases = [
            (
                "ours, matching",
                &owner,
                meta("p", &[("app", "web")], Some("rs"), false),
                ClaimAction::Keep,
            ),
            (
                "ours, not matching",
                &owner,
                meta("p", &[("app", "db")], Some("rs"), false),
                ClaimAction::Release,
            ),
            (
                "ours, not matching, owner deleting",
                &deleting_owner,
                meta("p", &[("app", "db")], Some("rs"), false),
                ClaimAction::Ignore,
            ),
            (
                "other controller",
                &owner,
                meta("p", &[("app", "web")], Some("other"), false),
                ClaimAction::Ignore,
            ),
            (
                "orphan, matching",
                &owner,
                meta("p", &[("app", "web")], None, false),
                ClaimAction::Adopt,
            ),
            (
                "orphan, not matching",
                &owner,
                meta("p", &[("app", "db")], None, false),
                ClaimAction::Ignore,
            ),
            (
                "orphan being deleted",
                &owner,
                meta("p", &[("app", "web")], None, true),
                ClaimAction::Ignore,
            ),
            (
                "orphan, owner deleting",
                &deleting_owner,
                meta("p", &[("app", "web")], None, false),
                ClaimAction::Ignore,
            ),
        ];
        for (what, owner, obj, want) in cases {
            assert_eq!(claim_action(owner, &selector, &obj), want, "{what}");
        }
    }

    #[test]
    fn controller_ref_fields() {
        let owner = ObjectMeta {
            name: Some("web".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        let r = new_controller_ref(&owner, "apps/v1", "ReplicaSet");
        assert_eq!(
            (r.name.as_str(), r.uid.as_str(), r.kind.as_str()),
            ("web", "u1", "ReplicaSet")
        );
        assert_eq!(
            (r.controller, r.block_owner_deletion),
            (Some(true), Some(true))
        );
        let mut obj = ObjectMeta::default();
        assert!(controller_of(&obj).is_none());
        obj.owner_references = Some(vec![
            OwnerReference {
                uid: "x".into(),
                ..Default::default()
            },
            r.clone(),
        ]);
        assert_eq!(controller_of(&obj), Some(&r));
    }
}
