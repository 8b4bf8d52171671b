//! The cluster signing CA (`--cluster-signing-cert-file`/`--cluster-signing-key-file`) and
//! how it issues a certificate for a request, as upstream's `authority.Sign`.

use super::request::{NameAttribute, Request, name_attributes};
use anyhow::{Context as _, anyhow};
use rcgen::{
    DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, KeyIdMethod, KeyPair,
    KeyUsagePurpose, SanType,
};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::EncodePrivateKey;
use std::path::Path;
use std::time::Duration;
use x509_parser::extensions::ParsedExtension;

/// Certificates start this long before they are signed, for clock skew (upstream's backdate).
const BACKDATE: Duration = Duration::from_secs(5 * 60);

pub struct Authority {
    key: KeyPair,
    subject: Vec<NameAttribute>,
    key_id: Option<Vec<u8>>,
    /// The CA certificate's notAfter (Unix seconds): nothing it signs outlives it.
    not_after: i64,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// The request's public key as rcgen takes it: the key bits and the algorithm they are for.
struct RequestKey {
    bits: Vec<u8>,
    algorithm: &'static rcgen::SignatureAlgorithm,
}

impl RequestKey {
    fn from_spki(spki_der: &[u8]) -> anyhow::Result<Self> {
        use x509_parser::prelude::FromDer;
        let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki_der)
            .map_err(|e| anyhow!("parsing the request's public key: {e}"))?;
        let oid = spki.algorithm.algorithm.to_id_string();
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok())
            .map(|o| o.to_id_string());
        let algorithm = match (oid.as_str(), curve.as_deref()) {
            ("1.2.840.113549.1.1.1", _) => &rcgen::PKCS_RSA_SHA256,
            ("1.2.840.10045.2.1", Some("1.2.840.10045.3.1.7")) => &rcgen::PKCS_ECDSA_P256_SHA256,
            ("1.2.840.10045.2.1", Some("1.3.132.0.34")) => &rcgen::PKCS_ECDSA_P384_SHA384,
            ("1.3.101.112", _) => &rcgen::PKCS_ED25519,
            _ => anyhow::bail!("unsupported public key algorithm {oid}"),
        };
        Ok(Self {
            bits: spki.subject_public_key.data.to_vec(),
            algorithm,
        })
    }
}

impl rcgen::PublicKeyData for RequestKey {
    fn der_bytes(&self) -> &[u8] {
        &self.bits
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.algorithm
    }
}

impl Authority {
    pub fn load(cert_file: &Path, key_file: &Path) -> anyhow::Result<Self> {
        let cert = std::fs::read(cert_file).with_context(|| {
            format!(
                "reading --cluster-signing-cert-file {}",
                cert_file.display()
            )
        })?;
        let key = std::fs::read(key_file).with_context(|| {
            format!("reading --cluster-signing-key-file {}", key_file.display())
        })?;
        Self::from_pem(&cert, &key)
    }

    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<Self> {
        let block = pem::parse(cert_pem).context("parsing the signing certificate")?;
        let (_, cert) = x509_parser::parse_x509_certificate(block.contents())
            .map_err(|e| anyhow!("parsing the signing certificate: {e}"))?;
        let key_id = cert
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
                _ => None,
            });
        Ok(Self {
            key: load_key(key_pem)?,
            subject: name_attributes(cert.subject()),
            key_id,
            not_after: cert.validity().not_after.timestamp(),
        })
    }

    /// Issues a certificate (PEM) for `req` with `usages`, valid for `duration` from `now`
    /// (Unix seconds), never beyond the CA's own expiry.
    pub fn sign(
        &self,
        req: &Request,
        usages: &[String],
        duration: Duration,
        now: i64,
    ) -> anyhow::Result<String> {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = distinguished_name(&req.subject)?;
        // x509-parser's times convert to rcgen's (both use the `time` crate).
        let time_of = |unix: i64| {
            x509_parser::time::ASN1Time::from_timestamp(unix)
                .map_err(|e| anyhow!("time {unix}: {e}"))
        };
        params.not_before = time_of(now - BACKDATE.as_secs() as i64)?.to_datetime();
        params.not_after =
            time_of((now + duration.as_secs() as i64).min(self.not_after))?.to_datetime();
        params.serial_number = Some(rcgen::SerialNumber::from(serial()));
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        for dns in &req.dns_names {
            params.subject_alt_names.push(SanType::DnsName(
                dns.clone()
                    .try_into()
                    .map_err(|_| anyhow!("invalid DNS name {dns:?}"))?,
            ));
        }
        for ip in &req.ips {
            params.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        for email in &req.emails {
            params.subject_alt_names.push(SanType::Rfc822Name(
                email
                    .clone()
                    .try_into()
                    .map_err(|_| anyhow!("invalid email {email:?}"))?,
            ));
        }
        for uri in &req.uris {
            params.subject_alt_names.push(SanType::URI(
                uri.clone()
                    .try_into()
                    .map_err(|_| anyhow!("invalid URI {uri:?}"))?,
            ));
        }
        for usage in usages {
            match usage.as_str() {
                "digital signature" => params.key_usages.push(KeyUsagePurpose::DigitalSignature),
                "content commitment" => params.key_usages.push(KeyUsagePurpose::ContentCommitment),
                "key encipherment" => params.key_usages.push(KeyUsagePurpose::KeyEncipherment),
                "key agreement" => params.key_usages.push(KeyUsagePurpose::KeyAgreement),
                "data encipherment" => params.key_usages.push(KeyUsagePurpose::DataEncipherment),
                "cert sign" => params.key_usages.push(KeyUsagePurpose::KeyCertSign),
                "crl sign" => params.key_usages.push(KeyUsagePurpose::CrlSign),
                "encipher only" => params.key_usages.push(KeyUsagePurpose::EncipherOnly),
                "decipher only" => params.key_usages.push(KeyUsagePurpose::DecipherOnly),
                "any" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::Any),
                "server auth" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::ServerAuth),
                "client auth" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::ClientAuth),
                "code signing" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::CodeSigning),
                "email protection" | "s/mime" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::EmailProtection),
                "timestamping" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::TimeStamping),
                "ocsp signing" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::OcspSigning),
                // IPsec and Netscape SGC usages have no rcgen purpose; they are dropped.
                _ => {}
            }
        }
        let mut issuer_params = rcgen::CertificateParams::default();
        issuer_params.distinguished_name = distinguished_name(&self.subject)?;
        if let Some(id) = &self.key_id {
            issuer_params.key_identifier_method = KeyIdMethod::PreSpecified(id.clone());
        }
        let issuer = rcgen::Issuer::from_params(&issuer_params, &self.key);
        let cert = params
            .signed_by(&RequestKey::from_spki(&req.public_key)?, &issuer)
            .context("signing the certificate")?;
        Ok(cert.pem())
    }
}

/// The name with each attribute's string type kept: chains are matched on the exact bytes of
/// the issuer's name.
fn distinguished_name(attrs: &[NameAttribute]) -> anyhow::Result<DistinguishedName> {
    let mut dn = DistinguishedName::new();
    for attr in attrs {
        let value = match attr.tag {
            19 => DnValue::PrintableString(
                attr.value
                    .clone()
                    .try_into()
                    .map_err(|_| anyhow!("invalid PrintableString {:?}", attr.value))?,
            ),
            22 => DnValue::Ia5String(
                attr.value
                    .clone()
                    .try_into()
                    .map_err(|_| anyhow!("invalid IA5String {:?}", attr.value))?,
            ),
            _ => DnValue::Utf8String(attr.value.clone()),
        };
        // rcgen holds one value per attribute type; a second value of the same type (a second
        // group) is written under the same OID as a custom type. Further ones are dropped.
        let standard = DnType::from_oid(&attr.oid);
        let custom = DnType::CustomDnType(attr.oid.clone());
        if dn.get(&standard).is_none() {
            dn.push(standard, value);
        } else if dn.get(&custom).is_none() {
            dn.push(custom, value);
        }
    }
    Ok(dn)
}

fn serial() -> Vec<u8> {
    // Positive 128-bit serial, as upstream draws it.
    let mut bytes = rand::random::<[u8; 16]>();
    bytes[0] &= 0x7f;
    bytes.to_vec()
}

/// The signing key: PKCS#8, or PKCS#1 RSA / SEC1 EC as kubeadm and openssl write them.
fn load_key(pem_data: &[u8]) -> anyhow::Result<KeyPair> {
    let blocks = pem::parse_many(pem_data).context("parsing the signing key")?;
    for block in blocks {
        let pkcs8 = match block.tag() {
            "PRIVATE KEY" => block.contents().to_vec(),
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(block.contents())
                .map_err(|e| anyhow!("RSA key: {e}"))?
                .to_pkcs8_der()
                .map_err(|e| anyhow!("RSA key: {e}"))?
                .as_bytes()
                .to_vec(),
            "EC PRIVATE KEY" => match p256::SecretKey::from_sec1_der(block.contents()) {
                Ok(k) => k
                    .to_pkcs8_der()
                    .map_err(|e| anyhow!("EC key: {e}"))?
                    .as_bytes()
                    .to_vec(),
                Err(_) => p384::SecretKey::from_sec1_der(block.contents())
                    .map_err(|_| anyhow!("EC key is not on P-256 or P-384"))?
                    .to_pkcs8_der()
                    .map_err(|e| anyhow!("EC key: {e}"))?
                    .as_bytes()
                    .to_vec(),
            },
            _ => continue,
        };
        return KeyPair::try_from(pkcs8).map_err(|e| anyhow!("unsupported signing key: {e}"));
    }
    Err(anyhow!("the signing key file holds no private key"))
}

#[cfg(test)]
mod tests {
    use super::super::request::parse_request;
    use super::super::request::tests::csr_pem;
    use super::*;

    fn ca() -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "test-ca");
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("ca");
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn issued_certificates_name_the_ca_and_carry_the_request() {
        let (ca_pem, key_pem) = ca();
        let authority = Authority::from_pem(ca_pem.as_bytes(), key_pem.as_bytes()).expect("ca");
        let (csr, _) = csr_pem("system:node:n1", &["system:nodes"], &["n1.example"]);
        let req = parse_request(csr.as_bytes()).expect("csr");
        let now = jiff::Timestamp::now().as_second();
        let usages = vec!["digital signature".to_string(), "server auth".to_string()];
        let pem_out = authority
            .sign(&req, &usages, Duration::from_secs(3600), now)
            .expect("signs");

        let block = pem::parse(pem_out.as_bytes()).expect("pem");
        let (_, cert) = x509_parser::parse_x509_certificate(block.contents()).expect("x509");
        let ca_block = pem::parse(ca_pem.as_bytes()).expect("pem");
        let (_, ca_cert) = x509_parser::parse_x509_certificate(ca_block.contents()).expect("x509");
        assert_eq!(cert.issuer().as_raw(), ca_cert.subject().as_raw());
        assert_eq!(cert.public_key().raw, req.public_key.as_slice());
        assert_eq!(cert.validity().not_after.timestamp(), now + 3600);
        assert_eq!(cert.validity().not_before.timestamp(), now - 300);
        let cn: Vec<_> = cert
            .subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(cn, ["system:node:n1"]);
        assert!(!cert.is_ca());
        let eku = cert.extended_key_usage().expect("eku").expect("present");
        assert!(eku.value.server_auth && !eku.value.client_auth);
    }

    #[test]
    fn certificates_never_outlive_the_ca() {
        let (ca_pem, key_pem) = ca();
        let authority = Authority::from_pem(ca_pem.as_bytes(), key_pem.as_bytes()).expect("ca");
        let req = parse_request(csr_pem("u", &[], &[]).0.as_bytes()).expect("csr");
        let pem_out = authority
            .sign(
                &req,
                &[],
                Duration::from_secs(u32::MAX as u64 * 100),
                1_800_000_000,
            )
            .expect("signs");
        let block = pem::parse(pem_out.as_bytes()).expect("pem");
        let (_, cert) = x509_parser::parse_x509_certificate(block.contents()).expect("x509");
        assert_eq!(cert.validity().not_after.timestamp(), authority.not_after);
    }
}
