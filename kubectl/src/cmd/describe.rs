//! `kubectl describe`: objects by type and name (or name prefix), `TYPE/NAME`, `-f`, `-l`,
//! `-A`, laid out by upstream's describers (pods, nodes, deployments, replica sets, services,
//! namespaces, config maps, secrets, service accounts, ingresses, network policies, HPAs,
//! storage classes, CSRs, ...) or the generic one, with their events.

mod apps;
mod autoscaling;
mod certificates;
mod containers;
mod core;
mod events;
mod generic;
mod ingress;
mod network;
mod network_policy;
mod node;
mod pod;
mod quantity;
mod quota;
mod rbac;
mod storage;
mod storage_class;
mod tabwriter;
mod workloads;
mod writer;

pub use events::interval as event_interval;
pub use writer::{human_duration, parse_time};

use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::errors::{ApiError, Reported};
use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::Value;
use std::io::Write;
use writer::s;

/// Flags of `kubectl describe`.
#[derive(Debug, Clone, Args)]
pub struct DescribeArgs {
    /// (TYPE[.VERSION][.GROUP] [NAME_PREFIX | -l label] | TYPE[.VERSION][.GROUP]/NAME)
    pub args: Vec<String>,
    /// Filename, directory, or URL to files containing the resource to describe
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// If true, display events related to the described object.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "true",
        default_missing_value = "true", value_name = "bool")]
    pub show_events: bool,
    /// Return large lists in chunks rather than all at once. Pass 0 to disable.
    #[arg(long, default_value_t = 500, value_name = "int")]
    pub chunk_size: i64,
}

pub async fn run(global: &GlobalOptions, args: &DescribeArgs) -> anyhow::Result<()> {
    if args.args.is_empty() && args.filenames.is_empty() {
        anyhow::bail!(
            "You must specify the type of resource to describe. Use \"kubectl api-resources\" for a complete list of supported resources."
        );
    }
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        all_namespaces: args.all_namespaces,
        chunk_size: args.chunk_size,
        ..Selection::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut objects: Vec<(ApiResource, Value)> = Vec::new();
    let mut errors: Vec<anyhow::Error> = Vec::new();
    for info in &resolved.infos {
        match fetch(&factory, info, &sel).await {
            Ok(found) => objects.extend(found.into_iter().map(|o| (info.resource.clone(), o))),
            Err(err) => {
                let not_found = err
                    .downcast_ref::<ApiError>()
                    .is_some_and(ApiError::is_not_found);
                if not_found && args.args.len() == 2 && resolved.infos.len() == 1 {
                    return describe_matching(&factory, info, args, err).await;
                }
                errors.push(err);
            }
        }
    }
    let mut out = std::io::stdout().lock();
    let mut seen: Vec<String> = Vec::new();
    let mut first = true;
    for (resource, object) in &objects {
        match describe_object(&factory, resource, object, args).await {
            Ok(text) => {
                if first {
                    first = false;
                    out.write_all(text.as_bytes())?;
                } else {
                    out.write_all(format!("\n\n{text}").as_bytes())?;
                }
            }
            Err(err) => {
                let text = format!("{err:#}");
                if !seen.contains(&text) {
                    seen.push(text);
                    errors.push(err);
                }
            }
        }
    }
    out.flush()?;
    if objects.is_empty() && errors.is_empty() {
        if args.all_namespaces {
            eprintln!("No resources found");
        } else {
            eprintln!("No resources found in {} namespace.", factory.namespace());
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// The objects an info names: the one named, or the listed collection.
async fn fetch(factory: &Factory, info: &Info, sel: &Selection) -> anyhow::Result<Vec<Value>> {
    if info.name.is_some() {
        return Ok(vec![factory.get(&info.path()).await?]);
    }
    let pages = resource::list_pages(factory, info, sel, None, &[]).await?;
    Ok(resource::items_of(&info.resource, &pages))
}

/// Upstream's `DescribeMatchingResources`: `describe TYPE PREFIX` when no object has that exact
/// name describes every object of the type whose name starts with it.
async fn describe_matching(
    factory: &Factory,
    info: &Info,
    args: &DescribeArgs,
    original: anyhow::Error,
) -> anyhow::Result<()> {
    let prefix = info.name.clone().unwrap_or_default();
    let all = Info {
        name: None,
        ..info.clone()
    };
    let pages = resource::list_pages(factory, &all, &Selection::default(), None, &[]).await?;
    let mut found = false;
    let mut out = std::io::stdout().lock();
    for object in resource::items_of(&info.resource, &pages) {
        if !s(&object, "/metadata/name").starts_with(&prefix) {
            continue;
        }
        found = true;
        let text = describe_object(factory, &info.resource, &object, args).await?;
        out.write_all(format!("{text}\n").as_bytes())?;
    }
    out.flush()?;
    if found { Ok(()) } else { Err(original) }
}

/// Lists `resource` in `namespace` with a field or label selector; the items, or the error.
async fn list(
    factory: &Factory,
    plural: &str,
    namespace: Option<&str>,
    label: Option<String>,
    field: Option<String>,
    chunk_size: i64,
) -> anyhow::Result<Vec<Value>> {
    let mapper = factory.discovery().mapper().await?;
    let resource = mapper
        .resolve(plural)
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type \"{plural}\""))?;
    let info = Info {
        namespace: namespace.filter(|n| !n.is_empty()).map(str::to_owned),
        resource: resource.clone(),
        name: None,
        object: None,
        source: None,
    };
    let sel = Selection {
        selector: label,
        field_selector: field,
        chunk_size,
        ..Selection::default()
    };
    let pages = resource::list_pages(factory, &info, &sel, None, &[]).await?;
    Ok(resource::items_of(&resource, &pages))
}

/// Describes one object with its kind's describer.
async fn describe_object(
    factory: &Factory,
    resource: &ApiResource,
    object: &Value,
    args: &DescribeArgs,
) -> anyhow::Result<String> {
    let name = s(object, "/metadata/name");
    let namespace = s(object, "/metadata/namespace");
    let uid = s(object, "/metadata/uid");
    let chunk = args.chunk_size;
    let search = |kind: &'static str| async move {
        if !args.show_events {
            return None;
        }
        let reference = events::Reference {
            name,
            namespace,
            kind,
            uid,
        };
        Some(events::search(factory, &reference, chunk).await)
    };
    let kind = resource.kind.as_str();
    Ok(match (resource.group.as_str(), kind) {
        ("", "Pod") => {
            let events = search("").await;
            pod::describe(object, events.as_deref())
        }
        ("", "Node") => {
            let field =
                format!("spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed");
            let pods = match list(factory, "pods", None, None, Some(field), chunk).await {
                Ok(pods) => Some(pods),
                Err(err) if is_forbidden(&err) => None,
                Err(err) => return Err(err),
            };
            let lease = factory
                .get(&format!(
                    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
                ))
                .await
                .map_err(|err| match err.downcast_ref::<ApiError>() {
                    Some(api) => api.message.clone(),
                    None => format!("{err:#}"),
                });
            let events = if args.show_events {
                let mut all = search("Node").await.unwrap_or_default();
                let by_name = events::Reference {
                    name,
                    namespace,
                    kind: "Node",
                    uid: name,
                };
                all.extend(events::search(factory, &by_name, chunk).await);
                Some(all)
            } else {
                None
            };
            let extras = node::NodeExtras {
                lease,
                pods: pods.as_deref(),
                events: events.as_deref(),
            };
            node::describe(object, &extras)
        }
        ("apps", "Deployment") => {
            let events = search("Deployment").await;
            let selector = object
                .pointer("/spec/selector")
                .map(pod::selector_string)
                .filter(|s| !s.is_empty());
            let owned = list(
                factory,
                "replicasets.apps",
                Some(namespace),
                selector,
                None,
                chunk,
            )
            .await
            .ok()
            .map(|all| owned_by(all, uid));
            apps::deployment(object, owned.as_deref(), events.as_deref())
        }
        ("apps", "ReplicaSet") => {
            let selector = object
                .pointer("/spec/selector")
                .map(pod::selector_string)
                .filter(|s| !s.is_empty());
            let phases = list(factory, "pods", Some(namespace), selector, None, chunk)
                .await
                .map(|pods| apps::count_phases(&pods, uid))
                .map_err(|err| crate::errors::render(&err));
            let events = search("ReplicaSet").await;
            apps::replica_set(object, phases, events.as_deref())
        }
        ("", "Service") => {
            let label = format!("kubernetes.io/service-name={name}");
            let slices = list(
                factory,
                "endpointslices.discovery.k8s.io",
                Some(namespace),
                Some(label),
                None,
                0,
            )
            .await
            .unwrap_or_default();
            let events = search("Service").await;
            core::service(object, &slices, events.as_deref())
        }
        ("", "Namespace") => {
            let not_found_none = |r: anyhow::Result<Vec<Value>>| match r {
                Ok(items) => Ok(Some(items)),
                Err(err)
                    if err
                        .downcast_ref::<ApiError>()
                        .is_some_and(ApiError::is_not_found) =>
                {
                    Ok(None)
                }
                Err(err) => Err(err),
            };
            let quotas = not_found_none(
                list(factory, "resourcequotas", Some(name), None, None, chunk).await,
            )?;
            let limits =
                not_found_none(list(factory, "limitranges", Some(name), None, None, chunk).await)?;
            quota::namespace(object, quotas.as_deref(), limits.as_deref())
        }
        ("", "ConfigMap") => {
            let events = search("ConfigMap").await;
            core::config_map(object, events.as_deref())
        }
        ("", "Secret") => core::secret(object),
        ("", "ServiceAccount") => {
            let secrets = list(factory, "secrets", Some(namespace), None, None, chunk)
                .await
                .ok();
            let events = search("ServiceAccount").await;
            core::service_account(object, secrets.as_deref(), events.as_deref())
        }
        ("", "ResourceQuota") => quota::resource_quota(object),
        ("", "PersistentVolumeClaim") => {
            let pods = list(factory, "pods", Some(namespace), None, None, chunk).await?;
            let events = search("PersistentVolumeClaim").await;
            storage::claim(object, &pods, events.as_deref())
        }
        ("", "PersistentVolume") => {
            storage::volume(object, search("PersistentVolume").await.as_deref())
        }
        ("", "Endpoints") => network::endpoints(object, search("Endpoints").await.as_deref()),
        ("discovery.k8s.io", "EndpointSlice") => {
            network::endpoint_slice(object, search("EndpointSlice").await.as_deref())
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => rbac::role(object),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            network::binding(object)
        }
        ("batch", "Job") => workloads::job(object, search("Job").await.as_deref()),
        ("batch", "CronJob") => workloads::cron_job(object, search("CronJob").await.as_deref()),
        ("apps", "DaemonSet" | "StatefulSet") => {
            let selector = object
                .pointer("/spec/selector")
                .map(pod::selector_string)
                .filter(|s| !s.is_empty());
            let pods = list(factory, "pods", Some(namespace), selector, None, chunk).await?;
            let phases = apps::count_phases(&pods, uid);
            if kind == "DaemonSet" {
                workloads::daemon_set(object, &phases, search("DaemonSet").await.as_deref())
            } else {
                workloads::stateful_set(object, &phases, search("StatefulSet").await.as_deref())
            }
        }
        ("policy", "PodDisruptionBudget") => {
            workloads::pod_disruption_budget(object, search("PodDisruptionBudget").await.as_deref())
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            workloads::priority_class(object, search("PriorityClass").await.as_deref())
        }
        ("", "LimitRange") => quota::limit_range(object),
        ("networking.k8s.io", "Ingress") => {
            let found = ingress::lookup(factory, object).await;
            ingress::describe(object, &found, search("Ingress").await.as_deref())
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy::describe(object),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            // Upstream describes an HPA as autoscaling/v2 whichever version named it.
            let v2 = if resource.version == "v2" {
                object.clone()
            } else {
                factory
                    .get(&format!(
                        "/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}"
                    ))
                    .await?
            };
            autoscaling::describe(&v2, search("HorizontalPodAutoscaler").await.as_deref())
        }
        ("storage.k8s.io", "StorageClass") => {
            storage_class::describe(object, search("StorageClass").await.as_deref())
        }
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            certificates::describe(object, search("CertificateSigningRequest").await.as_deref())?
        }
        _ => {
            let events = if args.show_events {
                let reference = events::Reference {
                    name,
                    namespace,
                    kind,
                    uid,
                };
                Some(events::search(factory, &reference, chunk).await)
            } else {
                None
            };
            generic::describe(object, events.as_deref())
        }
    })
}

fn is_forbidden(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ApiError>()
        .is_some_and(|e| e.code == 403)
}

/// The items whose controller is `uid`.
fn owned_by(items: Vec<Value>, uid: &str) -> Vec<Value> {
    items
        .into_iter()
        .filter(|item| {
            writer::arr(item, "/metadata/ownerReferences")
                .iter()
                .any(|r| {
                    r.get("controller").and_then(Value::as_bool) == Some(true)
                        && s(r, "/uid") == uid
                })
        })
        .collect()
}
