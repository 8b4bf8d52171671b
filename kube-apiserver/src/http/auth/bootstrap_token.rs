//! Bootstrap tokens (`--enable-bootstrap-token-auth`), as upstream's authenticator: a token
//! `<id>.<secret>` is good while the secret `kube-system/bootstrap-token-<id>` holds it, allows
//! authentication, and has not expired. Joining nodes use them to ask for their certificates.
//!
//! As upstream's, a token of the bootstrap shape that no valid secret matches is simply not
//! recognised (the request is then `invalid bearer token` if no other source takes it), so
//! nothing tells a caller which token ids exist.

use super::authenticator::{TokenAuthenticator, TokenUser};
use super::service_account::constant_time_eq;
use super::user::UserInfo;
use crate::registry::ObjectLookup;
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Where bootstrap token secrets live.
pub const BOOTSTRAP_TOKEN_NAMESPACE: &str = "kube-system";
/// A bootstrap token secret's name is this prefix and the token id.
pub const BOOTSTRAP_TOKEN_SECRET_PREFIX: &str = "bootstrap-token-";
/// The type of bootstrap token secrets.
pub const BOOTSTRAP_TOKEN_SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// A bootstrap token's user name is this prefix and the token id.
pub const BOOTSTRAP_USER_PREFIX: &str = "system:bootstrap:";
/// The group of every bootstrap token user, and the prefix of the extra groups allowed.
pub const BOOTSTRAP_DEFAULT_GROUP: &str = "system:bootstrappers";

/// Authenticates bootstrap tokens against their secrets.
pub struct BootstrapTokenAuthenticator {
    lookup: Arc<dyn ObjectLookup>,
    /// `--api-audiences`: bootstrap tokens are good for the apiserver only.
    api_audiences: Vec<String>,
}

impl BootstrapTokenAuthenticator {
    /// Reads the token secrets from `lookup` (the watch caches).
    pub fn new(lookup: Arc<dyn ObjectLookup>) -> Self {
        BootstrapTokenAuthenticator {
            lookup,
            api_audiences: Vec::new(),
        }
    }

    /// Sets `--api-audiences`: a token is then good only for a caller accepting one of them
    /// (upstream's wrapping of audience-agnostic token sources). Without, it is good for
    /// whatever the caller accepts.
    pub fn with_api_audiences(mut self, audiences: Vec<String>) -> Self {
        self.api_audiences = audiences;
        self
    }

    /// The audiences a token is good for among `requested`; None when none.
    fn audiences_for(&self, requested: &[String]) -> Option<Vec<String>> {
        if self.api_audiences.is_empty() {
            return Some(requested.to_vec());
        }
        if requested.is_empty() {
            return Some(self.api_audiences.clone());
        }
        let granted: Vec<String> = self
            .api_audiences
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        (!granted.is_empty()).then_some(granted)
    }

    fn authenticate_at(&self, token: &str, now: jiff::Timestamp) -> Option<UserInfo> {
        let (id, secret) = parse_token(token)?;
        let secret_name = format!("{BOOTSTRAP_TOKEN_SECRET_PREFIX}{id}");
        let Some(object) =
            self.lookup
                .get("", "secrets", Some(BOOTSTRAP_TOKEN_NAMESPACE), &secret_name)
        else {
            tracing::debug!(secret = %secret_name, "no secret matches the bootstrap token");
            return None;
        };
        // Reasons name the secret, never the token.
        let refuse = |why: &str| {
            tracing::debug!(secret = %secret_name, "bootstrap token secret {why}");
            None
        };
        if object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return refuse("is deleted and awaiting removal");
        }
        if object.get("type").and_then(Value::as_str) != Some(BOOTSTRAP_TOKEN_SECRET_TYPE) {
            return refuse("has the wrong type");
        }
        let stored_secret = data(&object, "token-secret").unwrap_or_default();
        if !constant_time_eq(stored_secret.as_bytes(), secret.as_bytes()) {
            return refuse("has another token-secret");
        }
        if data(&object, "token-id").as_deref() != Some(id) {
            return refuse("has another token-id");
        }
        if has_expired(&object, now) {
            return refuse("has expired");
        }
        if data(&object, "usage-bootstrap-authentication").as_deref() != Some("true") {
            return refuse("is not marked usage-bootstrap-authentication=true");
        }
        let Some(groups) = groups(&object) else {
            return refuse("has invalid auth-extra-groups");
        };
        Some(UserInfo {
            name: format!("{BOOTSTRAP_USER_PREFIX}{id}"),
            groups,
            ..Default::default()
        })
    }
}

#[async_trait]
impl TokenAuthenticator for BootstrapTokenAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, String> {
        let Some(audiences) = self.audiences_for(audiences) else {
            return Ok(None);
        };
        Ok(self
            .authenticate_at(token, jiff::Timestamp::now())
            .map(|user| TokenUser { user, audiences }))
    }
}

/// The id and secret of a token of the form `[a-z0-9]{6}.[a-z0-9]{16}`.
fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// A value of the secret's `data` (base64 in JSON).
fn data(secret: &Value, key: &str) -> Option<String> {
    let encoded = secret.pointer(&format!("/data/{key}"))?.as_str()?;
    String::from_utf8(STANDARD.decode(encoded).ok()?).ok()
}

/// Whether the secret's `expiration` (RFC 3339) has passed; one that cannot be read counts
/// as expired, as upstream's.
fn has_expired(secret: &Value, now: jiff::Timestamp) -> bool {
    match data(secret, "expiration") {
        None => false,
        Some(expiration) if expiration.is_empty() => false,
        Some(expiration) => expiration
            .parse::<jiff::Timestamp>()
            .map_or(true, |at| now > at),
    }
}

/// `system:bootstrappers` and the `auth-extra-groups`, sorted and without duplicates; None
/// when an extra group is not a `system:bootstrappers:` group.
fn groups(secret: &Value) -> Option<Vec<String>> {
    let mut groups = BTreeSet::from([BOOTSTRAP_DEFAULT_GROUP.to_string()]);
    let extra = data(secret, "auth-extra-groups").unwrap_or_default();
    if !extra.is_empty() {
        for group in extra.split(',') {
            if !valid_extra_group(group) {
                return None;
            }
            groups.insert(group.to_string());
        }
    }
    Some(groups.into_iter().collect())
}

/// `system:bootstrappers:` then `[a-z0-9:-]{0,255}` ending in `[a-z0-9]`.
fn valid_extra_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 256
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::auth::service_account::tests::FakeLookup;
    use serde_json::json;

    const TOKEN: &str = "abcdef.0123456789abcdef";

    fn secret(fields: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(STANDARD.encode(v))))
            .collect();
        json!({
            "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
            "type": BOOTSTRAP_TOKEN_SECRET_TYPE,
            "data": data,
        })
    }

    fn valid_fields() -> Vec<(&'static str, &'static str)> {
        vec![
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
            ("expiration", "2030-01-01T00:00:00Z"),
            (
                "auth-extra-groups",
                "system:bootstrappers:worker,system:bootstrappers:kubeadm:default-node-token",
            ),
        ]
    }

    fn with(secret_object: Value) -> BootstrapTokenAuthenticator {
        let lookup = Arc::new(FakeLookup::default());
        lookup.put("secrets", Some("kube-system"), secret_object);
        BootstrapTokenAuthenticator::new(lookup)
    }

    fn at(ts: &str) -> jiff::Timestamp {
        ts.parse().expect("timestamp")
    }

    #[tokio::test]
    async fn a_valid_token_is_its_bootstrap_user() {
        let authn = with(secret(&valid_fields()));
        let found = authn
            .authenticate_token(TOKEN, &["api".to_string()])
            .await
            .expect("no error")
            .expect("user");
        assert_eq!(found.audiences, vec!["api"]);
        assert_eq!(found.user.name, "system:bootstrap:abcdef");
        assert_eq!(found.user.uid, "");
        assert_eq!(
            found.user.groups,
            vec![
                "system:bootstrappers",
                "system:bootstrappers:kubeadm:default-node-token",
                "system:bootstrappers:worker",
            ]
        );
    }

    #[tokio::test]
    async fn with_api_audiences_a_token_is_for_the_apiserver_only() {
        let authn = with(secret(&valid_fields())).with_api_audiences(vec!["api".into()]);
        let granted = |asked: &[&str]| {
            let asked: Vec<String> = asked.iter().map(|s| s.to_string()).collect();
            let authn = &authn;
            async move {
                authn
                    .authenticate_token(TOKEN, &asked)
                    .await
                    .expect("no error")
                    .map(|found| found.audiences)
            }
        };
        assert_eq!(
            granted(&["vault", "api"]).await,
            Some(vec!["api".to_string()])
        );
        assert_eq!(granted(&[]).await, Some(vec!["api".to_string()]));
        assert_eq!(granted(&["vault"]).await, None);
    }

    #[test]
    fn tokens_of_other_shapes_are_not_ours() {
        let authn = with(secret(&valid_fields()));
        let now = at("2026-01-01T00:00:00Z");
        assert!(authn.authenticate_at(TOKEN, now).is_some());
        for token in [
            "abcdef0123456789abcdef",
            "abcde.0123456789abcdef",
            "abcdef.0123456789abcde",
            "ABCDEF.0123456789abcdef",
            "abcdef.0123456789abcdef.x",
            "abcdef.0123456789abcdeF",
        ] {
            assert_eq!(authn.authenticate_at(token, now), None, "{token}");
        }
        // Another id: no secret of that name.
        assert_eq!(authn.authenticate_at("zzzzzz.0123456789abcdef", now), None);
    }

    #[test]
    fn the_secret_must_match_allow_authentication_and_be_current() {
        let now = at("2026-01-01T00:00:00Z");
        type Change = Box<dyn Fn(&mut Vec<(&'static str, &'static str)>)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "other secret",
                Box::new(|f| f[1] = ("token-secret", "0123456789abcdee")),
            ),
            ("other id", Box::new(|f| f[0] = ("token-id", "abcdeg"))),
            (
                "usage false",
                Box::new(|f| f[2] = ("usage-bootstrap-authentication", "false")),
            ),
            (
                "no usage",
                Box::new(|f| {
                    f.remove(2);
                }),
            ),
            (
                "expired",
                Box::new(|f| f[3] = ("expiration", "2025-12-31T23:59:59Z")),
            ),
            (
                "unreadable expiration",
                Box::new(|f| f[3] = ("expiration", "tomorrow")),
            ),
            (
                "extra group outside system:bootstrappers:",
                Box::new(|f| f[4] = ("auth-extra-groups", "system:masters")),
            ),
            (
                "extra group ending badly",
                Box::new(|f| f[4] = ("auth-extra-groups", "system:bootstrappers:x-")),
            ),
        ];
        for (what, change) in cases {
            let mut fields = valid_fields();
            change(&mut fields);
            let authn = with(secret(&fields));
            assert_eq!(authn.authenticate_at(TOKEN, now), None, "{what}");
        }

        let mut no_expiration = valid_fields();
        no_expiration.remove(3);
        assert!(
            with(secret(&no_expiration))
                .authenticate_at(TOKEN, now)
                .is_some()
        );

        let mut wrong_type = secret(&valid_fields());
        wrong_type["type"] = json!("Opaque");
        assert_eq!(with(wrong_type).authenticate_at(TOKEN, now), None);

        let mut deleting = secret(&valid_fields());
        deleting["metadata"]["deletionTimestamp"] = json!("2025-12-31T00:00:00Z");
        assert_eq!(with(deleting).authenticate_at(TOKEN, now), None);
    }
}
