//! The annotations a Deployment keeps on its ReplicaSets: revisions (what `kubectl rollout
//! history/undo` read) and the sizes proportional scaling starts from.

use super::replicas::{desired, max_surge};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use std::collections::BTreeMap;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
/// Upstream caps `revision-history` at this many characters, dropping the oldest entries.
const MAX_REVISION_HISTORY_CHARS: usize = 2000;

/// Annotations that belong to the Deployment or to one ReplicaSet, never copied between them.
fn skip_copy(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED | REVISION | REVISION_HISTORY | DESIRED_REPLICAS | MAX_REPLICAS | ROLLBACK_TO
    )
}

/// The revision of a ReplicaSet (0 when unset or unreadable).
pub fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn max_revision(rss: &[&ReplicaSet]) -> i64 {
    rss.iter().map(|rs| revision(rs)).max().unwrap_or(0)
}

fn annotation_i32(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

/// `max-replicas` of a ReplicaSet: the Deployment's size plus surge when it was last scaled.
pub fn max_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    annotation_i32(rs, MAX_REPLICAS)
}

pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    annotation_i32(rs, DESIRED_REPLICAS)
}

/// Sets `desired-replicas` and `max-replicas` for `d`; true when they changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, d: &Deployment) -> bool {
    let want = [
        (DESIRED_REPLICAS, desired(d).to_string()),
        (MAX_REPLICAS, (desired(d) + max_surge(d)).to_string()),
    ];
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (key, value) in want {
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.to_string(), value);
            changed = true;
        }
    }
    changed
}

/// Brings the annotations of the Deployment's new ReplicaSet up to date: the Deployment's own
/// annotations (e.g. `kubernetes.io/change-cause`), and `new_revision` when it is higher than
/// the set's (a set reused by a rollback keeps its former revisions in `revision-history`).
/// `creating` also stamps the replica annotations. True when anything changed.
pub fn set_new_rs_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    creating: bool,
) -> bool {
    let mut changed = false;
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if !skip_copy(k) && annotations.get(k) != Some(v) {
            annotations.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    let old = annotations.get(REVISION).cloned();
    let old_revision = match old.as_deref().map(str::parse::<i64>) {
        None => 0,
        Some(Ok(n)) => n,
        // Someone wrote garbage: leave the revision alone rather than guess.
        Some(Err(_)) => return changed,
    };
    if old_revision < new_revision {
        annotations.insert(REVISION.to_string(), new_revision.to_string());
        changed = true;
        if let Some(old) = old {
            let history = annotations
                .get(REVISION_HISTORY)
                .cloned()
                .unwrap_or_default();
            let mut entries: Vec<&str> = history.split(',').filter(|s| !s.is_empty()).collect();
            entries.push(&old);
            while entries.join(",").len() > MAX_REVISION_HISTORY_CHARS && entries.len() > 1 {
                entries.remove(0);
            }
            let joined = entries.join(",");
            annotations.insert(REVISION_HISTORY.to_string(), joined);
        }
    }
    if creating && set_replicas_annotations(rs, d) {
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::super::replicas::tests::{deployment, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn with_annotations(mut r: ReplicaSet, pairs: &[(&str, &str)]) -> ReplicaSet {
        r.metadata.annotations = Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        r
    }

    /// (existing annotations, new revision, creating) -> (revision, history, changed)
    type Case = (
        &'static [(&'static str, &'static str)],
        i64,
        bool,
        &'static str,
        Option<&'static str>,
        bool,
    );

    #[test]
    fn revisions_are_bumped_and_history_kept_on_reuse() {
        let mut d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        d.metadata.annotations = Some(BTreeMap::from([
            ("kubernetes.io/change-cause".to_string(), "v2".to_string()),
            (REVISION.to_string(), "9".to_string()),
        ]));
        // (existing annotations, new revision, creating) -> (revision, history, changed)
        let cases: [Case; 5] = [
            (&[], 1, true, "1", None, true),
            (&[(REVISION, "1")], 3, false, "3", Some("1"), true),
            (
                &[(REVISION, "2"), (REVISION_HISTORY, "1")],
                4,
                false,
                "4",
                Some("1,2"),
                true,
            ),
            (
                &[(REVISION, "5"), ("kubernetes.io/change-cause", "v2")],
                3,
                false,
                "5",
                None,
                false,
            ),
            (&[(REVISION, "x")], 3, false, "x", None, true),
        ];
        for (i, (existing, new_revision, creating, want_rev, want_hist, want_changed)) in
            cases.into_iter().enumerate()
        {
            let mut r = with_annotations(rs("r", 0, 0), existing);
            let changed = set_new_rs_annotations(&d, &mut r, new_revision, creating);
            let a = r.metadata.annotations.clone().unwrap_or_default();
            assert_eq!(
                a.get(REVISION).map(String::as_str),
                Some(want_rev),
                "case {i}"
            );
            assert_eq!(
                a.get(REVISION_HISTORY).map(String::as_str),
                want_hist,
                "case {i}"
            );
            assert_eq!(changed, want_changed, "case {i}");
            assert_eq!(
                a.get("kubernetes.io/change-cause").map(String::as_str),
                Some("v2")
            );
            assert_eq!(a.contains_key(DESIRED_REPLICAS), creating, "case {i}");
        }
    }

    #[test]
    fn replica_annotations_follow_size_and_surge() {
        let d = deployment(4, IntOrString::String("50%".into()), IntOrString::Int(0));
        let mut r = rs("r", 0, 0);
        assert!(set_replicas_annotations(&mut r, &d));
        assert_eq!(desired_replicas_annotation(&r), Some(4));
        assert_eq!(max_replicas_annotation(&r), Some(6));
        assert!(!set_replicas_annotations(&mut r, &d));
        assert_eq!(
            max_revision(&[&with_annotations(rs("a", 0, 0), &[(REVISION, "7")]), &r]),
            7
        );
    }
}
