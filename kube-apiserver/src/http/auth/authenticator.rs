//! Request authentication: bearer tokens from the token file, then anonymous.

use http::HeaderMap;
use http::header::AUTHORIZATION;

use super::token_file::TokenFile;
use super::user::UserInfo;

/// Why a request's credentials were refused (a 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthenticationError {
    /// A bearer token was presented that no token source knows.
    #[error("invalid bearer token")]
    InvalidToken,
    /// No credentials and anonymous requests are disabled.
    #[error("anonymous requests are not allowed")]
    AnonymousDisabled,
}

/// Authenticates requests as upstream's union of the bearer token authenticator and, when
/// enabled, the anonymous one: a known token gives its user (plus `system:authenticated`), no
/// token gives `system:anonymous`, an unknown token is refused (the anonymous authenticator is
/// not consulted once a token authenticator fails).
#[derive(Debug, Clone)]
pub struct Authenticator {
    tokens: Option<TokenFile>,
    anonymous: bool,
}

impl Default for Authenticator {
    /// No token source, anonymous allowed: every request is `system:anonymous`.
    fn default() -> Self {
        Authenticator {
            tokens: None,
            anonymous: true,
        }
    }
}

impl Authenticator {
    /// An authenticator with an optional token file and `--anonymous-auth`.
    pub fn new(tokens: Option<TokenFile>, anonymous: bool) -> Self {
        Authenticator { tokens, anonymous }
    }

    /// The user the request's headers authenticate.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<UserInfo, AuthenticationError> {
        if let (Some(tokens), Some(token)) = (&self.tokens, bearer_token(headers)) {
            return tokens
                .authenticate(token)
                .map(|u| u.clone().with_authenticated_group())
                .ok_or(AuthenticationError::InvalidToken);
        }
        if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err(AuthenticationError::AnonymousDisabled)
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

    #[test]
    fn users_from_tokens_and_anonymous() {
        let file = TokenFile::parse("good,alice,1,devs\n", "f").expect("file");
        let authn = Authenticator::new(Some(file), true);
        let alice = authn
            .authenticate(&headers(Some("Bearer good")))
            .expect("alice");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, vec!["devs", "system:authenticated"]);
        assert_eq!(
            authn.authenticate(&headers(None)),
            Ok(UserInfo::anonymous())
        );
        assert_eq!(
            authn.authenticate(&headers(Some("Basic x"))),
            Ok(UserInfo::anonymous())
        );
        assert_eq!(
            authn.authenticate(&headers(Some("Bearer bad"))),
            Err(AuthenticationError::InvalidToken)
        );
        let closed = Authenticator::new(None, false);
        assert_eq!(
            closed.authenticate(&headers(None)),
            Err(AuthenticationError::AnonymousDisabled)
        );
        // Without a token source a token is not a credential.
        assert_eq!(
            Authenticator::default().authenticate(&headers(Some("Bearer x"))),
            Ok(UserInfo::anonymous())
        );
    }
}
