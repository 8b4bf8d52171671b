//! Service account tokens as upstream's: JWTs signed with `--service-account-signing-key-file`
//! (TokenRequest) and verified against the public keys of `--service-account-key-file`.
//!
//! Two kinds are accepted. Bound tokens (TokenRequest's, `iss` one of
//! `--service-account-issuer`) carry a `kubernetes.io` claim naming the service account and the
//! object the token is bound to; they are good only while those objects exist with the uids
//! named. Legacy tokens (`iss` `kubernetes/serviceaccount`, written into
//! `kubernetes.io/service-account-token` secrets) never expire; with
//! `--service-account-lookup` they are good only while their secret holds them.

use super::authenticator::{TokenAuthenticator, TokenUser};
use super::user::UserInfo;
use crate::registry::ObjectLookup;
use anyhow::{Context, anyhow, bail};
use api_types::validation::go_quote;
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use rsa::pkcs1::{
    DecodeRsaPrivateKey, DecodeRsaPublicKey, EncodeRsaPrivateKey, EncodeRsaPublicKey,
};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The issuer of the tokens the token controller writes into secrets.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// A service account's user name is this prefix, its namespace, `:` and its name.
pub const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";
/// The group of every service account.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The shortest lifetime TokenRequest grants.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The lifetime the kubelet asks for its projected tokens; tokens asked for with it are
/// granted [`EXPIRATION_EXTENSION_SECONDS`] and warned about after it (upstream's safe
/// transition for clients that do not reload their token).
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// One year.
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 365 * 24 * 60 * 60;
/// The secret type of legacy tokens.
pub const SERVICE_ACCOUNT_TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

pub const EXTRA_POD_NAME: &str = "authentication.kubernetes.io/pod-name";
pub const EXTRA_POD_UID: &str = "authentication.kubernetes.io/pod-uid";
pub const EXTRA_NODE_NAME: &str = "authentication.kubernetes.io/node-name";
pub const EXTRA_NODE_UID: &str = "authentication.kubernetes.io/node-uid";
pub const EXTRA_CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// The clock skew tolerated on `exp`, `nbf` and `iat`, and on deletion of bound objects
/// (go-jose's default leeway, which upstream relies on).
const LEEWAY_SECONDS: i64 = 60;

/// The user name of service account `name` in `namespace`.
pub fn service_account_user_name(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}")
}

/// Compares secrets in time independent of where they first differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

/// A public key of one of the kinds upstream signs and verifies service account tokens with.
enum PublicKey {
    Rsa(rsa::RsaPublicKey),
    P256(p256::PublicKey),
    P384(p384::PublicKey),
}

impl PublicKey {
    /// A PKIX `SubjectPublicKeyInfo` (a `PUBLIC KEY` block or a certificate's key).
    fn from_spki_der(der: &[u8]) -> Option<Self> {
        if let Ok(key) = rsa::RsaPublicKey::from_public_key_der(der) {
            return Some(PublicKey::Rsa(key));
        }
        if let Ok(key) = p256::PublicKey::from_public_key_der(der) {
            return Some(PublicKey::P256(key));
        }
        p384::PublicKey::from_public_key_der(der)
            .ok()
            .map(PublicKey::P384)
    }

    /// The DER `SubjectPublicKeyInfo`, hashed into the key id as upstream does.
    fn spki_der(&self) -> anyhow::Result<Vec<u8>> {
        let doc = match self {
            PublicKey::Rsa(k) => k.to_public_key_der(),
            PublicKey::P256(k) => k.to_public_key_der(),
            PublicKey::P384(k) => k.to_public_key_der(),
        }
        .map_err(|e| anyhow!("encoding the public key: {e}"))?;
        Ok(doc.as_bytes().to_vec())
    }

    fn verify_key(&self) -> anyhow::Result<VerifyKey> {
        let (key, algorithms) = match self {
            PublicKey::Rsa(k) => {
                let der = k
                    .to_pkcs1_der()
                    .map_err(|e| anyhow!("encoding the RSA public key: {e}"))?;
                (
                    DecodingKey::from_rsa_der(der.as_bytes()),
                    vec![
                        Algorithm::RS256,
                        Algorithm::RS384,
                        Algorithm::RS512,
                        Algorithm::PS256,
                        Algorithm::PS384,
                        Algorithm::PS512,
                    ],
                )
            }
            PublicKey::P256(k) => (
                DecodingKey::from_ec_der(k.to_encoded_point(false).as_bytes()),
                vec![Algorithm::ES256],
            ),
            PublicKey::P384(k) => (
                DecodingKey::from_ec_der(k.to_encoded_point(false).as_bytes()),
                vec![Algorithm::ES384],
            ),
        };
        Ok(VerifyKey {
            key,
            algorithms,
            kid: key_id(&self.spki_der()?),
        })
    }
}

/// Upstream's key id: the unpadded base64url SHA-256 of the DER public key, so verifiers can
/// tell which key signed a token.
fn key_id(spki_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(spki_der))
}

/// A private key that can sign tokens.
enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    P256(p256::SecretKey),
    P384(p384::SecretKey),
}

impl PrivateKey {
    /// One PEM block of a private key, None when the block is not a private key at all.
    fn from_pem_block(tag: &str, der: &[u8]) -> Option<anyhow::Result<Self>> {
        let key = match tag {
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| anyhow!("parsing the RSA private key: {e}")),
            "PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs8_der(der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .or_else(|_| p256::SecretKey::from_pkcs8_der(der).map(PrivateKey::P256))
                .or_else(|_| p384::SecretKey::from_pkcs8_der(der).map(PrivateKey::P384))
                .map_err(|_| {
                    anyhow!("the PKCS#8 private key is neither RSA nor ECDSA P-256/P-384")
                }),
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(der)
                .map(PrivateKey::P256)
                .or_else(|_| p384::SecretKey::from_sec1_der(der).map(PrivateKey::P384))
                .map_err(|_| anyhow!("the EC private key is not on curve P-256 or P-384")),
            _ => return None,
        };
        Some(key)
    }

    fn public_key(&self) -> PublicKey {
        match self {
            PrivateKey::Rsa(k) => PublicKey::Rsa(k.to_public_key()),
            PrivateKey::P256(k) => PublicKey::P256(k.public_key()),
            PrivateKey::P384(k) => PublicKey::P384(k.public_key()),
        }
    }
}

/// A public key tokens are verified with (one of `--service-account-key-file`'s).
#[derive(Clone)]
pub struct VerifyKey {
    key: DecodingKey,
    /// The JWS algorithms this key verifies (those of its key type).
    algorithms: Vec<Algorithm>,
    kid: String,
}

impl fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyKey")
            .field("algorithms", &self.algorithms)
            .field("kid", &self.kid)
            .finish()
    }
}

impl VerifyKey {
    /// The key id (`kid`) upstream would give this key.
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// The claims of `token` when this key signed it.
    fn verify(&self, token: &str) -> Result<Value, jsonwebtoken::errors::Error> {
        let mut validation = Validation::new(self.algorithms[0]);
        validation.algorithms = self.algorithms.clone();
        // The claims are checked afterwards, with upstream's rules and messages.
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        jsonwebtoken::decode::<Value>(token, &self.key, &validation).map(|data| data.claims)
    }
}

/// The public keys of the PEM `data` (named `source` in errors): every `PUBLIC KEY`,
/// `RSA PUBLIC KEY` and `CERTIFICATE` block, and the public half of every private key block.
pub fn parse_verification_keys(data: &[u8], source: &str) -> anyhow::Result<Vec<VerifyKey>> {
    let blocks = pem::parse_many(data).with_context(|| format!("reading {source}"))?;
    let mut keys = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let der = block.contents();
        let public = match block.tag() {
            "PUBLIC KEY" => PublicKey::from_spki_der(der).ok_or_else(|| {
                anyhow!(
                    "block {i} of {source}: the public key is neither RSA nor ECDSA P-256/P-384"
                )
            })?,
            "RSA PUBLIC KEY" => rsa::RsaPublicKey::from_pkcs1_der(der)
                .map(PublicKey::Rsa)
                .map_err(|e| anyhow!("block {i} of {source}: parsing the RSA public key: {e}"))?,
            "CERTIFICATE" => {
                let (_, cert) = x509_parser::parse_x509_certificate(der)
                    .map_err(|e| anyhow!("block {i} of {source}: parsing the certificate: {e}"))?;
                PublicKey::from_spki_der(cert.tbs_certificate.subject_pki.raw).ok_or_else(
                    || {
                        anyhow!(
                            "block {i} of {source}: the certificate's key is neither RSA nor ECDSA P-256/P-384"
                        )
                    },
                )?
            }
            tag => match PrivateKey::from_pem_block(tag, der) {
                Some(key) => key
                    .with_context(|| format!("block {i} of {source}"))?
                    .public_key(),
                // Other blocks (parameters, unrelated certificates requests) are no keys.
                None => continue,
            },
        };
        keys.push(
            public
                .verify_key()
                .with_context(|| format!("block {i} of {source}"))?,
        );
    }
    if keys.is_empty() {
        bail!("{source}: data does not contain any valid RSA or ECDSA public keys");
    }
    Ok(keys)
}

/// `--service-account-key-file`: the public keys of every file, in order.
pub fn load_verification_keys(files: &[PathBuf]) -> anyhow::Result<Vec<VerifyKey>> {
    let mut keys = Vec::new();
    for file in files {
        let data = std::fs::read(file)
            .with_context(|| format!("reading service account key file {}", file.display()))?;
        keys.extend(parse_verification_keys(
            &data,
            &format!("service account key file {}", file.display()),
        )?);
    }
    Ok(keys)
}

// ---------------------------------------------------------------------------------------------
// Claims
// ---------------------------------------------------------------------------------------------

/// An object a token names, by name and uid.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl ObjectRef {
    pub fn new(name: impl Into<String>, uid: impl Into<String>) -> Self {
        ObjectRef {
            name: name.into(),
            uid: uid.into(),
        }
    }
}

/// What a bound token is issued for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundClaims {
    pub namespace: String,
    pub service_account: ObjectRef,
    pub audiences: Vec<String>,
    /// The lifetime asked for (clamped to `--service-account-max-token-expiration`).
    pub expiration_seconds: i64,
    pub pod: Option<ObjectRef>,
    pub secret: Option<ObjectRef>,
    pub node: Option<ObjectRef>,
    /// Seconds after which using the token is reported as stale though it is still valid.
    pub warn_after_seconds: Option<i64>,
}

/// The private `kubernetes.io` claim of bound tokens.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct KubernetesClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(default)]
    serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warnafter: Option<i64>,
}

/// The claims of either kind of token, as far as they are read.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Claims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    sub: String,
    #[serde(
        default,
        deserialize_with = "audience",
        skip_serializing_if = "Vec::is_empty"
    )]
    aud: Vec<String>,
    #[serde(default, deserialize_with = "numeric_date")]
    exp: Option<i64>,
    #[serde(default, deserialize_with = "numeric_date")]
    iat: Option<i64>,
    #[serde(default, deserialize_with = "numeric_date")]
    nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jti: Option<String>,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    kubernetes: Option<KubernetesClaim>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/namespace",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    legacy_namespace: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/secret.name",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    legacy_secret_name: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.name",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    legacy_service_account_name: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    legacy_service_account_uid: String,
}

/// `aud` is one string or a list of them (RFC 7519 allows both).
fn audience<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Aud {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<Aud>::deserialize(d)? {
        None => Vec::new(),
        Some(Aud::One(a)) => vec![a],
        Some(Aud::Many(a)) => a,
    })
}

/// NumericDate may carry a fraction; whole seconds are what is compared.
fn numeric_date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.map(|f| f.floor() as i64))
}

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

/// A token TokenRequest issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: String,
    /// When it expires, in Unix seconds.
    pub expires_at: i64,
    /// Its `jti`, which names the credential in logs (`JTI=<jti>`).
    pub jti: String,
}

/// Signs service account tokens (`--service-account-signing-key-file`).
pub struct TokenSigner {
    issuer: String,
    key: EncodingKey,
    algorithm: Algorithm,
    kid: String,
    max_expiration: Option<Duration>,
    extended_expiration: Option<i64>,
    public: VerifyKey,
}

impl fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSigner")
            .field("issuer", &self.issuer)
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .field("max_expiration", &self.max_expiration)
            .finish()
    }
}

impl TokenSigner {
    /// The signer of `--service-account-signing-key-file`, issuing as `issuer` (the first
    /// `--service-account-issuer`), with `--service-account-max-token-expiration`.
    pub fn load(
        signing_key_file: &Path,
        issuer: String,
        max_expiration: Option<Duration>,
    ) -> anyhow::Result<TokenSigner> {
        let data = std::fs::read(signing_key_file).with_context(|| {
            format!(
                "reading service account signing key file {}",
                signing_key_file.display()
            )
        })?;
        Self::from_pem(
            &data,
            &format!(
                "service account signing key file {}",
                signing_key_file.display()
            ),
            issuer,
            max_expiration,
        )
    }

    /// The signer of the first private key in the PEM `data` (named `source` in errors).
    pub fn from_pem(
        data: &[u8],
        source: &str,
        issuer: String,
        max_expiration: Option<Duration>,
    ) -> anyhow::Result<TokenSigner> {
        let blocks = pem::parse_many(data).with_context(|| format!("reading {source}"))?;
        let key = blocks
            .iter()
            .find_map(|b| PrivateKey::from_pem_block(b.tag(), b.contents()))
            .ok_or_else(|| anyhow!("{source}: data does not contain a private key"))?
            .with_context(|| format!("reading {source}"))?;
        let public = key.public_key().verify_key()?;
        let kid = public.kid.clone();
        let (key, algorithm) = match &key {
            PrivateKey::Rsa(k) => (
                EncodingKey::from_rsa_der(
                    k.to_pkcs1_der()
                        .map_err(|e| anyhow!("encoding the RSA key of {source}: {e}"))?
                        .as_bytes(),
                ),
                Algorithm::RS256,
            ),
            PrivateKey::P256(k) => (
                EncodingKey::from_ec_der(
                    k.to_pkcs8_der()
                        .map_err(|e| anyhow!("encoding the EC key of {source}: {e}"))?
                        .as_bytes(),
                ),
                Algorithm::ES256,
            ),
            PrivateKey::P384(k) => (
                EncodingKey::from_ec_der(
                    k.to_pkcs8_der()
                        .map_err(|e| anyhow!("encoding the EC key of {source}: {e}"))?
                        .as_bytes(),
                ),
                Algorithm::ES384,
            ),
        };
        Ok(TokenSigner {
            issuer,
            key,
            algorithm,
            kid,
            max_expiration,
            extended_expiration: Some(EXPIRATION_EXTENSION_SECONDS),
            public,
        })
    }

    /// The `iss` of the tokens it issues.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `kid` of the tokens it issues.
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// `--service-account-extend-token-expiration` (on by default, as upstream): the lifetime
    /// of the tokens the kubelet asks for its projected volumes, or None to grant them the
    /// lifetime they ask for.
    pub fn with_extended_expiration(mut self, seconds: Option<i64>) -> Self {
        self.extended_expiration = seconds;
        self
    }

    /// The lifetime granted instead of [`WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS`] to
    /// pod-bound tokens for the apiserver's audiences, if any.
    pub fn extended_expiration(&self) -> Option<i64> {
        self.extended_expiration
    }

    /// The public key that verifies its tokens.
    pub fn verification_key(&self) -> VerifyKey {
        self.public.clone()
    }

    /// `--service-account-max-token-expiration`.
    pub fn max_expiration(&self) -> Option<Duration> {
        self.max_expiration
    }

    /// The lifetime granted for a request of `seconds`: at most the maximum expiration.
    pub fn clamp_expiration(&self, seconds: i64) -> i64 {
        match self.max_expiration {
            Some(max) if max.as_secs() > 0 => {
                seconds.min(i64::try_from(max.as_secs()).unwrap_or(i64::MAX))
            }
            _ => seconds,
        }
    }

    /// Signs a bound token for `claims`, valid from now for `claims.expiration_seconds` (the
    /// caller applies the maximum and the extension).
    pub fn issue(&self, claims: &BoundClaims) -> anyhow::Result<IssuedToken> {
        self.issue_at(claims, now_unix())
    }

    fn issue_at(&self, claims: &BoundClaims, now: i64) -> anyhow::Result<IssuedToken> {
        let expires_at = now.saturating_add(claims.expiration_seconds);
        let jti = uuid::Uuid::new_v4().to_string();
        let body = Claims {
            iss: self.issuer.clone(),
            sub: service_account_user_name(&claims.namespace, &claims.service_account.name),
            aud: claims.audiences.clone(),
            exp: Some(expires_at),
            iat: Some(now),
            nbf: Some(now),
            jti: Some(jti.clone()),
            kubernetes: Some(KubernetesClaim {
                namespace: claims.namespace.clone(),
                serviceaccount: claims.service_account.clone(),
                pod: claims.pod.clone(),
                secret: claims.secret.clone(),
                node: claims.node.clone(),
                warnafter: claims.warn_after_seconds.map(|s| now.saturating_add(s)),
            }),
            ..Default::default()
        };
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        let token = jsonwebtoken::encode(&header, &body, &self.key)
            .map_err(|e| anyhow!("signing the token: {e}"))?;
        Ok(IssuedToken {
            token,
            expires_at,
            jti,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

/// Authenticates service account JWTs.
pub struct ServiceAccountTokenAuthenticator {
    /// `--service-account-issuer`: the `iss` of bound tokens.
    issuers: Vec<String>,
    keys: Vec<VerifyKey>,
    /// `--api-audiences`: what legacy tokens (which have no `aud`) are taken to be for, and
    /// what is asked for when the caller names no audience.
    implicit_audiences: Vec<String>,
    lookup: Arc<dyn ObjectLookup>,
    /// Storage, asked when the caches do not hold an object (yet).
    fallback: Option<Arc<dyn ObjectFetch>>,
    /// `--service-account-lookup`: whether legacy tokens are checked against their secret
    /// and service account. Bound tokens are always checked, as upstream's.
    legacy_lookup: bool,
}

/// Reads of objects from storage, for the ones the watch caches have not seen: a token
/// issued for an object created a moment ago must work at once, as upstream's getter falls
/// back from its informers to a live read.
#[async_trait]
pub trait ObjectFetch: Send + Sync {
    /// The core (`v1`) object `name` of resource `plural`, or None when there is none.
    async fn fetch(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value>;
}

#[async_trait]
impl ObjectFetch for crate::rest::state::ApiState {
    async fn fetch(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        match self.store("", "v1", plural)?.get(namespace, name).await {
            Ok(object) => Some(object),
            Err(crate::registry::RegistryError::NotFound { .. }) => None,
            Err(e) => {
                tracing::warn!(error = %e, plural, name, "reading an object a token names");
                None
            }
        }
    }
}

impl ServiceAccountTokenAuthenticator {
    /// Accepts bound tokens of `issuers` and legacy tokens, signed by one of `keys`, checking
    /// the objects they name in `lookup`; legacy lookup is on (upstream's default).
    pub fn new(
        issuers: Vec<String>,
        keys: Vec<VerifyKey>,
        implicit_audiences: Vec<String>,
        lookup: Arc<dyn ObjectLookup>,
    ) -> Self {
        ServiceAccountTokenAuthenticator {
            issuers,
            keys,
            implicit_audiences,
            lookup,
            fallback: None,
            legacy_lookup: true,
        }
    }

    /// Reads objects the caches do not hold from `storage`.
    pub fn with_storage_fallback(mut self, storage: Arc<dyn ObjectFetch>) -> Self {
        self.fallback = Some(storage);
        self
    }

    /// A core object from the caches, else from storage.
    async fn get(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Arc<Value>> {
        if let Some(object) = self.lookup.get("", plural, namespace, name) {
            return Some(object);
        }
        let fallback = self.fallback.as_ref()?;
        fallback.fetch(plural, namespace, name).await.map(Arc::new)
    }

    /// Sets `--service-account-lookup`.
    pub fn with_legacy_lookup(mut self, lookup: bool) -> Self {
        self.legacy_lookup = lookup;
        self
    }

    async fn authenticate_at(
        &self,
        token: &str,
        audiences: &[String],
        now: i64,
    ) -> Result<Option<TokenUser>, String> {
        // Only a compact JWS whose issuer is one of ours is ours to judge; anything else is
        // left to the other token sources.
        if token.split('.').count() != 3 {
            return Ok(None);
        }
        let Ok(unverified) = jsonwebtoken::dangerous::insecure_decode_claims::<Claims>(token)
        else {
            return Ok(None);
        };
        let issuer = unverified.iss;
        let legacy = issuer == LEGACY_ISSUER;
        if !legacy && !self.issuers.contains(&issuer) {
            return Ok(None);
        }

        let mut failures = Vec::new();
        let verified = self.keys.iter().find_map(|key| match key.verify(token) {
            Ok(claims) => Some(claims),
            Err(e) => {
                failures.push(e);
                None
            }
        });
        let Some(claims) = verified else {
            tracing::debug!(?failures, "service account token signature not verified");
            return Err("invalid signature".to_string());
        };
        let claims: Claims = serde_json::from_value(claims)
            .map_err(|_| "service account token claims could not be parsed".to_string())?;

        let token_audiences = if claims.aud.is_empty() {
            // Tokens without an audience are only good for the apiserver itself.
            self.implicit_audiences.clone()
        } else {
            claims.aud.clone()
        };
        let requested = if audiences.is_empty() {
            &self.implicit_audiences[..]
        } else {
            audiences
        };
        let granted: Vec<String> = token_audiences
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        if granted.is_empty() && !self.implicit_audiences.is_empty() {
            return Err(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_string_list(&token_audiences),
                go_string_list(requested)
            ));
        }

        let user = if legacy {
            self.validate_legacy(token, &claims).await?
        } else {
            self.validate_bound(&claims, now).await?
        };
        Ok(Some(TokenUser {
            user,
            audiences: granted,
        }))
    }

    /// Upstream's checks of a bound token: its times, then the objects it names.
    async fn validate_bound(&self, claims: &Claims, now: i64) -> Result<UserInfo, String> {
        let Some(k8s) = &claims.kubernetes else {
            return Err("service account token claims could not be validated".to_string());
        };
        if claims.exp.is_some_and(|exp| now >= exp + LEEWAY_SECONDS) {
            return Err("service account token has expired".to_string());
        }
        if claims.nbf.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err("service account token is not valid yet".to_string());
        }
        if claims.iat.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
            return Err("service account token is issued in the future".to_string());
        }

        // A deletion within the leeway does not yet invalidate, as upstream: the token's
        // holder may be finishing its work.
        let deleted_before = now - LEEWAY_SECONDS;
        let namespace = k8s.namespace.as_str();
        let sa = &k8s.serviceaccount;
        let account = self
            .get("serviceaccounts", Some(namespace), &sa.name)
            .await
            .ok_or_else(|| format!("serviceaccounts {} not found", go_quote(&sa.name)))?;
        if deleted_since(&account, deleted_before) {
            return Err(format!(
                "service account {namespace}/{} has been deleted",
                sa.name
            ));
        }
        let account_uid = uid_of(&account);
        if account_uid != sa.uid {
            return Err(format!(
                "service account UID ({account_uid}) does not match claim ({})",
                sa.uid
            ));
        }

        if let Some(secret_ref) = &k8s.secret {
            let secret = self
                .get("secrets", Some(namespace), &secret_ref.name)
                .await
                .filter(|s| !deleted_since(s, deleted_before))
                .ok_or("service account token has been invalidated")?;
            let uid = uid_of(&secret);
            if uid != secret_ref.uid {
                return Err(format!(
                    "secret UID ({uid}) does not match service account secret ref claim ({})",
                    secret_ref.uid
                ));
            }
        }

        let mut user = service_account_user(namespace, &sa.name, &sa.uid);
        if let Some(pod_ref) = &k8s.pod {
            let pod = self
                .get("pods", Some(namespace), &pod_ref.name)
                .await
                .filter(|p| !deleted_since(p, deleted_before))
                .ok_or("service account token has been invalidated")?;
            let uid = uid_of(&pod);
            if uid != pod_ref.uid {
                return Err(format!(
                    "pod UID ({uid}) does not match service account pod ref claim ({})",
                    pod_ref.uid
                ));
            }
            user.extra
                .insert(EXTRA_POD_NAME.into(), vec![pod_ref.name.clone()]);
            user.extra
                .insert(EXTRA_POD_UID.into(), vec![pod_ref.uid.clone()]);
        }

        if let Some(node_ref) = &k8s.node {
            // A pod-bound token names its pod's node for information only; a node-bound one
            // lives as long as the node.
            if k8s.pod.is_none() {
                let node = self
                    .get("nodes", None, &node_ref.name)
                    .await
                    .filter(|n| !deleted_since(n, deleted_before))
                    .ok_or("service account token has been invalidated")?;
                let uid = uid_of(&node);
                if uid != node_ref.uid {
                    return Err(format!(
                        "node UID ({uid}) does not match service account node ref claim ({})",
                        node_ref.uid
                    ));
                }
            }
            user.extra
                .insert(EXTRA_NODE_NAME.into(), vec![node_ref.name.clone()]);
            if !node_ref.uid.is_empty() {
                user.extra
                    .insert(EXTRA_NODE_UID.into(), vec![node_ref.uid.clone()]);
            }
        }

        if let Some(jti) = claims.jti.as_deref().filter(|j| !j.is_empty()) {
            user.extra
                .insert(EXTRA_CREDENTIAL_ID.into(), vec![format!("JTI={jti}")]);
        }
        Ok(user)
    }

    /// Upstream's checks of a legacy (secret-based) token.
    async fn validate_legacy(&self, token: &str, claims: &Claims) -> Result<UserInfo, String> {
        let missing = |what: &str| Err(format!("{what} claim is missing"));
        if claims.sub.is_empty() {
            return missing("sub");
        }
        let namespace = claims.legacy_namespace.as_str();
        if namespace.is_empty() {
            return missing("namespace");
        }
        let secret_name = claims.legacy_secret_name.as_str();
        if secret_name.is_empty() {
            return missing("secretName");
        }
        let name = claims.legacy_service_account_name.as_str();
        if name.is_empty() {
            return missing("serviceAccountName");
        }
        let uid = claims.legacy_service_account_uid.as_str();
        if uid.is_empty() {
            return missing("serviceAccountUID");
        }
        if claims.sub != service_account_user_name(namespace, name) {
            return Err("sub claim is invalid".to_string());
        }

        if self.legacy_lookup {
            let invalidated = || "token has been invalidated".to_string();
            let secret = self
                .get("secrets", Some(namespace), secret_name)
                .await
                .ok_or_else(invalidated)?;
            let is_token_secret = secret.get("type").and_then(Value::as_str)
                == Some(SERVICE_ACCOUNT_TOKEN_SECRET_TYPE);
            let marked_invalid = secret
                .pointer("/metadata/labels")
                .and_then(|l| l.get("kubernetes.io/legacy-token-invalid-since"))
                .is_some();
            if is_deleting(&secret) || !is_token_secret || marked_invalid {
                return Err(invalidated());
            }
            let stored = secret
                .pointer("/data/token")
                .and_then(Value::as_str)
                .and_then(|t| STANDARD.decode(t).ok())
                .unwrap_or_default();
            if !constant_time_eq(&stored, token.as_bytes()) {
                return Err("token does not match server's copy".to_string());
            }

            let account = self
                .get("serviceaccounts", Some(namespace), name)
                .await
                .ok_or_else(|| format!("serviceaccounts {} not found", go_quote(name)))?;
            if is_deleting(&account) {
                return Err(format!(
                    "service account {namespace}/{name} has been deleted"
                ));
            }
            let account_uid = uid_of(&account);
            if account_uid != uid {
                return Err(format!(
                    "service account UID ({account_uid}) does not match claim ({uid})"
                ));
            }
        }
        Ok(service_account_user(namespace, name, uid))
    }
}

#[async_trait]
impl TokenAuthenticator for ServiceAccountTokenAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, String> {
        self.authenticate_at(token, audiences, now_unix()).await
    }
}

/// The user of service account `name` (uid `uid`) in `namespace`, without extras.
pub fn service_account_user(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        name: service_account_user_name(namespace, name),
        uid: uid.to_string(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        ],
        extra: BTreeMap::new(),
    }
}

fn uid_of(object: &Value) -> &str {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether `object` was marked for deletion before `before` (Unix seconds).
fn deleted_since(object: &Value, before: i64) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_some_and(|t| t.as_second() < before)
}

/// A list of strings as Go's `%q` prints a `[]string`: `["a" "b"]`.
fn go_string_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use parking_lot::Mutex;
    use rsa::pkcs1::LineEnding;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::OnceLock;

    /// A watch cache stand-in: objects by (plural, namespace, name).
    #[derive(Default)]
    pub(crate) struct FakeLookup {
        objects: Mutex<HashMap<(String, String, String), Arc<Value>>>,
    }

    impl FakeLookup {
        pub(crate) fn put(&self, plural: &str, namespace: Option<&str>, object: Value) {
            let name = object["metadata"]["name"]
                .as_str()
                .expect("name")
                .to_string();
            self.objects.lock().insert(
                (plural.into(), namespace.unwrap_or_default().into(), name),
                Arc::new(object),
            );
        }

        pub(crate) fn remove(&self, plural: &str, namespace: Option<&str>, name: &str) {
            self.objects.lock().remove(&(
                plural.into(),
                namespace.unwrap_or_default().into(),
                name.into(),
            ));
        }
    }

    impl ObjectLookup for FakeLookup {
        fn get(
            &self,
            _group: &str,
            plural: &str,
            namespace: Option<&str>,
            name: &str,
        ) -> Option<Arc<Value>> {
            self.objects
                .lock()
                .get(&(
                    plural.into(),
                    namespace.unwrap_or_default().into(),
                    name.into(),
                ))
                .cloned()
        }

        fn list(
            &self,
            _group: &str,
            plural: &str,
            namespace: Option<&str>,
            filter: &(dyn Fn(&Value) -> bool + Send + Sync),
        ) -> Vec<Arc<Value>> {
            self.objects
                .lock()
                .iter()
                .filter(|((p, ns, _), v)| {
                    p == plural && namespace.is_none_or(|n| n == ns) && filter(v)
                })
                .map(|(_, v)| v.clone())
                .collect()
        }
    }

    #[async_trait]
    impl ObjectFetch for FakeLookup {
        async fn fetch(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
            ObjectLookup::get(self, "", plural, namespace, name).map(|o| (*o).clone())
        }
    }

    const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
    const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

    /// One RSA key for every test: generating one is slow in debug builds.
    fn rsa_private_pem() -> &'static str {
        static PEM: OnceLock<String> = OnceLock::new();
        PEM.get_or_init(|| {
            let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("rsa key");
            key.to_pkcs1_pem(LineEnding::LF).expect("pem").to_string()
        })
    }

    fn rsa_public_pem() -> String {
        let key = rsa::RsaPrivateKey::from_pkcs1_pem(rsa_private_pem()).expect("key");
        key.to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("pem")
    }

    fn ec_pkcs8_pem(alg: &'static rcgen::SignatureAlgorithm) -> String {
        rcgen::KeyPair::generate_for(alg)
            .expect("key")
            .serialize_pem()
    }

    fn signer(private_pem: &str) -> TokenSigner {
        TokenSigner::from_pem(private_pem.as_bytes(), "test key", ISSUER.into(), None)
            .expect("signer")
    }

    fn object(name: &str, uid: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": uid}})
    }

    /// A cluster with service account ns/sa, pod ns/p (on node n1) and node n1.
    fn cluster() -> Arc<FakeLookup> {
        let lookup = Arc::new(FakeLookup::default());
        lookup.put("serviceaccounts", Some("ns"), object("sa", "sa-uid"));
        lookup.put("pods", Some("ns"), object("p", "pod-uid"));
        lookup.put(
            "nodes",
            None,
            json!({"metadata": {"name": "n1", "uid": "node-uid"}}),
        );
        lookup
    }

    fn authenticator(
        keys: Vec<VerifyKey>,
        lookup: Arc<FakeLookup>,
    ) -> ServiceAccountTokenAuthenticator {
        ServiceAccountTokenAuthenticator::new(
            vec!["https://other.example".into(), ISSUER.into()],
            keys,
            vec![API_AUDIENCE.into()],
            lookup,
        )
    }

    fn pod_bound() -> BoundClaims {
        BoundClaims {
            namespace: "ns".into(),
            service_account: ObjectRef::new("sa", "sa-uid"),
            audiences: vec![API_AUDIENCE.into(), "vault".into()],
            expiration_seconds: 3600,
            pod: Some(ObjectRef::new("p", "pod-uid")),
            node: Some(ObjectRef::new("n1", "node-uid")),
            ..Default::default()
        }
    }

    fn audiences(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn rsa_tokens_round_trip_with_upstreams_claims_and_user() {
        let signer = signer(rsa_private_pem());
        let keys = parse_verification_keys(rsa_public_pem().as_bytes(), "pub").expect("keys");
        assert_eq!(keys[0].key_id(), signer.key_id());
        let now = now_unix();
        let issued = signer.issue_at(&pod_bound(), now).expect("token");
        assert_eq!(issued.expires_at, now + 3600);

        let header = jsonwebtoken::decode_header(&issued.token).expect("header");
        assert_eq!(header.alg, Algorithm::RS256);
        assert_eq!(header.kid.as_deref(), Some(signer.key_id()));
        let claims: Value =
            jsonwebtoken::dangerous::insecure_decode_claims(&issued.token).expect("claims");
        assert_eq!(claims["iss"], ISSUER);
        assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(claims["aud"], json!([API_AUDIENCE, "vault"]));
        assert_eq!(claims["exp"], now + 3600);
        assert_eq!(claims["iat"], now);
        assert_eq!(claims["nbf"], now);
        assert_eq!(claims["jti"], issued.jti.as_str());
        assert_eq!(
            claims["kubernetes.io"],
            json!({"namespace": "ns",
                   "serviceaccount": {"name": "sa", "uid": "sa-uid"},
                   "pod": {"name": "p", "uid": "pod-uid"},
                   "node": {"name": "n1", "uid": "node-uid"}})
        );

        let authn = authenticator(keys, cluster());
        let found = authn
            .authenticate_at(&issued.token, &audiences(&["vault", "other"]), now + 10)
            .await
            .expect("accepted")
            .expect("ours");
        assert_eq!(found.audiences, audiences(&["vault"]));
        let user = found.user;
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            audiences(&["system:serviceaccounts", "system:serviceaccounts:ns"])
        );
        let extra: BTreeMap<String, Vec<String>> = [
            (EXTRA_CREDENTIAL_ID, format!("JTI={}", issued.jti)),
            (EXTRA_NODE_NAME, "n1".to_string()),
            (EXTRA_NODE_UID, "node-uid".to_string()),
            (EXTRA_POD_NAME, "p".to_string()),
            (EXTRA_POD_UID, "pod-uid".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), vec![v]))
        .collect();
        assert_eq!(user.extra, extra);

        // No audience asked: the apiserver's own.
        let found = authn
            .authenticate_at(&issued.token, &[], now)
            .await
            .expect("accepted")
            .expect("ours");
        assert_eq!(found.audiences, audiences(&[API_AUDIENCE]));
    }

    #[tokio::test]
    async fn ecdsa_tokens_round_trip_from_every_key_encoding() {
        // P-256 as PKCS#8, verified with the public key derived from the private key.
        let p256_pem = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let signer256 = signer(&p256_pem);
        // P-384 as SEC1 (`EC PRIVATE KEY`), verified with a certificate of the key.
        let p384_pkcs8 = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P384_SHA384);
        let p384_key = p384::SecretKey::from_pkcs8_pem(&p384_pkcs8).expect("p384");
        let sec1 = p384_key.to_sec1_pem(LineEnding::LF).expect("sec1");
        assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----"));
        let signer384 = signer(&sec1);
        let cert_key = rcgen::KeyPair::from_pem(&p384_pkcs8).expect("rcgen key");
        let cert = rcgen::CertificateParams::new(vec!["sa".to_string()])
            .expect("params")
            .self_signed(&cert_key)
            .expect("cert")
            .pem();
        let mut bundle = p256_pem.clone();
        bundle.push_str(&cert);
        let keys = parse_verification_keys(bundle.as_bytes(), "bundle").expect("keys");
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].key_id(), signer256.key_id());
        assert_eq!(keys[1].key_id(), signer384.key_id());

        let authn = authenticator(keys, cluster());
        for (signer, alg) in [
            (&signer256, Algorithm::ES256),
            (&signer384, Algorithm::ES384),
        ] {
            let issued = signer.issue(&pod_bound()).expect("token");
            let header = jsonwebtoken::decode_header(&issued.token).expect("header");
            assert_eq!(header.alg, alg);
            let found = authn
                .authenticate_at(&issued.token, &audiences(&[API_AUDIENCE]), now_unix())
                .await
                .expect("accepted")
                .expect("ours");
            assert_eq!(found.user.name, "system:serviceaccount:ns:sa");
        }
    }

    #[tokio::test]
    async fn expired_and_future_tokens_are_refused_beyond_the_leeway() {
        let signer = signer(&ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256));
        let authn = authenticator(vec![signer.verification_key()], cluster());
        let issued_at = 1_000_000;
        let token = signer
            .issue_at(&pod_bound(), issued_at)
            .expect("token")
            .token;
        let asked = audiences(&[API_AUDIENCE]);
        let exp = issued_at + 3600;
        assert!(
            authn
                .authenticate_at(&token, &asked, exp + 59)
                .await
                .is_ok()
        );
        assert_eq!(
            authn.authenticate_at(&token, &asked, exp + 60).await,
            Err("service account token has expired".to_string())
        );
        assert!(
            authn
                .authenticate_at(&token, &asked, issued_at - 60)
                .await
                .is_ok()
        );
        assert_eq!(
            authn.authenticate_at(&token, &asked, issued_at - 61).await,
            Err("service account token is not valid yet".to_string())
        );
    }

    #[tokio::test]
    async fn audiences_not_asked_for_are_refused() {
        let pem = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let signer = signer(&pem);
        let keys = parse_verification_keys(pem.as_bytes(), "key").expect("keys");
        let authn = authenticator(keys, cluster());
        let mut claims = pod_bound();
        claims.audiences = audiences(&["vault"]);
        let token = signer.issue(&claims).expect("token").token;
        assert_eq!(
            authn.authenticate_at(&token, &[], now_unix()).await,
            Err(format!(
                "token audiences [\"vault\"] is invalid for the target audiences [\"{API_AUDIENCE}\"]"
            ))
        );
        assert!(
            authn
                .authenticate_at(&token, &audiences(&["vault"]), now_unix())
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn tokens_of_other_keys_issuers_or_shapes() {
        let ours = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let theirs = signer(&ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256));
        let rsa = signer(rsa_private_pem());
        let keys = parse_verification_keys(ours.as_bytes(), "key").expect("keys");
        let authn = authenticator(keys, cluster());
        let asked = audiences(&[API_AUDIENCE]);
        let now = now_unix();
        for other in [&theirs, &rsa] {
            let token = other.issue(&pod_bound()).expect("token").token;
            assert_eq!(
                authn.authenticate_at(&token, &asked, now).await,
                Err("invalid signature".to_string())
            );
        }
        // A token whose signature was swapped for a valid one of another token.
        let good = signer(&ours).issue(&pod_bound()).expect("token").token;
        let mut forged = pod_bound();
        forged.service_account.name = "admin".into();
        let forged = signer(&ours).issue(&forged).expect("token").token;
        let spliced = format!(
            "{}.{}",
            forged.rsplit_once('.').expect("jws").0,
            good.rsplit_once('.').expect("jws").1
        );
        assert_eq!(
            authn.authenticate_at(&spliced, &asked, now).await,
            Err("invalid signature".to_string())
        );
        // Another issuer's JWTs and opaque tokens are left to other sources.
        let foreign = TokenSigner::from_pem(ours.as_bytes(), "k", "https://idp".into(), None)
            .expect("signer")
            .issue(&pod_bound())
            .expect("token")
            .token;
        assert_eq!(authn.authenticate_at(&foreign, &asked, now).await, Ok(None));
        for opaque in ["abcdef.0123456789abcdef", "a.b.c", "static-token"] {
            assert_eq!(authn.authenticate_at(opaque, &asked, now).await, Ok(None));
        }
    }

    #[tokio::test]
    async fn bound_objects_must_still_exist_with_their_uids() {
        let pem = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let signer = signer(&pem);
        let lookup = cluster();
        let authn = authenticator(
            parse_verification_keys(pem.as_bytes(), "key").expect("keys"),
            lookup.clone(),
        );
        let asked = audiences(&[API_AUDIENCE]);
        let now = now_unix();
        let token = signer.issue_at(&pod_bound(), now).expect("token").token;
        assert!(authn.authenticate_at(&token, &asked, now).await.is_ok());

        // Deleted a moment ago: still good within the leeway, not after.
        let mut deleting = object("p", "pod-uid");
        deleting["metadata"]["deletionTimestamp"] = json!(
            jiff::Timestamp::from_second(now - 30)
                .expect("ts")
                .to_string()
        );
        lookup.put("pods", Some("ns"), deleting);
        assert!(authn.authenticate_at(&token, &asked, now).await.is_ok());
        assert_eq!(
            authn.authenticate_at(&token, &asked, now + 31).await,
            Err("service account token has been invalidated".to_string())
        );
        lookup.remove("pods", Some("ns"), "p");
        assert_eq!(
            authn.authenticate_at(&token, &asked, now).await,
            Err("service account token has been invalidated".to_string())
        );
        // Recreated under the same name.
        lookup.put("pods", Some("ns"), object("p", "pod-uid-2"));
        assert_eq!(
            authn.authenticate_at(&token, &asked, now).await,
            Err(
                "pod UID (pod-uid-2) does not match service account pod ref claim (pod-uid)"
                    .to_string()
            )
        );
        lookup.put("serviceaccounts", Some("ns"), object("sa", "sa-uid-2"));
        assert_eq!(
            authn.authenticate_at(&token, &asked, now).await,
            Err("service account UID (sa-uid-2) does not match claim (sa-uid)".to_string())
        );
        lookup.remove("serviceaccounts", Some("ns"), "sa");
        assert_eq!(
            authn.authenticate_at(&token, &asked, now).await,
            Err("serviceaccounts \"sa\" not found".to_string())
        );

        // A node-bound token lives as long as its node.
        lookup.put("serviceaccounts", Some("ns"), object("sa", "sa-uid"));
        let mut node_bound = pod_bound();
        node_bound.pod = None;
        let token = signer.issue_at(&node_bound, now).expect("token").token;
        let user = authn
            .authenticate_at(&token, &asked, now)
            .await
            .expect("accepted")
            .expect("ours")
            .user;
        assert_eq!(user.extra[EXTRA_NODE_NAME], vec!["n1"]);
        assert!(!user.extra.contains_key(EXTRA_POD_NAME));
        lookup.remove("nodes", None, "n1");
        assert_eq!(
            authn.authenticate_at(&token, &asked, now).await,
            Err("service account token has been invalidated".to_string())
        );
    }

    #[tokio::test]
    async fn objects_the_caches_have_not_seen_yet_are_read_from_storage() {
        let pem = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let signer = signer(&pem);
        let keys = parse_verification_keys(pem.as_bytes(), "key").expect("keys");
        let token = signer.issue(&pod_bound()).expect("token").token;
        let asked = audiences(&[API_AUDIENCE]);
        let empty_cache = Arc::new(FakeLookup::default());
        let cache_only = authenticator(keys.clone(), empty_cache.clone());
        assert_eq!(
            cache_only.authenticate_at(&token, &asked, now_unix()).await,
            Err("serviceaccounts \"sa\" not found".to_string())
        );
        let with_storage = authenticator(keys, empty_cache).with_storage_fallback(cluster());
        assert!(matches!(
            with_storage
                .authenticate_at(&token, &asked, now_unix())
                .await,
            Ok(Some(_))
        ));
    }

    /// A legacy token as the token controller writes into a secret.
    fn legacy_token(signer: &TokenSigner, sa_uid: &str) -> String {
        let claims = json!({
            "iss": LEGACY_ISSUER,
            "sub": "system:serviceaccount:ns:sa",
            "kubernetes.io/serviceaccount/namespace": "ns",
            "kubernetes.io/serviceaccount/secret.name": "sa-token",
            "kubernetes.io/serviceaccount/service-account.name": "sa",
            "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
        });
        jsonwebtoken::encode(&Header::new(signer.algorithm), &claims, &signer.key).expect("token")
    }

    fn token_secret(token: &str) -> Value {
        json!({
            "metadata": {"name": "sa-token", "namespace": "ns", "uid": "secret-uid"},
            "type": SERVICE_ACCOUNT_TOKEN_SECRET_TYPE,
            "data": {"token": STANDARD.encode(token)},
        })
    }

    #[tokio::test]
    async fn legacy_tokens_are_checked_against_their_secret() {
        let pem = ec_pkcs8_pem(&rcgen::PKCS_ECDSA_P256_SHA256);
        let signer = signer(&pem);
        let keys = parse_verification_keys(pem.as_bytes(), "key").expect("keys");
        let lookup = cluster();
        let authn = authenticator(keys.clone(), lookup.clone());
        let token = legacy_token(&signer, "sa-uid");
        let now = now_unix();
        assert_eq!(
            authn.authenticate_at(&token, &[], now).await,
            Err("token has been invalidated".to_string())
        );
        lookup.put("secrets", Some("ns"), token_secret(&token));
        let found = authn
            .authenticate_at(&token, &[], now)
            .await
            .expect("accepted")
            .expect("ours");
        assert_eq!(found.user, service_account_user("ns", "sa", "sa-uid"));
        // Without an audience a legacy token is for the apiserver only.
        assert_eq!(found.audiences, audiences(&[API_AUDIENCE]));
        assert!(
            authn
                .authenticate_at(&token, &audiences(&["vault"]), now)
                .await
                .is_err()
        );

        lookup.put("secrets", Some("ns"), token_secret("another token"));
        assert_eq!(
            authn.authenticate_at(&token, &[], now).await,
            Err("token does not match server's copy".to_string())
        );
        lookup.put("secrets", Some("ns"), token_secret(&token));
        let stale = legacy_token(&signer, "old-uid");
        lookup.put("secrets", Some("ns"), token_secret(&stale));
        assert_eq!(
            authn.authenticate_at(&stale, &[], now).await,
            Err("service account UID (sa-uid) does not match claim (old-uid)".to_string())
        );

        // With --service-account-lookup=false only the signature and claims count.
        lookup.remove("secrets", Some("ns"), "sa-token");
        let unchecked = authenticator(keys, lookup).with_legacy_lookup(false);
        assert!(matches!(
            unchecked.authenticate_at(&stale, &[], now).await,
            Ok(Some(_))
        ));
    }

    #[test]
    fn key_files_are_read_with_errors_naming_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let rsa_file = dir.path().join("rsa.key");
        std::fs::write(&rsa_file, rsa_private_pem()).expect("write");
        let pub_file = dir.path().join("sa.pub");
        std::fs::write(&pub_file, rsa_public_pem()).expect("write");
        let keys = load_verification_keys(&[rsa_file.clone(), pub_file]).expect("keys");
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].key_id(), keys[1].key_id());
        let signer = TokenSigner::load(&rsa_file, ISSUER.into(), Some(Duration::from_secs(7200)))
            .expect("signer");
        assert_eq!(signer.key_id(), keys[0].key_id());
        assert_eq!(signer.clamp_expiration(3600), 3600);
        assert_eq!(signer.clamp_expiration(86400), 7200);
        let claims = BoundClaims {
            expiration_seconds: 86400,
            ..pod_bound()
        };
        assert_eq!(
            signer.issue_at(&claims, 0).expect("token").expires_at,
            86400
        );

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a key\n").expect("write");
        let err = load_verification_keys(&[empty]).expect_err("no keys");
        assert!(format!("{err:#}").contains("empty.pem"), "{err:#}");
        let bad = dir.path().join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN PUBLIC KEY-----\naGVsbG8=\n-----END PUBLIC KEY-----\n",
        )
        .expect("write");
        let err = load_verification_keys(&[bad]).expect_err("bad key");
        assert!(format!("{err:#}").contains("bad.pem"), "{err:#}");
        let err = TokenSigner::load(&pub_file_only(&dir), ISSUER.into(), None)
            .expect_err("no private key");
        assert!(format!("{err:#}").contains("only.pub"), "{err:#}");
        let missing = dir.path().join("missing.pem");
        let err = load_verification_keys(&[missing]).expect_err("missing");
        assert!(format!("{err:#}").contains("missing.pem"), "{err:#}");
    }

    fn pub_file_only(dir: &tempfile::TempDir) -> PathBuf {
        let file = dir.path().join("only.pub");
        std::fs::write(&file, rsa_public_pem()).expect("write");
        file
    }
}
