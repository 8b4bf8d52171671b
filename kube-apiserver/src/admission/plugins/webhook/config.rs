//! The webhooks of `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration` objects
//! (admissionregistration.k8s.io/v1), read from the watch caches on every request, with v1's
//! defaults applied where a stored object leaves a field out.

use crate::registry::ObjectLookup;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use api_types::labels::Selector;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// The group of the configuration objects; its resources are never sent to webhooks.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// Which configurations to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Mutating,
    Validating,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// One rule of a webhook: the request matches when every list matches.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(default)]
    pub operations: Vec<String>,
    #[serde(default)]
    pub api_groups: Vec<String>,
    #[serde(default)]
    pub api_versions: Vec<String>,
    #[serde(default)]
    pub resources: Vec<String>,
    /// `Cluster`, `Namespaced` or `*` (v1's default).
    pub scope: Option<String>,
}

/// Where the webhook is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `clientConfig.url`: `https://host[:port]/path`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook of a configuration, ready to match and call.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub name: String,
    pub endpoint: Endpoint,
    /// PEM certificates the webhook's serving certificate must chain to; None: system roots.
    pub ca_bundle: Option<Vec<u8>>,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`; v1 defaults to `Fail`.
    pub ignore_failures: bool,
    /// `matchPolicy: Exact`; v1 defaults to `Equivalent`.
    pub exact: bool,
    pub namespace_selector: Selector,
    pub object_selector: Selector,
    /// The namespace selector would not parse: upstream fails every matching request.
    pub namespace_selector_error: Option<String>,
    pub side_effects: Option<String>,
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke_if_needed: bool,
    /// `admissionReviewVersions`, in the webhook's order of preference.
    pub review_versions: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawServiceRef {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    path: Option<String>,
    port: Option<u16>,
}

/// A webhook's `clientConfig` as admission configurations and CRD conversion
/// (`spec.conversion.webhook.clientConfig`) both spell it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RawClientConfig {
    url: Option<String>,
    service: Option<RawServiceRef>,
    ca_bundle: Option<String>,
}

impl RawClientConfig {
    /// Where to call (a service defaults to port 443 and path `/`) and the decoded `caBundle`
    /// (None: system roots).
    pub fn into_parts(self) -> (Endpoint, Option<Vec<u8>>) {
        let endpoint = match (self.url, self.service) {
            (Some(url), _) => Endpoint::Url(url),
            (None, service) => {
                let s = service.unwrap_or_default();
                Endpoint::Service {
                    namespace: s.namespace,
                    name: s.name,
                    path: s.path.unwrap_or_else(|| "/".to_string()),
                    port: s.port.unwrap_or(443),
                }
            }
        };
        // A bundle that is not base64 verifies nothing; an empty one means "system roots".
        let ca_bundle = self.ca_bundle.filter(|b| !b.is_empty()).map(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .unwrap_or_default()
        });
        (endpoint, ca_bundle)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWebhook {
    name: String,
    #[serde(default)]
    client_config: RawClientConfig,
    #[serde(default)]
    rules: Vec<Rule>,
    failure_policy: Option<String>,
    match_policy: Option<String>,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    side_effects: Option<String>,
    timeout_seconds: Option<i64>,
    reinvocation_policy: Option<String>,
    admission_review_versions: Option<Vec<String>>,
}

/// v1's default and upper bound of `timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: i64 = 10;
const MAX_TIMEOUT_SECONDS: i64 = 30;

impl Webhook {
    fn from_raw(raw: RawWebhook) -> Self {
        let (endpoint, ca_bundle) = raw.client_config.into_parts();
        // A nil selector in v1 defaults to `{}`, which matches everything.
        let everything = LabelSelector::default();
        let namespace_selector = Selector::from_label_selector(Some(
            raw.namespace_selector.as_ref().unwrap_or(&everything),
        ));
        let (namespace_selector, namespace_selector_error) = match namespace_selector {
            Ok(s) => (s, None),
            Err(e) => (Selector::nothing(), Some(e.to_string())),
        };
        // Upstream treats an unparsable object selector as "does not match".
        let object_selector = Selector::from_label_selector(Some(
            raw.object_selector.as_ref().unwrap_or(&everything),
        ))
        .unwrap_or_else(|_| Selector::nothing());
        let timeout = raw
            .timeout_seconds
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TIMEOUT_SECONDS);
        Webhook {
            name: raw.name,
            endpoint,
            ca_bundle,
            rules: raw.rules,
            ignore_failures: raw.failure_policy.as_deref() == Some("Ignore"),
            exact: raw.match_policy.as_deref() == Some("Exact"),
            namespace_selector,
            object_selector,
            namespace_selector_error,
            side_effects: raw.side_effects,
            timeout: Duration::from_secs(timeout.unsigned_abs()),
            reinvoke_if_needed: raw.reinvocation_policy.as_deref() == Some("IfNeeded"),
            // Required in v1; an object stored without it predates v1, where v1beta1 was the
            // only version.
            review_versions: raw
                .admission_review_versions
                .unwrap_or_else(|| vec!["v1beta1".to_string()]),
        }
    }
}

/// The webhooks of every configuration of `kind`, configurations in name order (upstream's
/// order), webhooks in their order within a configuration. A webhook the cache holds in a
/// shape we cannot read is skipped: the write path validated it, so this is only a race with
/// an older stored encoding.
pub fn webhooks(lookup: &dyn ObjectLookup, kind: Kind) -> Vec<Webhook> {
    let mut configs = lookup.list(GROUP, kind.plural(), None, &|_| true);
    configs.sort_by(|a, b| {
        let name = |v: &Value| {
            v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        name(a).cmp(&name(b))
    });
    let mut out = Vec::new();
    for config in configs {
        for hook in config["webhooks"].as_array().into_iter().flatten() {
            match RawWebhook::deserialize(hook) {
                Ok(raw) => out.push(Webhook::from_raw(raw)),
                Err(e) => tracing::warn!(
                    config = config["metadata"]["name"].as_str().unwrap_or_default(),
                    error = %e,
                    "skipping an unreadable admission webhook"
                ),
            }
        }
    }
    out
}

/// A webhook parsed from its JSON (tests and callers holding a single webhook).
pub fn parse(hook: &Value) -> Result<Webhook, String> {
    RawWebhook::deserialize(hook)
        .map(Webhook::from_raw)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_defaults_apply_to_left_out_fields() {
        let hook = parse(&json!({
            "name": "a.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        }))
        .unwrap();
        assert_eq!(
            hook.endpoint,
            Endpoint::Service {
                namespace: "ns".into(),
                name: "svc".into(),
                path: "/".into(),
                port: 443
            }
        );
        assert!(!hook.ignore_failures);
        assert!(!hook.exact);
        assert!(!hook.reinvoke_if_needed);
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert!(hook.namespace_selector.is_empty());
        assert!(hook.object_selector.is_empty());
        assert_eq!(hook.ca_bundle, None);
        assert_eq!(hook.review_versions, ["v1beta1"]);
    }

    #[test]
    fn explicit_fields_are_read() {
        let hook = parse(&json!({
            "name": "b.example.com",
            "clientConfig": {"url": "https://h:8443/x", "caBundle": "cGVt"},
            "failurePolicy": "Ignore",
            "matchPolicy": "Exact",
            "timeoutSeconds": 99,
            "reinvocationPolicy": "IfNeeded",
            "sideEffects": "None",
            "objectSelector": {"matchLabels": {"a": "b"}},
        }))
        .unwrap();
        assert_eq!(hook.endpoint, Endpoint::Url("https://h:8443/x".into()));
        assert_eq!(hook.ca_bundle.as_deref(), Some(&b"pem"[..]));
        assert!(hook.ignore_failures && hook.exact && hook.reinvoke_if_needed);
        assert_eq!(hook.timeout, Duration::from_secs(30));
        assert_eq!(hook.side_effects.as_deref(), Some("None"));
        assert!(!hook.object_selector.is_empty());
    }
}
