//! kube-controller-manager's service account, root CA and certificate controllers against a
//! secured apiserver (client certificates, RBAC, ServiceAccount admission on, service account
//! keys): the `default` account and `kube-root-ca.crt` of new namespaces, legacy token secrets
//! whose tokens authenticate, per-controller identities, and CSRs signed by the cluster CA.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use e2e::apiserver::ApiServer;
use e2e::controller_manager::{ControllerManager, wait_for};
use e2e::pki::write_cert_kubeconfig;
use e2e::scheduler::{create, get, merge_patch};
use e2e::secure::SecureCluster;
use serde_json::{Value, json};

/// DELETE `path`; any answer but 200/202 fails the test.
async fn delete(api: &ApiServer, path: &str) {
    let (status, body) = api
        .request("DELETE", path, None, Vec::<u8>::new())
        .await
        .unwrap_or_else(|e| panic!("DELETE {path}: {e:#}"));
    assert!(
        status == 200 || status == 202,
        "DELETE {path}: {status} {body}"
    );
}

/// The object's uid, once it exists.
async fn uid_of(api: &ApiServer, path: &str) -> Result<String, String> {
    match get(api, path).await {
        Some(o) => Ok(o["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()),
        None => Err(format!("{path} not found")),
    }
}

async fn wait_gone(api: &ApiServer, what: &str, path: &str) {
    wait_for(what, || async move {
        match get(api, path).await {
            None => Ok(()),
            Some(o) => Err(o.to_string()),
        }
    })
    .await
}

fn decode(data: &Value, key: &str) -> Option<String> {
    let raw = STANDARD.decode(data[key].as_str()?).ok()?;
    String::from_utf8(raw).ok()
}

/// `kube-root-ca.crt` of `ns` holds exactly `ca`, with upstream's description.
async fn root_ca_published(api: &ApiServer, ns: &str, ca: &str) -> Result<(), String> {
    let path = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
    let cm = get(api, &path).await.ok_or("no kube-root-ca.crt")?;
    let data_ok = cm["data"].as_object().map(|d| d.len()) == Some(1)
        && cm["data"]["ca.crt"].as_str() == Some(ca);
    let described = cm["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .is_some_and(|d| d.starts_with("Contains a CA bundle that can be used to verify"));
    if data_ok && described {
        Ok(())
    } else {
        Err(cm.to_string())
    }
}

async fn start_kcm(cluster: &SecureCluster, name: &str, extra: &[&str]) -> ControllerManager {
    let root_ca = format!("--root-ca-file={}", cluster.server.ca_file().display());
    let mut with_root_ca = vec![root_ca.as_str()];
    with_root_ca.extend_from_slice(extra);
    start_kcm_without_root_ca(cluster, name, &with_root_ca).await
}

/// Without `--root-ca-file`, as upstream, the CA of the kubeconfig is published.
async fn start_kcm_without_root_ca(
    cluster: &SecureCluster,
    name: &str,
    extra: &[&str],
) -> ControllerManager {
    let key = format!(
        "--service-account-private-key-file={}",
        cluster.signing_key.display()
    );
    let signing_cert = format!(
        "--cluster-signing-cert-file={}",
        cluster.pki.ca_file().display()
    );
    let signing_key = format!(
        "--cluster-signing-key-file={}",
        cluster.pki.ca_key_file().display()
    );
    let mut args = vec![key.as_str(), signing_cert.as_str(), signing_key.as_str()];
    args.extend_from_slice(extra);
    ControllerManager::start(&cluster.dir().join(name), &cluster.server, &args)
        .await
        .expect("starting kube-controller-manager")
}

#[tokio::test]
async fn namespaces_get_their_default_account_root_ca_and_working_legacy_tokens() {
    let cluster = SecureCluster::start(&[]).await;
    let api = &cluster.server;
    let _kcm = start_kcm(
        &cluster,
        "kcm",
        &["--controllers=serviceaccount,serviceaccount-token,root-ca-cert-publisher"],
    )
    .await;
    let ca = std::fs::read_to_string(api.ca_file()).expect("CA file");
    let ca = ca.as_str();

    // A brand-new namespace: ServiceAccount admission lets pods in once `default` exists.
    create(
        api,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team-a"}}),
    )
    .await;
    let sa_path = "/api/v1/namespaces/team-a/serviceaccounts/default";
    let first_uid = wait_for("the default service account", || uid_of(api, sa_path)).await;
    let pod = json!({"metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let created = wait_for("a pod admitted in the new namespace", || async {
        let (status, body) = api
            .request(
                "POST",
                "/api/v1/namespaces/team-a/pods",
                Some("application/json"),
                pod.to_string(),
            )
            .await
            .map_err(|e| format!("{e:#}"))?;
        if status == 201 {
            Ok(serde_json::from_str::<Value>(&body).map_err(|e| e.to_string())?)
        } else {
            Err(format!("{status} {body}"))
        }
    })
    .await;
    assert_eq!(created["spec"]["serviceAccountName"], "default");
    wait_for("kube-root-ca.crt", || root_ca_published(api, "team-a", ca)).await;

    // Deleted, the default account comes back (a new object).
    delete(api, sa_path).await;
    wait_for("the default service account recreated", || async {
        let uid = uid_of(api, sa_path).await?;
        if uid != first_uid {
            Ok(())
        } else {
            Err(format!("still the old one {uid}"))
        }
    })
    .await;

    // Edited, then deleted, the root CA config map is restored.
    let cm_path = "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt";
    merge_patch(
        api,
        cm_path,
        &json!({"data": {"ca.crt": "tampered", "x": "y"}}),
    )
    .await;
    wait_for("kube-root-ca.crt restored after an edit", || {
        root_ca_published(api, "team-a", ca)
    })
    .await;
    delete(api, cm_path).await;
    wait_for("kube-root-ca.crt restored after deletion", || {
        root_ca_published(api, "team-a", ca)
    })
    .await;

    // A legacy token secret is filled, and its token authenticates as the account.
    create(
        api,
        "/api/v1/namespaces/team-a/serviceaccounts",
        &json!({"metadata": {"name": "robot"}}),
    )
    .await;
    create(
        api,
        "/api/v1/namespaces/team-a/secrets",
        &json!({"metadata": {"name": "robot-token",
                             "annotations": {"kubernetes.io/service-account.name": "robot"}},
                "type": "kubernetes.io/service-account-token"}),
    )
    .await;
    let secret_path = "/api/v1/namespaces/team-a/secrets/robot-token";
    let token = wait_for("the token secret filled", || async {
        let s = get(api, secret_path).await.ok_or("no secret")?;
        match (
            decode(&s["data"], "token"),
            decode(&s["data"], "ca.crt"),
            decode(&s["data"], "namespace"),
        ) {
            (Some(token), Some(secret_ca), Some(ns)) if secret_ca == ca && ns == "team-a" => {
                Ok(token)
            }
            _ => Err(s.to_string()),
        }
    })
    .await;
    let who = cluster.token_user(&token).ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who.trim(), "system:serviceaccount:team-a:robot");

    // A token secret naming an account that does not exist is deleted.
    create(
        api,
        "/api/v1/namespaces/team-a/secrets",
        &json!({"metadata": {"name": "orphan-token",
                             "annotations": {"kubernetes.io/service-account.name": "nobody"}},
                "type": "kubernetes.io/service-account-token"}),
    )
    .await;
    wait_gone(
        api,
        "the orphan token secret deleted",
        "/api/v1/namespaces/team-a/secrets/orphan-token",
    )
    .await;

    // Its account deleted, the token secret goes, and the token no longer works.
    delete(api, "/api/v1/namespaces/team-a/serviceaccounts/robot").await;
    wait_gone(
        api,
        "the token secret deleted with its account",
        secret_path,
    )
    .await;
    cluster.token_user(&token).fails(&["auth", "whoami"]);
}

#[tokio::test]
async fn controllers_act_as_their_own_service_accounts() {
    let cluster = SecureCluster::start(&[]).await;
    let api = &cluster.server;
    let kcm = start_kcm_without_root_ca(
        &cluster,
        "kcm",
        &[
            "--use-service-account-credentials",
            "--controllers=serviceaccount,serviceaccount-token,root-ca-cert-publisher",
        ],
    )
    .await;
    for account in ["service-account-controller", "root-ca-cert-publisher"] {
        let path = format!("/api/v1/namespaces/kube-system/serviceaccounts/{account}");
        wait_for(&format!("service account {account}"), || uid_of(api, &path)).await;
    }

    // Without its role binding the serviceaccount controller is refused, by the name of its
    // own account; restored, it does its work.
    let binding = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:controller:service-account-controller";
    let saved = get(api, binding).await.expect("the controller's binding");
    delete(api, binding).await;
    create(
        api,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team-b"}}),
    )
    .await;
    wait_for("a refusal naming the controller's account", || async {
        let logs = kcm.logs();
        if logs.contains("system:serviceaccount:kube-system:service-account-controller") {
            Ok(())
        } else {
            Err(logs.lines().rev().take(5).collect::<Vec<_>>().join("\n"))
        }
    })
    .await;
    let mut restored = saved.clone();
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        restored["metadata"]
            .as_object_mut()
            .map(|m| m.remove(field));
    }
    create(
        api,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &restored,
    )
    .await;
    wait_for("the default service account of team-b", || {
        uid_of(api, "/api/v1/namespaces/team-b/serviceaccounts/default")
    })
    .await;
    // No --root-ca-file: the CA of the controller manager's kubeconfig is published.
    let published = wait_for("kube-root-ca.crt of team-b", || async {
        let path = "/api/v1/namespaces/team-b/configmaps/kube-root-ca.crt";
        let cm = get(api, path).await.ok_or("no kube-root-ca.crt")?;
        cm["data"]["ca.crt"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| cm.to_string())
    })
    .await;
    let der = |pem_text: &[u8]| {
        x509_parser::pem::parse_x509_pem(pem_text)
            .expect("a PEM certificate")
            .1
            .contents
    };
    let kubeconfig_ca = std::fs::read(api.ca_file()).expect("CA file");
    assert_eq!(der(published.as_bytes()), der(&kubeconfig_ca));
}

/// A PEM certificate request for `cn` in `orgs`, and its private key (PEM).
fn certificate_request(cn: &str, orgs: &[&str]) -> (String, String) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    let csr = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    (csr, key.serialize_pem())
}

fn csr_object(name: &str, signer: &str, request_pem: &str) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": STANDARD.encode(request_pem),
            "signerName": signer,
            "usages": ["digital signature", "client auth"],
            "expirationSeconds": 3600,
        }
    })
}

async fn issued_certificate(api: &ApiServer, name: &str) -> String {
    let path = format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}");
    wait_for(&format!("the certificate of {name}"), || async {
        let csr = get(api, &path).await.ok_or("no csr")?;
        decode(&csr["status"], "certificate").ok_or_else(|| csr["status"].to_string())
    })
    .await
}

#[tokio::test]
async fn approved_requests_get_certificates_of_the_cluster_ca() {
    let cluster = SecureCluster::start(&[]).await;
    let api = &cluster.server;
    let _kcm = start_kcm(&cluster, "kcm", &["--controllers=csrsigning,csrapproving"]).await;
    let admin = cluster.admin();

    // A user's request, approved with the real kubectl, gets a certificate of the cluster CA
    // that the apiserver (trusting that CA) accepts as the user it names.
    let (request, key) = certificate_request("alice", &["devs"]);
    create(
        api,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        &csr_object("alice", "kubernetes.io/kube-apiserver-client", &request),
    )
    .await;
    admin.ok(&["certificate", "approve", "alice"]);
    let cert = issued_certificate(api, "alice").await;
    let (_, parsed) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).expect("PEM");
    let parsed = parsed.parse_x509().expect("X.509");
    let ca_pem = std::fs::read(cluster.pki.ca_file()).expect("CA");
    let (_, ca_block) = x509_parser::pem::parse_x509_pem(&ca_pem).expect("CA PEM");
    let ca_cert = ca_block.parse_x509().expect("CA X.509");
    assert_eq!(parsed.issuer().as_raw(), ca_cert.subject().as_raw());
    let lifetime =
        parsed.validity().not_after.timestamp() - parsed.validity().not_before.timestamp();
    // expirationSeconds, plus the five minutes the certificate is backdated.
    assert_eq!(lifetime, 3600 + 300);
    let dir = cluster.dir().join("alice");
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert_file, key_file) = (dir.join("alice.crt"), dir.join("alice.key"));
    std::fs::write(&cert_file, &cert).expect("cert");
    std::fs::write(&key_file, &key).expect("key");
    let kubeconfig = dir.join("kubeconfig");
    write_cert_kubeconfig(
        &kubeconfig,
        &api.url(),
        &api.ca_file(),
        &cert_file,
        &key_file,
        "alice",
    );
    let alice = e2e::kubectl::Kubectl::upstream_with_kubeconfig(&dir, &kubeconfig);
    let who = alice.ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who.trim(), "alice");

    // Approved but against its signer's policy (a client signer asked for server auth): the
    // request fails instead of being signed.
    let (request, _) = certificate_request("bob", &[]);
    let mut object = csr_object("bob", "kubernetes.io/kube-apiserver-client", &request);
    object["spec"]["usages"] = json!(["digital signature", "server auth"]);
    create(
        api,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        &object,
    )
    .await;
    admin.ok(&["certificate", "approve", "bob"]);
    let failed = wait_for("bob's request failed", || async {
        let csr = get(
            api,
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/bob",
        )
        .await
        .ok_or("no csr")?;
        let failed = csr["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Failed" && c["reason"] == "SignerValidationFailure")
        });
        if failed {
            Ok(csr)
        } else {
            Err(csr.to_string())
        }
    })
    .await;
    assert!(failed["status"].get("certificate").is_none(), "{failed}");

    // A node asks for its own client certificate; allowed to by RBAC (selfnodeclient), its
    // request is approved after a SubjectAccessReview and signed.
    for (binding, role) in [
        ("nodes-bootstrap", "system:node-bootstrapper"),
        (
            "nodes-selfnodeclient",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        ),
    ] {
        create(
            api,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            &json!({"metadata": {"name": binding},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]}),
        )
        .await;
    }
    let node = cluster.cert_user("system:node:n1", &["system:nodes"]);
    let (request, _) = certificate_request("system:node:n1", &["system:nodes"]);
    let object = csr_object(
        "node-n1",
        "kubernetes.io/kube-apiserver-client-kubelet",
        &request,
    );
    let out = node.run_with_stdin(&["create", "-f", "-"], &object.to_string());
    assert!(out.success, "the node creating its request: {}", out.stderr);
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/node-n1";
    let csr = wait_for("the node's request approved", || async {
        let csr = get(api, path).await.ok_or("no csr")?;
        let approved = csr["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["type"] == "Approved"
                    && c["reason"] == "AutoApproved"
                    && c["message"]
                        == "Auto approving kubelet client certificate after SubjectAccessReview."
            })
        });
        if approved {
            Ok(csr)
        } else {
            Err(csr.to_string())
        }
    })
    .await;
    assert_eq!(csr["spec"]["username"], "system:node:n1");
    let cert = issued_certificate(api, "node-n1").await;
    let (_, block) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).expect("PEM");
    let parsed = block.parse_x509().expect("X.509");
    let orgs: Vec<&str> = parsed
        .subject()
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .collect();
    assert_eq!(orgs, ["system:nodes"]);
}

#[tokio::test]
async fn bootstrap_tokens_sign_cluster_info_and_expired_ones_are_cleaned() {
    let cluster = SecureCluster::start(&[]).await;
    let api = &cluster.server;
    let _kcm = start_kcm(
        &cluster,
        "kcm",
        &["--controllers=bootstrapsigner,tokencleaner"],
    )
    .await;
    let (status, _) = api
        .request(
            "POST",
            "/api/v1/namespaces",
            Some("application/json"),
            json!({"metadata": {"name": "kube-public"}}).to_string(),
        )
        .await
        .expect("kube-public");
    assert!(
        status == 201 || status == 409,
        "creating kube-public: {status}"
    );
    create(
        api,
        "/api/v1/namespaces/kube-public/configmaps",
        &json!({"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": "apiVersion: v1\nkind: Config\n"}}),
    )
    .await;
    let token = |id: &str, expiration: Option<&str>| {
        let mut data = json!({
            "token-id": STANDARD.encode(id),
            "token-secret": STANDARD.encode("0123456789abcdef"),
            "usage-bootstrap-signing": STANDARD.encode("true"),
        });
        if let Some(e) = expiration {
            data["expiration"] = json!(STANDARD.encode(e));
        }
        json!({"metadata": {"name": format!("bootstrap-token-{id}")},
               "type": "bootstrap.kubernetes.io/token", "data": data})
    };
    let secrets = "/api/v1/namespaces/kube-system/secrets";
    create(api, secrets, &token("abcdef", None)).await;
    let cm_path = "/api/v1/namespaces/kube-public/configmaps/cluster-info";
    let signature = wait_for("cluster-info signed by the token", || async {
        let cm = get(api, cm_path).await.ok_or("no cluster-info")?;
        cm["data"]["jws-kubeconfig-abcdef"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| cm.to_string())
    })
    .await;
    let (header, detached) = signature.split_once("..").expect("a detached JWS");
    assert!(!header.is_empty() && !detached.is_empty(), "{signature}");

    // An expired token is deleted, and signs nothing.
    create(api, secrets, &token("zzzzzz", Some("2000-01-01T00:00:00Z"))).await;
    wait_gone(
        api,
        "the expired bootstrap token deleted",
        "/api/v1/namespaces/kube-system/secrets/bootstrap-token-zzzzzz",
    )
    .await;
    let cm = get(api, cm_path).await.expect("cluster-info");
    assert!(cm["data"].get("jws-kubeconfig-zzzzzz").is_none(), "{cm}");

    // The token deleted, its signature goes.
    delete(api, &format!("{secrets}/bootstrap-token-abcdef")).await;
    wait_for("the signature removed with its token", || async {
        let cm = get(api, cm_path).await.ok_or("no cluster-info")?;
        if cm["data"].get("jws-kubeconfig-abcdef").is_none() {
            Ok(())
        } else {
            Err(cm.to_string())
        }
    })
    .await;
}
