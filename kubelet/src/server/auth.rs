//! Who is asking and whether they may: client certificates (verified by the TLS layer against
//! `authentication.x509.clientCAFile`), bearer tokens through TokenReview, the anonymous user
//! when enabled; then AlwaysAllow or SubjectAccessReview on `nodes/<subresource>`, with the
//! reviews cached as upstream's webhook authenticator and authorizer do.

use super::attributes::{self, Attributes};
use super::http::{Body, error};
use super::review::Reviewer;
use component_base::serving::PeerCertificates;
use http::{Response, StatusCode, header};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use x509_parser::prelude::{FromDer, X509Certificate};

/// How the secure port authorizes (`authorization.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizationMode {
    #[default]
    AlwaysAllow,
    Webhook,
}

/// The KubeletConfiguration's `authentication` and `authorization` stanzas.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `authentication.anonymous.enabled`.
    pub anonymous: bool,
    /// `authentication.x509.clientCAFile`: client certificates are asked for and verified.
    pub client_ca_file: Option<PathBuf>,
    /// `authentication.webhook.enabled`: bearer tokens through TokenReview.
    pub webhook_authentication: bool,
    /// `authentication.webhook.cacheTTL` (2 min).
    pub token_cache_ttl: Duration,
    pub authorization: AuthorizationMode,
    /// `authorization.webhook.cacheAuthorizedTTL` (5 min) and `cacheUnauthorizedTTL` (30 s).
    pub authorized_ttl: Duration,
    pub unauthorized_ttl: Duration,
}

impl Default for AuthConfig {
    /// Upstream's v1beta1 defaults.
    fn default() -> Self {
        Self {
            anonymous: false,
            client_ca_file: None,
            webhook_authentication: true,
            token_cache_ttl: Duration::from_secs(120),
            authorization: AuthorizationMode::Webhook,
            authorized_ttl: Duration::from_secs(300),
            unauthorized_ttl: Duration::from_secs(30),
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

type Expiring<T> = Mutex<HashMap<T, (Instant, bool)>>;

/// The secure port's authentication and authorization.
pub struct ServerAuth {
    config: AuthConfig,
    reviewer: Option<Arc<dyn Reviewer>>,
    tokens: Mutex<HashMap<String, (Instant, Option<UserInfo>)>>,
    decisions: Expiring<(UserInfo, Attributes)>,
}

impl ServerAuth {
    /// `reviewer` answers TokenReviews and SubjectAccessReviews (the apiserver); it is needed
    /// when webhook authentication or authorization is on.
    pub fn new(config: AuthConfig, reviewer: Option<Arc<dyn Reviewer>>) -> anyhow::Result<Self> {
        let needs_reviewer =
            config.webhook_authentication || config.authorization == AuthorizationMode::Webhook;
        if needs_reviewer && reviewer.is_none() {
            anyhow::bail!(
                "webhook authentication or authorization needs a client of the apiserver \
                 (--kubeconfig)"
            );
        }
        Ok(Self {
            config,
            reviewer,
            tokens: Mutex::default(),
            decisions: Mutex::default(),
        })
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// The TLS policy with the client CA added, for the secure listener.
    pub fn tls_settings(
        &self,
        base: component_base::serving::TlsSettings,
    ) -> anyhow::Result<component_base::serving::TlsSettings> {
        match &self.config.client_ca_file {
            Some(path) => base.with_client_ca_file(path),
            None => Ok(base),
        }
    }

    /// Ok with the caller, or the 401 to answer.
    pub async fn authenticate(
        &self,
        extensions: &http::Extensions,
        headers: &http::HeaderMap,
    ) -> Result<UserInfo, Response<Body>> {
        if self.config.client_ca_file.is_some()
            && let Some(user) = extensions
                .get::<PeerCertificates>()
                .and_then(|chain| user_from_certificate(chain.0.first()?.as_ref()))
        {
            return Ok(user);
        }
        if let Some(token) = bearer_token(headers)
            && self.config.webhook_authentication
        {
            return match self.review_token(token).await {
                Some(user) => Ok(user),
                None => Err(unauthorized()),
            };
        }
        if self.config.anonymous {
            return Ok(UserInfo {
                name: "system:anonymous".into(),
                groups: vec!["system:unauthenticated".into()],
                ..Default::default()
            });
        }
        Err(unauthorized())
    }

    async fn review_token(&self, token: &str) -> Option<UserInfo> {
        let now = Instant::now();
        if let Some((at, user)) = self.tokens.lock().get(token)
            && now.duration_since(*at) < self.config.token_cache_ttl
        {
            return user.clone();
        }
        let reviewer = self.reviewer.as_ref()?;
        match reviewer.review_token(token).await {
            Ok(user) => {
                let mut tokens = self.tokens.lock();
                tokens.retain(|_, (at, _)| now.duration_since(*at) < self.config.token_cache_ttl);
                tokens.insert(token.to_string(), (now, user.clone()));
                user
            }
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), "TokenReview failed");
                None
            }
        }
    }

    /// Ok when `user` may send `method` to `path`, or the 403 (500 when the review failed).
    pub async fn authorize(
        &self,
        user: &UserInfo,
        method: &http::Method,
        path: &str,
        node_name: &str,
    ) -> Result<(), Response<Body>> {
        if self.config.authorization == AuthorizationMode::AlwaysAllow {
            return Ok(());
        }
        let attrs = attributes::for_request(method, path, node_name);
        for attr in &attrs {
            match self.decide(user, attr).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(err) => {
                    tracing::error!(error = %format!("{err:#}"), user = %user.name, "authorization error");
                    return Err(error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!(
                            "Authorization error (user={}, verb={}, resource=nodes, subresource={})",
                            user.name, attr.verb, attr.subresource
                        ),
                    ));
                }
            }
        }
        let subs: Vec<&str> = attrs.iter().map(|a| a.subresource.as_str()).collect();
        let verb = attrs.first().map(|a| a.verb.as_str()).unwrap_or_default();
        Err(forbidden(&user.name, verb, &subs))
    }

    async fn decide(&self, user: &UserInfo, attr: &Attributes) -> anyhow::Result<bool> {
        let key = (user.clone(), attr.clone());
        let now = Instant::now();
        if let Some((until, allowed)) = self.decisions.lock().get(&key)
            && now < *until
        {
            return Ok(*allowed);
        }
        let Some(reviewer) = &self.reviewer else {
            anyhow::bail!("no SubjectAccessReview client");
        };
        let allowed = reviewer.review_access(user, attr).await?;
        let ttl = if allowed {
            self.config.authorized_ttl
        } else {
            self.config.unauthorized_ttl
        };
        let mut decisions = self.decisions.lock();
        decisions.retain(|_, (until, _)| now < *until);
        decisions.insert(key, (now + ttl, allowed));
        Ok(allowed)
    }
}

fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The user a verified client certificate names: CommonName, Organizations as groups.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    if let Ok(Some(eku)) = cert.extended_key_usage()
        && !eku.value.client_auth
        && !eku.value.any
    {
        return None;
    }
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .last()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    groups.push("system:authenticated".into());
    Some(UserInfo {
        name,
        groups,
        ..Default::default()
    })
}

pub fn unauthorized() -> Response<Body> {
    error(StatusCode::UNAUTHORIZED, "Unauthorized")
}

/// Upstream's 403 text, listing every subresource that was checked.
pub fn forbidden(user: &str, verb: &str, subresources: &[&str]) -> Response<Body> {
    error(
        StatusCode::FORBIDDEN,
        format!(
            "Forbidden (user={user}, verb={verb}, resource=nodes, subresource(s)=[{}])",
            subresources.join(" ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Counting {
        tokens: AtomicUsize,
        reviews: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Reviewer for Counting {
        async fn review_token(&self, token: &str) -> anyhow::Result<Option<UserInfo>> {
            self.tokens.fetch_add(1, Ordering::SeqCst);
            Ok((token == "good").then(|| UserInfo {
                name: "alice".into(),
                ..Default::default()
            }))
        }
        async fn review_access(&self, user: &UserInfo, attr: &Attributes) -> anyhow::Result<bool> {
            self.reviews.fetch_add(1, Ordering::SeqCst);
            Ok(user.name == "alice" && attr.subresource == "proxy")
        }
    }

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    #[tokio::test]
    async fn tokens_anonymous_and_reviews_are_decided_and_cached() {
        let reviewer = Arc::new(Counting::default());
        let auth = ServerAuth::new(AuthConfig::default(), Some(reviewer.clone())).unwrap();
        let ext = http::Extensions::new();
        let cases: &[(Option<&str>, Option<&str>)] = &[
            (None, None),
            (Some("Bearer bad"), None),
            (Some("Basic abc"), None),
            (Some("Bearer good"), Some("alice")),
            (Some("bearer good"), Some("alice")),
        ];
        for (header, want) in cases {
            let got = auth.authenticate(&ext, &headers(*header)).await;
            assert_eq!(
                got.ok().map(|u| u.name),
                want.map(str::to_string),
                "{header:?}"
            );
        }
        // "good" was reviewed once, then cached; "bad" once.
        assert_eq!(reviewer.tokens.load(Ordering::SeqCst), 2);

        let alice = auth
            .authenticate(&ext, &headers(Some("Bearer good")))
            .await
            .unwrap();
        assert!(
            auth.authorize(&alice, &http::Method::POST, "/exec/a/b/c", "n1")
                .await
                .is_ok()
        );
        assert!(
            auth.authorize(&alice, &http::Method::POST, "/exec/a/b/c", "n1")
                .await
                .is_ok()
        );
        assert_eq!(reviewer.reviews.load(Ordering::SeqCst), 1, "cached");
        // /pods asks `pods` first, then falls back to `proxy`.
        assert!(
            auth.authorize(&alice, &http::Method::GET, "/pods", "n1")
                .await
                .is_ok()
        );
        assert_eq!(reviewer.reviews.load(Ordering::SeqCst), 3);
        let denied = auth
            .authorize(&alice, &http::Method::GET, "/stats/summary", "n1")
            .await
            .unwrap_err();
        assert_eq!(denied.status(), StatusCode::FORBIDDEN);

        let anonymous = ServerAuth::new(
            AuthConfig {
                anonymous: true,
                ..Default::default()
            },
            Some(reviewer),
        )
        .unwrap();
        let user = anonymous.authenticate(&ext, &headers(None)).await.unwrap();
        assert_eq!(user.name, "system:anonymous");
        assert!(
            anonymous
                .authenticate(&ext, &headers(Some("Bearer bad")))
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn forbidden_lists_the_checked_subresources() {
        use http_body_util::BodyExt;
        let body = forbidden("bob", "get", &["pods", "proxy"])
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(
            body,
            "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
        );
    }
}
