//! Client certificate authentication (`--client-ca-file`), as upstream's x509 request
//! authenticator with its common-name user conversion.
//!
//! The chain is verified before it gets here: the TLS server (component-base's
//! `tls_config_with` with a client CA) checks the signature path to the CA, the validity
//! period and the clientAuth extended key usage during the handshake, so a request only carries
//! `PeerCertificates` that passed. Upstream verifies per request instead and answers 401 for a
//! bad certificate; with rustls such a client never gets a connection at all.

use component_base::serving::PeerCertificates;
use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

use super::user::UserInfo;

/// The user a verified client certificate chain names: the leaf's subject CommonName is the
/// user name and its Organization values, in order, are the groups. The caller adds
/// `system:authenticated`.
///
/// `None` when the leaf has no (or an empty) CommonName, cannot be parsed, or has an extended
/// key usage that allows neither clientAuth nor any purpose. As upstream, that means this
/// authenticator does not vouch for the request, not that the request is refused: other
/// credentials (a bearer token) or the anonymous user may still apply.
pub fn user_from_chain(chain: &[CertificateDer<'_>]) -> Option<UserInfo> {
    let (_, leaf) = X509Certificate::from_der(chain.first()?.as_ref()).ok()?;
    // The verifier already enforces this; checked again so that a chain from any other
    // source (a test, a future front proxy) cannot turn a server certificate into a user.
    if let Ok(Some(eku)) = leaf.extended_key_usage()
        && !eku.value.client_auth
        && !eku.value.any
    {
        return None;
    }
    user_from_subject(leaf.subject())
}

fn user_from_subject(subject: &X509Name<'_>) -> Option<UserInfo> {
    // Go's pkix.Name keeps the last CommonName when the subject has several.
    let name = subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .last()?;
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo {
        name: name.to_string(),
        groups,
        ..Default::default()
    })
}

/// The user of a request's client certificate, if its TLS connection presented one.
pub fn user_from_extensions(extensions: &http::Extensions) -> Option<UserInfo> {
    user_from_chain(&extensions.get::<PeerCertificates>()?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
    use std::sync::Arc;

    fn cert(
        subject: &[(DnType, &str)],
        eku: &[ExtendedKeyUsagePurpose],
    ) -> CertificateDer<'static> {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in subject {
            params.distinguished_name.push(ty.clone(), *value);
        }
        params.extended_key_usages = eku.to_vec();
        params.self_signed(&key).expect("cert").der().clone()
    }

    fn client(subject: &[(DnType, &str)]) -> CertificateDer<'static> {
        cert(subject, &[ExtendedKeyUsagePurpose::ClientAuth])
    }

    /// A DER Name with one attribute per RDN, in order; rcgen cannot repeat an attribute type.
    fn name_der(attributes: &[(&[u8], &str)]) -> Vec<u8> {
        fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
            let len = u8::try_from(content.len()).expect("short");
            assert!(len < 0x80, "short-form lengths only");
            [&[tag, len][..], content].concat()
        }
        let rdns: Vec<u8> = attributes
            .iter()
            .flat_map(|(oid, value)| {
                let atv = [tlv(0x06, oid), tlv(0x0c, value.as_bytes())].concat();
                tlv(0x31, &tlv(0x30, &atv))
            })
            .collect();
        tlv(0x30, &rdns)
    }

    const CN: &[u8] = &[0x55, 4, 3];
    const O: &[u8] = &[0x55, 4, 10];
    const OU: &[u8] = &[0x55, 4, 11];

    #[test]
    fn common_name_is_the_user_and_organizations_are_the_groups_in_order() {
        let der = name_der(&[
            (O, "system:masters"),
            (OU, "not-a-group"),
            (CN, "alice"),
            (O, "dev"),
        ]);
        let (_, subject) = X509Name::from_der(&der).expect("name");
        let user = user_from_subject(&subject).expect("user");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["system:masters", "dev"]);
        assert_eq!(user.uid, "");
        assert!(user.extra.is_empty());
    }

    #[test]
    fn the_last_common_name_wins() {
        let der = name_der(&[(CN, "first"), (CN, "second")]);
        let (_, subject) = X509Name::from_der(&der).expect("name");
        assert_eq!(user_from_subject(&subject).expect("user").name, "second");
    }

    #[test]
    fn a_certificate_subject_is_read() {
        let leaf = client(&[
            (DnType::OrganizationName, "system:nodes"),
            (DnType::CommonName, "system:node:n1"),
        ]);
        let user = user_from_chain(&[leaf]).expect("user");
        assert_eq!(user.name, "system:node:n1");
        assert_eq!(user.groups, ["system:nodes"]);
    }

    #[test]
    fn only_the_leaf_names_the_user() {
        let leaf = client(&[(DnType::CommonName, "bob")]);
        let intermediate = client(&[
            (DnType::CommonName, "intermediate"),
            (DnType::OrganizationName, "cas"),
        ]);
        let user = user_from_chain(&[leaf, intermediate]).expect("user");
        assert_eq!(user.name, "bob");
        assert!(user.groups.is_empty());
    }

    #[test]
    fn no_common_name_is_no_user() {
        assert_eq!(
            user_from_chain(&[client(&[(DnType::OrganizationName, "dev")])]),
            None
        );
        assert_eq!(
            user_from_chain(&[client(&[(DnType::CommonName, "")])]),
            None
        );
        assert_eq!(user_from_chain(&[]), None);
        assert_eq!(
            user_from_chain(&[CertificateDer::from(vec![1, 2, 3])]),
            None
        );
    }

    #[test]
    fn extended_key_usage_must_allow_client_auth() {
        let subject = [(DnType::CommonName, "svc")];
        let server_only = cert(&subject, &[ExtendedKeyUsagePurpose::ServerAuth]);
        assert_eq!(user_from_chain(&[server_only]), None);
        for eku in [
            vec![],
            vec![ExtendedKeyUsagePurpose::Any],
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        ] {
            let user = user_from_chain(&[cert(&subject, &eku)]);
            assert_eq!(user.map(|u| u.name).as_deref(), Some("svc"), "{eku:?}");
        }
    }

    #[test]
    fn the_request_extension_carries_the_chain() {
        let mut extensions = http::Extensions::new();
        assert_eq!(user_from_extensions(&extensions), None);
        let leaf = client(&[(DnType::CommonName, "carol")]);
        extensions.insert(PeerCertificates(Arc::new(vec![leaf])));
        assert_eq!(
            user_from_extensions(&extensions).map(|u| u.name).as_deref(),
            Some("carol")
        );
    }
}
