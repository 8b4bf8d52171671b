//! The pod's QoS class from its containers' requests and limits, as upstream's
//! `GetPodQOS`: Guaranteed when every container limits cpu and memory with requests equal to
//! the limits, BestEffort when nothing requests or limits cpu or memory, Burstable otherwise.

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

const TRACKED: [&str; 2] = ["cpu", "memory"];

fn nonzero(q: &Quantity) -> bool {
    let s = q.0.trim();
    !s.is_empty()
        && s.trim_start_matches(['0', '.'])
            .chars()
            .any(|c| c.is_ascii_digit())
}

/// `Guaranteed`, `Burstable` or `BestEffort`.
pub fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = &pod.spec else {
        return "BestEffort";
    };
    let containers: Vec<&Container> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    let empty = BTreeMap::new();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let res = c.resources.as_ref();
        let requests = res.and_then(|r| r.requests.as_ref()).unwrap_or(&empty);
        let limits = res.and_then(|r| r.limits.as_ref()).unwrap_or(&empty);
        for name in TRACKED {
            let req = requests.get(name).filter(|q| nonzero(q));
            let lim = limits.get(name).filter(|q| nonzero(q));
            any |= req.is_some() || lim.is_some();
            match (req, lim) {
                // An unset request defaults to the limit.
                (None, Some(_)) => {}
                (Some(r), Some(l)) if r.0 == l.0 => {}
                _ => guaranteed = false,
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};

    fn pod(req: &[(&str, &str)], lim: &[(&str, &str)]) -> Pod {
        let map = |v: &[(&str, &str)]| {
            (!v.is_empty()).then(|| {
                v.iter()
                    .map(|(k, q)| (k.to_string(), Quantity(q.to_string())))
                    .collect()
            })
        };
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: map(req),
                        limits: map(lim),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn classes() {
        let cases = [
            (pod(&[], &[]), "BestEffort"),
            (pod(&[("cpu", "0")], &[]), "BestEffort"),
            (pod(&[("cpu", "100m")], &[]), "Burstable"),
            (pod(&[], &[("memory", "64Mi")]), "Burstable"),
            (pod(&[], &[("cpu", "1"), ("memory", "64Mi")]), "Guaranteed"),
            (
                pod(
                    &[("cpu", "1"), ("memory", "64Mi")],
                    &[("cpu", "1"), ("memory", "64Mi")],
                ),
                "Guaranteed",
            ),
            (
                pod(
                    &[("cpu", "500m"), ("memory", "64Mi")],
                    &[("cpu", "1"), ("memory", "64Mi")],
                ),
                "Burstable",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(qos_class(&p), want);
        }
    }
}
