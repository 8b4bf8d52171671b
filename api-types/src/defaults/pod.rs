//! Pod defaults: `SetDefaults_Pod`, `SetDefaults_PodSpec`, `SetDefaults_Container` and the
//! defaults of everything a pod spec holds (ports, env, probes, volumes).

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EphemeralContainer, HTTPGetAction, Lifecycle, Pod, PodSpec,
    PodTemplate, PodTemplateSpec, Probe, ResourceRequirements, Volume,
};

use super::util::default_str;

/// Upstream's default grace period for pods, in seconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// The scheduler pods go to when they name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// Where containers write their termination message by default.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// File mode of secret, configMap, downwardAPI and projected volumes (0644).
pub const DEFAULT_VOLUME_MODE: i32 = 0o644;

/// Defaults a Pod: its spec as [`default_pod_spec`], plus what only pods (not templates) get:
/// `enableServiceLinks`, container requests copied from limits, and host ports on the host
/// network.
pub fn default_pod(pod: &mut Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    default_pod_spec(spec);
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        requests_from_limits(c.resources.get_or_insert_with(Default::default));
    }
    spec.enable_service_links.get_or_insert(true);
    if spec.host_network == Some(true) {
        // On the host network the container port is the host port.
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            for p in c.ports.iter_mut().flatten() {
                if p.host_port.is_none_or(|h| h == 0) {
                    p.host_port = Some(p.container_port);
                }
            }
        }
    }
}

/// Requests default to limits, key by key, where a request is not given (upstream does this
/// for pods only, so templates keep what the user wrote).
fn requests_from_limits(r: &mut ResourceRequirements) {
    let Some(limits) = r.limits.as_ref() else {
        return;
    };
    let requests = r.requests.get_or_insert_with(Default::default);
    for (k, v) in limits {
        requests.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// Defaults a pod template's spec.
pub fn default_pod_template_spec(t: &mut PodTemplateSpec) {
    if let Some(spec) = t.spec.as_mut() {
        default_pod_spec(spec);
    }
}

/// Defaults the `PodTemplate` kind.
pub fn default_pod_template(t: &mut PodTemplate) {
    if let Some(tpl) = t.template.as_mut() {
        default_pod_template_spec(tpl);
    }
}

/// Defaults a pod spec (shared by pods and every workload template).
pub fn default_pod_spec(spec: &mut PodSpec) {
    default_str(&mut spec.dns_policy, "ClusterFirst");
    default_str(&mut spec.restart_policy, "Always");
    spec.security_context.get_or_insert_with(Default::default);
    spec.termination_grace_period_seconds
        .get_or_insert(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    default_str(&mut spec.scheduler_name, DEFAULT_SCHEDULER_NAME);
    // `serviceAccount` is the deprecated alias: read when the name is missing, and always
    // written back as a copy of it, as upstream's conversion does.
    if spec
        .service_account_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        spec.service_account_name = spec.service_account.clone().filter(|name| !name.is_empty());
    }
    if let Some(name) = spec.service_account_name.clone() {
        spec.service_account = Some(name);
    }
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        default_container(c);
    }
    for c in spec.ephemeral_containers.iter_mut().flatten() {
        default_ephemeral_container(c);
    }
    for v in spec.volumes.iter_mut().flatten() {
        default_volume(v);
    }
}

/// The pull policy upstream picks from an image reference: `Always` for `:latest` or no tag,
/// `IfNotPresent` for any other tag or a digest.
pub fn image_pull_policy_for(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    // The tag follows the last ':' of the last path component; a ':' before a '/' is a
    // registry port.
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match (tag, digest) {
        (Some("latest"), _) => "Always",
        (Some(_), _) | (None, Some(_)) => "IfNotPresent",
        (None, None) => "Always",
    }
}

/// Upstream's `SetDefaults_Container` plus the defaults of its ports, env, probes and hooks.
macro_rules! default_container_fields {
    ($c:expr) => {{
        let c = $c;
        if c.image_pull_policy.as_deref().is_none_or(str::is_empty) {
            let policy = image_pull_policy_for(c.image.as_deref().unwrap_or(""));
            c.image_pull_policy = Some(policy.to_string());
        }
        default_str(
            &mut c.termination_message_path,
            DEFAULT_TERMINATION_MESSAGE_PATH,
        );
        default_str(&mut c.termination_message_policy, "File");
        c.resources.get_or_insert_with(Default::default);
        for p in c.ports.iter_mut().flatten() {
            default_container_port(p);
        }
        for e in c.env.iter_mut().flatten() {
            default_env_var(e);
        }
        for p in [
            &mut c.liveness_probe,
            &mut c.readiness_probe,
            &mut c.startup_probe,
        ] {
            if let Some(p) = p.as_mut() {
                default_probe(p);
            }
        }
        if let Some(l) = c.lifecycle.as_mut() {
            default_lifecycle(l);
        }
    }};
}

/// Defaults one container.
pub fn default_container(c: &mut Container) {
    default_container_fields!(c);
}

/// Defaults one ephemeral container, as a container.
pub fn default_ephemeral_container(c: &mut EphemeralContainer) {
    default_container_fields!(c);
}

fn default_container_port(p: &mut ContainerPort) {
    default_str(&mut p.protocol, "TCP");
}

fn default_env_var(e: &mut EnvVar) {
    if let Some(field_ref) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut()) {
        default_str(&mut field_ref.api_version, "v1");
    }
}

/// Upstream's probe defaults: timeout 1 s, period 10 s, success 1, failure 3.
pub fn default_probe(p: &mut Probe) {
    p.timeout_seconds.get_or_insert(1);
    p.period_seconds.get_or_insert(10);
    p.success_threshold.get_or_insert(1);
    p.failure_threshold.get_or_insert(3);
    if let Some(h) = p.http_get.as_mut() {
        default_http_get(h);
    }
}

fn default_http_get(h: &mut HTTPGetAction) {
    default_str(&mut h.path, "/");
    default_str(&mut h.scheme, "HTTP");
}

fn default_lifecycle(l: &mut Lifecycle) {
    for h in [&mut l.post_start, &mut l.pre_stop].into_iter().flatten() {
        if let Some(g) = h.http_get.as_mut() {
            default_http_get(g);
        }
    }
}

/// A volume with no source becomes an emptyDir; file modes and hostPath type get defaults.
pub fn default_volume(v: &mut Volume) {
    if volume_has_no_source(v) {
        v.empty_dir = Some(Default::default());
    }
    if let Some(s) = v.secret.as_mut() {
        s.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
    }
    if let Some(s) = v.config_map.as_mut() {
        s.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
    }
    if let Some(s) = v.downward_api.as_mut() {
        s.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
        for item in s.items.iter_mut().flatten() {
            if let Some(f) = item.field_ref.as_mut() {
                default_str(&mut f.api_version, "v1");
            }
        }
    }
    if let Some(s) = v.projected.as_mut() {
        s.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
        for src in s.sources.iter_mut().flatten() {
            if let Some(t) = src.service_account_token.as_mut() {
                t.expiration_seconds.get_or_insert(3600);
            }
            if let Some(d) = src.downward_api.as_mut() {
                for item in d.items.iter_mut().flatten() {
                    if let Some(f) = item.field_ref.as_mut() {
                        default_str(&mut f.api_version, "v1");
                    }
                }
            }
        }
    }
    if let Some(h) = v.host_path.as_mut() {
        h.type_.get_or_insert_with(String::new);
    }
    if let Some(s) = v.iscsi.as_mut() {
        default_str(&mut s.iscsi_interface, "default");
    }
}

/// Whether no volume source is set. Going through JSON keeps this right whatever sources
/// k8s-openapi adds: only `name` may be present.
fn volume_has_no_source(v: &Volume) -> bool {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => m.keys().all(|k| k == "name"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::image_pull_policy_for;

    #[test]
    fn pull_policy_by_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("docker.io/library/nginx:1.25", "IfNotPresent"),
            ("localhost:5000/nginx", "Always"),
            ("localhost:5000/nginx:v1", "IfNotPresent"),
            ("nginx@sha256:abcd", "IfNotPresent"),
            ("nginx:latest@sha256:abcd", "Always"),
            ("nginx:1@sha256:abcd", "IfNotPresent"),
            ("", "IfNotPresent"),
        ];
        for (image, want) in cases {
            assert_eq!(image_pull_policy_for(image), want, "{image}");
        }
    }
}
