use super::*;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

#[test]
fn request_names_the_node() {
    let (key, csr) = key_and_request("node-1").unwrap();
    assert!(key.contains("PRIVATE KEY"), "{key}");
    let (_, pem) = x509_parser::pem::parse_x509_pem(csr.as_bytes()).unwrap();
    let (_, req) = X509CertificationRequest::from_der(&pem.contents).unwrap();
    let subject = req.certification_request_info.subject.to_string();
    assert!(subject.contains("CN=system:node:node-1"), "{subject}");
    assert!(subject.contains("O=system:nodes"), "{subject}");
    assert_eq!(csr_name(&csr), csr_name(&csr));
    assert!(csr_name(&csr).starts_with("node-csr-"));
}

fn self_signed(not_after_year: i32) -> (String, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(not_after_year, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

#[test]
fn kubeconfig_round_trip_and_validity() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, _) = self_signed(2100);
    std::fs::write(dir.path().join("ca.crt"), &ca).unwrap();
    let bootstrap = dir.path().join("bootstrap.kubeconfig");
    std::fs::write(
        &bootstrap,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    \
         certificate-authority: ca.crt\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n\
         current-context: x\nusers:\n- name: u\n  user: {token: abc.def}\n",
    )
    .unwrap();
    let cluster = kubeconfig::cluster(&bootstrap).unwrap();
    assert_eq!(cluster.server, "https://127.0.0.1:6443");
    assert_eq!(cluster.ca_pem.as_deref(), Some(ca.as_bytes()));
    assert!(
        kubeconfig::still_valid(&bootstrap),
        "token users are valid as they are"
    );

    let out = dir.path().join("kubelet.kubeconfig");
    assert!(!kubeconfig::still_valid(&out));
    let (cert, key) = self_signed(2100);
    let certs = dir.path().join("pki");
    let file = write_cert(&certs, cert.as_bytes(), &key).unwrap();
    assert_eq!(file, certs.join(CURRENT_CLIENT_CERT));
    assert!(
        std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    kubeconfig::write(&out, &cluster, &file).unwrap();
    assert!(kubeconfig::still_valid(&out));
    assert_eq!(kubeconfig::cluster(&out).unwrap().server, cluster.server);

    let (old, key) = self_signed(2001);
    write_cert(&certs, old.as_bytes(), &key).unwrap();
    assert!(!kubeconfig::still_valid(&out), "expired certificate");
}
