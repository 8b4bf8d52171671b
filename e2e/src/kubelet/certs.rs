//! The kubelet's credentials in a test: its client certificate (`system:node:<name>` in
//! `system:nodes`) signed by the CA the apiserver trusts (`--client-ca-file`), and a serving
//! certificate from the same CA (what the apiserver's `--kubelet-certificate-authority`
//! verifies). The CA is found from the running apiserver's own command line; a CA made by
//! [`crate::pki::Pki`] keeps its key beside it as `ca.key`.

use crate::apiserver::ApiServer;
use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// Files the kubelet is started with.
pub struct NodeCerts {
    /// The CA of every certificate here: the kubelet's `authentication.x509.clientCAFile`, and
    /// what a client of the kubelet API trusts.
    pub ca_file: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    /// The kubeconfig to the apiserver: the node's client certificate when the apiserver has
    /// a client CA, else the token the e2e helpers use (an apiserver without one is open).
    pub kubeconfig: PathBuf,
    /// Whether the kubeconfig authenticates as `system:node:<name>`.
    pub node_identity: bool,
}

/// Issues the kubelet's certificates under `dir` and writes its kubeconfig.
pub fn issue(dir: &Path, api: &ApiServer, node_name: &str) -> anyhow::Result<NodeCerts> {
    std::fs::create_dir_all(dir)?;
    let (ca_file, ca_key, node_identity) = match apiserver_client_ca(api) {
        Some(ca) => {
            let key = ca.with_file_name("ca.key");
            anyhow::ensure!(
                key.exists(),
                "the apiserver trusts {} but no ca.key lies beside it: make the CA with e2e::pki::Pki",
                ca.display()
            );
            (ca, key, true)
        }
        None => {
            let pki = crate::pki::Pki::new(&dir.join("ca"));
            (pki.ca_file(), pki.ca_key_file(), false)
        }
    };
    let server = (api.url(), api.ca_file());
    issue_signed(dir, &ca_file, &ca_key, node_identity, server, node_name)
}

/// Issues the kubelet's certificates under `dir` from the CA `ca_file` (its key `ca_key`) and
/// writes a kubeconfig to `server_url` (trusting `server_ca`) with the node's client
/// certificate, for an apiserver that may not exist yet (a control plane the kubelet itself
/// starts from static pods).
pub fn issue_for_server(
    dir: &Path,
    ca_file: &Path,
    ca_key: &Path,
    server_url: &str,
    server_ca: &Path,
    node_name: &str,
) -> anyhow::Result<NodeCerts> {
    std::fs::create_dir_all(dir)?;
    let server = (server_url.to_string(), server_ca.to_path_buf());
    issue_signed(dir, ca_file, ca_key, true, server, node_name)
}

fn issue_signed(
    dir: &Path,
    ca_file: &Path,
    ca_key: &Path,
    node_identity: bool,
    (server_url, server_ca): (String, PathBuf),
    node_name: &str,
) -> anyhow::Result<NodeCerts> {
    let kubeconfig = dir.join("kubelet.kubeconfig");
    let issuer = load_issuer(ca_file, ca_key)?;
    let user = format!("system:node:{node_name}");
    if node_identity {
        let (cert, key) = sign(
            &issuer,
            vec![
                (DnType::OrganizationName, "system:nodes"),
                (DnType::CommonName, &user),
            ],
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let (cert_file, key_file) = write_pair(dir, "kubelet-client", &cert, &key)?;
        crate::pki::write_cert_kubeconfig(
            &kubeconfig,
            &server_url,
            &server_ca,
            &cert_file,
            &key_file,
            &user,
        );
    } else {
        crate::kubectl::write_kubeconfig(&kubeconfig, &server_url, &server_ca)?;
    }
    let sans = vec![
        "127.0.0.1".to_string(),
        "localhost".into(),
        node_name.into(),
    ];
    let (cert, key) = sign(
        &issuer,
        vec![(DnType::CommonName, &format!("{node_name}@kubelet"))],
        sans,
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (serving_cert, serving_key) = write_pair(dir, "kubelet-serving", &cert, &key)?;
    Ok(NodeCerts {
        ca_file: ca_file.to_path_buf(),
        serving_cert,
        serving_key,
        kubeconfig,
        node_identity,
    })
}

/// The `--client-ca-file` of the apiserver process serving `api` (found by its port and cert
/// dir in /proc), if it has one.
fn apiserver_client_ca(api: &ApiServer) -> Option<PathBuf> {
    let port = format!("--secure-port={}", api.addr().port());
    let cert_dir = format!("--cert-dir={}", api.ca_file().parent()?.display());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.contains(&port) && args.contains(&cert_dir) {
            return args
                .iter()
                .find_map(|a| a.strip_prefix("--client-ca-file="))
                .map(PathBuf::from);
        }
    }
    None
}

/// Rebuilds the signer of a CA certificate whose subject is a single common name (as
/// [`crate::pki::Pki`] makes them): rcgen encodes the issuer name the same way again.
fn load_issuer(ca_file: &Path, key_file: &Path) -> anyhow::Result<Issuer<'static, KeyPair>> {
    let key_pem = std::fs::read_to_string(key_file)
        .with_context(|| format!("reading {}", key_file.display()))?;
    let key = KeyPair::from_pem(&key_pem).context("parsing the CA key")?;
    let ca_pem =
        std::fs::read(ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&ca_pem).context("CA PEM")?;
    let cert = pem.parse_x509().context("CA certificate")?;
    let subject = cert.subject();
    anyhow::ensure!(
        subject.iter_attributes().count() == 1,
        "the CA's subject {subject} is not a lone common name"
    );
    let cn = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .context("the CA has no common name")?
        .to_string();
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(Issuer::new(params, key))
}

fn sign(
    issuer: &Issuer<'static, KeyPair>,
    subject: Vec<(DnType, &str)>,
    sans: Vec<String>,
    usage: ExtendedKeyUsagePurpose,
) -> anyhow::Result<(String, KeyPair)> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(sans)?;
    for (ty, value) in subject {
        params.distinguished_name.push(ty, value);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key))
}

fn write_pair(
    dir: &Path,
    stem: &str,
    cert: &str,
    key: &KeyPair,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let cert_file = dir.join(format!("{stem}.crt"));
    let key_file = dir.join(format!("{stem}.key"));
    std::fs::write(&cert_file, cert)?;
    std::fs::write(&key_file, key.serialize_pem())?;
    Ok((cert_file, key_file))
}
