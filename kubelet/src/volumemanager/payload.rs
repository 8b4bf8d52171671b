//! What configMap, secret, downwardAPI and projected volumes contain: upstream's `MakePayload`
//! and `CollectData`, as file path -> contents and mode.

use super::atomic_writer::{FileProjection, Payload};
use super::token::TokenCache;
use crate::envvars::{Allocatable, ObjectSource, metadata_field, resource_field};
use k8s_openapi::api::core::v1::{
    ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, ProjectedVolumeSource, Secret,
};
use std::collections::BTreeMap;

/// The API's default file mode for these volumes (0644).
pub const DEFAULT_MODE: i32 = 0o644;

fn mode(m: Option<i32>) -> u32 {
    (m.unwrap_or(DEFAULT_MODE) & 0o777) as u32
}

/// Upstream's `MakePayload` for keyed data: every key when `items` is empty, else the listed
/// keys at their paths; a listed key that is missing fails unless `optional`.
pub fn keyed_payload(
    items: Option<&[KeyToPath]>,
    data: &BTreeMap<String, Vec<u8>>,
    default_mode: Option<i32>,
    optional: bool,
    missing_key_message: &str,
) -> anyhow::Result<Payload> {
    let mut payload = Payload::new();
    let items = items.unwrap_or_default();
    if items.is_empty() {
        for (key, value) in data {
            payload.insert(
                key.clone(),
                FileProjection {
                    data: value.clone(),
                    mode: mode(default_mode),
                },
            );
        }
        return Ok(payload);
    }
    for item in items {
        let Some(value) = data.get(&item.key) else {
            if optional {
                continue;
            }
            anyhow::bail!("{missing_key_message}: {}", item.key);
        };
        payload.insert(
            item.path.clone(),
            FileProjection {
                data: value.clone(),
                mode: mode(item.mode.or(default_mode)),
            },
        );
    }
    Ok(payload)
}

/// A ConfigMap's `data` and `binaryData` as bytes.
pub fn config_map_data(cm: Option<&ConfigMap>) -> BTreeMap<String, Vec<u8>> {
    let Some(cm) = cm else {
        return BTreeMap::new();
    };
    let mut out: BTreeMap<String, Vec<u8>> = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
        .collect();
    for (k, v) in cm.binary_data.iter().flatten() {
        out.entry(k.clone()).or_insert_with(|| v.0.clone());
    }
    out
}

/// A Secret's `data` (and `stringData` if an object still carries it) as bytes.
pub fn secret_data(secret: Option<&Secret>) -> BTreeMap<String, Vec<u8>> {
    let Some(secret) = secret else {
        return BTreeMap::new();
    };
    let mut out: BTreeMap<String, Vec<u8>> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    for (k, v) in secret.string_data.iter().flatten() {
        out.entry(k.clone())
            .or_insert_with(|| v.as_bytes().to_vec());
    }
    out
}

/// Upstream's downwardAPI `CollectData`: every item is attempted, the errors are joined.
pub fn downward_payload(
    items: &[DownwardAPIVolumeFile],
    pod: &Pod,
    default_mode: Option<i32>,
    allocatable: &Allocatable,
) -> anyhow::Result<Payload> {
    let mut payload = Payload::new();
    let mut errors = Vec::new();
    for item in items {
        let value = if let Some(field) = &item.field_ref {
            metadata_field(pod, &field.field_path)
        } else if let Some(res) = &item.resource_field_ref {
            let container = res.container_name.as_deref().unwrap_or("");
            resource_field(res, pod, container, allocatable)
        } else {
            continue;
        };
        match value {
            Ok(v) => {
                payload.insert(
                    item.path.clone(),
                    FileProjection {
                        data: v.into_bytes(),
                        mode: mode(item.mode.or(default_mode)),
                    },
                );
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("{}", errors.join(", "));
    }
    Ok(payload)
}

/// A projected volume's payload: each source in order (a later path wins), objects read from
/// `source`, tokens from `tokens`. clusterTrustBundle sources are skipped (not supported).
pub async fn projected_payload(
    projected: &ProjectedVolumeSource,
    pod: &Pod,
    source: &dyn ObjectSource,
    tokens: &TokenCache,
    allocatable: &Allocatable,
    token_mode: Option<u32>,
) -> anyhow::Result<Payload> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let default_mode = projected.default_mode;
    let mut payload = Payload::new();
    let mut errors: Vec<String> = Vec::new();
    for proj in projected.sources.iter().flatten() {
        let part = if let Some(s) = &proj.secret {
            let optional = s.optional == Some(true);
            match source.secret(&ns, &s.name).await {
                Ok(None) if !optional => Err(anyhow::anyhow!("secret {:?} not found", s.name)),
                Ok(obj) => keyed_payload(
                    s.items.as_deref(),
                    &secret_data(obj.as_ref()),
                    default_mode,
                    optional,
                    "references non-existent secret key",
                ),
                Err(e) => Err(e),
            }
        } else if let Some(c) = &proj.config_map {
            let optional = c.optional == Some(true);
            match source.config_map(&ns, &c.name).await {
                Ok(None) if !optional => Err(anyhow::anyhow!("configmap {:?} not found", c.name)),
                Ok(obj) => keyed_payload(
                    c.items.as_deref(),
                    &config_map_data(obj.as_ref()),
                    default_mode,
                    optional,
                    "configmap references non-existent config key",
                ),
                Err(e) => Err(e),
            }
        } else if let Some(d) = &proj.downward_api {
            downward_payload(
                d.items.as_deref().unwrap_or_default(),
                pod,
                default_mode,
                allocatable,
            )
        } else if let Some(t) = &proj.service_account_token {
            let audience = t.audience.as_deref().unwrap_or("");
            tokens
                .token(source, pod, audience, t.expiration_seconds)
                .await
                .map(|token| {
                    Payload::from([(
                        t.path.clone(),
                        FileProjection {
                            data: token.into_bytes(),
                            mode: token_mode.unwrap_or_else(|| mode(default_mode)),
                        },
                    )])
                })
        } else {
            if proj.cluster_trust_bundle.is_some() {
                tracing::warn!("clusterTrustBundle projections are not supported; skipped");
            }
            continue;
        };
        match part {
            Ok(p) => payload.extend(p),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("{}", errors.join(", "));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ObjectFieldSelector, ResourceFieldSelector};

    fn items(list: &[(&str, &str, Option<i32>)]) -> Vec<KeyToPath> {
        list.iter()
            .map(|(k, p, m)| KeyToPath {
                key: k.to_string(),
                path: p.to_string(),
                mode: *m,
            })
            .collect()
    }

    #[test]
    fn keyed_payloads() {
        let data: BTreeMap<String, Vec<u8>> = [("a", "1"), ("b", "2")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        type Want = Result<Vec<(&'static str, &'static str, u32)>, &'static str>;
        let cases: Vec<(Vec<KeyToPath>, Option<i32>, bool, Want)> = vec![
            (
                vec![],
                None,
                false,
                Ok(vec![("a", "1", 0o644), ("b", "2", 0o644)]),
            ),
            (
                vec![],
                Some(0o400),
                false,
                Ok(vec![("a", "1", 0o400), ("b", "2", 0o400)]),
            ),
            (
                items(&[("a", "x/y", Some(0o600)), ("b", "z", None)]),
                Some(0o444),
                false,
                Ok(vec![("x/y", "1", 0o600), ("z", "2", 0o444)]),
            ),
            (
                items(&[("c", "c", None)]),
                None,
                false,
                Err("missing key: c"),
            ),
            (
                items(&[("c", "c", None), ("a", "a", None)]),
                None,
                true,
                Ok(vec![("a", "1", 0o644)]),
            ),
        ];
        for (i, (list, default_mode, optional, want)) in cases.into_iter().enumerate() {
            let got = keyed_payload(Some(&list), &data, default_mode, optional, "missing key")
                .map(|p| {
                    p.into_iter()
                        .map(|(k, f)| (k, String::from_utf8(f.data).unwrap(), f.mode))
                        .collect::<Vec<_>>()
                })
                .map_err(|e| e.to_string());
            let want = want
                .map(|v| {
                    v.into_iter()
                        .map(|(k, d, m)| (k.to_string(), d.to_string(), m))
                        .collect()
                })
                .map_err(String::from);
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn downward_errors_are_joined() {
        let pod = Pod::default();
        let file =
            |path: &str, field: Option<&str>, resource: Option<&str>| DownwardAPIVolumeFile {
                path: path.into(),
                field_ref: field.map(|f| ObjectFieldSelector {
                    api_version: None,
                    field_path: f.into(),
                }),
                resource_field_ref: resource.map(|r| ResourceFieldSelector {
                    container_name: Some("gone".into()),
                    divisor: None,
                    resource: r.into(),
                }),
                mode: None,
            };
        let items = vec![
            file("ok", Some("metadata.name"), None),
            file("bad", Some("spec.nodeName"), None),
            file("cpu", None, Some("limits.cpu")),
        ];
        let err = downward_payload(&items, &pod, None, &Allocatable::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported fieldPath: spec.nodeName, container gone not found"
        );
    }
}
