//! What the controllers read from a CertificateSigningRequest: its PKCS#10 request, its
//! conditions, and upstream's per-signer policies on subjects and usages.

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use std::net::IpAddr;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// One attribute of a distinguished name: its OID, the ASN.1 string tag and the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameAttribute {
    pub oid: Vec<u64>,
    pub tag: u32,
    pub value: String,
}

/// A parsed PKCS#10 request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub subject: Vec<NameAttribute>,
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub emails: Vec<String>,
    pub ips: Vec<IpAddr>,
    pub uris: Vec<String>,
    /// The DER SubjectPublicKeyInfo.
    pub public_key: Vec<u8>,
}

const OID_CN: &[u64] = &[2, 5, 4, 3];
const OID_O: &[u64] = &[2, 5, 4, 10];

/// The attributes of a name, in order.
pub fn name_attributes(name: &x509_parser::x509::X509Name<'_>) -> Vec<NameAttribute> {
    name.iter_attributes()
        .filter_map(|attr| {
            let oid: Vec<u64> = attr.attr_type().iter()?.collect();
            let value = attr.as_str().ok()?.to_string();
            Some(NameAttribute {
                oid,
                tag: attr.attr_value().tag().0,
                value,
            })
        })
        .collect()
}

/// Parses the PEM `CERTIFICATE REQUEST` of `spec.request`.
pub fn parse_request(pem_data: &[u8]) -> anyhow::Result<Request> {
    let block = pem::parse(pem_data).context("PEM block type must be CERTIFICATE REQUEST")?;
    if block.tag() != "CERTIFICATE REQUEST" && block.tag() != "NEW CERTIFICATE REQUEST" {
        bail!("PEM block type must be CERTIFICATE REQUEST");
    }
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(block.contents())
            .map_err(|e| anyhow!("parsing the certificate request: {e}"))?;
    let info = &csr.certification_request_info;
    // Proof of possession: the request is signed by the key it asks a certificate for (the
    // apiserver checks this upstream; ours does not).
    let public_key = info.subject_pki.subject_public_key.data.as_ref();
    let signature = csr.signature_value.data.as_ref();
    let verified = rustls::crypto::ring::default_provider()
        .signature_verification_algorithms
        .all
        .iter()
        .any(|alg| {
            alg.verify_signature(public_key, info.raw, signature)
                .is_ok()
        });
    if !verified {
        bail!("the certificate request's signature does not verify with its public key");
    }
    let subject = name_attributes(&info.subject);
    let values = |oid: &[u64]| -> Vec<String> {
        subject
            .iter()
            .filter(|a| a.oid == oid)
            .map(|a| a.value.clone())
            .collect()
    };
    let mut request = Request {
        common_name: values(OID_CN).into_iter().next().unwrap_or_default(),
        organizations: values(OID_O),
        subject: subject.clone(),
        public_key: info.subject_pki.raw.to_vec(),
        ..Default::default()
    };
    for ext in csr.requested_extensions().into_iter().flatten() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(d) => request.dns_names.push(d.to_string()),
                    GeneralName::RFC822Name(e) => request.emails.push(e.to_string()),
                    GeneralName::URI(u) => request.uris.push(u.to_string()),
                    GeneralName::IPAddress(ip) => match ip.len() {
                        4 => request
                            .ips
                            .push(IpAddr::from(<[u8; 4]>::try_from(*ip).unwrap_or_default())),
                        16 => request
                            .ips
                            .push(IpAddr::from(<[u8; 16]>::try_from(*ip).unwrap_or_default())),
                        _ => bail!("invalid IP address in subjectAltName"),
                    },
                    _ => {}
                }
            }
        }
    }
    Ok(request)
}

fn has_condition(csr: &CertificateSigningRequest, kind: &str) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status != "False"))
}

pub fn is_approved(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Approved")
}

pub fn is_denied(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Denied")
}

pub fn has_failed(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Failed")
}

pub fn certificate(csr: &CertificateSigningRequest) -> Option<&[u8]> {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .map(|c| c.0.as_slice())
        .filter(|c| !c.is_empty())
}

fn usages_within(usages: &[String], allowed: &[&str]) -> Result<(), String> {
    let bad: Vec<&str> = usages
        .iter()
        .map(String::as_str)
        .filter(|u| !allowed.contains(u))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("unsupported key usages: {bad:?}"))
    }
}

fn require_usage(usages: &[String], needed: &str) -> Result<(), String> {
    if usages.iter().any(|u| u == needed) {
        Ok(())
    } else {
        Err(format!("missing required usage: {needed:?}"))
    }
}

/// Upstream's checks of a kubelet client request (`ValidateKubeletClientCSR`).
pub fn validate_kubelet_client(req: &Request, usages: &[String]) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    if !req.dns_names.is_empty() {
        return Err("dnsNames are not allowed".into());
    }
    if !req.emails.is_empty() {
        return Err("email addresses are not allowed".into());
    }
    if !req.ips.is_empty() {
        return Err("IP addresses are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI SANs are not allowed".into());
    }
    if !req.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    usages_exactly(usages, "client auth")
}

/// Upstream's checks of a kubelet serving request (`ValidateKubeletServingCSR`).
pub fn validate_kubelet_serving(req: &Request, usages: &[String]) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    if req.dns_names.is_empty() && req.ips.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !req.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !req.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    usages_exactly(usages, "server auth")
}

/// Upstream's kubelet usages: exactly digital signature and `auth`, plus key encipherment
/// (meant for RSA keys).
fn usages_exactly(usages: &[String], auth: &str) -> Result<(), String> {
    let mut got: Vec<&str> = usages.iter().map(String::as_str).collect();
    got.sort_unstable();
    got.dedup();
    let mut with_rsa = vec!["digital signature", "key encipherment", auth];
    with_rsa.sort_unstable();
    let mut without_rsa = vec!["digital signature", auth];
    without_rsa.sort_unstable();
    if got == with_rsa || got == without_rsa {
        Ok(())
    } else {
        Err(format!("usages did not match {with_rsa:?}"))
    }
}

/// Whether `signer` is one this controller manager signs for, and if so whether the request
/// meets that signer's policy (`Err` marks the request Failed, as upstream).
pub fn check_signer(signer: &str, req: &Request, usages: &[String]) -> Option<Result<(), String>> {
    Some(match signer {
        KUBE_APISERVER_CLIENT => usages_within(
            usages,
            &["digital signature", "key encipherment", "client auth"],
        )
        .and_then(|()| require_usage(usages, "client auth")),
        KUBE_APISERVER_CLIENT_KUBELET => validate_kubelet_client(req, usages),
        KUBELET_SERVING => validate_kubelet_serving(req, usages),
        LEGACY_UNKNOWN => Ok(()),
        _ => return None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A PEM request for `cn` in `orgs` with DNS SANs `dns`, and its key.
    pub fn csr_pem(cn: &str, orgs: &[&str], dns: &[&str]) -> (String, rcgen::KeyPair) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|d| d.to_string()).collect::<Vec<_>>())
                .expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        for o in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        let pem = params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem");
        (pem, key)
    }

    fn usages(u: &[&str]) -> Vec<String> {
        u.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requests_parse_to_subject_and_names() {
        let (pem, _) = csr_pem("system:node:n1", &["system:nodes"], &["n1.example"]);
        let req = parse_request(pem.as_bytes()).expect("parses");
        assert_eq!(req.common_name, "system:node:n1");
        assert_eq!(req.organizations, ["system:nodes"]);
        assert_eq!(req.dns_names, ["n1.example"]);
        assert!(!req.public_key.is_empty());
        assert!(parse_request(b"not pem").is_err());
        // A request whose signature was tampered with is refused.
        let block = pem::parse(pem.as_bytes()).expect("pem");
        let mut der = block.contents().to_vec();
        let last = der.len() - 1;
        der[last] ^= 0xff;
        let tampered = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        assert!(parse_request(tampered.as_bytes()).is_err());
    }

    #[test]
    fn signer_policies_follow_upstream() {
        let client = parse_request(
            csr_pem("system:node:n1", &["system:nodes"], &[])
                .0
                .as_bytes(),
        )
        .expect("parse");
        let serving = parse_request(
            csr_pem("system:node:n1", &["system:nodes"], &["n1"])
                .0
                .as_bytes(),
        )
        .expect("parse");
        let user = parse_request(csr_pem("alice", &["devs"], &[]).0.as_bytes()).expect("parse");
        let client_usages = usages(&["digital signature", "client auth"]);
        let serving_usages = usages(&["digital signature", "server auth"]);
        let only_client_auth = usages(&["client auth"]);
        // (what, signer, request, usages, accepted: None when not ours to sign)
        type Case<'a> = (&'a str, &'a str, &'a Request, &'a [String], Option<bool>);
        let cases: &[Case] = &[
            (
                "kubelet client",
                KUBE_APISERVER_CLIENT_KUBELET,
                &client,
                &client_usages,
                Some(true),
            ),
            (
                "kubelet client with SAN",
                KUBE_APISERVER_CLIENT_KUBELET,
                &serving,
                &client_usages,
                Some(false),
            ),
            (
                "kubelet client as user",
                KUBE_APISERVER_CLIENT_KUBELET,
                &user,
                &client_usages,
                Some(false),
            ),
            (
                "kubelet client without digital signature",
                KUBE_APISERVER_CLIENT_KUBELET,
                &client,
                &only_client_auth,
                Some(false),
            ),
            (
                "kubelet client server usage",
                KUBE_APISERVER_CLIENT_KUBELET,
                &client,
                &serving_usages,
                Some(false),
            ),
            (
                "serving",
                KUBELET_SERVING,
                &serving,
                &serving_usages,
                Some(true),
            ),
            (
                "serving without SAN",
                KUBELET_SERVING,
                &client,
                &serving_usages,
                Some(false),
            ),
            (
                "apiserver client",
                KUBE_APISERVER_CLIENT,
                &user,
                &client_usages,
                Some(true),
            ),
            (
                "apiserver client serving usage",
                KUBE_APISERVER_CLIENT,
                &user,
                &serving_usages,
                Some(false),
            ),
            ("legacy", LEGACY_UNKNOWN, &user, &serving_usages, Some(true)),
            (
                "other signer",
                "example.com/signer",
                &user,
                &client_usages,
                None,
            ),
        ];
        for (what, signer, req, u, want) in cases {
            assert_eq!(
                check_signer(signer, req, u).map(|r| r.is_ok()),
                *want,
                "{what}"
            );
        }
    }
}
