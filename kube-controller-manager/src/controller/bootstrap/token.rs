//! Reading bootstrap token secrets, and the detached JWS the signer publishes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey};
use k8s_openapi::api::core::v1::Secret;

pub const NAMESPACE: &str = "kube-system";
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const SECRET_PREFIX: &str = "bootstrap-token-";

fn field<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|v| std::str::from_utf8(&v.0).ok())
}

/// `expiration` in Unix seconds; `Err` when it does not parse (upstream treats an unparsable
/// expiration as expired).
pub fn expiration(secret: &Secret) -> Option<Result<i64, ()>> {
    let text = field(secret, "expiration")?;
    Some(
        text.parse::<jiff::Timestamp>()
            .map(|t| t.as_second())
            .map_err(|_| ()),
    )
}

fn is_token_id(id: &str) -> bool {
    id.len() == 6
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn is_token_secret(secret: &str) -> bool {
    secret.len() == 16
        && secret
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The (id, secret) of a bootstrap token valid for signing at `now`, as upstream's
/// `getValidTokens`: right type and name, `usage-bootstrap-signing: "true"`, not expired.
pub fn signing_token(secret: &Secret, now: i64) -> Option<(String, String)> {
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return None;
    }
    let id = field(secret, "token-id")?;
    let token_secret = field(secret, "token-secret")?;
    if !is_token_id(id) || !is_token_secret(token_secret) {
        return None;
    }
    if secret.metadata.name.as_deref() != Some(&format!("{SECRET_PREFIX}{id}")) {
        return None;
    }
    if field(secret, "usage-bootstrap-signing") != Some("true") {
        return None;
    }
    match expiration(secret) {
        Some(Ok(at)) if at <= now => return None,
        Some(Err(())) => return None,
        _ => {}
    }
    Some((id.to_string(), token_secret.to_string()))
}

/// `header..signature` of an HS256 JWS over `content` keyed by the token secret, with the
/// header go-jose writes (`{"alg":"HS256","kid":"<id>"}`): kubeadm recomputes and compares
/// the whole string.
pub fn detached_signature(
    content: &str,
    token_id: &str,
    token_secret: &str,
) -> anyhow::Result<String> {
    let header = serde_json::json!({"alg": "HS256", "kid": token_id});
    let header = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header)?);
    let payload = URL_SAFE_NO_PAD.encode(content.as_bytes());
    let signing_input = format!("{header}.{payload}");
    let signature = jsonwebtoken::crypto::sign(
        signing_input.as_bytes(),
        &EncodingKey::from_secret(token_secret.as_bytes()),
        Algorithm::HS256,
    )?;
    Ok(format!("{header}..{signature}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    pub fn token_secret(id: &str, fields: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(format!("{SECRET_PREFIX}{id}")),
                namespace: Some(NAMESPACE.into()),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(
                [("token-id", id), ("token-secret", "0123456789abcdef")]
                    .iter()
                    .chain(fields)
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn only_unexpired_signing_tokens_sign() {
        let now: i64 = 1_800_000_000;
        let later = jiff::Timestamp::from_second(now + 60).unwrap().to_string();
        let earlier = jiff::Timestamp::from_second(now - 60).unwrap().to_string();
        let signing = ("usage-bootstrap-signing", "true");
        let cases = [
            ("signing", token_secret("abcdef", &[signing]), true),
            (
                "not expired",
                token_secret("abcdef", &[signing, ("expiration", &later)]),
                true,
            ),
            (
                "expired",
                token_secret("abcdef", &[signing, ("expiration", &earlier)]),
                false,
            ),
            (
                "bad expiration",
                token_secret("abcdef", &[signing, ("expiration", "soon")]),
                false,
            ),
            ("not for signing", token_secret("abcdef", &[]), false),
            ("bad id", token_secret("ABCDEF", &[signing]), false),
        ];
        for (what, secret, want) in cases {
            assert_eq!(signing_token(&secret, now).is_some(), want, "{what}");
        }
    }

    #[test]
    fn detached_signatures_are_hs256_jws_without_payload() {
        let sig = detached_signature("content", "abcdef", "0123456789abcdef").expect("sign");
        let (header, signature) = sig.split_once("..").expect("detached");
        let header = URL_SAFE_NO_PAD.decode(header).expect("b64");
        assert_eq!(header, br#"{"alg":"HS256","kid":"abcdef"}"#);
        // Verifies as the compact JWS with the payload put back.
        let payload = URL_SAFE_NO_PAD.encode("content");
        let input = format!("{}.{payload}", sig.split_once("..").unwrap().0);
        assert!(
            jsonwebtoken::crypto::verify(
                signature,
                input.as_bytes(),
                &jsonwebtoken::DecodingKey::from_secret(b"0123456789abcdef"),
                Algorithm::HS256,
            )
            .expect("verify")
        );
        assert_ne!(
            sig,
            detached_signature("other", "abcdef", "0123456789abcdef").unwrap()
        );
    }
}
