//! Taints and tolerations, as upstream's `v1helper` and the scheduler's taint filters.

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
pub const EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";

/// Whether `toleration` tolerates `taint` (upstream's `Toleration.ToleratesTaint`): an empty
/// effect or key matches any, an empty operator means `Equal`.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref()
        && !effect.is_empty()
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref()
        && !key.is_empty()
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint`.
pub fn tolerations_tolerate_taint(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first taint that passes `filter` and that no toleration tolerates (upstream's
/// `FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| filter(taint) && !tolerations_tolerate_taint(tolerations, taint))
}

/// Taints that keep pods off a node: NoSchedule and NoExecute (upstream's
/// `DoNotScheduleTaintsFilterFunc`).
pub fn is_do_not_schedule(taint: &Taint) -> bool {
    taint.effect == EFFECT_NO_SCHEDULE || taint.effect == EFFECT_NO_EXECUTE
}

/// The node's taints (empty when it has none).
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

/// The pod's tolerations (empty when it has none).
pub fn pod_tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            ..Default::default()
        }
    }

    #[test]
    fn toleration_matching() {
        let t = taint("foo", "bar", EFFECT_NO_SCHEDULE);
        let cases = [
            (tol("foo", "Equal", "bar", "NoSchedule"), true),
            (tol("foo", "", "bar", ""), true),
            (tol("foo", "Equal", "baz", "NoSchedule"), false),
            (tol("foo", "Exists", "", ""), true),
            (tol("", "Exists", "", ""), true),
            (tol("", "Exists", "", "NoExecute"), false),
            (tol("other", "Exists", "", ""), false),
            (tol("foo", "Bogus", "bar", ""), false),
        ];
        for (toleration, want) in cases {
            assert_eq!(tolerates(&toleration, &t), want, "{toleration:?}");
        }
    }

    #[test]
    fn finds_first_untolerated_taint_through_filter() {
        let taints = vec![
            taint("soft", "", EFFECT_PREFER_NO_SCHEDULE),
            taint("a", "1", EFFECT_NO_SCHEDULE),
            taint("b", "2", EFFECT_NO_EXECUTE),
        ];
        let tolerations = vec![tol("a", "Equal", "1", "")];
        let found = find_untolerated_taint(&taints, &tolerations, is_do_not_schedule);
        assert_eq!(found.map(|t| t.key.as_str()), Some("b"));
        let all = vec![tol("", "Exists", "", "")];
        assert!(find_untolerated_taint(&taints, &all, is_do_not_schedule).is_none());
    }
}
