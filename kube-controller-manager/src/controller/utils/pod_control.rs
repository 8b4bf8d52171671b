//! Creating and deleting a controller's pods, with upstream's events (`PodControlInterface`).

use anyhow::Context as _;
use client_go_rs::events::{EventRecorder, EventType};
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};

/// Event reasons, as upstream's `pkg/controller`.
pub const SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const FAILED_CREATE: &str = "FailedCreate";
pub const SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const FAILED_DELETE: &str = "FailedDelete";

/// Creates and deletes pods on behalf of a controller and records the matching events on the
/// controller's object.
#[derive(Clone)]
pub struct PodControl {
    pub client: Client,
    pub recorder: EventRecorder,
}

impl std::fmt::Debug for PodControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodControl").finish_non_exhaustive()
    }
}

/// The generateName of a controller's pods: `<owner-name>-`, as upstream's `getPodsPrefix`
/// (which falls back to the bare name when the dashed prefix would be invalid; a name that is
/// already a valid object name stays valid with a dash unless it is at the length limit).
fn pods_prefix(owner_name: &str) -> String {
    if owner_name.len() >= 253 {
        owner_name.to_string()
    } else {
        format!("{owner_name}-")
    }
}

/// The pod a controller creates from its template: labels, annotations and finalizers of the
/// template, its spec, the controller's ownerReference, and generateName `<owner-name>-`
/// unless the template names a prefix itself.
pub fn pod_from_template(
    namespace: &str,
    template: &PodTemplateSpec,
    owner_ref: Option<OwnerReference>,
) -> Pod {
    let tmeta = template.metadata.clone().unwrap_or_default();
    let generate_name = tmeta
        .generate_name
        .filter(|g| !g.is_empty())
        .or_else(|| owner_ref.as_ref().map(|o| pods_prefix(&o.name)));
    Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.to_string()),
            generate_name,
            labels: tmeta.labels,
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: owner_ref.map(|o| vec![o]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Whether the apiserver refused a create because the namespace is being deleted (upstream's
/// `NamespaceTerminatingCause`): controllers treat it as nothing to do, not as a failure.
pub fn is_namespace_terminating(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        matches!(e.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s))
            if s.code == 403 && terminating_status(s))
    })
}

fn terminating_status(s: &kube::core::Status) -> bool {
    let cause = s
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"));
    cause || s.message.contains("because it is being terminated")
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

impl PodControl {
    pub fn new(client: Client, recorder: EventRecorder) -> Self {
        Self { client, recorder }
    }

    /// Creates a pod from `template`, owned by `owner_ref`; records `SuccessfulCreate` or
    /// `FailedCreate` on `controller_object`.
    pub async fn create_pod_from_template(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner_ref: OwnerReference,
        controller_object: &ObjectReference,
    ) -> anyhow::Result<Pod> {
        let pod = pod_from_template(namespace, template, Some(owner_ref));
        self.create_pod(namespace, &pod, controller_object).await
    }

    /// Creates `pod` as given (for controllers that name their pods themselves) with the same
    /// events.
    pub async fn create_pod(
        &self,
        namespace: &str,
        pod: &Pod,
        controller_object: &ObjectReference,
    ) -> anyhow::Result<Pod> {
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            anyhow::bail!("unable to create pods, no labels");
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.create(&PostParams::default(), pod).await {
            Ok(created) => {
                let name = created.metadata.name.clone().unwrap_or_default();
                self.recorder.event(
                    controller_object,
                    EventType::Normal,
                    SUCCESSFUL_CREATE,
                    format!("Created pod: {name}"),
                );
                Ok(created)
            }
            Err(err) => {
                // A terminating namespace refuses new pods; upstream does not report it.
                let terminating =
                    matches!(&err, kube::Error::Api(s) if s.code == 403 && terminating_status(s));
                if !terminating {
                    self.recorder.event(
                        controller_object,
                        EventType::Warning,
                        FAILED_CREATE,
                        format!("Error creating: {err}"),
                    );
                }
                Err(err).context(format!("creating a pod in {namespace}"))
            }
        }
    }

    /// Deletes a pod; a pod already gone counts as deleted (no event, as upstream).
    pub async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        controller_object: &ObjectReference,
    ) -> anyhow::Result<()> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.recorder.event(
                    controller_object,
                    EventType::Normal,
                    SUCCESSFUL_DELETE,
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(err) if is_not_found(&err) => Ok(()),
            Err(err) => {
                self.recorder.event(
                    controller_object,
                    EventType::Warning,
                    FAILED_DELETE,
                    format!("Error deleting: {err}"),
                );
                Err(err).context(format!("deleting pod {namespace}/{name}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn owner(name: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: name.into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn pod_from_template_copies_metadata_and_spec() {
        let cases = [
            // (template generateName, expected generateName)
            (None, "web-"),
            (Some(""), "web-"),
            (Some("custom-"), "custom-"),
        ];
        for (tgen, want) in cases {
            let template = PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    generate_name: tgen.map(String::from),
                    labels: Some([("app".to_string(), "web".to_string())].into()),
                    annotations: Some([("a".to_string(), "b".to_string())].into()),
                    finalizers: Some(vec!["f".into()]),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Always".into()),
                    ..Default::default()
                }),
            };
            let pod = pod_from_template("ns", &template, Some(owner("web")));
            assert_eq!(pod.metadata.generate_name.as_deref(), Some(want));
            assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
            assert_eq!(
                pod.metadata.labels,
                template.metadata.as_ref().and_then(|m| m.labels.clone())
            );
            assert_eq!(pod.metadata.annotations.as_ref().map(|a| a.len()), Some(1));
            assert_eq!(pod.metadata.finalizers, Some(vec!["f".to_string()]));
            assert_eq!(pod.metadata.owner_references, Some(vec![owner("web")]));
            assert_eq!(pod.spec, template.spec);
            assert!(pod.metadata.name.is_none());
        }
    }
}
