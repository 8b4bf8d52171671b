//! Who owns a StatefulSet's claims under `persistentVolumeClaimRetentionPolicy` (upstream's
//! `updateClaimOwnerRefForSetAndPod`): `whenDeleted: Delete` makes the set an owner, so the
//! garbage collector removes the claims with the set; `whenScaled: Delete` makes the pod of a
//! condemned ordinal the owner, so the claims go with the scaled-down pod.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// A plain (non-controller) ownerReference.
pub fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// The claim's ownerReferences under the policy, or `None` when they are already right.
pub fn claim_owner_refs(
    current: &[OwnerReference],
    set: &OwnerReference,
    pod: &OwnerReference,
    (when_deleted, when_scaled): (bool, bool),
    condemned: bool,
) -> Option<Vec<OwnerReference>> {
    let pod_owns = when_scaled && condemned;
    let set_owns = when_deleted && !pod_owns;
    let mut refs: Vec<OwnerReference> = current
        .iter()
        .filter(|r| (r.uid != set.uid || set_owns) && (r.uid != pod.uid || pod_owns))
        .cloned()
        .collect();
    for (wanted, owner) in [(set_owns, set), (pod_owns, pod)] {
        if wanted && !refs.iter().any(|r| r.uid == owner.uid) {
            refs.push(owner.clone());
        }
    }
    (refs != current).then_some(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Case<'a> = ((bool, bool), bool, Vec<&'a OwnerReference>, Vec<&'a str>);

    #[test]
    fn owners_follow_the_policy() {
        let set = owner_ref("apps/v1", "StatefulSet", "web", "s");
        let pod = owner_ref("v1", "Pod", "web-1", "p");
        let other = owner_ref("v1", "ConfigMap", "x", "o");
        // (policy (whenDeleted, whenScaled), condemned, current owners, wanted owners)
        let cases: [Case<'_>; 8] = [
            ((false, false), false, vec![], vec![]),
            ((false, false), true, vec![&set, &pod], vec![]),
            ((true, false), false, vec![], vec!["s"]),
            ((true, false), true, vec![&pod], vec!["s"]),
            ((false, true), false, vec![&pod], vec![]),
            ((false, true), true, vec![], vec!["p"]),
            ((true, true), true, vec![&set], vec!["p"]),
            ((true, true), false, vec![&other], vec!["o", "s"]),
        ];
        for (policy, condemned, current, want) in cases {
            let current: Vec<OwnerReference> = current.into_iter().cloned().collect();
            let got = claim_owner_refs(&current, &set, &pod, policy, condemned);
            let uids: Vec<&str> = got
                .as_ref()
                .unwrap_or(&current)
                .iter()
                .map(|r| r.uid.as_str())
                .collect();
            assert_eq!(uids, want, "{policy:?} condemned={condemned}");
            if let Some(new) = got {
                assert_eq!(claim_owner_refs(&new, &set, &pod, policy, condemned), None);
            }
        }
    }
}
