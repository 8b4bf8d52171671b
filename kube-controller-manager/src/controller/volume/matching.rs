//! Which PersistentVolume a claim binds to (upstream's `findBestMatchForClaim`): pure, so the
//! rules are tested without a server.

use api_types::labels::Selector;
use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use std::collections::BTreeSet;
use std::sync::Arc;

pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const ANN_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

pub fn has_annotation(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> bool {
    annotation(meta, key).is_some()
}

/// The claim's class; the beta annotation wins as upstream's `GetPersistentVolumeClaimClass`.
pub fn claim_class(pvc: &PersistentVolumeClaim) -> String {
    if let Some(c) = annotation(&pvc.metadata, ANN_CLASS) {
        return c.to_string();
    }
    pvc.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .unwrap_or_default()
}

pub fn volume_class(pv: &PersistentVolume) -> String {
    if let Some(c) = annotation(&pv.metadata, ANN_CLASS) {
        return c.to_string();
    }
    pv.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .unwrap_or_default()
}

pub fn volume_phase(pv: &PersistentVolume) -> &str {
    pv.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn claim_phase(pvc: &PersistentVolumeClaim) -> &str {
    pvc.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn claim_volume_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or("")
}

/// Whether the volume's claimRef names this claim (an empty uid is a pre-binding by name).
pub fn is_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name.as_deref() != pvc.metadata.name.as_deref()
        || r.namespace.as_deref().unwrap_or("") != pvc.metadata.namespace.as_deref().unwrap_or("")
    {
        return false;
    }
    match r.uid.as_deref() {
        None | Some("") => true,
        uid => uid == pvc.metadata.uid.as_deref(),
    }
}

fn requested_storage(pvc: &PersistentVolumeClaim) -> Quantity {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0))
        .unwrap_or_else(|| Quantity::from_int(0))
}

fn capacity(pv: &PersistentVolume) -> Option<Quantity> {
    pv.spec
        .as_ref()?
        .capacity
        .as_ref()?
        .get("storage")
        .and_then(|q| Quantity::parse(&q.0))
}

fn claim_modes(pvc: &PersistentVolumeClaim) -> BTreeSet<String> {
    pvc.spec
        .as_ref()
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_default()
        .into_iter()
        .collect()
}

fn volume_modes(pv: &PersistentVolume) -> BTreeSet<String> {
    pv.spec
        .as_ref()
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Filesystem is the default on both sides.
pub fn volume_mode_mismatch(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let claim = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let volume = pv
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    claim != volume
}

/// Why a volume the user asked for by name cannot serve the claim (upstream's
/// `checkVolumeSatisfyClaim`), or None when it can.
pub fn check_volume_satisfies_claim(
    pv: &PersistentVolume,
    pvc: &PersistentVolumeClaim,
) -> Option<String> {
    let requested = requested_storage(pvc);
    let have = capacity(pv).unwrap_or_else(|| Quantity::from_int(0));
    if have < requested {
        return Some("requested PV is too small".to_string());
    }
    if volume_class(pv) != claim_class(pvc) {
        return Some("storageClassName does not match".to_string());
    }
    if volume_mode_mismatch(pv, pvc) {
        return Some("incompatible volumeMode".to_string());
    }
    if !claim_modes(pvc).is_subset(&volume_modes(pv)) {
        return Some("incompatible accessMode".to_string());
    }
    None
}

/// The volume for `pvc` among `volumes`: one pre-bound to it wins, otherwise the smallest
/// Available one that fits, looking first at volumes with the fewest access modes that still
/// cover the claim's (upstream's access-mode index). With `delay_binding` only pre-bound
/// volumes are taken: the scheduler picks the others.
pub fn find_best_match(
    pvc: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    delay_binding: bool,
) -> Option<Arc<PersistentVolume>> {
    let wanted = claim_modes(pvc);
    let mut groups: Vec<BTreeSet<String>> = volumes
        .iter()
        .map(|v| volume_modes(v))
        .filter(|m| wanted.is_subset(m))
        .collect();
    groups.sort_by_key(|m| (m.len(), m.iter().cloned().collect::<Vec<_>>()));
    groups.dedup();
    let requested = requested_storage(pvc);
    let class = claim_class(pvc);
    let selector = match pvc.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(ls) => match Selector::from_label_selector(Some(ls)) {
            Ok(s) => Some(s),
            // A selector that cannot be parsed matches no volume, as upstream.
            Err(_) => return None,
        },
    };
    for group in groups {
        let mut best: Option<(&Arc<PersistentVolume>, Quantity)> = None;
        for pv in volumes.iter().filter(|v| volume_modes(v) == group) {
            if volume_mode_mismatch(pv, pvc) || pv.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if is_bound_to_claim(pv, pvc) {
                return Some(pv.clone());
            }
            if delay_binding {
                continue;
            }
            if volume_phase(pv) != "Available"
                || pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some())
            {
                continue;
            }
            if let Some(sel) = &selector {
                let labels = pv.metadata.labels.clone().unwrap_or_default();
                if !sel.matches(&labels) {
                    continue;
                }
            }
            if volume_class(pv) != class {
                continue;
            }
            let Some(size) = capacity(pv) else { continue };
            if size >= requested && best.as_ref().is_none_or(|(_, b)| *b > size) {
                best = Some((pv, size));
            }
        }
        if let Some((pv, _)) = best {
            return Some(pv.clone());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(
        name: &str,
        size: &str,
        modes: &[&str],
        extra: serde_json::Value,
    ) -> Arc<PersistentVolume> {
        let mut v = json!({
            "metadata": {"name": name, "labels": {"tier": "fast"}},
            "spec": {"capacity": {"storage": size}, "accessModes": modes},
            "status": {"phase": "Available"}
        });
        merge(&mut v, extra);
        Arc::new(serde_json::from_value(v).expect("pv"))
    }

    fn pvc(size: &str, modes: &[&str], extra: serde_json::Value) -> PersistentVolumeClaim {
        let mut v = json!({
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
            "spec": {"accessModes": modes, "resources": {"requests": {"storage": size}}}
        });
        merge(&mut v, extra);
        serde_json::from_value(v).expect("pvc")
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    /// (name, claim, volumes, delay binding, the volume chosen)
    type Case = (
        &'static str,
        PersistentVolumeClaim,
        Vec<Arc<PersistentVolume>>,
        bool,
        Option<&'static str>,
    );

    #[test]
    fn picks_as_upstream() {
        let rwo = &["ReadWriteOnce"];
        let none = json!({});
        let cases: Vec<Case> = vec![
            (
                "smallest fitting",
                pvc("1Gi", rwo, none.clone()),
                vec![
                    pv("big", "10Gi", rwo, json!({})),
                    pv("small", "2Gi", rwo, json!({})),
                    pv("tiny", "500Mi", rwo, json!({})),
                ],
                false,
                Some("small"),
            ),
            (
                "exact size fits",
                pvc("1Gi", rwo, none.clone()),
                vec![pv("a", "1024Mi", rwo, json!({}))],
                false,
                Some("a"),
            ),
            (
                "none fits",
                pvc("5Gi", rwo, none.clone()),
                vec![pv("a", "1Gi", rwo, json!({}))],
                false,
                None,
            ),
            (
                "class must match",
                pvc("1Gi", rwo, json!({"spec": {"storageClassName": "gold"}})),
                vec![
                    pv("a", "1Gi", rwo, json!({})),
                    pv(
                        "g",
                        "5Gi",
                        rwo,
                        json!({"spec": {"storageClassName": "gold"}}),
                    ),
                ],
                false,
                Some("g"),
            ),
            (
                "access modes superset, fewest modes first",
                pvc("1Gi", rwo, none.clone()),
                vec![
                    pv("many", "1Gi", &["ReadWriteOnce", "ReadOnlyMany"], json!({})),
                    pv("one", "5Gi", rwo, json!({})),
                ],
                false,
                Some("one"),
            ),
            (
                "modes not covered",
                pvc("1Gi", &["ReadWriteMany"], none.clone()),
                vec![pv("a", "1Gi", rwo, json!({}))],
                false,
                None,
            ),
            (
                "volume mode",
                pvc("1Gi", rwo, json!({"spec": {"volumeMode": "Block"}})),
                vec![
                    pv("fs", "1Gi", rwo, json!({})),
                    pv("blk", "9Gi", rwo, json!({"spec": {"volumeMode": "Block"}})),
                ],
                false,
                Some("blk"),
            ),
            (
                "selector",
                pvc(
                    "1Gi",
                    rwo,
                    json!({"spec": {"selector": {"matchLabels": {"tier": "slow"}}}}),
                ),
                vec![
                    pv("a", "1Gi", rwo, json!({})),
                    pv(
                        "s",
                        "3Gi",
                        rwo,
                        json!({"metadata": {"labels": {"tier": "slow"}}}),
                    ),
                ],
                false,
                Some("s"),
            ),
            (
                "pre-bound wins over smaller",
                pvc("1Gi", rwo, none.clone()),
                vec![
                    pv("small", "1Gi", rwo, json!({})),
                    pv(
                        "pre",
                        "8Gi",
                        rwo,
                        json!({"spec": {"claimRef": {"name": "c", "namespace": "ns"}}}),
                    ),
                ],
                false,
                Some("pre"),
            ),
            (
                "pre-bound to another is skipped",
                pvc("1Gi", rwo, none.clone()),
                vec![pv(
                    "other",
                    "1Gi",
                    rwo,
                    json!({"spec": {"claimRef": {"name": "d", "namespace": "ns"}}}),
                )],
                false,
                None,
            ),
            (
                "released is skipped",
                pvc("1Gi", rwo, none.clone()),
                vec![pv(
                    "r",
                    "1Gi",
                    rwo,
                    json!({"status": {"phase": "Released"}}),
                )],
                false,
                None,
            ),
            (
                "delay binding takes only pre-bound",
                pvc("1Gi", rwo, none.clone()),
                vec![pv("a", "1Gi", rwo, json!({}))],
                true,
                None,
            ),
            (
                "delay binding finishes the scheduler's choice",
                pvc("1Gi", rwo, none.clone()),
                vec![pv(
                    "a",
                    "1Gi",
                    rwo,
                    json!({"spec": {"claimRef": {"name": "c", "namespace": "ns", "uid": "u1"}}, "status": {"phase": "Bound"}}),
                )],
                true,
                Some("a"),
            ),
        ];
        for (name, claim, volumes, delay, want) in cases {
            let got = find_best_match(&claim, &volumes, delay);
            assert_eq!(
                got.and_then(|v| v.metadata.name.clone()).as_deref(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn requested_volume_checks() {
        let rwo = &["ReadWriteOnce"];
        let claim = pvc("2Gi", rwo, json!({}));
        assert_eq!(
            check_volume_satisfies_claim(&pv("a", "3Gi", rwo, json!({})), &claim),
            None
        );
        assert_eq!(
            check_volume_satisfies_claim(&pv("a", "1Gi", rwo, json!({})), &claim).as_deref(),
            Some("requested PV is too small")
        );
        assert_eq!(
            check_volume_satisfies_claim(&pv("a", "3Gi", &["ReadOnlyMany"], json!({})), &claim)
                .as_deref(),
            Some("incompatible accessMode")
        );
    }
}
