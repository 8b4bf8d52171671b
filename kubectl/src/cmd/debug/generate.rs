//! The objects `kubectl debug` writes, as upstream generates them: the ephemeral container and
//! the strategic merge patch adding it, the copy of a pod, and the node debugging pod.

use super::profiles::{Keep, Mode, Profile};
use serde_json::{Map, Value, json};

/// What the flags say about the debug container.
pub struct Spec<'a> {
    pub name: Option<&'a str>,
    pub image: &'a str,
    pub pull_policy: &'a str,
    pub env: &'a [(String, String)],
    pub args: &'a [String],
    pub args_only: bool,
    pub stdin: bool,
    pub tty: bool,
    pub quiet: bool,
    pub profile: Profile,
    pub keep: Keep,
    /// `--custom`'s partial container, merged over the profile's.
    pub custom: Option<&'a Value>,
}

/// `metav1`'s random suffix alphabet (no vowels, no confusable digits).
fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut state = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish() | 1
    };
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

fn names(pod: &Value) -> Vec<String> {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

impl Spec<'_> {
    /// `-c`, or a free `debugger-xxxxx` announced on stdout.
    fn container_name(&self, pod: &Value) -> String {
        if let Some(name) = self.name {
            return name.to_owned();
        }
        let taken = names(pod);
        let name = loop {
            let candidate = format!("debugger-{}", random_suffix(5));
            if !taken.contains(&candidate) {
                break candidate;
            }
        };
        if !self.quiet {
            println!("Defaulting debug container name to {name}.");
        }
        name
    }

    /// The container's fields as Go's encoder writes them (empty ones left out).
    fn container(&self, name: &str) -> Map<String, Value> {
        let mut c = Map::new();
        c.insert("name".into(), json!(name));
        c.insert("image".into(), json!(self.image));
        if !self.args.is_empty() {
            let key = if self.args_only { "args" } else { "command" };
            c.insert(key.into(), json!(self.args));
        }
        if !self.env.is_empty() {
            c.insert("env".into(), env(self.env));
        }
        c.insert("resources".into(), json!({}));
        c.insert("terminationMessagePolicy".into(), json!("File"));
        if !self.pull_policy.is_empty() {
            c.insert("imagePullPolicy".into(), json!(self.pull_policy));
        }
        if self.stdin {
            c.insert("stdin".into(), json!(true));
        }
        if self.tty {
            c.insert("tty".into(), json!(true));
        }
        c
    }

    /// The pod with the ephemeral container added (its name, and the patch to send).
    pub fn ephemeral(&self, pod: &Value, target: &str) -> anyhow::Result<(String, Value, Value)> {
        let name = self.container_name(pod);
        let mut container = self.container(&name);
        if !target.is_empty() {
            container.insert("targetContainerName".into(), json!(target));
        }
        let mut debug_pod = pod.clone();
        let existing: Vec<Value> = pod
            .pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut list = existing.clone();
        list.push(Value::Object(container));
        debug_pod["spec"]["ephemeralContainers"] = json!(list);
        self.profile
            .apply(&mut debug_pod, &name, Mode::Ephemeral, self.keep);
        self.customize(&mut debug_pod, "ephemeralContainers", &name)?;
        let patch = ephemeral_patch(&existing, &debug_pod);
        Ok((name, debug_pod, patch))
    }

    /// The node debugging pod for `node`.
    pub fn node_pod(&self, node: &str) -> anyhow::Result<Value> {
        let name = self.name.unwrap_or("debugger");
        let pod_name = format!("node-debugger-{node}-{}", random_suffix(5));
        if !self.quiet {
            println!("Creating debugging pod {pod_name} with container {name} on node {node}.");
        }
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name},
            "spec": {
                "containers": [Value::Object(self.container(name))],
                "nodeName": node,
                "restartPolicy": "Never",
                "tolerations": [{"operator": "Exists"}],
            },
        });
        self.profile.apply(&mut pod, name, Mode::Node, self.keep);
        self.customize(&mut pod, "containers", name)?;
        Ok(pod)
    }

    /// The copy `copy_to` of `pod`, and the container to attach to (empty for a
    /// `--set-image`-only copy).
    pub fn copy(
        &self,
        pod: &Value,
        copy: &CopyOptions,
        set_images: &[(String, String)],
    ) -> anyhow::Result<(Value, String)> {
        let mut metadata = json!({"name": copy.name, "namespace": pod["metadata"]["namespace"]});
        for key in ["labels", "annotations"] {
            if let Some(v) = pod["metadata"].get(key).filter(|v| !v.is_null()) {
                metadata[key] = v.clone();
            }
        }
        let mut spec = pod.get("spec").cloned().unwrap_or_else(|| json!({}));
        let map = spec.as_object_mut().expect("a pod spec is an object");
        map.remove("ephemeralContainers");
        if let Some(share) = copy.share_processes {
            map.insert("shareProcessNamespace".into(), json!(share));
        }
        if !copy.same_node {
            map.remove("nodeName");
        }
        let wildcard = set_images.iter().rev().find(|(k, _)| k == "*");
        if let Some(containers) = map.get_mut("containers").and_then(Value::as_array_mut) {
            for c in containers.iter_mut() {
                let own = set_images
                    .iter()
                    .rev()
                    .find(|(k, _)| c["name"] == k.as_str());
                if let Some((_, image)) = own.or(wildcard).filter(|(_, i)| !i.is_empty()) {
                    c["image"] = json!(image);
                }
            }
        }
        let mut copied =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
        let wanted = self.name.unwrap_or("");
        let mut name = wanted.to_owned();
        let exists = names(&copied).iter().any(|n| n == wanted);
        if !exists {
            if self.image.is_empty() {
                if !set_images.is_empty() {
                    return Ok((copied, String::new()));
                }
                anyhow::bail!("you must specify image when creating new container");
            }
            if name.is_empty() {
                name = self.container_name(&copied);
            }
            let new = json!({"name": name, "resources": {}, "terminationMessagePolicy": "File"});
            match copied["spec"]
                .get_mut("containers")
                .and_then(Value::as_array_mut)
            {
                Some(list) => list.push(new),
                None => copied["spec"]["containers"] = json!([new]),
            }
        }
        self.modify(&mut copied, &name);
        self.profile
            .apply(&mut copied, &name, Mode::Copy, self.keep);
        self.customize(&mut copied, "containers", &name)?;
        Ok((copied, name))
    }

    /// Upstream's `applyCustomProfile`: `--custom` merged into the container `name` of
    /// `list` as a strategic merge patch of a Container.
    fn customize(&self, pod: &mut Value, list: &str, name: &str) -> anyhow::Result<()> {
        let Some(custom) = self.custom else {
            return Ok(());
        };
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let what = if list == "ephemeralContainers" {
            "ephemeral container"
        } else {
            "container"
        };
        let Some(c) = pod["spec"]
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .and_then(|l| l.iter_mut().find(|c| c["name"] == name))
        else {
            anyhow::bail!("unable to find the {name} {what} in the pod {pod_name}");
        };
        let mut patch = custom.clone();
        patch["name"] = json!(name);
        *c = api_types::strategicpatch::merge_objects(
            c,
            &patch,
            api_types::strategicpatch::Schema::named("Container"),
        )
        .map_err(|err| {
            anyhow::anyhow!("error creating three way patch to add debug container: {err}")
        })?;
        Ok(())
    }

    /// The flags' changes to the (new or existing) container `name` of a copy.
    fn modify(&self, pod: &mut Value, name: &str) {
        let spec = &mut pod["spec"];
        let at = ["containers", "initContainers"].into_iter().find_map(|k| {
            let i = spec
                .get(k)?
                .as_array()?
                .iter()
                .position(|c| c["name"] == name)?;
            Some((k, i))
        });
        let Some(c) = at.and_then(|(k, i)| spec[k][i].as_object_mut()) else {
            return;
        };
        if !self.args.is_empty() {
            if self.args_only {
                c.insert("args".into(), json!(self.args));
            } else {
                c.insert("command".into(), json!(self.args));
                c.remove("args");
            }
        }
        if !self.env.is_empty() {
            c.insert("env".into(), env(self.env));
        }
        if !self.image.is_empty() {
            c.insert("image".into(), json!(self.image));
        }
        if !self.pull_policy.is_empty() {
            c.insert("imagePullPolicy".into(), json!(self.pull_policy));
        }
        for (key, on) in [("stdin", self.stdin), ("tty", self.tty)] {
            if on {
                c.insert(key.into(), json!(true));
            } else {
                c.remove(key);
            }
        }
    }
}

/// The `--copy-to` flags.
pub struct CopyOptions {
    pub name: String,
    pub same_node: bool,
    /// `--share-processes`, only when given.
    pub share_processes: Option<bool>,
}

fn env(pairs: &[(String, String)]) -> Value {
    let list: Vec<Value> = pairs
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!(list)
}

/// The two-way strategic merge patch from the pod to `debug_pod` as upstream computes it for
/// an added ephemeral container: the new one alone, with the list order when others exist.
fn ephemeral_patch(existing: &[Value], debug_pod: &Value) -> Value {
    let all = debug_pod["spec"]["ephemeralContainers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let added: Vec<Value> = all
        .iter()
        .filter(|c| !existing.contains(c))
        .cloned()
        .collect();
    let mut spec = json!({"ephemeralContainers": added});
    if !existing.is_empty() {
        let order: Vec<Value> = all.iter().map(|c| json!({"name": c["name"]})).collect();
        spec["$setElementOrder/ephemeralContainers"] = json!(order);
    }
    json!({"spec": spec})
}
