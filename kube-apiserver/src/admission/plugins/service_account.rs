//! `ServiceAccount`: every pod runs as a service account that exists (`default` unless it names
//! one), gets the account's image pull secrets when it has none, and gets the API credentials
//! (a projected volume with a bound token, the cluster CA and its namespace) mounted in every
//! container, unless it or its account opts out. An account annotated
//! `kubernetes.io/enforce-mountable-secrets: "true"` limits the secrets its pods may use to
//! those it lists. Mirror pods are left untouched but may not use accounts or secrets at all.
//!
//! The JSON helpers at the bottom are shared by the other pod plugins of this directory.

use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::{ObjectLookup, RegistryError, meta};
use crate::rest::state::ApiState;
use async_trait::async_trait;
use rand::Rng;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The account a pod runs as when it names none.
pub const DEFAULT_SERVICE_ACCOUNT_NAME: &str = "default";
/// Where the credentials are mounted in every container.
pub const DEFAULT_API_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the generated credentials volume's name.
pub const SERVICE_ACCOUNT_VOLUME_NAME: &str = "kube-api-access";
/// The annotation that makes an account limit its pods to the secrets it references.
pub const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";
/// The annotation the kubelet puts on the API copy of a static pod.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Upstream's token lifetime for the auto-mounted volume: one hour and seven seconds, the odd
/// seconds letting the token authenticator recognise (and only warn about) tokens a kubelet
/// keeps using past their hour.
const WARN_ONLY_TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The mode upstream writes explicitly into the projected volume (0644).
const PROJECTED_DEFAULT_MODE: i64 = 420;

#[derive(Debug, Default)]
pub struct ServiceAccount;

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || !attrs.is_main("", "pods") {
            return Ok(());
        }
        let name = object_name(attrs, Some(&*object)).to_string();
        // The kubelet deletes a mirror pod whose spec differs from its static pod's, so it is
        // never changed; the validating phase holds it to its restrictions.
        if is_mirror_pod(object) {
            return check_mirror_pod(object).map_err(|reason| forbidden(attrs, &name, &reason));
        }
        let account_name = default_service_account_name(object);
        let account = lookup_service_account(state, &attrs.namespace, &account_name)
            .await
            .map_err(|reason| forbidden(attrs, &name, &reason))?;
        if should_automount(&account, object) {
            mount_service_account_token(object, || {
                meta::generate_name(&format!("{SERVICE_ACCOUNT_VOLUME_NAME}-"))
            });
        }
        copy_image_pull_secrets(&account, object);
        if enforces_mountable_secrets(&account) {
            limit_secret_references(&account, object)
                .map_err(|reason| forbidden(attrs, &name, &reason))?;
        }
        Ok(())
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        let Some(pod) = object else {
            return Ok(());
        };
        if !attrs.is("", "pods") {
            return Ok(());
        }
        let ephemeral =
            attrs.operation == Operation::Update && attrs.subresource == "ephemeralcontainers";
        let create = attrs.operation == Operation::Create && attrs.subresource.is_empty();
        if !ephemeral && !create {
            return Ok(());
        }
        let name = object_name(attrs, Some(pod));
        let refuse = |reason: String| forbidden(attrs, name, &reason);
        if create && is_mirror_pod(pod) {
            return check_mirror_pod(pod).map_err(refuse);
        }
        let account_name = service_account_name(pod);
        if account_name.is_empty() {
            return Err(refuse(format!(
                "no service account specified for pod {}/{}",
                attrs.namespace, name
            )));
        }
        let account = lookup_service_account(state, &attrs.namespace, account_name)
            .await
            .map_err(refuse)?;
        if !enforces_mountable_secrets(&account) {
            return Ok(());
        }
        if ephemeral {
            limit_ephemeral_container_secret_references(&account, pod).map_err(refuse)
        } else {
            limit_secret_references(&account, pod).map_err(refuse)
        }
    }
}

/// The service account, from the watch cache or else from storage: the cache may not have
/// seen an account created a moment ago, and the `default` account of a new namespace is
/// being created by the controller while the first pods arrive, so that one is awaited a
/// little. The error is the reason of the 403.
async fn lookup_service_account(
    state: &ApiState,
    namespace: &str,
    name: &str,
) -> Result<Value, String> {
    let failed =
        |detail: &str| format!("error looking up service account {namespace}/{name}: {detail}");
    if let Some(account) = state.get("", "serviceaccounts", Some(namespace), name) {
        return Ok((*account).clone());
    }
    let attempts = if name == DEFAULT_SERVICE_ACCOUNT_NAME {
        10
    } else {
        1
    };
    let interval = Duration::from_millis(rand::rng().random_range(100..200));
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(interval).await;
        }
        match fetch(state, "", "v1", "serviceaccounts", Some(namespace), name).await {
            Ok(Some(account)) => return Ok(account),
            Ok(None) => {}
            Err(e) => return Err(failed(e.message())),
        }
    }
    Err(failed(&format!("serviceaccount \"{name}\" not found")))
}

/// An object from the watch cache, or from storage when the cache has not seen it (yet).
/// None when neither has it.
pub(super) async fn fetch(
    state: &ApiState,
    group: &str,
    version: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    if let Some(found) = state.get(group, plural, namespace, name) {
        return Ok(Some((*found).clone()));
    }
    let Some(store) = state.store(group, version, plural) else {
        return Ok(None);
    };
    match store.get(namespace, name).await {
        Ok(found) => Ok(Some(found)),
        Err(RegistryError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub fn is_mirror_pod(pod: &Value) -> bool {
    pod["metadata"]["annotations"]
        .get(MIRROR_POD_ANNOTATION)
        .is_some()
}

/// The account a pod names: `serviceAccountName`, or the deprecated `serviceAccount` that
/// upstream's conversion reads when the former is empty.
fn service_account_name(pod: &Value) -> &str {
    let spec = &pod["spec"];
    [&spec["serviceAccountName"], &spec["serviceAccount"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|n| !n.is_empty())
        .unwrap_or_default()
}

/// Fills `spec.serviceAccountName` (from the deprecated field, else `default`) and returns it.
pub fn default_service_account_name(pod: &mut Value) -> String {
    let name = match service_account_name(pod) {
        "" => DEFAULT_SERVICE_ACCOUNT_NAME.to_string(),
        named => named.to_string(),
    };
    if let Some(spec) = child_object(pod, "spec") {
        spec.insert("serviceAccountName".into(), Value::from(name.clone()));
    }
    name
}

/// What a mirror pod may not do; the error is the reason of the 403.
pub fn check_mirror_pod(pod: &Value) -> Result<(), String> {
    if !service_account_name(pod).is_empty() {
        return Err("a mirror pod may not reference service accounts".into());
    }
    if references_secrets(pod) {
        return Err("a mirror pod may not reference secrets".into());
    }
    let projects_token = items(&pod["spec"]["volumes"]).any(|volume| {
        items(&volume["projected"]["sources"]).any(|source| {
            source
                .get("serviceAccountToken")
                .is_some_and(|t| !t.is_null())
        })
    });
    if projects_token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections".into());
    }
    Ok(())
}

/// Whether the pod names any secret: pull secrets, environment of any container, or a volume
/// source that reads one.
fn references_secrets(pod: &Value) -> bool {
    let spec = &pod["spec"];
    if items(&spec["imagePullSecrets"]).next().is_some() {
        return true;
    }
    let in_containers = all_containers(spec).any(|c| {
        items(&c["env"]).any(|e| is_set(&e["valueFrom"]["secretKeyRef"]))
            || items(&c["envFrom"]).any(|e| is_set(&e["secretRef"]))
    });
    if in_containers {
        return true;
    }
    items(&spec["volumes"]).any(|v| {
        is_set(&v["secret"])
            || is_set(&v["azureFile"])
            || [
                "cephfs",
                "cinder",
                "flexVolume",
                "rbd",
                "scaleIO",
                "iscsi",
                "storageos",
            ]
            .iter()
            .any(|source| is_set(&v[*source]["secretRef"]))
            || is_set(&v["csi"]["nodePublishSecretRef"])
            || items(&v["projected"]["sources"]).any(|s| is_set(&s["secret"]))
    })
}

/// The pod's choice, else the account's, else mount.
pub fn should_automount(account: &Value, pod: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"]
        .as_bool()
        .or_else(|| account["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

/// The projected volume upstream mounts: a bound token, the cluster CA and the namespace.
pub fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": PROJECTED_DEFAULT_MODE,
            "sources": [
                {"serviceAccountToken": {
                    "expirationSeconds": WARN_ONLY_TOKEN_EXPIRATION_SECONDS,
                    "path": "token",
                }},
                {"configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }},
                {"downwardAPI": {
                    "items": [{
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }],
                }},
            ],
        },
    })
}

/// Mounts the credentials volume in every init and regular container that has nothing at the
/// mount path, adding the volume (named by `new_name`) unless the pod already has one.
/// Ephemeral containers are added later through their own subresource and are left alone.
pub fn mount_service_account_token(pod: &mut Value, new_name: impl FnOnce() -> String) {
    let prefix = format!("{SERVICE_ACCOUNT_VOLUME_NAME}-");
    let existing = items(&pod["spec"]["volumes"])
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with(&prefix))
        .map(String::from);
    let volume_name = existing.clone().unwrap_or_else(new_name);
    let Some(spec) = child_object(pod, "spec") else {
        return;
    };
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut() {
            let has_mount = items(&container["volumeMounts"])
                .any(|m| m["mountPath"] == DEFAULT_API_TOKEN_MOUNT_PATH);
            if has_mount {
                continue;
            }
            if let Some(mounts) = child_array(container, "volumeMounts") {
                mounts.push(json!({
                    "name": volume_name,
                    "readOnly": true,
                    "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH,
                }));
                mounted = true;
            }
        }
    }
    if mounted
        && existing.is_none()
        && let Some(volumes) = map_child_array(spec, "volumes")
    {
        volumes.push(token_volume(&volume_name));
    }
}

/// A pod without pull secrets gets the account's.
pub fn copy_image_pull_secrets(account: &Value, pod: &mut Value) {
    if items(&pod["spec"]["imagePullSecrets"]).next().is_some() {
        return;
    }
    let secrets: Vec<Value> = items(&account["imagePullSecrets"])
        .map(|s| json!({"name": s["name"].as_str().unwrap_or_default()}))
        .collect();
    if secrets.is_empty() {
        return;
    }
    if let Some(spec) = child_object(pod, "spec") {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets));
    }
}

pub fn enforces_mountable_secrets(account: &Value) -> bool {
    account["metadata"]["annotations"][ENFORCE_MOUNTABLE_SECRETS_ANNOTATION]
        .as_str()
        .is_some_and(parse_go_bool)
}

/// Go's `strconv.ParseBool` accepting true (anything else, errors included, is false).
fn parse_go_bool(s: &str) -> bool {
    matches!(s, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

fn names(list: &Value) -> Vec<&str> {
    items(list).filter_map(|r| r["name"].as_str()).collect()
}

/// The pod may use only the secrets its account lists (volumes, environment of init and
/// regular containers) and only the pull secrets it lists; the error is the 403's reason.
pub fn limit_secret_references(account: &Value, pod: &Value) -> Result<(), String> {
    let account_name = account["metadata"]["name"].as_str().unwrap_or_default();
    let mountable = names(&account["secrets"]);
    let spec = &pod["spec"];
    for volume in items(&spec["volumes"]) {
        if !is_set(&volume["secret"]) {
            continue;
        }
        let secret = volume["secret"]["secretName"].as_str().unwrap_or_default();
        if !mountable.contains(&secret) {
            return Err(format!(
                "volume with secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
            ));
        }
    }
    for (list, what) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        check_container_env(&spec[list], what, &mountable, account_name)?;
    }
    let pullable = names(&account["imagePullSecrets"]);
    for (i, reference) in items(&spec["imagePullSecrets"]).enumerate() {
        let secret = reference["name"].as_str().unwrap_or_default();
        if !pullable.contains(&secret) {
            return Err(format!(
                "imagePullSecrets[{i}].name=\"{secret}\" is not allowed because service account {account_name} does not reference that imagePullSecret"
            ));
        }
    }
    Ok(())
}

/// The same limit for containers added through `pods/ephemeralcontainers`.
pub fn limit_ephemeral_container_secret_references(
    account: &Value,
    pod: &Value,
) -> Result<(), String> {
    let account_name = account["metadata"]["name"].as_str().unwrap_or_default();
    let mountable = names(&account["secrets"]);
    check_container_env(
        &pod["spec"]["ephemeralContainers"],
        "ephemeral container",
        &mountable,
        account_name,
    )
}

fn check_container_env(
    containers: &Value,
    what: &str,
    mountable: &[&str],
    account_name: &str,
) -> Result<(), String> {
    for container in items(containers) {
        let container_name = container["name"].as_str().unwrap_or_default();
        for env in items(&container["env"]) {
            let reference = &env["valueFrom"]["secretKeyRef"];
            if !is_set(reference) {
                continue;
            }
            let secret = reference["name"].as_str().unwrap_or_default();
            if !mountable.contains(&secret) {
                let env_name = env["name"].as_str().unwrap_or_default();
                return Err(format!(
                    "{what} {container_name} with envVar {env_name} referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
                ));
            }
        }
        for env_from in items(&container["envFrom"]) {
            let reference = &env_from["secretRef"];
            if !is_set(reference) {
                continue;
            }
            let secret = reference["name"].as_str().unwrap_or_default();
            if !mountable.contains(&secret) {
                return Err(format!(
                    "{what} {container_name} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
                ));
            }
        }
    }
    Ok(())
}

// --- JSON helpers shared by the pod plugins ------------------------------------------------

/// The elements of a JSON array (none for anything else).
pub(super) fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

/// Whether a field is present and not null (Go's non-nil pointer).
pub(super) fn is_set(field: &Value) -> bool {
    !field.is_null()
}

/// Init, regular and ephemeral containers of a pod spec.
pub(super) fn all_containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| items(&spec[list]))
}

/// The object field `key` of `parent`, created when absent or null. None when `parent` is not
/// an object or the field holds something else: the object is left for validation to refuse.
pub(super) fn child_object<'a>(
    parent: &'a mut Value,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let map = parent.as_object_mut()?;
    let child = map.entry(key).or_insert(Value::Null);
    if child.is_null() {
        *child = Value::Object(Map::new());
    }
    child.as_object_mut()
}

/// The array field `key` of `parent`, created when absent or null (None as for
/// [`child_object`]).
pub(super) fn child_array<'a>(parent: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    map_child_array(parent.as_object_mut()?, key)
}

/// [`child_array`] of a map.
pub(super) fn map_child_array<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Vec<Value>> {
    let child = map.entry(key).or_insert(Value::Null);
    if child.is_null() {
        *child = Value::Array(Vec::new());
    }
    child.as_array_mut()
}

/// An apiserver state over a throw-away embedded store, for the tests of this directory's
/// plugins that read other objects through it.
#[cfg(test)]
pub(super) mod fixture {
    use crate::admission::{Attributes, Operation};
    use crate::http::auth::user::UserInfo;
    use crate::test_support::{TestState, test_state, wait_cached};
    use serde_json::Value;
    use std::ops::Deref;

    /// The shared [`TestState`], with a helper storing objects and waiting for the caches.
    pub(crate) struct Fixture(TestState);

    impl Deref for Fixture {
        type Target = TestState;

        fn deref(&self) -> &TestState {
            &self.0
        }
    }

    pub async fn fixture() -> Fixture {
        Fixture(test_state().await)
    }

    impl Fixture {
        /// Stores `object` and waits until the watch cache has it (the plugins that list read
        /// only the cache).
        pub async fn create(
            &self,
            group: &str,
            plural: &str,
            namespace: Option<&str>,
            object: Value,
        ) {
            let info = api_types::registry::by_group_resource(group, plural).expect("resource");
            let name = object["metadata"]["name"]
                .as_str()
                .expect("name")
                .to_string();
            self.state
                .store(group, info.version, plural)
                .expect("store")
                .create(namespace, object)
                .await
                .expect("create");
            wait_cached(&self.state, group, plural, namespace, &name).await;
        }
    }

    pub fn attrs(op: Operation, group: &str, plural: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            operation: op,
            resource: api_types::registry::by_group_resource(group, plural).expect("resource"),
            subresource: String::new(),
            namespace: ns.to_string(),
            name: name.to_string(),
            user: UserInfo::default(),
            dry_run: false,
            warnings: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn account(extra: Value) -> Value {
        let mut sa = json!({"metadata": {"name": "sa", "namespace": "ns"}});
        if let (Some(sa), Some(extra)) = (sa.as_object_mut(), extra.as_object()) {
            sa.extend(extra.clone());
        }
        sa
    }

    #[test]
    fn defaults_the_account_name() {
        let mut p = pod(json!({"containers": [{"name": "c"}]}));
        assert_eq!(default_service_account_name(&mut p), "default");
        assert_eq!(p["spec"]["serviceAccountName"], "default");

        let mut p = pod(json!({"serviceAccount": "legacy"}));
        assert_eq!(default_service_account_name(&mut p), "legacy");
        assert_eq!(p["spec"]["serviceAccountName"], "legacy");

        let mut p = pod(json!({"serviceAccountName": "mine", "serviceAccount": "legacy"}));
        assert_eq!(default_service_account_name(&mut p), "mine");
    }

    #[test]
    fn automount_prefers_the_pod_then_the_account() {
        let off = json!({"automountServiceAccountToken": false});
        let on = json!({"automountServiceAccountToken": true});
        assert!(should_automount(&account(json!({})), &pod(json!({}))));
        assert!(!should_automount(&account(off.clone()), &pod(json!({}))));
        assert!(should_automount(&account(off.clone()), &pod(on.clone())));
        assert!(!should_automount(&account(on), &pod(off)));
    }

    #[test]
    fn mounts_the_projected_volume_in_init_and_regular_containers_only() {
        let mut p = pod(json!({
            "initContainers": [{"name": "i"}],
            "containers": [
                {"name": "a", "volumeMounts": [{"name": "x", "mountPath": "/x"}]},
                {"name": "b", "volumeMounts": [
                    {"name": "own", "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}
                ]},
            ],
            "ephemeralContainers": [{"name": "e"}],
        }));
        mount_service_account_token(&mut p, || "kube-api-access-abcde".into());
        let expected_mount = json!({
            "name": "kube-api-access-abcde",
            "readOnly": true,
            "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH,
        });
        let spec = &p["spec"];
        assert_eq!(
            spec["initContainers"][0]["volumeMounts"],
            json!([expected_mount])
        );
        assert_eq!(spec["containers"][0]["volumeMounts"][1], expected_mount);
        assert_eq!(
            spec["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        assert!(spec["ephemeralContainers"][0].get("volumeMounts").is_none());
        assert_eq!(
            spec["volumes"],
            json!([token_volume("kube-api-access-abcde")])
        );
        let sources = &spec["volumes"][0]["projected"]["sources"];
        assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
        assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
        assert_eq!(
            sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
            "metadata.namespace"
        );
        assert_eq!(spec["volumes"][0]["projected"]["defaultMode"], 420);
    }

    #[test]
    fn reuses_an_existing_credentials_volume_and_adds_none_when_nothing_mounts() {
        let mut p = pod(json!({
            "containers": [{"name": "a"}],
            "volumes": [{"name": "kube-api-access-zzzzz", "projected": {"sources": []}}],
        }));
        mount_service_account_token(&mut p, || panic!("no new name needed"));
        assert_eq!(
            p["spec"]["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-zzzzz"
        );
        assert_eq!(p["spec"]["volumes"].as_array().map(Vec::len), Some(1));

        let mut p = pod(json!({"containers": [{"name": "a", "volumeMounts": [
            {"name": "own", "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}
        ]}]}));
        mount_service_account_token(&mut p, || "kube-api-access-abcde".into());
        assert!(p["spec"].get("volumes").is_none());
    }

    #[test]
    fn generated_volume_names_fit_the_pattern() {
        let name = meta::generate_name(&format!("{SERVICE_ACCOUNT_VOLUME_NAME}-"));
        let suffix = name.strip_prefix("kube-api-access-").expect("prefix");
        assert_eq!(suffix.len(), 5);
        assert!(
            suffix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }

    #[test]
    fn copies_pull_secrets_only_to_pods_without_any() {
        let sa = account(json!({"imagePullSecrets": [{"name": "reg"}]}));
        let mut p = pod(json!({}));
        copy_image_pull_secrets(&sa, &mut p);
        assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "reg"}]));

        let mut p = pod(json!({"imagePullSecrets": [{"name": "own"}]}));
        copy_image_pull_secrets(&sa, &mut p);
        assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "own"}]));

        let mut p = pod(json!({}));
        copy_image_pull_secrets(&account(json!({})), &mut p);
        assert!(p["spec"].get("imagePullSecrets").is_none());
    }

    #[test]
    fn mirror_pods_may_not_use_accounts_secrets_or_tokens() {
        assert!(check_mirror_pod(&pod(json!({"containers": [{"name": "c"}]}))).is_ok());
        assert_eq!(
            check_mirror_pod(&pod(json!({"serviceAccountName": "default"}))),
            Err("a mirror pod may not reference service accounts".into())
        );
        let secret_users = [
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
            json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}]}),
            json!({"containers": [{"name": "c", "env": [
                {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
            ]}]}),
            json!({"imagePullSecrets": [{"name": "s"}]}),
            json!({"volumes": [{"name": "v", "csi": {"driver": "d",
                "nodePublishSecretRef": {"name": "s"}}}]}),
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]}),
        ];
        for spec in secret_users {
            assert_eq!(
                check_mirror_pod(&pod(spec.clone())),
                Err("a mirror pod may not reference secrets".into()),
                "{spec}"
            );
        }
        assert_eq!(
            check_mirror_pod(&pod(
                json!({"volumes": [token_volume("kube-api-access-x")]})
            )),
            Err("a mirror pod may not use ServiceAccountToken volume projections".into())
        );
        let mut mirror = pod(json!({}));
        mirror["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "hash"});
        assert!(is_mirror_pod(&mirror));
        assert!(!is_mirror_pod(&pod(json!({}))));
    }

    #[test]
    fn enforce_annotation_parses_like_go() {
        let annotated = |v: &str| {
            account(json!({"metadata": {"name": "sa", "annotations": {
                ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: v
            }}}))
        };
        assert!(enforces_mountable_secrets(&annotated("true")));
        assert!(enforces_mountable_secrets(&annotated("1")));
        assert!(!enforces_mountable_secrets(&annotated("yes")));
        assert!(!enforces_mountable_secrets(&account(json!({}))));
    }

    #[test]
    fn enforced_accounts_limit_the_secrets_pods_use() {
        let sa = account(json!({
            "secrets": [{"name": "allowed"}],
            "imagePullSecrets": [{"name": "reg"}],
        }));
        let ok = pod(json!({
            "volumes": [{"name": "v", "secret": {"secretName": "allowed"}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "allowed"}}]}],
            "imagePullSecrets": [{"name": "reg"}],
        }));
        assert_eq!(limit_secret_references(&sa, &ok), Ok(()));

        let volume = pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}));
        assert_eq!(
            limit_secret_references(&sa, &volume),
            Err("volume with secret.secretName=\"other\" is not allowed because service account sa does not reference that secret".into())
        );
        let init_env = pod(json!({"initContainers": [{"name": "i", "env": [
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}
        ]}]}));
        assert_eq!(
            limit_secret_references(&sa, &init_env),
            Err("init container i with envVar E referencing secret.secretName=\"other\" is not allowed because service account sa does not reference that secret".into())
        );
        let env_from = pod(json!({"containers": [{"name": "c", "envFrom": [
            {"secretRef": {"name": "other"}}
        ]}]}));
        assert_eq!(
            limit_secret_references(&sa, &env_from),
            Err("container c with envFrom referencing secret.secretName=\"other\" is not allowed because service account sa does not reference that secret".into())
        );
        let pull = pod(json!({"imagePullSecrets": [{"name": "reg"}, {"name": "nope"}]}));
        assert_eq!(
            limit_secret_references(&sa, &pull),
            Err("imagePullSecrets[1].name=\"nope\" is not allowed because service account sa does not reference that imagePullSecret".into())
        );
        let ephemeral = pod(json!({"ephemeralContainers": [{"name": "dbg", "env": [
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}
        ]}]}));
        assert_eq!(limit_secret_references(&sa, &ephemeral), Ok(()));
        assert_eq!(
            limit_ephemeral_container_secret_references(&sa, &ephemeral),
            Err("ephemeral container dbg with envVar E referencing secret.secretName=\"other\" is not allowed because service account sa does not reference that secret".into())
        );
    }

    #[test]
    fn child_helpers_create_but_never_overwrite() {
        let mut v = json!({"a": null, "b": 3});
        assert!(child_object(&mut v, "a").is_some());
        assert!(child_object(&mut v, "b").is_none());
        assert!(child_array(&mut v, "c").is_some());
        assert_eq!(v, json!({"a": {}, "b": 3, "c": []}));
    }

    mod through_the_state {
        use super::super::fixture::{attrs, fixture};
        use super::*;

        #[tokio::test]
        async fn admits_with_the_account_and_refuses_a_missing_one() {
            let f = fixture().await;
            f.create(
                "",
                "serviceaccounts",
                Some("ns"),
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "default", "namespace": "ns"},
                       "imagePullSecrets": [{"name": "reg"}]}),
            )
            .await;
            let plugin = ServiceAccount;
            let a = attrs(Operation::Create, "", "pods", "ns", "p");
            let mut p = pod(json!({"containers": [{"name": "c", "image": "busybox"}]}));
            plugin
                .admit(&a, &mut p, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(p["spec"]["serviceAccountName"], "default");
            assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "reg"}]));
            let volume = p["spec"]["volumes"][0]["name"].as_str().expect("volume");
            assert!(volume.starts_with("kube-api-access-"), "{volume}");
            assert_eq!(
                p["spec"]["containers"][0]["volumeMounts"][0]["name"],
                volume
            );
            plugin
                .validate(&a, Some(&p), None, &f.state)
                .await
                .expect("valid");

            let mut ghost = pod(json!({"serviceAccountName": "ghost"}));
            let err = plugin
                .admit(&a, &mut ghost, None, &f.state)
                .await
                .expect_err("refused");
            assert_eq!(err.code().as_u16(), 403);
            assert_eq!(
                err.message(),
                "pods \"p\" is forbidden: error looking up service account ns/ghost: serviceaccount \"ghost\" not found"
            );
        }

        #[tokio::test]
        async fn validation_requires_an_account_name() {
            let f = fixture().await;
            let a = attrs(Operation::Create, "", "pods", "ns", "p");
            let err = ServiceAccount
                .validate(&a, Some(&pod(json!({}))), None, &f.state)
                .await
                .expect_err("refused");
            assert_eq!(
                err.message(),
                "pods \"p\" is forbidden: no service account specified for pod ns/p"
            );
        }
    }
}
