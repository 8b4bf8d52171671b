//! A throwaway PKI for tests: one CA, client certificates naming a user and groups (what
//! `--client-ca-file` authenticates), serving certificates for test servers, and a
//! service-account signing key pair. Everything is written as PEM files under one directory,
//! because the daemons and kubectl read files.
//!
//! Failures panic: they are broken test fixtures, never conditions a test should handle.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData, SigningKey,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use x509_parser::prelude::{FromDer, X509Certificate};

/// A test certificate authority whose files live in `dir`.
pub struct Pki {
    dir: PathBuf,
    ca_pem: String,
    /// The CA's subject exactly as encoded in its certificate: an issued certificate's issuer
    /// must match it byte for byte for chain building.
    ca_subject_der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
    issued: AtomicU64,
}

impl Pki {
    /// Creates a CA and writes `ca.crt` and `ca.key` (PKCS#8) under `dir`, creating it.
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).expect("creating the PKI directory");
        let key = KeyPair::generate().expect("generating the CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, "e2e-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("self-signing the CA");
        let (_, parsed) = X509Certificate::from_der(cert.der()).expect("parsing the CA");
        let ca_subject_der = parsed.tbs_certificate.subject.as_raw().to_vec();
        let ca_pem = cert.pem();
        write(&dir.join("ca.crt"), &ca_pem);
        write(&dir.join("ca.key"), &key.serialize_pem());
        Pki {
            dir: dir.to_path_buf(),
            ca_pem,
            ca_subject_der,
            issuer: Issuer::new(params, key),
            issued: AtomicU64::new(0),
        }
    }

    /// The CA certificate file (`--client-ca-file`, a kubeconfig's `certificate-authority`).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The CA's private key file.
    pub fn ca_key_file(&self) -> PathBuf {
        self.dir.join("ca.key")
    }

    /// The CA certificate as PEM (e.g. a webhook configuration's `caBundle`, base64-encoded).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Issues a client certificate for user `name` in `groups` (subject `O=<group>...`,
    /// `CN=<name>`, as upstream's docs make them with openssl), returning the certificate and
    /// key files.
    pub fn issue_client(&self, name: &str, groups: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("generating a client key");
        // rcgen keeps one value per attribute type, and a user may be in several groups, so the
        // certificate is encoded here.
        let mut subject: Vec<(&[u8], &str)> = groups.iter().map(|g| (OID_O, *g)).collect();
        subject.push((OID_CN, name));
        let n = self.next();
        let der = client_certificate(
            &self.ca_subject_der,
            self.issuer.key(),
            &key,
            &subject,
            serial(n),
        );
        let stem = format!("client-{n}-{}", file_safe(name));
        self.write_pair(&stem, &to_pem("CERTIFICATE", &der), &key)
    }

    /// Issues a serving certificate for `hosts` (DNS names or IP addresses), returning the
    /// certificate and key files (`--tls-cert-file`, `--tls-private-key-file`).
    pub fn issue_serving(&self, hosts: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("generating a serving key");
        let sans: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut params = CertificateParams::new(sans).expect("serving certificate parameters");
        if let Some(first) = hosts.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("signing a serving certificate");
        let stem = format!("serving-{}", self.next());
        self.write_pair(&stem, &cert.pem(), &key)
    }

    /// A serving certificate for `hosts`, loaded for a TLS server: the chain and its key.
    pub fn serving_identity(
        &self,
        hosts: &[&str],
    ) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let (cert, key) = self.issue_serving(hosts);
        let chain = CertificateDer::pem_file_iter(&cert)
            .expect("reading the serving certificate")
            .collect::<Result<_, _>>()
            .expect("parsing the serving certificate");
        let key = PrivateKeyDer::from_pem_file(&key).expect("reading the serving key");
        (chain, key)
    }

    /// A TLS server configuration (no client certificates) serving a certificate for `hosts`,
    /// for webhooks and other servers a test runs.
    pub fn tls_server_config(&self, hosts: &[&str]) -> rustls::ServerConfig {
        let (chain, key) = self.serving_identity(hosts);
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a valid serving certificate")
    }

    /// Writes a new ECDSA P-256 service-account key pair: the private key in PKCS#8 PEM
    /// (`--service-account-signing-key-file`) and its public key as `PUBLIC KEY` PEM
    /// (`--service-account-key-file`).
    pub fn service_account_keys(&self) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("generating a service account key");
        let n = self.next();
        let private = self.dir.join(format!("sa-{n}.key"));
        let public = self.dir.join(format!("sa-{n}.pub"));
        write(&private, &key.serialize_pem());
        write(&public, &key.public_key_pem());
        (private, public)
    }

    fn write_pair(&self, stem: &str, cert_pem: &str, key: &KeyPair) -> (PathBuf, PathBuf) {
        let cert = self.dir.join(format!("{stem}.crt"));
        let key_file = self.dir.join(format!("{stem}.key"));
        write(&cert, cert_pem);
        write(&key_file, &key.serialize_pem());
        (cert, key_file)
    }

    /// File names carry a sequence number: names that differ only in characters unfit for a
    /// file name must not overwrite each other.
    fn next(&self) -> u64 {
        self.issued.fetch_add(1, Ordering::Relaxed)
    }
}

/// A serial number for this CA's `n`th certificate: unique within the CA and unlikely to repeat
/// across CAs made at different moments.
fn serial(n: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    (nanos << 16) ^ n
}

/// Writes a kubeconfig for `server` that trusts `ca_file` and authenticates as `user_name` with
/// the client certificate `cert_file` and its key `key_file`.
pub fn write_cert_kubeconfig(
    path: &Path,
    server_url: &str,
    ca_file: &Path,
    cert_file: &Path,
    key_file: &Path,
    user_name: &str,
) {
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "e2e",
            "cluster": {"server": server_url, "certificate-authority": ca_file},
        }],
        "users": [{
            "name": user_name,
            "user": {"client-certificate": cert_file, "client-key": key_file},
        }],
        "contexts": [{
            "name": "e2e",
            "context": {"cluster": "e2e", "user": user_name},
        }],
        "current-context": "e2e",
    });
    let yaml = serde_yaml::to_string(&config).expect("encoding the kubeconfig");
    write(path, &yaml);
}

fn write(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn to_pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];
/// ecdsa-with-SHA256 (1.2.840.10045.4.3.2), the CA key's algorithm.
const ECDSA_WITH_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
/// id-kp-clientAuth (1.3.6.1.5.5.7.3.2).
const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];

/// One DER element.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let significant = &bytes[bytes.iter().take_while(|b| **b == 0).count()..];
        out.push(0x80 | significant.len() as u8);
        out.extend_from_slice(significant);
    }
    out.extend_from_slice(content);
    out
}

fn sequence(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A certificate extension under id-ce (2.5.29.`id`).
fn extension(id: u8, critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![tlv(0x06, &[0x55, 0x1d, id])];
    if critical {
        parts.push(vec![0x01, 0x01, 0xff]);
    }
    parts.push(tlv(0x04, &value));
    sequence(&parts)
}

/// An X.509 v3 end-entity certificate for client authentication with `subject` attributes
/// (one per RDN, in order, as UTF8String), signed by `issuer_key` (ECDSA P-256).
fn client_certificate(
    issuer_der: &[u8],
    issuer_key: &KeyPair,
    subject_key: &KeyPair,
    subject: &[(&[u8], &str)],
    serial: u64,
) -> Vec<u8> {
    assert_eq!(
        issuer_key.algorithm(),
        &rcgen::PKCS_ECDSA_P256_SHA256,
        "the CA key is ECDSA P-256"
    );
    let algorithm = sequence(&[tlv(0x06, ECDSA_WITH_SHA256)]);
    let serial = serial.to_be_bytes();
    // DER integers are minimal and this one must read as positive.
    let mut serial_bytes: Vec<u8> = serial.iter().copied().skip_while(|b| *b == 0).collect();
    if serial_bytes.first().is_none_or(|b| b & 0x80 != 0) {
        serial_bytes.insert(0, 0);
    }
    let name = tlv(
        0x30,
        &subject
            .iter()
            .flat_map(|(oid, value)| {
                tlv(
                    0x31,
                    &sequence(&[tlv(0x06, oid), tlv(0x0c, value.as_bytes())]),
                )
            })
            .collect::<Vec<u8>>(),
    );
    // Back-dated an hour so a clock a little behind still accepts it.
    let now = jiff::Timestamp::now();
    let utc_time =
        |t: jiff::Timestamp| tlv(0x17, t.strftime("%y%m%d%H%M%SZ").to_string().as_bytes());
    let validity = sequence(&[
        utc_time(now - jiff::SignedDuration::from_hours(1)),
        utc_time(now + jiff::SignedDuration::from_hours(24 * 365)),
    ]);
    let extensions = sequence(&[
        // keyUsage: digitalSignature.
        extension(0x0f, true, tlv(0x03, &[0x07, 0x80])),
        // basicConstraints: not a CA.
        extension(0x13, true, sequence(&[])),
        // extKeyUsage: clientAuth.
        extension(0x25, false, sequence(&[tlv(0x06, CLIENT_AUTH)])),
    ]);
    let tbs = sequence(&[
        tlv(0xa0, &tlv(0x02, &[2])),
        tlv(0x02, &serial_bytes),
        algorithm.clone(),
        issuer_der.to_vec(),
        validity,
        name,
        subject_key.subject_public_key_info(),
        tlv(0xa3, &extensions),
    ]);
    let signature = issuer_key.sign(&tbs).expect("signing a client certificate");
    let mut bits = vec![0u8];
    bits.extend_from_slice(&signature);
    sequence(&[tbs, algorithm, tlv(0x03, &bits)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{
        CertificateDer, PrivateKeyDer, ServerName, SubjectPublicKeyInfoDer, UnixTime,
    };
    use std::sync::Arc;

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn roots(pki: &Pki) -> Arc<rustls::RootCertStore> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(pki.ca_file()).expect("ca.crt"))
            .expect("CA usable as a trust anchor");
        Arc::new(roots)
    }

    #[test]
    fn the_ca_files_parse() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let ca = CertificateDer::from_pem_file(pki.ca_file()).expect("ca.crt");
        PrivateKeyDer::from_pem_file(pki.ca_key_file()).expect("ca.key");
        assert_eq!(
            std::fs::read_to_string(pki.ca_file()).unwrap(),
            pki.ca_pem()
        );
        let (_, parsed) = X509Certificate::from_der(ca.as_ref()).unwrap();
        assert!(parsed.is_ca());
    }

    #[test]
    fn a_client_certificate_names_the_user_and_groups_and_verifies_against_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let (cert, key) = pki.issue_client("alice", &["system:masters", "dev"]);
        let der = CertificateDer::from_pem_file(&cert).expect("client cert");
        PrivateKeyDer::from_pem_file(&key).expect("client key");

        let (_, parsed) = X509Certificate::from_der(der.as_ref()).expect("parses");
        let subject = parsed.subject();
        let cn: Vec<_> = subject
            .iter_common_name()
            .map(|a| a.as_str().unwrap())
            .collect();
        let o: Vec<_> = subject
            .iter_organization()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(cn, ["alice"]);
        assert_eq!(o, ["system:masters", "dev"]);

        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&pki), provider())
                .build()
                .unwrap();
        verifier
            .verify_client_cert(&der, &[], UnixTime::now())
            .expect("the CA vouches for the client certificate");

        let other = Pki::new(&dir.path().join("other"));
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&other), provider())
                .build()
                .unwrap();
        assert!(
            verifier
                .verify_client_cert(&der, &[], UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn users_with_similar_names_get_their_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let (a, _) = pki.issue_client("system:node:n1", &["system:nodes"]);
        let (b, _) = pki.issue_client("system-node-n1", &[]);
        assert_ne!(a, b);
    }

    #[test]
    fn a_serving_certificate_verifies_for_its_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let (cert, key) = pki.issue_serving(&["localhost", "127.0.0.1"]);
        let der = CertificateDer::from_pem_file(&cert).expect("serving cert");
        PrivateKeyDer::from_pem_file(&key).expect("serving key");
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots(&pki), provider())
                .build()
                .unwrap();
        for host in ["localhost", "127.0.0.1"] {
            let name = ServerName::try_from(host).unwrap();
            verifier
                .verify_server_cert(&der, &[], &name, &[], UnixTime::now())
                .unwrap_or_else(|e| panic!("{host}: {e}"));
        }
        let elsewhere = ServerName::try_from("example.com").unwrap();
        assert!(
            verifier
                .verify_server_cert(&der, &[], &elsewhere, &[], UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn the_service_account_keys_are_a_pair() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let (private, public) = pki.service_account_keys();
        let private_pem = std::fs::read_to_string(&private).unwrap();
        assert!(private_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        PrivateKeyDer::from_pem_file(&private).expect("PKCS#8 private key");
        SubjectPublicKeyInfoDer::from_pem_file(&public).expect("PUBLIC KEY");
        let reloaded = KeyPair::from_pem(&private_pem).expect("private key");
        assert_eq!(
            reloaded.public_key_pem(),
            std::fs::read_to_string(&public).unwrap()
        );
    }

    #[test]
    fn the_kubeconfig_points_at_the_certificate_files() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let (cert, key) = pki.issue_client("bob", &[]);
        let path = dir.path().join("kubeconfig");
        write_cert_kubeconfig(
            &path,
            "https://127.0.0.1:6443",
            &pki.ca_file(),
            &cert,
            &key,
            "bob",
        );
        let config: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let user = &config["users"][0];
        assert_eq!(user["name"].as_str(), Some("bob"));
        assert_eq!(user["user"]["client-certificate"].as_str(), cert.to_str());
        assert_eq!(user["user"]["client-key"].as_str(), key.to_str());
        let cluster = &config["clusters"][0]["cluster"];
        assert_eq!(cluster["server"].as_str(), Some("https://127.0.0.1:6443"));
        assert_eq!(
            cluster["certificate-authority"].as_str(),
            pki.ca_file().to_str()
        );
        assert_eq!(
            config["contexts"][0]["context"]["user"].as_str(),
            Some("bob")
        );
        assert_eq!(config["current-context"].as_str(), Some("e2e"));
    }
}
