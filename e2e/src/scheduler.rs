//! Our kube-scheduler started as a real process against a test's apiserver, and the cluster
//! objects scheduling tests need, created through the API as a kubelet and the controllers
//! would leave them (no kubelet, no controller manager runs beside it).

use crate::apiserver::ApiServer;
use crate::served::Served;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A hang guard for waits on the scheduler, not a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running kube-scheduler, killed on drop (its log is printed if the test panics);
/// [`Served`] gives its address, log, stop and kill.
pub struct Scheduler(Served);

impl Scheduler {
    /// Starts kube-scheduler with `--config` pointing at a KubeSchedulerConfiguration written to
    /// `dir` (the apiserver's admin kubeconfig, leader election off) into which `config_yaml`
    /// (top-level fields such as `profiles` or `leaderElection`) is merged, and waits for its
    /// `/healthz`.
    pub async fn start(
        dir: &Path,
        apiserver: &ApiServer,
        config_yaml: Option<&str>,
        extra_args: &[&str],
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let kubeconfig = dir.join("scheduler.kubeconfig");
        crate::kubectl::write_kubeconfig(&kubeconfig, &apiserver.url(), &apiserver.ca_file())?;
        let mut config = json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig.display().to_string()},
            "leaderElection": {"leaderElect": false},
        });
        if let Some(yaml) = config_yaml {
            let extra: Value = serde_yaml::from_str(yaml)?;
            merge(&mut config, extra);
        }
        let config_file = dir.join("config.yaml");
        std::fs::write(&config_file, serde_yaml::to_string(&config)?)?;
        let mut args = vec![format!("--config={}", config_file.display())];
        args.extend(extra_args.iter().map(|a| a.to_string()));
        Ok(Self(
            Served::start("kube-scheduler", dir, args, PATIENCE).await?,
        ))
    }
}

impl std::ops::Deref for Scheduler {
    type Target = Served;

    fn deref(&self) -> &Served {
        &self.0
    }
}

impl std::ops::DerefMut for Scheduler {
    fn deref_mut(&mut self) -> &mut Served {
        &mut self.0
    }
}

/// Merges `extra` into `base`: objects field by field, anything else replaced.
pub fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(base), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, extra) => *base = extra,
    }
}

/// Sends `method path` with a JSON (or `content_type`) body; panics on a transport error.
async fn send(
    api: &ApiServer,
    method: &str,
    path: &str,
    ctype: &str,
    body: &Value,
) -> (u16, Value) {
    let (status, text) = api
        .request(method, path, Some(ctype), body.to_string())
        .await
        .unwrap_or_else(|err| panic!("{method} {path}: {err:#}"));
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// POSTs `object` to `path`, which must answer 201; returns the created object.
pub async fn create(api: &ApiServer, path: &str, object: &Value) -> Value {
    let (status, body) = send(api, "POST", path, "application/json", object).await;
    assert_eq!(status, 201, "POST {path} {object}: {body}");
    body
}

/// Merge-patches `path` (which must answer 200); returns the patched object.
pub async fn merge_patch(api: &ApiServer, path: &str, patch: &Value) -> Value {
    let (status, body) = send(api, "PATCH", path, "application/merge-patch+json", patch).await;
    assert_eq!(status, 200, "PATCH {path} {patch}: {body}");
    body
}

/// GETs `path`: Some(object) on 200, None on 404.
pub async fn get(api: &ApiServer, path: &str) -> Option<Value> {
    let (status, body) = api
        .get(path)
        .await
        .unwrap_or_else(|err| panic!("GET {path}: {err:#}"));
    match status {
        200 => Some(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))),
        404 => None,
        _ => panic!("GET {path}: {status} {body}"),
    }
}

/// A namespace with its `default` ServiceAccount, which no controller creates here and
/// ServiceAccount admission requires of every pod.
pub async fn create_namespace(api: &ApiServer, ns: &str) {
    create(
        api,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": ns}}),
    )
    .await;
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts");
    create(api, &path, &json!({"metadata": {"name": "default"}})).await;
}

/// A Node as a registered, ready kubelet reports it.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub allocatable: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Value>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.images`: (name, size in bytes) of images the kubelet reports as present.
    pub images: Vec<(String, i64)>,
}

impl Node {
    /// A node with upstream scheduler_perf's default allocatable (node-default.yaml).
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            allocatable: vec![
                ("cpu".into(), "4".into()),
                ("memory".into(), "32Gi".into()),
                ("pods".into(), "110".into()),
            ],
            labels: vec![("kubernetes.io/hostname".into(), name.into())],
            taints: vec![],
            unschedulable: false,
            images: vec![],
        }
    }

    /// Sets one allocatable (and capacity) resource.
    pub fn resource(mut self, name: &str, quantity: &str) -> Self {
        self.allocatable.retain(|(n, _)| n != name);
        self.allocatable.push((name.into(), quantity.into()));
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.retain(|(k, _)| k != key);
        self.labels.push((key.into(), value.into()));
        self
    }

    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints
            .push(json!({"key": key, "value": value, "effect": effect}));
        self
    }

    /// Reports `image` (of `size` bytes) as present on the node.
    pub fn image(mut self, image: &str, size: i64) -> Self {
        self.images.push((image.into(), size));
        self
    }

    pub fn cordoned(mut self) -> Self {
        self.unschedulable = true;
        self
    }

    fn object(&self) -> Value {
        let labels: serde_json::Map<String, Value> = self
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": {"taints": self.taints, "unschedulable": self.unschedulable},
        })
    }

    fn status(&self) -> Value {
        let resources: serde_json::Map<String, Value> = self
            .allocatable
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let images: Vec<Value> = self
            .images
            .iter()
            .map(|(name, size)| json!({"names": [name], "sizeBytes": size}))
            .collect();
        json!({"status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
            "images": images,
        }})
    }

    /// Creates the node, reports its status as its kubelet would, and sets its taints back to
    /// the ones asked for: TaintNodesByCondition admission adds `node.kubernetes.io/not-ready`
    /// on create, which the node lifecycle controller (not running here) removes once Ready.
    pub async fn create(&self, api: &ApiServer) {
        create(api, "/api/v1/nodes", &self.object()).await;
        let path = format!("/api/v1/nodes/{}", self.name);
        merge_patch(api, &format!("{path}/status"), &self.status()).await;
        merge_patch(api, &path, &json!({"spec": {"taints": self.taints}})).await;
    }
}

/// A pod with one container requesting nothing; shape it with [`set`].
pub fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {}}]},
    })
}

/// A pod whose container requests `cpu` and `memory` (upstream's pod-default.yaml: 100m, 500Mi).
pub fn pod_requesting(name: &str, cpu: &str, memory: &str) -> Value {
    let mut p = pod(name);
    set(
        &mut p,
        "/spec/containers/0/resources",
        json!({"requests": {"cpu": cpu, "memory": memory}}),
    );
    p
}

/// Sets the field at the JSON pointer `pointer` (creating objects on the way).
pub fn set(object: &mut Value, pointer: &str, value: Value) {
    let mut at = object;
    for token in pointer.split('/').skip(1) {
        at = match at {
            Value::Array(items) => &mut items[token.parse::<usize>().expect("an index")],
            _ => {
                if !at.is_object() {
                    *at = json!({});
                }
                at.as_object_mut()
                    .expect("an object")
                    .entry(token)
                    .or_insert(Value::Null)
            }
        };
    }
    *at = value;
}

/// Creates `pod` in `ns`; returns the stored pod.
pub async fn create_pod(api: &ApiServer, ns: &str, pod: &Value) -> Value {
    create(api, &format!("/api/v1/namespaces/{ns}/pods"), pod).await
}

pub async fn get_pod(api: &ApiServer, ns: &str, name: &str) -> Option<Value> {
    get(api, &format!("/api/v1/namespaces/{ns}/pods/{name}")).await
}

/// Deletes a pod with a zero grace period, as a kubelet does once its containers are gone.
pub async fn force_delete_pod(api: &ApiServer, ns: &str, name: &str) {
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
    let options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0});
    let (status, body) = send(api, "DELETE", &path, "application/json", &options).await;
    assert!(
        status == 200 || status == 404,
        "DELETE {path}: {status} {body}"
    );
}

pub async fn create_priority_class(api: &ApiServer, name: &str, value: i32) {
    let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": name}, "value": value});
    create(api, "/apis/scheduling.k8s.io/v1/priorityclasses", &class).await;
}

/// A PodDisruptionBudget with `minAvailable` over pods labelled `match_labels`, its status
/// written as the disruption controller (not running here) would for `healthy` matching pods.
pub async fn create_pdb(
    api: &ApiServer,
    ns: &str,
    name: &str,
    match_labels: Value,
    min_available: i32,
    healthy: i32,
) {
    let path = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets");
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": name},
                     "spec": {"minAvailable": min_available,
                              "selector": {"matchLabels": match_labels}}});
    let created = create(api, &path, &pdb).await;
    let status = json!({"status": {
        "observedGeneration": created["metadata"]["generation"].as_i64().unwrap_or(1),
        "disruptionsAllowed": (healthy - min_available).max(0),
        "currentHealthy": healthy,
        "desiredHealthy": min_available,
        "expectedPods": healthy,
    }});
    merge_patch(api, &format!("{path}/{name}/status"), &status).await;
}

/// Waits until the pod is bound; returns its node.
pub async fn wait_for_pod_scheduled(api: &ApiServer, ns: &str, name: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let pod = get_pod(api, ns, name).await;
        if let Some(node) = pod.as_ref().and_then(node_name) {
            return node.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "{ns}/{name} was not scheduled within {PATIENCE:?}: {}",
            pod.map(|p| p["status"].to_string())
                .unwrap_or("gone".into())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `spec.nodeName` when set.
pub fn node_name(pod: &Value) -> Option<&str> {
    pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
}

/// The pod's `PodScheduled` condition.
pub fn pod_scheduled_condition(pod: &Value) -> Option<&Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled")
}

/// Waits until the scheduler has given up on the pod for now: its PodScheduled condition is
/// False/Unschedulable and a FailedScheduling event names it. Returns the condition and the
/// latest event's message.
pub async fn wait_for_unschedulable(api: &ApiServer, ns: &str, name: &str) -> (Value, String) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let pod = get_pod(api, ns, name)
            .await
            .unwrap_or_else(|| panic!("{ns}/{name} is gone"));
        assert!(
            node_name(&pod).is_none(),
            "{ns}/{name} was scheduled to {:?}, expected it to be unschedulable",
            node_name(&pod)
        );
        let condition = pod_scheduled_condition(&pod)
            .filter(|c| c["status"] == "False" && c["reason"] == "Unschedulable")
            .cloned();
        let event = events_for(api, ns, name)
            .await
            .into_iter()
            .rfind(|e| e.reason == "FailedScheduling");
        if let (Some(condition), Some(event)) = (condition, event) {
            return (condition, event.message);
        }
        assert!(
            Instant::now() < deadline,
            "{ns}/{name} has no Unschedulable condition and FailedScheduling event within \
             {PATIENCE:?}: status {}, events {:?}",
            pod["status"],
            events_for(api, ns, name).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks for `hold` that the pod stays unbound (a negative check needs some wait).
pub async fn assert_stays_pending(api: &ApiServer, ns: &str, name: &str, hold: Duration) {
    let until = Instant::now() + hold;
    while Instant::now() < until {
        let pod = get_pod(api, ns, name)
            .await
            .unwrap_or_else(|| panic!("{ns}/{name} is gone"));
        assert_eq!(
            node_name(&pod),
            None,
            "{ns}/{name} must stay pending: {}",
            pod["spec"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One event about an object, from core/v1 or events.k8s.io/v1 (the scheduler writes the
/// latter; both read the same store).
#[derive(Clone, Debug)]
pub struct Event {
    pub reason: String,
    pub message: String,
    pub type_: String,
    pub object: String,
    /// The component that reported it (`reportingController`, or `source.component`).
    pub reporter: String,
}

/// The events about the object named `name` in `ns`, oldest first.
pub async fn events_for(api: &ApiServer, ns: &str, name: &str) -> Vec<Event> {
    let mut seen = std::collections::BTreeSet::new();
    let mut events = vec![];
    for path in [
        format!("/apis/events.k8s.io/v1/namespaces/{ns}/events"),
        format!("/api/v1/namespaces/{ns}/events"),
    ] {
        let Some(list) = get(api, &path).await else {
            continue;
        };
        for item in list["items"].as_array().into_iter().flatten() {
            let uid = item["metadata"]["uid"].as_str().unwrap_or_default();
            if !seen.insert(uid.to_string()) {
                continue;
            }
            let text = |a: &str, b: &str| {
                item[a]
                    .as_str()
                    .or(item[b].as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            let object = item["regarding"]["name"]
                .as_str()
                .or(item["involvedObject"]["name"].as_str())
                .unwrap_or_default();
            if object != name {
                continue;
            }
            let time = text("eventTime", "lastTimestamp");
            let rv: u64 = item["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            events.push((
                time,
                rv,
                Event {
                    reason: text("reason", "reason"),
                    message: text("note", "message"),
                    type_: text("type", "type"),
                    object: object.to_string(),
                    reporter: item["reportingController"]
                        .as_str()
                        .filter(|r| !r.is_empty())
                        .or(item["source"]["component"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                },
            ));
        }
    }
    events.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    events.into_iter().map(|(_, _, e)| e).collect()
}

/// Waits for an event with `reason` about `name`; returns the latest such event.
pub async fn wait_for_event(api: &ApiServer, ns: &str, name: &str, reason: &str) -> Event {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let events = events_for(api, ns, name).await;
        if let Some(e) = events.iter().rfind(|e| e.reason == reason) {
            return e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {reason} event about {ns}/{name} within {PATIENCE:?}: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Force-deletes every pod of `ns` (no kubelet confirms graceful deletions here).
pub async fn force_delete_pods(api: &ApiServer, ns: &str) {
    if let Some(list) = get(api, &format!("/api/v1/namespaces/{ns}/pods")).await {
        for item in list["items"].as_array().into_iter().flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            force_delete_pod(api, ns, name).await;
        }
    }
}

pub async fn delete_node(api: &ApiServer, name: &str) {
    let path = format!("/api/v1/nodes/{name}");
    let (status, body) = send(api, "DELETE", &path, "application/json", &json!({})).await;
    assert!(
        status == 200 || status == 404,
        "DELETE {path}: {status} {body}"
    );
}
