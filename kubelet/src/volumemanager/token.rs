//! Projected service account tokens: requested through the TokenRequest API bound to the pod,
//! cached, and renewed as upstream's token manager does (past 80% of the lifetime, or older
//! than 24 hours, minus a jitter of up to 10 s).

use crate::envvars::ObjectSource;
use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
const MAX_JITTER_SECS: f64 = 10.0;
/// The API's default `expirationSeconds` and its minimum.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
pub const MIN_EXPIRATION_SECONDS: i64 = 600;

/// Whether a token issued for `expiration_seconds` and expiring at `expires` must be renewed
/// at `now`: older than 24 h, or within the last 20% of its lifetime (both `jitter` early).
pub fn requires_refresh(
    now: jiff::Timestamp,
    expires: jiff::Timestamp,
    expiration_seconds: i64,
    jitter: Duration,
) -> bool {
    let jitter = jiff::SignedDuration::try_from(jitter).unwrap_or_default();
    let issued = expires - jiff::SignedDuration::from_secs(expiration_seconds);
    let max_ttl = jiff::SignedDuration::try_from(MAX_TTL).unwrap_or_default();
    if now > issued + max_ttl - jitter {
        return true;
    }
    let tail = jiff::SignedDuration::from_secs(expiration_seconds * 20 / 100);
    now > expires - tail - jitter
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    namespace: String,
    service_account: String,
    audience: String,
    expiration_seconds: i64,
    pod_uid: String,
}

/// Tokens by (service account, audience, lifetime, pod).
#[derive(Default)]
pub struct TokenCache {
    tokens: Mutex<HashMap<Key, (String, jiff::Timestamp)>>,
}

impl TokenCache {
    /// The pod's token for `audience` (empty = the apiserver's audiences), requested anew when
    /// missing or due for renewal.
    pub async fn token(
        &self,
        source: &dyn ObjectSource,
        pod: &Pod,
        audience: &str,
        expiration_seconds: Option<i64>,
    ) -> anyhow::Result<String> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let service_account = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let expiration_seconds = expiration_seconds
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS)
            .max(MIN_EXPIRATION_SECONDS);
        let key = Key {
            namespace: namespace.clone(),
            service_account: service_account.clone(),
            audience: audience.to_string(),
            expiration_seconds,
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
        };
        let jitter = Duration::from_secs_f64(rand::random::<f64>() * MAX_JITTER_SECS);
        if let Some((token, expires)) = self.tokens.lock().get(&key)
            && !requires_refresh(jiff::Timestamp::now(), *expires, expiration_seconds, jitter)
        {
            return Ok(token.clone());
        }
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: if audience.is_empty() {
                    Vec::new()
                } else {
                    vec![audience.to_string()]
                },
                expiration_seconds: Some(expiration_seconds),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".to_string()),
                    kind: Some("Pod".to_string()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            ..Default::default()
        };
        let answer = source
            .create_token(&namespace, &service_account, &request)
            .await?;
        let status = answer
            .status
            .context("the token request came back without a status")?;
        let expires = status.expiration_timestamp.0;
        self.tokens
            .lock()
            .insert(key, (status.token.clone(), expires));
        Ok(status.token)
    }

    /// Forgets the tokens of a pod that is gone.
    pub fn forget_pod(&self, pod_uid: &str) {
        self.tokens.lock().retain(|k, _| k.pod_uid != pod_uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_timing() {
        let issued: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |secs: i64| issued + jiff::SignedDuration::from_secs(secs);
        let none = Duration::ZERO;
        // (lifetime, now since issue, jitter, refresh?)
        let cases = [
            (3600, 0, none, false),
            (3600, 2879, none, false),
            (3600, 2880, none, false),
            (3600, 2881, none, true),
            (3600, 2875, Duration::from_secs(10), true),
            (3600, 4000, none, true),
            (600, 479, none, false),
            (600, 481, none, true),
            // A 48 h token is renewed after 24 h, before reaching 80%.
            (172_800, 86_399, none, false),
            (172_800, 86_401, none, true),
            (172_800, 86_395, Duration::from_secs(10), true),
        ];
        for (lifetime, since, jitter, want) in cases {
            let expires = at(lifetime);
            assert_eq!(
                requires_refresh(at(since), expires, lifetime, jitter),
                want,
                "lifetime {lifetime} at {since} jitter {jitter:?}"
            );
        }
    }

    #[tokio::test]
    async fn tokens_are_cached_bound_and_renewed() {
        use crate::envvars::tests::FakeSource;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let source = FakeSource::default();
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let cache = TokenCache::default();
        let t1 = cache.token(&source, &pod, "api", Some(100)).await.unwrap();
        let t2 = cache.token(&source, &pod, "api", Some(100)).await.unwrap();
        assert_eq!(t1, t2, "a fresh token is reused");
        let t3 = cache.token(&source, &pod, "other", None).await.unwrap();
        assert_ne!(t1, t3, "another audience is another token");
        {
            let log = source.token_requests.lock();
            assert_eq!(log.len(), 2);
            let (ns, sa, req) = &log[0];
            assert_eq!((ns.as_str(), sa.as_str()), ("ns", "default"));
            assert_eq!(
                req.spec.expiration_seconds,
                Some(600),
                "clamped to the minimum"
            );
            assert_eq!(req.spec.audiences, vec!["api".to_string()]);
            let bound = req.spec.bound_object_ref.as_ref().unwrap();
            assert_eq!(bound.kind.as_deref(), Some("Pod"));
            assert_eq!(bound.uid.as_deref(), Some("u1"));
            assert_eq!(log[1].2.spec.expiration_seconds, Some(3600));
        }
        // Age the cached token past 80% of its life: the next use renews it.
        for (_, (_, expires)) in cache.tokens.lock().iter_mut() {
            *expires = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(60);
        }
        let t4 = cache.token(&source, &pod, "api", Some(100)).await.unwrap();
        assert_ne!(t1, t4);
        cache.forget_pod("u1");
        assert!(cache.tokens.lock().is_empty());
    }
}
