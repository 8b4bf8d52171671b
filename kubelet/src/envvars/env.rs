//! A container's environment as upstream's `makeEnvironmentVariables` builds it: service links,
//! envFrom, then env in order with `$(VAR)` expansion against what came before.

use super::expand::expand;
use super::fields::{Allocatable, pod_field, resource_field};
use super::services::service_env;
use super::source::ObjectSource;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, Service};
use std::collections::HashMap;
use std::fmt;

/// What the environment needs from the node besides the pod and its objects.
#[derive(Debug, Clone, Default)]
pub struct EnvContext {
    pub node_name: String,
    /// The node's IPs (`status.hostIP(s)`), primary first.
    pub host_ips: Vec<String>,
    /// The pod's IPs (`status.podIP(s)`), primary first; the host's for hostNetwork pods.
    pub pod_ips: Vec<String>,
    /// Where unset cpu/memory/ephemeral-storage limits read from for `resourceFieldRef`.
    pub node_allocatable: Allocatable,
    /// Services for the docker-link style env vars: those of the pod's namespace and the
    /// master service `default/kubernetes` (others are ignored). Empty = no service env.
    pub services: Vec<Service>,
}

/// Why a container's environment could not be built; the core reports it as the container's
/// `CreateContainerConfigError` with this message (upstream's wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvError {
    /// `configmap "x" not found` / `secret "x" not found`.
    NotFound { kind: &'static str, name: String },
    /// `couldn't find key k in ConfigMap ns/x`.
    MissingKey {
        kind: &'static str,
        namespace: String,
        name: String,
        key: String,
    },
    /// Anything else (an unsupported field path, an unreachable apiserver).
    Other(String),
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::NotFound { kind, name } => write!(f, "{kind} {name:?} not found"),
            EnvError::MissingKey {
                kind,
                namespace,
                name,
                key,
            } => write!(f, "couldn't find key {key} in {kind} {namespace}/{name}"),
            EnvError::Other(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for EnvError {}

/// Upstream's `IsEnvVarName` (the strict C-identifier-ish rule envFrom keys must follow).
pub fn is_env_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_'));
    first_ok
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        && name != "."
        && name != ".."
        && !name.starts_with("..")
}

/// Insertion-ordered map: the env keeps the order names first appeared (upstream's is a Go map,
/// so any order is faithful; a stable one makes container specs comparable).
#[derive(Default)]
struct OrderedEnv {
    order: Vec<String>,
    values: HashMap<String, String>,
}

impl OrderedEnv {
    fn set(&mut self, name: String, value: String) {
        if !self.values.contains_key(&name) {
            self.order.push(name.clone());
        }
        self.values.insert(name, value);
    }
}

/// Caches the objects one container's env reads, so each is fetched once.
struct Objects<'a> {
    source: &'a dyn ObjectSource,
    namespace: String,
    config_maps: HashMap<String, Option<ConfigMap>>,
    secrets: HashMap<String, Option<Secret>>,
}

impl Objects<'_> {
    async fn config_map(&mut self, name: &str) -> Result<Option<&ConfigMap>, EnvError> {
        if !self.config_maps.contains_key(name) {
            let got = self
                .source
                .config_map(&self.namespace, name)
                .await
                .map_err(|e| EnvError::Other(format!("{e:#}")))?;
            self.config_maps.insert(name.to_string(), got);
        }
        Ok(self.config_maps.get(name).and_then(Option::as_ref))
    }

    async fn secret(&mut self, name: &str) -> Result<Option<&Secret>, EnvError> {
        if !self.secrets.contains_key(name) {
            let got = self
                .source
                .secret(&self.namespace, name)
                .await
                .map_err(|e| EnvError::Other(format!("{e:#}")))?;
            self.secrets.insert(name.to_string(), got);
        }
        Ok(self.secrets.get(name).and_then(Option::as_ref))
    }
}

fn secret_value(secret: &Secret, key: &str) -> Option<String> {
    // stringData is write-only upstream, but an object built by hand may still carry it.
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .cloned()
        })
}

/// The container's environment, in declaration order (envFrom, then env, then service links
/// not already set). Keys from envFrom that are not valid env var names are skipped and
/// logged, as upstream (which also emits an `InvalidEnvironmentVariableNames` event).
pub async fn make_environment(
    source: &dyn ObjectSource,
    pod: &Pod,
    container: &Container,
    ctx: &EnvContext,
) -> Result<Vec<(String, String)>, EnvError> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let enable_service_links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let services: HashMap<String, String> =
        service_env(&ctx.services, &namespace, enable_service_links)
            .into_iter()
            .collect();
    let mut objects = Objects {
        source,
        namespace: namespace.clone(),
        config_maps: HashMap::new(),
        secrets: HashMap::new(),
    };
    let mut env = OrderedEnv::default();

    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or("");
        let mut pairs: Vec<(String, String)> = Vec::new();
        let (kind, name) = if let Some(r) = &from.config_map_ref {
            match objects.config_map(&r.name).await? {
                Some(cm) => pairs.extend(
                    cm.data
                        .iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v.clone())),
                ),
                None if r.optional == Some(true) => continue,
                None => {
                    return Err(EnvError::NotFound {
                        kind: "configmap",
                        name: r.name.clone(),
                    });
                }
            }
            ("configMap", r.name.clone())
        } else if let Some(r) = &from.secret_ref {
            match objects.secret(&r.name).await? {
                Some(s) => pairs.extend(
                    s.data
                        .iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned())),
                ),
                None if r.optional == Some(true) => continue,
                None => {
                    return Err(EnvError::NotFound {
                        kind: "secret",
                        name: r.name.clone(),
                    });
                }
            }
            ("secret", r.name.clone())
        } else {
            continue;
        };
        let mut invalid = Vec::new();
        for (key, value) in pairs {
            let key = format!("{prefix}{key}");
            if is_env_var_name(&key) {
                env.set(key, value);
            } else {
                invalid.push(key);
            }
        }
        if !invalid.is_empty() {
            invalid.sort();
            tracing::warn!(
                pod = %format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or("")),
                "Keys [{}] from the EnvFrom {kind} {namespace}/{name} were skipped since they are considered invalid environment variable names.",
                invalid.join(", ")
            );
        }
    }

    for var in container.env.iter().flatten() {
        let value = if let Some(from) = &var.value_from {
            if let Some(field) = &from.field_ref {
                pod_field(pod, &field.field_path, &ctx.pod_ips, &ctx.host_ips)
                    .map_err(EnvError::Other)?
            } else if let Some(res) = &from.resource_field_ref {
                let name = res.container_name.as_deref().filter(|n| !n.is_empty());
                resource_field(
                    res,
                    pod,
                    name.unwrap_or(&container.name),
                    &ctx.node_allocatable,
                )
                .map_err(EnvError::Other)?
            } else if let Some(r) = &from.config_map_key_ref {
                let optional = r.optional == Some(true);
                let Some(cm) = objects.config_map(&r.name).await? else {
                    if optional {
                        continue;
                    }
                    return Err(EnvError::NotFound {
                        kind: "configmap",
                        name: r.name.clone(),
                    });
                };
                match cm.data.as_ref().and_then(|d| d.get(&r.key)) {
                    Some(v) => v.clone(),
                    None if optional => continue,
                    None => {
                        return Err(EnvError::MissingKey {
                            kind: "ConfigMap",
                            namespace: namespace.clone(),
                            name: r.name.clone(),
                            key: r.key.clone(),
                        });
                    }
                }
            } else if let Some(r) = &from.secret_key_ref {
                let optional = r.optional == Some(true);
                let Some(secret) = objects.secret(&r.name).await? else {
                    if optional {
                        continue;
                    }
                    return Err(EnvError::NotFound {
                        kind: "secret",
                        name: r.name.clone(),
                    });
                };
                match secret_value(secret, &r.key) {
                    Some(v) => v,
                    None if optional => continue,
                    None => {
                        return Err(EnvError::MissingKey {
                            kind: "Secret",
                            namespace: namespace.clone(),
                            name: r.name.clone(),
                            key: r.key.clone(),
                        });
                    }
                }
            } else {
                String::new()
            }
        } else {
            let raw = var.value.as_deref().unwrap_or("");
            let lookup = |name: &str| env.values.get(name).or_else(|| services.get(name)).cloned();
            expand(raw, &lookup)
        };
        env.set(var.name.clone(), value);
    }

    let mut out: Vec<(String, String)> = env
        .order
        .iter()
        .map(|k| (k.clone(), env.values[k].clone()))
        .collect();
    let mut service_keys: Vec<&String> = services.keys().collect();
    service_keys.sort();
    for key in service_keys {
        if !env.values.contains_key(key) {
            out.push((key.clone(), services[key].clone()));
        }
    }
    Ok(out)
}
