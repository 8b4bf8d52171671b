//! Table-driven tests of the environment, with an in-memory [`FakeSource`] the volume tests
//! share.

use super::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestStatus};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapEnvSource, ConfigMapKeySelector, Container, EnvFromSource, EnvVar,
    EnvVarSource, ObjectFieldSelector, Pod, PodSpec, ResourceFieldSelector, Secret,
    SecretEnvSource, SecretKeySelector, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};

/// Objects in memory; tokens are `token-<n>` valid for the requested seconds from `now`.
#[derive(Default)]
pub(crate) struct FakeSource {
    pub config_maps: Mutex<HashMap<(String, String), ConfigMap>>,
    pub secrets: Mutex<HashMap<(String, String), Secret>>,
    pub token_requests: Mutex<Vec<(String, String, TokenRequest)>>,
}

impl FakeSource {
    pub fn put_config_map(&self, ns: &str, name: &str, data: &[(&str, &str)]) {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        };
        self.config_maps.lock().insert((ns.into(), name.into()), cm);
    }

    pub fn put_secret(&self, ns: &str, name: &str, data: &[(&str, &str)]) {
        let s = Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        self.secrets.lock().insert((ns.into(), name.into()), s);
    }
}

#[async_trait::async_trait]
impl ObjectSource for FakeSource {
    async fn config_map(&self, ns: &str, name: &str) -> anyhow::Result<Option<ConfigMap>> {
        Ok(self
            .config_maps
            .lock()
            .get(&(ns.into(), name.into()))
            .cloned())
    }
    async fn secret(&self, ns: &str, name: &str) -> anyhow::Result<Option<Secret>> {
        Ok(self.secrets.lock().get(&(ns.into(), name.into())).cloned())
    }
    async fn create_token(
        &self,
        ns: &str,
        sa: &str,
        request: &TokenRequest,
    ) -> anyhow::Result<TokenRequest> {
        let mut log = self.token_requests.lock();
        log.push((ns.into(), sa.into(), request.clone()));
        let secs = request.spec.expiration_seconds.unwrap_or(3600);
        let exp = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs);
        let mut out = request.clone();
        out.status = Some(TokenRequestStatus {
            token: format!("token-{}", log.len()),
            expiration_timestamp: Time(exp),
        });
        Ok(out)
    }
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn from(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(source),
    }
}

fn cm_key(name: &str, key: &str, optional: bool) -> EnvVarSource {
    EnvVarSource {
        config_map_key_ref: Some(ConfigMapKeySelector {
            name: name.into(),
            key: key.into(),
            optional: Some(optional),
        }),
        ..Default::default()
    }
}

fn secret_key(name: &str, key: &str, optional: bool) -> EnvVarSource {
    EnvVarSource {
        secret_key_ref: Some(SecretKeySelector {
            name: name.into(),
            key: key.into(),
            optional: Some(optional),
        }),
        ..Default::default()
    }
}

fn field(path: &str) -> EnvVarSource {
    EnvVarSource {
        field_ref: Some(ObjectFieldSelector {
            api_version: None,
            field_path: path.into(),
        }),
        ..Default::default()
    }
}

fn env_from_cm(name: &str, prefix: &str, optional: bool) -> EnvFromSource {
    EnvFromSource {
        config_map_ref: Some(ConfigMapEnvSource {
            name: name.into(),
            optional: Some(optional),
        }),
        prefix: (!prefix.is_empty()).then(|| prefix.into()),
        secret_ref: None,
    }
}

fn env_from_secret(name: &str, optional: bool) -> EnvFromSource {
    EnvFromSource {
        secret_ref: Some(SecretEnvSource {
            name: name.into(),
            optional: Some(optional),
        }),
        ..Default::default()
    }
}

fn pod_with(env: Vec<EnvVar>, env_from: Vec<EnvFromSource>, links: Option<bool>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-a".into()),
            enable_service_links: links,
            containers: vec![Container {
                name: "c".into(),
                env: Some(env),
                env_from: Some(env_from),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn service(ns: &str, name: &str, ip: &str, ports: &[(&str, i32)]) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some(ip.into()),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p)| ServicePort {
                        name: (!n.is_empty()).then(|| n.to_string()),
                        port: *p,
                        protocol: Some("TCP".into()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

type Want = Result<Vec<(&'static str, &'static str)>, &'static str>;

#[tokio::test]
async fn environment_cases() {
    let source = FakeSource::default();
    source.put_config_map(
        "ns",
        "cfg",
        &[("A", "from-cm"), ("b", "lower"), ("1bad", "x")],
    );
    source.put_secret("ns", "sec", &[("PASSWORD", "hunter2")]);
    let cases: Vec<(&str, Vec<EnvVar>, Vec<EnvFromSource>, Want)> = vec![
        (
            "plain values expand earlier ones, unknown kept",
            vec![var("X", "x"), var("Y", "$(X)-$(NOPE)-$$(X)")],
            vec![],
            Ok(vec![("X", "x"), ("Y", "x-$(NOPE)-$(X)")]),
        ),
        (
            "a reference to a later var is not expanded",
            vec![var("Y", "$(X)"), var("X", "x")],
            vec![],
            Ok(vec![("Y", "$(X)"), ("X", "x")]),
        ),
        (
            "envFrom with a prefix skips invalid names; env overrides",
            vec![var("P_A", "override"), var("Z", "$(P_b)")],
            vec![env_from_cm("cfg", "P_", false)],
            Ok(vec![
                ("P_1bad", "x"),
                ("P_A", "override"),
                ("P_b", "lower"),
                ("Z", "lower"),
            ]),
        ),
        (
            "envFrom without prefix drops a key starting with a digit",
            vec![],
            vec![env_from_cm("cfg", "", false), env_from_secret("sec", false)],
            Ok(vec![
                ("A", "from-cm"),
                ("b", "lower"),
                ("PASSWORD", "hunter2"),
            ]),
        ),
        (
            "optional missing envFrom is skipped",
            vec![],
            vec![env_from_cm("gone", "", true), env_from_secret("gone", true)],
            Ok(vec![]),
        ),
        (
            "missing envFrom configmap",
            vec![],
            vec![env_from_cm("gone", "", false)],
            Err("configmap \"gone\" not found"),
        ),
        (
            "missing envFrom secret",
            vec![],
            vec![env_from_secret("gone", false)],
            Err("secret \"gone\" not found"),
        ),
        (
            "key refs",
            vec![
                from("A", cm_key("cfg", "A", false)),
                from("S", secret_key("sec", "PASSWORD", false)),
            ],
            vec![],
            Ok(vec![("A", "from-cm"), ("S", "hunter2")]),
        ),
        (
            "optional key refs to missing objects and keys are skipped",
            vec![
                from("A", cm_key("gone", "A", true)),
                from("B", cm_key("cfg", "nokey", true)),
                from("C", secret_key("gone", "k", true)),
                from("D", secret_key("sec", "nokey", true)),
            ],
            vec![],
            Ok(vec![]),
        ),
        (
            "missing configmap key",
            vec![from("A", cm_key("cfg", "nokey", false))],
            vec![],
            Err("couldn't find key nokey in ConfigMap ns/cfg"),
        ),
        (
            "missing secret key",
            vec![from("A", secret_key("sec", "nokey", false))],
            vec![],
            Err("couldn't find key nokey in Secret ns/sec"),
        ),
        (
            "missing configmap for a key ref",
            vec![from("A", cm_key("gone", "A", false))],
            vec![],
            Err("configmap \"gone\" not found"),
        ),
        (
            "field refs",
            vec![
                from("N", field("metadata.name")),
                from("NS", field("metadata.namespace")),
                from("NODE", field("spec.nodeName")),
                from("IP", field("status.podIP")),
                from("HOST", field("status.hostIP")),
            ],
            vec![],
            Ok(vec![
                ("N", "web"),
                ("NS", "ns"),
                ("NODE", "node-a"),
                ("IP", "10.1.0.7"),
                ("HOST", "127.0.0.1"),
            ]),
        ),
        (
            "unsupported field",
            vec![from("N", field("spec.bogus"))],
            vec![],
            Err("unsupported fieldPath: spec.bogus"),
        ),
        (
            "resource field defaults to node allocatable",
            vec![from(
                "CPU",
                EnvVarSource {
                    resource_field_ref: Some(ResourceFieldSelector {
                        resource: "limits.cpu".into(),
                        divisor: Some(Quantity("1m".into())),
                        container_name: None,
                    }),
                    ..Default::default()
                },
            )],
            vec![],
            Ok(vec![("CPU", "2000")]),
        ),
    ];
    let ctx = EnvContext {
        node_name: "node-a".into(),
        host_ips: vec!["127.0.0.1".into()],
        pod_ips: vec!["10.1.0.7".into()],
        node_allocatable: BTreeMap::from([("cpu".to_string(), Quantity("2".into()))]),
        services: vec![],
    };
    for (name, env, env_from, want) in cases {
        let pod = pod_with(env, env_from, Some(false));
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let got = make_environment(&source, &pod, container, &ctx).await;
        let got = got.map_err(|e| e.to_string());
        let want = want
            .map(|v| {
                v.into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<Vec<_>>()
            })
            .map_err(String::from);
        // envFrom of one object has no defined order upstream: compare sorted.
        let sorted = |r: Result<Vec<(String, String)>, String>| {
            r.map(|mut v| {
                v.sort();
                v
            })
        };
        assert_eq!(sorted(got), sorted(want), "{name}");
    }
}

#[tokio::test]
async fn service_links_follow_enable_service_links() {
    let source = FakeSource::default();
    let ctx = EnvContext {
        services: vec![
            service("default", "kubernetes", "10.0.0.1", &[("https", 443)]),
            service("ns", "my-svc", "10.0.0.9", &[("", 80), ("metrics", 9090)]),
            service("ns", "headless", "None", &[("", 80)]),
            service("other", "elsewhere", "10.0.0.8", &[("", 80)]),
        ],
        ..Default::default()
    };
    let pod = pod_with(vec![var("MY_SVC_SERVICE_HOST", "mine")], vec![], None);
    let container = &pod.spec.as_ref().unwrap().containers[0];
    let env: HashMap<String, String> = make_environment(&source, &pod, container, &ctx)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let want = [
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("KUBERNETES_SERVICE_PORT", "443"),
        ("KUBERNETES_SERVICE_PORT_HTTPS", "443"),
        ("KUBERNETES_PORT", "tcp://10.0.0.1:443"),
        ("KUBERNETES_PORT_443_TCP", "tcp://10.0.0.1:443"),
        ("KUBERNETES_PORT_443_TCP_PROTO", "tcp"),
        ("KUBERNETES_PORT_443_TCP_PORT", "443"),
        ("KUBERNETES_PORT_443_TCP_ADDR", "10.0.0.1"),
        ("MY_SVC_SERVICE_HOST", "mine"),
        ("MY_SVC_SERVICE_PORT", "80"),
        ("MY_SVC_SERVICE_PORT_METRICS", "9090"),
        ("MY_SVC_PORT_9090_TCP_ADDR", "10.0.0.9"),
    ];
    for (k, v) in want {
        assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert!(
        !env.keys()
            .any(|k| k.starts_with("HEADLESS") || k.starts_with("ELSEWHERE"))
    );

    let no_links = pod_with(vec![], vec![], Some(false));
    let container = &no_links.spec.as_ref().unwrap().containers[0];
    let env = make_environment(&source, &no_links, container, &ctx)
        .await
        .unwrap();
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert!(names.contains(&"KUBERNETES_SERVICE_HOST"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("MY_SVC")), "{names:?}");
}

#[test]
fn env_var_names() {
    let cases = [
        ("A", true),
        ("my.env-name", true),
        ("_x1", true),
        ("-x", true),
        ("1A", false),
        ("", false),
        (".", false),
        ("..", false),
        ("..a", false),
        ("A B", false),
        ("A=B", false),
    ];
    for (name, want) in cases {
        assert_eq!(is_env_var_name(name), want, "{name:?}");
    }
}
