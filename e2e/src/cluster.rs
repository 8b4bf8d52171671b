//! A whole cluster for end-to-end scenarios, as `hack/local-up-cluster.sh` runs one: the
//! apiserver (embedded store or etcd) with upstream's default admission plugins and
//! `Node,RBAC`, kube-controller-manager with its default controllers, kube-scheduler, and a
//! kubelet on a containerd of its own per node; the real kubectl as a `system:masters` user.
//! Every process binds free ports under one temp dir; on a failing test every log is printed;
//! everything stops on drop (kubelets first, then their containerds, then the control plane).

use crate::apiserver::{ApiServer, Backend};
use crate::containerd::Containerd;
use crate::controller_manager::ControllerManager;
use crate::kubectl::Kubectl;
use crate::kubelet::{Kubelet, admin_client, apiserver_flags};
use crate::node_fixture::start_runtime;
use crate::pki::Pki;
use crate::scheduler::Scheduler;
use anyhow::Context;
use std::path::PathBuf;

/// Lease timings short enough for a test to see a standby take over (upstream's are 15s/10s/2s).
const LEASE_FLAGS: [&str; 4] = [
    "--leader-elect=true",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
const SCHEDULER_LEASE: &str = "leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
";

/// How many of each control-plane daemon run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlPlane {
    /// One scheduler and one controller manager, leader election off.
    Single,
    /// Two of each with leader election: the first of each holds its lease before the second
    /// starts, so `scheduler` and `controller_manager` are the leaders.
    WithStandbys,
}

/// A running cluster. Field order is drop order.
pub struct Cluster {
    pub kubelets: Vec<Kubelet>,
    _containerds: Vec<Containerd>,
    pub standby_scheduler: Option<Scheduler>,
    pub standby_controller_manager: Option<ControllerManager>,
    pub scheduler: Scheduler,
    pub controller_manager: ControllerManager,
    pub api: ApiServer,
    pub pki: Pki,
    /// A `system:masters` client.
    pub client: kube::Client,
    /// The upstream kubectl with the admin's kubeconfig.
    pub kubectl: Kubectl,
    /// The admin's kubeconfig (client certificate, the apiserver's CA).
    pub kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts a cluster on `backend` with one node per name in `nodes`; returns once every
    /// node is registered and the `default` namespace's service account exists (what a pod
    /// needs to be admitted).
    pub async fn start(
        backend: Backend,
        control_plane: ControlPlane,
        nodes: &[&str],
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().to_path_buf();
        let pki = Pki::new(&root.join("pki"));
        let (sa_key, sa_pub) = pki.service_account_keys();
        // The scheduler's and controller manager's harnesses authenticate with the token `e2e`
        // (e2e::secure's administrator); kubelets with their node certificates.
        let tokens = root.join("tokens.csv");
        std::fs::write(&tokens, "e2e,e2e-admin,1000,\"system:masters\"\n")?;
        let mut args = apiserver_flags(&pki);
        args.extend([
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=Node,RBAC".to_string(),
            "--enable-admission-plugins=NodeRestriction".to_string(),
            format!("--service-account-signing-key-file={}", sa_key.display()),
            format!("--service-account-key-file={}", sa_pub.display()),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
        ]);
        let api = ApiServer::start_with(&root.join("apiserver"), backend, &args).await?;
        let client = admin_client(&api, &pki, &root).await;
        let kubeconfig = root.join("admin.kubeconfig");
        let kubectl = Kubectl::upstream_with_kubeconfig(&root.join("kubectl"), &kubeconfig);

        let root_ca = format!("--root-ca-file={}", api.ca_file().display());
        let sa_signer = format!("--service-account-private-key-file={}", sa_key.display());
        let mut kcm_args = vec![root_ca.as_str(), sa_signer.as_str()];
        let ha = control_plane == ControlPlane::WithStandbys;
        if ha {
            kcm_args.extend(LEASE_FLAGS);
        }
        let scheduler_config = ha.then_some(SCHEDULER_LEASE);
        let start_kcm =
            async |name: &str| ControllerManager::start(&root.join(name), &api, &kcm_args).await;
        let start_scheduler = async |name: &str| {
            Scheduler::start(&root.join(name), &api, scheduler_config, &[]).await
        };
        let controller_manager = start_kcm("kube-controller-manager").await?;
        let scheduler = start_scheduler("kube-scheduler").await?;
        let (mut standby_scheduler, mut standby_controller_manager) = (None, None);
        if ha {
            for lease in ["kube-scheduler", "kube-controller-manager"] {
                lease_holder_appears(&client, lease).await?;
            }
            standby_controller_manager = Some(start_kcm("kube-controller-manager-2").await?);
            standby_scheduler = Some(start_scheduler("kube-scheduler-2").await?);
        }

        let mut containerds = Vec::new();
        let mut kubelets = Vec::new();
        for name in nodes {
            let (containerd, kubelet) = start_runtime(&root.join("nodes").join(name), &api, name)
                .await
                .with_context(|| format!("node {name}"))?;
            containerds.push(containerd);
            kubelets.push(kubelet);
        }
        let cluster = Self {
            kubelets,
            _containerds: containerds,
            standby_scheduler,
            standby_controller_manager,
            scheduler,
            controller_manager,
            api,
            pki,
            client,
            kubectl,
            kubeconfig,
            dir,
        };
        cluster.wait_until_usable(nodes).await?;
        Ok(cluster)
    }

    async fn wait_until_usable(&self, nodes: &[&str]) -> anyhow::Result<()> {
        use k8s_openapi::api::core::v1::{Node, ServiceAccount};
        let node_api: kube::Api<Node> = kube::Api::all(self.client.clone());
        let accounts: kube::Api<ServiceAccount> =
            kube::Api::namespaced(self.client.clone(), "default");
        let deadline = std::time::Instant::now() + crate::kubelet::PATIENCE;
        loop {
            let mut missing = Vec::new();
            for name in nodes {
                let ready = node_api.get_opt(name).await?.is_some_and(|n| {
                    n.status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                });
                if !ready {
                    missing.push(format!("node {name} Ready"));
                }
            }
            if accounts.get_opt("default").await?.is_none() {
                missing.push("service account default/default".into());
            }
            if missing.is_empty() {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!("still waiting for {missing:?}\n{}", self.logs());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// The temp dir every component's files live under.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Every component's log, each under a header.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        let mut section = |name: &str, log: String| {
            out.push_str(&format!("----- {name} log -----\n{log}\n"));
        };
        section("kube-apiserver", self.api.logs());
        section("kube-controller-manager", self.controller_manager.logs());
        section("kube-scheduler", self.scheduler.logs());
        if let Some(standby) = &self.standby_controller_manager {
            section("kube-controller-manager (standby)", standby.logs());
        }
        if let Some(standby) = &self.standby_scheduler {
            section("kube-scheduler (standby)", standby.logs());
        }
        for kubelet in &self.kubelets {
            section(&format!("kubelet {}", kubelet.node_name()), kubelet.logs());
        }
        out
    }
}

/// The holder of the `kube-system/<name>` Lease, if any.
pub async fn lease_holder(client: &kube::Client, name: &str) -> anyhow::Result<Option<String>> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: kube::Api<Lease> = kube::Api::namespaced(client.clone(), "kube-system");
    Ok(leases
        .get_opt(name)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

async fn lease_holder_appears(client: &kube::Client, name: &str) -> anyhow::Result<String> {
    let deadline = std::time::Instant::now() + crate::kubelet::PATIENCE;
    loop {
        if let Some(holder) = lease_holder(client, name).await? {
            return Ok(holder);
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "nobody took the {name} lease"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}
