//! What `set` and `rollout` share: the objects named by arguments, `-f`, `-l` or `--all`
//! (fetched, or taken as written with `--local`), where a kind keeps its pod spec, and the
//! merge patch between an object and its changed copy.

use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use serde_json::{Map, Value};

/// One object to change, as read from the server (or the manifest with `--local`).
#[derive(Debug, Clone)]
pub struct Target {
    pub info: Info,
    pub object: Value,
}

impl Target {
    /// `deployment.apps/web`.
    pub fn name_line(&self) -> String {
        crate::printers::name_line(&self.info.resource, &self.object)
    }

    /// `deployments.apps "web"`, as upstream names an object in errors.
    pub fn quoted(&self) -> String {
        format!(
            "{} \"{}\"",
            self.info.resource.group_resource(),
            self.info.name.as_deref().unwrap_or("")
        )
    }
}

/// Resolves the selection into objects. With `local`, the manifests of `-f` are used as they
/// are and nothing is read from the server.
pub async fn targets(
    factory: &Factory,
    args: &[String],
    sel: &Selection,
    local: bool,
) -> anyhow::Result<Vec<Target>> {
    if local && !args.is_empty() {
        anyhow::bail!("cannot specify resources when --local is set");
    }
    if local && sel.filenames.is_empty() {
        anyhow::bail!(
            "one or more files must be specified as -f rsrc.yaml or --filename=rsrc.json"
        );
    }
    let resolved = resource::resolve(factory, args, sel).await?;
    let mut out = Vec::new();
    for info in resolved.infos {
        if local {
            let object = info.object.clone().unwrap_or(Value::Null);
            out.push(Target { info, object });
        } else if info.name.is_some() {
            let object = factory.get(&info.path()).await?;
            out.push(Target { info, object });
        } else if sel.all || sel.selector.is_some() {
            let pages = resource::list_pages(factory, &info, sel, None, &[]).await?;
            for object in resource::items_of(&info.resource, &pages) {
                let name = object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let info = Info {
                    name,
                    ..info.clone()
                };
                out.push(Target { info, object });
            }
        } else {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
    }
    Ok(out)
}

/// The JSON pointer of the pod spec a kind holds (`None`: it has none).
pub fn pod_spec_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "PodTemplate" => Some("/template/spec"),
        "Deployment"
        | "ReplicaSet"
        | "ReplicationController"
        | "StatefulSet"
        | "DaemonSet"
        | "Job" => Some("/spec/template/spec"),
        "CronJob" => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// The pod spec of `object`, created empty where the template has none yet.
pub fn pod_spec_mut<'a>(object: &'a mut Value, kind: &str) -> Option<&'a mut Map<String, Value>> {
    let pointer = pod_spec_pointer(kind)?;
    let mut at = object;
    for key in pointer.split('/').skip(1) {
        let map = at.as_object_mut()?;
        at = map
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    at.as_object_mut()
}

/// The JSON merge patch (RFC 7386) turning `before` into `after`; `None` when they are equal.
/// Lists are sent whole, which is what the changed copy holds anyway.
pub fn merge_diff(before: &Value, after: &Value) -> Option<Value> {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = Map::new();
            for (key, new) in a {
                match b.get(key) {
                    Some(old) => {
                        if let Some(d) = merge_diff(old, new) {
                            out.insert(key.clone(), d);
                        }
                    }
                    None => {
                        out.insert(key.clone(), new.clone());
                    }
                }
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                out.insert(key.clone(), Value::Null);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        // A null inside a merge patch deletes: a value that became null is sent as deleted.
        _ if before == after => None,
        _ => Some(after.clone()),
    }
}

/// Sends `patch` as a JSON merge patch; returns the object the server answered with.
pub async fn send_patch(
    factory: &Factory,
    info: &Info,
    patch: &Value,
    dry_run: super::super::mutate::DryRun,
    field_manager: &str,
) -> anyhow::Result<Value> {
    let mut query = vec![("fieldManager".to_owned(), field_manager.to_owned())];
    query.extend(dry_run.query());
    let url = resource::with_query(&info.path(), &query);
    factory.merge_patch(&url, patch).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_diffs() {
        for (before, after, want) in [
            (json!({"a": 1}), json!({"a": 1}), None),
            (json!({"a": 1}), json!({"a": 2}), Some(json!({"a": 2}))),
            (
                json!({"a": 1, "b": 2}),
                json!({"a": 1}),
                Some(json!({"b": null})),
            ),
            (
                json!({"s": {"t": {"x": [1], "y": 1}}}),
                json!({"s": {"t": {"x": [1, 2], "y": 1}}}),
                Some(json!({"s": {"t": {"x": [1, 2]}}})),
            ),
            (json!({}), json!({"n": {}}), Some(json!({"n": {}}))),
        ] {
            assert_eq!(merge_diff(&before, &after), want, "{before} -> {after}");
        }
    }

    #[test]
    fn pod_specs() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": []}}}});
        assert!(
            pod_spec_mut(&mut d, "Deployment")
                .unwrap()
                .contains_key("containers")
        );
        let mut c = json!({"spec": {}});
        pod_spec_mut(&mut c, "CronJob")
            .unwrap()
            .insert("x".into(), json!(1));
        assert_eq!(
            c.pointer("/spec/jobTemplate/spec/template/spec/x"),
            Some(&json!(1))
        );
        assert!(pod_spec_mut(&mut json!({}), "ConfigMap").is_none());
    }
}
