//! An apiserver run as a real cluster's is: client certificates against a CA, a token file,
//! service account token signing, `--authorization-mode=Node,RBAC` and NodeRestriction; and the
//! real kubectl acting as any user of it.

use crate::apiserver::{ApiServer, Backend};
use crate::kubectl::{Kubectl, write_token_kubeconfig};
use crate::pki::{Pki, write_cert_kubeconfig};
use std::path::{Path, PathBuf};

/// The issuer the service account tokens carry (upstream's kubeadm default).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Static token users: (token, user, uid, groups). `e2e` is the token the raw HTTPS helpers
/// (`e2e::https`) send, so they act as an administrator.
pub const TOKEN_USERS: &[(&str, &str, &str, &str)] = &[
    ("e2e", "e2e-admin", "1000", "system:masters"),
    ("viewer-token", "viewer", "1001", ""),
    ("editor-token", "editor", "1002", ""),
];

/// A secured apiserver with its PKI; everything lives in the temp dir, stopped on drop.
pub struct SecureCluster {
    pub server: ApiServer,
    pub pki: Pki,
    /// The service account signing key (PKCS#8 PEM) the apiserver signs with.
    pub signing_key: PathBuf,
    dir: PathBuf,
    users: std::sync::atomic::AtomicUsize,
    _tmp: tempfile::TempDir,
}

impl SecureCluster {
    /// Starts the apiserver on the embedded store with `extra` flags after the secure ones.
    pub async fn start(extra: &[&str]) -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().to_path_buf();
        let pki = Pki::new(&dir.join("pki"));
        let (signing_key, public_key) = pki.service_account_keys();
        let tokens = dir.join("tokens.csv");
        let lines: Vec<String> = TOKEN_USERS
            .iter()
            .map(|(t, u, id, g)| {
                if g.is_empty() {
                    format!("{t},{u},{id}")
                } else {
                    format!("{t},{u},{id},\"{g}\"")
                }
            })
            .collect();
        std::fs::write(&tokens, lines.join("\n") + "\n").expect("token file");
        let mut args = vec![
            format!("--client-ca-file={}", pki.ca_file().display()),
            format!("--token-auth-file={}", tokens.display()),
            format!("--service-account-issuer={ISSUER}"),
            format!("--service-account-key-file={}", public_key.display()),
            format!(
                "--service-account-signing-key-file={}",
                signing_key.display()
            ),
            "--authorization-mode=Node,RBAC".to_string(),
            "--enable-admission-plugins=NodeRestriction".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let server = ApiServer::start_with(&dir.join("apiserver"), Backend::Embedded, &args)
            .await
            .expect("starting the secured apiserver");
        SecureCluster {
            server,
            pki,
            signing_key,
            dir,
            users: Default::default(),
            _tmp: tmp,
        }
    }

    fn user_dir(&self, what: &str) -> PathBuf {
        let n = self
            .users
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self.dir.join(format!("user-{n}-{what}"));
        std::fs::create_dir_all(&dir).expect("user dir");
        dir
    }

    /// kubectl as `name` in `groups`, by client certificate.
    pub fn cert_user(&self, name: &str, groups: &[&str]) -> Kubectl {
        let dir = self.user_dir("cert");
        let (cert, key) = self.pki.issue_client(name, groups);
        let kubeconfig = dir.join("kubeconfig");
        write_cert_kubeconfig(
            &kubeconfig,
            &self.server.url(),
            &self.server.ca_file(),
            &cert,
            &key,
            name,
        );
        Kubectl::upstream_with_kubeconfig(&dir, &kubeconfig)
    }

    /// kubectl as the cluster administrator (`system:masters`, by certificate).
    pub fn admin(&self) -> Kubectl {
        self.cert_user("kubernetes-admin", &["system:masters"])
    }

    /// kubectl presenting the bearer token `token`.
    pub fn token_user(&self, token: &str) -> Kubectl {
        let dir = self.user_dir("token");
        let kubeconfig = dir.join("kubeconfig");
        write_token_kubeconfig(
            &kubeconfig,
            &self.server.url(),
            &self.server.ca_file(),
            token,
        )
        .expect("kubeconfig");
        Kubectl::upstream_with_kubeconfig(&dir, &kubeconfig)
    }

    /// GET `path` without credentials: (status, body).
    pub async fn anonymous_get(&self, path: &str) -> (u16, String) {
        crate::https::get_as(self.server.addr(), &self.server.ca_file(), None, path)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e:#}"))
    }

    /// The temp dir, for files a test writes.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
