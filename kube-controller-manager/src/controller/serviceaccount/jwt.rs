//! Legacy service account tokens: JWTs signed with `--service-account-private-key-file`, with
//! the claims upstream's `LegacyClaims` carry (the apiserver checks them against the secret
//! and the service account).

use anyhow::{Context as _, anyhow};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The issuer of legacy tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// Signs legacy tokens with one private key.
pub struct LegacyTokenSigner {
    key: EncodingKey,
    algorithm: Algorithm,
    kid: String,
}

impl std::fmt::Debug for LegacyTokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyTokenSigner")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish()
    }
}

/// Which service account (and secret) a token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySubject<'a> {
    pub namespace: &'a str,
    pub secret_name: &'a str,
    pub service_account_name: &'a str,
    pub service_account_uid: &'a str,
}

impl LegacyTokenSigner {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let data = std::fs::read(path)
            .with_context(|| format!("reading service account private key {}", path.display()))?;
        Self::from_pem(&data).with_context(|| format!("service account key {}", path.display()))
    }

    /// The first private key of PEM `data`: RSA (PKCS#1 or PKCS#8) or ECDSA P-256/P-384
    /// (SEC1 or PKCS#8).
    pub fn from_pem(data: &[u8]) -> anyhow::Result<Self> {
        let blocks = pem::parse_many(data).context("parsing PEM")?;
        for block in &blocks {
            let der = block.contents();
            let parsed = match block.tag() {
                "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(der)
                    .map_err(|e| anyhow!("RSA key: {e}"))
                    .and_then(Self::rsa),
                "EC PRIVATE KEY" => match p256::SecretKey::from_sec1_der(der) {
                    Ok(k) => Self::p256(k),
                    Err(_) => p384::SecretKey::from_sec1_der(der)
                        .map_err(|_| anyhow!("EC key is not on P-256 or P-384"))
                        .and_then(Self::p384),
                },
                "PRIVATE KEY" => {
                    if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
                        Self::rsa(k)
                    } else if let Ok(k) = p256::SecretKey::from_pkcs8_der(der) {
                        Self::p256(k)
                    } else if let Ok(k) = p384::SecretKey::from_pkcs8_der(der) {
                        Self::p384(k)
                    } else {
                        Err(anyhow!("PKCS#8 key is neither RSA nor ECDSA P-256/P-384"))
                    }
                }
                _ => continue,
            };
            return parsed;
        }
        Err(anyhow!("no private key found"))
    }

    fn rsa(key: rsa::RsaPrivateKey) -> anyhow::Result<Self> {
        let der = key.to_pkcs1_der().map_err(|e| anyhow!("encoding: {e}"))?;
        let spki = key
            .to_public_key()
            .to_public_key_der()
            .map_err(|e| anyhow!("encoding: {e}"))?;
        Ok(Self {
            key: EncodingKey::from_rsa_der(der.as_bytes()),
            algorithm: Algorithm::RS256,
            kid: key_id(spki.as_bytes()),
        })
    }

    fn p256(key: p256::SecretKey) -> anyhow::Result<Self> {
        let der = key.to_pkcs8_der().map_err(|e| anyhow!("encoding: {e}"))?;
        let spki = key
            .public_key()
            .to_public_key_der()
            .map_err(|e| anyhow!("encoding: {e}"))?;
        Ok(Self {
            key: EncodingKey::from_ec_der(der.as_bytes()),
            algorithm: Algorithm::ES256,
            kid: key_id(spki.as_bytes()),
        })
    }

    fn p384(key: p384::SecretKey) -> anyhow::Result<Self> {
        let der = key.to_pkcs8_der().map_err(|e| anyhow!("encoding: {e}"))?;
        let spki = key
            .public_key()
            .to_public_key_der()
            .map_err(|e| anyhow!("encoding: {e}"))?;
        Ok(Self {
            key: EncodingKey::from_ec_der(der.as_bytes()),
            algorithm: Algorithm::ES384,
            kid: key_id(spki.as_bytes()),
        })
    }

    /// A token that never expires (legacy tokens have no `exp`), valid while its secret holds it.
    pub fn legacy_token(&self, subject: &LegacySubject<'_>) -> anyhow::Result<String> {
        let claims = json!({
            "iss": LEGACY_ISSUER,
            "sub": format!(
                "system:serviceaccount:{}:{}",
                subject.namespace, subject.service_account_name
            ),
            "kubernetes.io/serviceaccount/namespace": subject.namespace,
            "kubernetes.io/serviceaccount/secret.name": subject.secret_name,
            "kubernetes.io/serviceaccount/service-account.name": subject.service_account_name,
            "kubernetes.io/serviceaccount/service-account.uid": subject.service_account_uid,
        });
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.key).context("signing the token")
    }
}

/// Upstream's key id: the unpadded base64url SHA-256 of the DER public key.
fn key_id(spki_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(spki_der))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};
    use std::collections::HashSet;

    #[test]
    fn legacy_tokens_carry_upstreams_claims_and_verify_with_the_public_key() {
        let pair = rcgen::KeyPair::generate().expect("key");
        let pem = pair.serialize_pem();
        let signer = LegacyTokenSigner::from_pem(pem.as_bytes()).expect("signer");
        let token = signer
            .legacy_token(&LegacySubject {
                namespace: "ns",
                secret_name: "sa-token",
                service_account_name: "sa",
                service_account_uid: "uid-1",
            })
            .expect("token");
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        let decoded = jsonwebtoken::decode::<serde_json::Value>(
            &token,
            &DecodingKey::from_ec_der(pair.public_key_raw()),
            &validation,
        )
        .expect("verifies");
        let c = decoded.claims;
        assert_eq!(c["iss"], LEGACY_ISSUER);
        assert_eq!(c["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(c["kubernetes.io/serviceaccount/secret.name"], "sa-token");
        assert_eq!(
            c["kubernetes.io/serviceaccount/service-account.uid"],
            "uid-1"
        );
        assert!(c.get("exp").is_none());
        assert_eq!(decoded.header.kid.as_deref(), Some(signer.kid.as_str()));
    }

    #[test]
    fn non_keys_are_refused() {
        for (what, data) in [
            ("empty", ""),
            (
                "certificate only",
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            ),
            (
                "garbage key",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            ),
        ] {
            assert!(
                LegacyTokenSigner::from_pem(data.as_bytes()).is_err(),
                "{what}"
            );
        }
    }
}
