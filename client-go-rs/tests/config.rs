//! Config loading precedence with temp kubeconfig files and a hand-built environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use client_go_rs::config::{
    ClientConfig, ConfigError, DEFAULT_BURST, DEFAULT_QPS, Environment, default_user_agent,
    load_client_config_from,
};
use tempfile::TempDir;

fn kubeconfig(
    current: Option<&str>,
    clusters: &[(&str, &str)],
    contexts: &[(&str, &str)],
) -> String {
    let mut s = String::from("apiVersion: v1\nkind: Config\n");
    if let Some(c) = current {
        s += &format!("current-context: {c}\n");
    }
    s += "clusters:\n";
    for (name, server) in clusters {
        s += &format!("- name: {name}\n  cluster:\n    server: {server}\n");
    }
    s += "users:\n- name: u\n  user:\n    token: secret-token\n";
    s += "contexts:\n";
    for (name, cluster) in contexts {
        s += &format!(
            "- name: {name}\n  context:\n    cluster: {cluster}\n    user: u\n    namespace: ns-{name}\n"
        );
    }
    s
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&path, content).expect("write");
    path
}

fn env_with(dir: &TempDir) -> Environment {
    Environment {
        home: Some(dir.path().join("home")),
        service_account_dir: dir.path().join("sa"),
        ..Default::default()
    }
}

fn join_paths(paths: &[&Path]) -> OsString {
    std::env::join_paths(paths).expect("joinable")
}

fn server(c: &ClientConfig) -> String {
    c.kube.cluster_url.to_string()
}

#[tokio::test]
async fn explicit_path_wins_over_env_and_home() {
    let dir = TempDir::new().expect("tmp");
    let explicit = write(
        dir.path(),
        "explicit",
        &kubeconfig(Some("c"), &[("x", "https://explicit:6443")], &[("c", "x")]),
    );
    let env_file = write(
        dir.path(),
        "envfile",
        &kubeconfig(Some("c"), &[("x", "https://env:6443")], &[("c", "x")]),
    );
    write(
        dir.path(),
        "home/.kube/config",
        &kubeconfig(Some("c"), &[("x", "https://home:6443")], &[("c", "x")]),
    );
    let mut env = env_with(&dir);
    env.kubeconfig = Some(env_file.clone().into_os_string());

    let c = load_client_config_from(&env, Some(&explicit), None, None)
        .await
        .expect("load");
    assert_eq!(server(&c), "https://explicit:6443/");
    assert_eq!(c.kube.default_namespace, "ns-c");
    assert_eq!((c.qps, c.burst), (DEFAULT_QPS, DEFAULT_BURST));

    let c = load_client_config_from(&env, None, None, None)
        .await
        .expect("load");
    assert_eq!(server(&c), "https://env:6443/");

    env.kubeconfig = None;
    let c = load_client_config_from(&env, None, None, None)
        .await
        .expect("load");
    assert_eq!(server(&c), "https://home:6443/");
}

#[tokio::test]
async fn missing_explicit_path_is_an_error() {
    let dir = TempDir::new().expect("tmp");
    let missing = dir.path().join("nope");
    let err = load_client_config_from(&env_with(&dir), Some(&missing), None, None)
        .await
        .expect_err("must fail");
    assert!(matches!(err, ConfigError::KubeconfigNotFound(_)));
    assert_eq!(
        err.to_string(),
        format!("stat {}: no such file or directory", missing.display())
    );
}

#[tokio::test]
async fn kubeconfig_list_merges_first_wins_and_skips_missing_files() {
    let dir = TempDir::new().expect("tmp");
    let first = write(
        dir.path(),
        "first",
        &kubeconfig(Some("a"), &[("ca", "https://a:1")], &[("a", "ca")]),
    );
    let second = write(
        dir.path(),
        "second",
        &kubeconfig(
            Some("b"),
            &[("ca", "https://shadowed:1"), ("cb", "https://b:2")],
            &[("b", "cb")],
        ),
    );
    let missing = dir.path().join("missing");
    let mut env = env_with(&dir);
    env.kubeconfig = Some(join_paths(&[&missing, &first, &second]));

    // current-context and cluster "ca" come from the first file that sets them.
    let c = load_client_config_from(&env, None, None, None)
        .await
        .expect("load");
    assert_eq!(server(&c), "https://a:1/");
    // Contexts of later files are there too.
    let c = load_client_config_from(&env, None, None, Some("b"))
        .await
        .expect("load");
    assert_eq!(server(&c), "https://b:2/");
    assert_eq!(c.kube.default_namespace, "ns-b");

    let err = load_client_config_from(&env, None, None, Some("nope"))
        .await
        .expect_err("unknown context");
    assert_eq!(
        err.to_string(),
        "context was not found for specified context: nope"
    );
}

#[tokio::test]
async fn kubeconfig_env_set_does_not_fall_back_to_home() {
    let dir = TempDir::new().expect("tmp");
    write(
        dir.path(),
        "home/.kube/config",
        &kubeconfig(Some("c"), &[("x", "https://home:6443")], &[("c", "x")]),
    );
    let mut env = env_with(&dir);
    env.kubeconfig = Some(dir.path().join("absent").into_os_string());
    let err = load_client_config_from(&env, None, None, None)
        .await
        .expect_err("nothing usable");
    assert!(matches!(err, ConfigError::Empty));
}

#[tokio::test]
async fn nothing_found_is_client_gos_empty_config_error() {
    let dir = TempDir::new().expect("tmp");
    let err = load_client_config_from(&env_with(&dir), None, None, None)
        .await
        .expect_err("empty");
    assert_eq!(
        err.to_string(),
        "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable"
    );
    // An empty kubeconfig file counts as none.
    let empty = write(dir.path(), "empty", "");
    let mut env = env_with(&dir);
    env.kubeconfig = Some(empty.into_os_string());
    let err = load_client_config_from(&env, None, None, None)
        .await
        .expect_err("empty");
    assert!(matches!(err, ConfigError::Empty));
}

#[tokio::test]
async fn master_alone_and_master_overriding_a_kubeconfig() {
    let dir = TempDir::new().expect("tmp");
    let c = load_client_config_from(&env_with(&dir), None, Some("http://127.0.0.1:8080"), None)
        .await
        .expect("master alone");
    assert_eq!(server(&c), "http://127.0.0.1:8080/");
    assert!(c.kube.auth_info.token.is_none());

    let c = load_client_config_from(&env_with(&dir), None, Some("apiserver:6443"), None)
        .await
        .expect("scheme defaults to https");
    assert_eq!(server(&c), "https://apiserver:6443/");

    let file = write(
        dir.path(),
        "kc",
        &kubeconfig(Some("c"), &[("x", "https://from-file:6443")], &[("c", "x")]),
    );
    let c = load_client_config_from(
        &env_with(&dir),
        Some(&file),
        Some("https://override:7443"),
        None,
    )
    .await
    .expect("override");
    assert_eq!(server(&c), "https://override:7443/");
    assert!(
        c.kube.auth_info.token.is_some(),
        "credentials of the kubeconfig are kept"
    );

    let err = load_client_config_from(&env_with(&dir), None, Some("http://"), None)
        .await
        .expect_err("no host");
    assert!(matches!(err, ConfigError::InvalidServer { .. }), "{err}");
}

#[tokio::test]
async fn in_cluster_config_from_service_env_and_account_files() {
    let dir = TempDir::new().expect("tmp");
    let sa = dir.path().join("sa");
    write(&sa, "token", "sa-token");
    write(&sa, "namespace", "kube-system\n");
    let mut env = env_with(&dir);
    env.service_host = Some("10.96.0.1".into());
    env.service_port = Some("443".into());

    let c = load_client_config_from(&env, None, None, None)
        .await
        .expect("in-cluster");
    // As client-go: https:// + JoinHostPort(host, port), the port kept even when 443.
    assert_eq!(server(&c), "https://10.96.0.1:443/");
    assert_eq!(c.kube.default_namespace, "kube-system");
    assert_eq!(
        c.kube.auth_info.token_file.as_deref(),
        Some(sa.join("token").to_string_lossy().as_ref())
    );

    env.service_host = Some("fd00::1".into());
    env.service_port = Some("6443".into());
    let c = load_client_config_from(&env, None, None, None)
        .await
        .expect("ipv6");
    assert_eq!(server(&c), "https://[fd00::1]:6443/");

    // A kubeconfig takes precedence over in-cluster.
    let file = write(
        dir.path(),
        "kc",
        &kubeconfig(Some("c"), &[("x", "https://from-file:6443")], &[("c", "x")]),
    );
    let c = load_client_config_from(&env, Some(&file), None, None)
        .await
        .expect("kubeconfig");
    assert_eq!(server(&c), "https://from-file:6443/");
}

#[tokio::test]
async fn in_cluster_without_token_is_an_error() {
    let dir = TempDir::new().expect("tmp");
    let mut env = env_with(&dir);
    env.service_host = Some("10.96.0.1".into());
    env.service_port = Some("443".into());
    let err = load_client_config_from(&env, None, None, None)
        .await
        .expect_err("no token");
    assert!(matches!(err, ConfigError::InCluster(_)), "{err}");
    env.service_port = Some("http".into());
    let err = load_client_config_from(&env, None, None, None)
        .await
        .expect_err("bad port");
    assert!(matches!(err, ConfigError::InCluster(_)), "{err}");
}

#[tokio::test]
async fn client_with_user_agent_and_rate_limit() {
    let dir = TempDir::new().expect("tmp");
    let c = load_client_config_from(&env_with(&dir), None, Some("http://127.0.0.1:8080"), None)
        .await
        .expect("master")
        .with_rate_limit(20.0, 30)
        .with_user_agent(default_user_agent("kube-controller-manager", "v1.33.0"));
    let kube_config = c.to_kube_config().expect("valid");
    let ua = kube_config
        .headers
        .iter()
        .find(|(name, _)| name == http::header::USER_AGENT)
        .map(|(_, v)| v.to_str().expect("ascii").to_string())
        .expect("user agent header");
    assert!(ua.starts_with("kube-controller-manager/v1.33.0 ("), "{ua}");
    c.build_client().expect("client");

    let bad = c.clone().with_user_agent("bad\nagent");
    assert!(matches!(
        bad.build_client(),
        Err(ConfigError::InvalidUserAgent(_))
    ));
}
