//! Request authentication as upstream's union: a client certificate (verified against
//! `--client-ca-file` during the TLS handshake), then bearer tokens (the token file, service
//! account JWTs, bootstrap tokens; the first that recognises the token wins), then anonymous.

use async_trait::async_trait;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use std::sync::Arc;

use super::token_file::TokenFile;
use super::user::UserInfo;

/// Why a request's credentials were refused (a 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthenticationError {
    /// A bearer token was presented that no token source accepts.
    #[error("invalid bearer token")]
    InvalidToken,
    /// A token source recognised the token and refused it (expired, wrong audience, ...).
    #[error("invalid bearer token, {0}")]
    RefusedToken(String),
    /// A client certificate without a usable subject.
    #[error("{0}")]
    InvalidCertificate(String),
    /// No credentials and anonymous requests are disabled.
    #[error("anonymous requests are not allowed")]
    AnonymousDisabled,
}

/// A user a token authenticated, and the audiences the token is good for among those asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUser {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// One source of bearer tokens.
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// `Ok(None)`: not a token of this source; `Err`: one of its tokens, refused (the reason
    /// is logged and shown in TokenReview, never the token). `audiences` are the audiences the
    /// caller accepts (the apiserver's own, or a TokenReview's).
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, String>;
}

#[async_trait]
impl TokenAuthenticator for TokenFile {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, String> {
        // Static tokens are good for any audience the caller accepts, as upstream's.
        Ok(self.authenticate(token).map(|user| TokenUser {
            user: user.clone(),
            audiences: audiences.to_vec(),
        }))
    }
}

/// The apiserver's authenticator.
#[derive(Clone)]
pub struct Authenticator {
    tokens: Vec<Arc<dyn TokenAuthenticator>>,
    anonymous: bool,
    /// `--api-audiences`: what a token must be meant for to authenticate a request.
    audiences: Vec<String>,
}

impl Default for Authenticator {
    /// No credential source, anonymous allowed: every request is `system:anonymous`.
    fn default() -> Self {
        Authenticator {
            tokens: Vec::new(),
            anonymous: true,
            audiences: Vec::new(),
        }
    }
}

impl Authenticator {
    /// An authenticator with an optional token file and `--anonymous-auth`.
    pub fn new(tokens: Option<TokenFile>, anonymous: bool) -> Self {
        let mut authenticator = Authenticator {
            anonymous,
            ..Default::default()
        };
        if let Some(file) = tokens {
            authenticator.tokens.push(Arc::new(file));
        }
        authenticator
    }

    /// Adds a token source after the ones already there.
    pub fn with_token_source(mut self, source: Arc<dyn TokenAuthenticator>) -> Self {
        self.tokens.push(source);
        self
    }

    /// Sets `--api-audiences`.
    pub fn with_audiences(mut self, audiences: Vec<String>) -> Self {
        self.audiences = audiences;
        self
    }

    /// The apiserver's audiences.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The user a request's client certificate user (already verified by the TLS handshake)
    /// or headers authenticate.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate_user: Option<UserInfo>,
    ) -> Result<UserInfo, AuthenticationError> {
        if let Some(user) = certificate_user {
            return Ok(user.with_authenticated_group());
        }
        if let Some(token) = bearer_token(headers)
            && !self.tokens.is_empty()
        {
            return self
                .authenticate_token(token, &self.audiences)
                .await
                .map(|t| t.user);
        }
        if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err(AuthenticationError::AnonymousDisabled)
        }
    }

    /// What the token sources say of `token` for `audiences` (also TokenReview's answer).
    pub async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenUser, AuthenticationError> {
        let mut refusals = Vec::new();
        for source in &self.tokens {
            match source.authenticate_token(token, audiences).await {
                Ok(Some(mut found)) => {
                    found.user = found.user.with_authenticated_group();
                    return Ok(found);
                }
                Ok(None) => {}
                Err(reason) => refusals.push(reason),
            }
        }
        if refusals.is_empty() {
            Err(AuthenticationError::InvalidToken)
        } else {
            Err(AuthenticationError::RefusedToken(refusals.join(", ")))
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header, as upstream's bearer token
/// authenticator reads it: other schemes and empty tokens are no credentials at all.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(AUTHORIZATION, HeaderValue::from_str(a).expect("header"));
        }
        h
    }

    #[test]
    fn bearer_tokens_as_upstream() {
        let cases = [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer abc"), Some("abc")),
            (Some("  Bearer abc  "), Some("abc")),
            (Some("Bearer abc extra"), Some("abc")),
            (Some("Bearer  abc"), None),
            (Some("Bearer"), None),
            (Some("Basic dXNlcjpwYXNz"), None),
            (None, None),
        ];
        for (auth, want) in cases {
            assert_eq!(bearer_token(&headers(auth)), want, "{auth:?}");
        }
    }

    #[tokio::test]
    async fn users_from_certificates_tokens_and_anonymous() {
        let file = TokenFile::parse("good,alice,1,devs\n", "f").expect("file");
        let authn = Authenticator::new(Some(file), true);
        let alice = authn
            .authenticate(&headers(Some("Bearer good")), None)
            .await
            .expect("alice");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, vec!["devs", "system:authenticated"]);
        let carol = UserInfo {
            name: "carol".into(),
            groups: vec!["ops".into()],
            ..Default::default()
        };
        // A certificate wins over a token on the same request.
        let by_cert = authn
            .authenticate(&headers(Some("Bearer good")), Some(carol))
            .await
            .expect("carol");
        assert_eq!(by_cert.name, "carol");
        assert_eq!(by_cert.groups, vec!["ops", "system:authenticated"]);
        assert_eq!(
            authn.authenticate(&headers(None), None).await,
            Ok(UserInfo::anonymous())
        );
        assert_eq!(
            authn.authenticate(&headers(Some("Basic x")), None).await,
            Ok(UserInfo::anonymous())
        );
        assert_eq!(
            authn.authenticate(&headers(Some("Bearer bad")), None).await,
            Err(AuthenticationError::InvalidToken)
        );
        let closed = Authenticator::new(None, false);
        assert_eq!(
            closed.authenticate(&headers(None), None).await,
            Err(AuthenticationError::AnonymousDisabled)
        );
        // Without a token source a token is not a credential.
        assert_eq!(
            Authenticator::default()
                .authenticate(&headers(Some("Bearer x")), None)
                .await,
            Ok(UserInfo::anonymous())
        );
    }
}
