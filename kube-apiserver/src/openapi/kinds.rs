//! Which k8s-openapi type carries the schema of each served kind.
//!
//! The group, version and kind of an entry come from the type's own `Resource` constants, so
//! the table cannot drift from k8s-openapi; what it holds is only the list of types. Every kind
//! the registry serves (resources and the kinds their subresources speak) must be here; a test
//! checks that against `api_types::registry`.

use api_types::k8s_openapi::{
    self, Resource,
    schemars::{JsonSchema, SchemaGenerator},
};
use std::borrow::Cow;

/// The schema source of one kind.
#[derive(Clone, Copy)]
pub struct KindSchema {
    /// API group, `""` for core.
    pub group: &'static str,
    /// Version within the group.
    pub version: &'static str,
    /// The kind, e.g. `Deployment`.
    pub kind: &'static str,
    /// The kind's definition name, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub name: fn() -> Cow<'static, str>,
    /// Adds the kind's schema (and everything it references) to a generator.
    pub add: fn(&mut SchemaGenerator),
}

fn add_schema<T: JsonSchema>(generator: &mut SchemaGenerator) {
    // The returned `$ref` is not needed: the definitions land in the generator.
    let _ = generator.subschema_for::<T>();
}

fn entry<T: Resource + JsonSchema>() -> KindSchema {
    KindSchema {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        name: T::schema_name,
        add: add_schema::<T>,
    }
}

/// Every kind with a schema: the registry's resources, plus the kinds of subresources that
/// speak another group-version (`Scale`, `Eviction`, `TokenRequest`).
pub fn all() -> Vec<KindSchema> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn,
        authorization::v1 as authz, autoscaling::v1 as autoscaling_v1,
        autoscaling::v2 as autoscaling_v2, batch::v1 as batch, certificates::v1 as certificates,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
        events::v1 as events, flowcontrol::v1 as flowcontrol, networking::v1 as networking,
        node::v1 as node, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
        storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    vec![
        // core/v1
        entry::<core::Binding>(),
        entry::<core::ComponentStatus>(),
        entry::<core::ConfigMap>(),
        entry::<core::Endpoints>(),
        entry::<core::Event>(),
        entry::<core::LimitRange>(),
        entry::<core::Namespace>(),
        entry::<core::Node>(),
        entry::<core::PersistentVolumeClaim>(),
        entry::<core::PersistentVolume>(),
        entry::<core::Pod>(),
        entry::<core::PodTemplate>(),
        entry::<core::ReplicationController>(),
        entry::<core::ResourceQuota>(),
        entry::<core::Secret>(),
        entry::<core::ServiceAccount>(),
        entry::<core::Service>(),
        // apiregistration.k8s.io/v1
        entry::<apiregistration::APIService>(),
        // apps/v1
        entry::<apps::ControllerRevision>(),
        entry::<apps::DaemonSet>(),
        entry::<apps::Deployment>(),
        entry::<apps::ReplicaSet>(),
        entry::<apps::StatefulSet>(),
        // events.k8s.io/v1
        entry::<events::Event>(),
        // authentication.k8s.io/v1
        entry::<authn::SelfSubjectReview>(),
        entry::<authn::TokenReview>(),
        entry::<authn::TokenRequest>(),
        // authorization.k8s.io/v1
        entry::<authz::LocalSubjectAccessReview>(),
        entry::<authz::SelfSubjectAccessReview>(),
        entry::<authz::SelfSubjectRulesReview>(),
        entry::<authz::SubjectAccessReview>(),
        // autoscaling/v2 and v1
        entry::<autoscaling_v2::HorizontalPodAutoscaler>(),
        entry::<autoscaling_v1::HorizontalPodAutoscaler>(),
        entry::<autoscaling_v1::Scale>(),
        // batch/v1
        entry::<batch::CronJob>(),
        entry::<batch::Job>(),
        // certificates.k8s.io/v1
        entry::<certificates::CertificateSigningRequest>(),
        // networking.k8s.io/v1
        entry::<networking::IngressClass>(),
        entry::<networking::Ingress>(),
        entry::<networking::IPAddress>(),
        entry::<networking::NetworkPolicy>(),
        entry::<networking::ServiceCIDR>(),
        // policy/v1
        entry::<policy::PodDisruptionBudget>(),
        entry::<policy::Eviction>(),
        // rbac.authorization.k8s.io/v1
        entry::<rbac::ClusterRoleBinding>(),
        entry::<rbac::ClusterRole>(),
        entry::<rbac::RoleBinding>(),
        entry::<rbac::Role>(),
        // storage.k8s.io/v1
        entry::<storage::CSIDriver>(),
        entry::<storage::CSINode>(),
        entry::<storage::CSIStorageCapacity>(),
        entry::<storage::StorageClass>(),
        entry::<storage::VolumeAttachment>(),
        // admissionregistration.k8s.io/v1
        entry::<admission::MutatingWebhookConfiguration>(),
        entry::<admission::ValidatingAdmissionPolicy>(),
        entry::<admission::ValidatingAdmissionPolicyBinding>(),
        entry::<admission::ValidatingWebhookConfiguration>(),
        // apiextensions.k8s.io/v1
        entry::<apiextensions::CustomResourceDefinition>(),
        // scheduling.k8s.io/v1
        entry::<scheduling::PriorityClass>(),
        // coordination.k8s.io/v1
        entry::<coordination::Lease>(),
        // node.k8s.io/v1
        entry::<node::RuntimeClass>(),
        // discovery.k8s.io/v1
        entry::<discovery::EndpointSlice>(),
        // flowcontrol.apiserver.k8s.io/v1
        entry::<flowcontrol::FlowSchema>(),
        entry::<flowcontrol::PriorityLevelConfiguration>(),
    ]
}

/// The entry for `group`/`version`/`kind`, if it has one.
pub fn find<'a>(
    kinds: &'a [KindSchema],
    group: &str,
    version: &str,
    kind: &str,
) -> Option<&'a KindSchema> {
    kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}
