//! The patch strategies of the built-in types, as data.
//!
//! Transcribed from the `patchStrategy` / `patchMergeKey` struct tags of k8s.io/api v1.33 (the
//! same facts as `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` in upstream's
//! OpenAPI documents); k8s-openapi does not carry them. A type lists only the fields that matter
//! to strategic merge: fields with a strategy, and fields leading to types that have some.
//! Anything not listed merges maps and replaces lists, as upstream does for untagged fields.

/// How a field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// No tag: maps merge, lists are replaced.
    Default,
    /// `patchStrategy:"merge"`: lists merge, by `merge_key` for lists of objects, as a set for
    /// lists of primitives.
    Merge,
    /// `patchStrategy:"replace"`: the value is replaced whole.
    Replace,
}

/// What strategic merge needs to know about one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldMeta {
    /// The JSON name of the field.
    pub name: &'static str,
    /// The type of the value, or of each element of a list; `None` when nothing below matters.
    pub type_name: Option<&'static str>,
    /// The list or map strategy.
    pub strategy: Strategy,
    /// `patchMergeKey`, for merged lists of objects.
    pub merge_key: Option<&'static str>,
    /// Whether the strategy also carries `retainKeys` (the client sends `$retainKeys` for it).
    pub retain_keys: bool,
}

/// A type and the fields of it that matter.
#[derive(Debug)]
pub struct TypeDef {
    /// The Go type name (unique across the groups we cover).
    pub name: &'static str,
    /// Its fields.
    pub fields: &'static [FieldMeta],
}

const fn nested(name: &'static str, type_name: &'static str) -> FieldMeta {
    FieldMeta {
        name,
        type_name: Some(type_name),
        strategy: Strategy::Default,
        merge_key: None,
        retain_keys: false,
    }
}

const fn retain(name: &'static str, type_name: &'static str) -> FieldMeta {
    FieldMeta {
        retain_keys: true,
        ..nested(name, type_name)
    }
}

const fn keyed(name: &'static str, type_name: &'static str, key: &'static str) -> FieldMeta {
    FieldMeta {
        name,
        type_name: Some(type_name),
        strategy: Strategy::Merge,
        merge_key: Some(key),
        retain_keys: false,
    }
}

const fn keyed_retain(name: &'static str, type_name: &'static str, key: &'static str) -> FieldMeta {
    FieldMeta {
        retain_keys: true,
        ..keyed(name, type_name, key)
    }
}

/// A merged list of objects whose elements have nothing further to know.
const fn keyed_leaf(name: &'static str, key: &'static str) -> FieldMeta {
    FieldMeta {
        name,
        type_name: None,
        strategy: Strategy::Merge,
        merge_key: Some(key),
        retain_keys: false,
    }
}

/// A list of primitives merged as a set.
const fn set(name: &'static str) -> FieldMeta {
    FieldMeta {
        name,
        type_name: None,
        strategy: Strategy::Merge,
        merge_key: None,
        retain_keys: false,
    }
}

const fn conditions() -> FieldMeta {
    keyed_leaf("conditions", "type")
}

const fn metadata() -> FieldMeta {
    nested("metadata", "ObjectMeta")
}

/// Group, kind and root type of every built-in kind we know the patch strategies of.
pub static KINDS: &[(&str, &str, &str)] = &[
    ("", "Pod", "Pod"),
    ("", "PodTemplate", "PodTemplate"),
    ("", "ReplicationController", "ReplicationController"),
    ("", "Service", "Service"),
    ("", "Node", "Node"),
    ("", "Namespace", "Namespace"),
    ("", "ServiceAccount", "ServiceAccount"),
    ("", "PersistentVolumeClaim", "PersistentVolumeClaim"),
    ("", "PersistentVolume", "PersistentVolume"),
    ("", "Endpoints", "Object"),
    ("", "ConfigMap", "Object"),
    ("", "Secret", "Object"),
    ("", "Event", "Object"),
    ("", "LimitRange", "Object"),
    ("", "ResourceQuota", "Object"),
    ("", "Binding", "Object"),
    ("apps", "Deployment", "Deployment"),
    ("apps", "ReplicaSet", "ReplicaSet"),
    ("apps", "StatefulSet", "StatefulSet"),
    ("apps", "DaemonSet", "DaemonSet"),
    ("apps", "ControllerRevision", "Object"),
    ("batch", "Job", "Job"),
    ("batch", "CronJob", "CronJob"),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "HorizontalPodAutoscaler",
    ),
    ("autoscaling", "Scale", "Object"),
    ("policy", "PodDisruptionBudget", "PodDisruptionBudget"),
    ("policy", "Eviction", "Object"),
    ("apiregistration.k8s.io", "APIService", "APIService"),
];

/// The types, keyed by name.
pub static TYPES: &[TypeDef] = &[
    // A top-level object with nothing but metadata to care about (ConfigMap, Secret, ...).
    TypeDef {
        name: "Object",
        fields: &[metadata()],
    },
    TypeDef {
        name: "ObjectMeta",
        fields: &[set("finalizers"), keyed_leaf("ownerReferences", "uid")],
    },
    // core/v1 Pod and what it holds.
    TypeDef {
        name: "Pod",
        fields: &[
            metadata(),
            nested("spec", "PodSpec"),
            nested("status", "PodStatus"),
        ],
    },
    TypeDef {
        name: "PodSpec",
        fields: &[
            keyed_retain("volumes", "Volume", "name"),
            keyed("initContainers", "Container", "name"),
            keyed("containers", "Container", "name"),
            keyed("ephemeralContainers", "Container", "name"),
            keyed_leaf("imagePullSecrets", "name"),
            keyed_leaf("hostAliases", "ip"),
            keyed_leaf("topologySpreadConstraints", "topologyKey"),
            keyed_leaf("schedulingGates", "name"),
            keyed_retain("resourceClaims", "PodResourceClaim", "name"),
        ],
    },
    // Volume embeds VolumeSource; its fields are plain maps, so nothing below matters.
    TypeDef {
        name: "Volume",
        fields: &[],
    },
    TypeDef {
        name: "PodResourceClaim",
        fields: &[],
    },
    // Container and EphemeralContainer(Common) carry the same tags.
    TypeDef {
        name: "Container",
        fields: &[
            keyed_leaf("ports", "containerPort"),
            keyed_leaf("env", "name"),
            keyed_leaf("volumeMounts", "mountPath"),
            keyed_leaf("volumeDevices", "devicePath"),
        ],
    },
    TypeDef {
        name: "PodStatus",
        fields: &[
            conditions(),
            keyed_leaf("podIPs", "ip"),
            keyed_leaf("hostIPs", "ip"),
            keyed_retain("resourceClaimStatuses", "PodResourceClaim", "name"),
        ],
    },
    TypeDef {
        name: "PodTemplateSpec",
        fields: &[metadata(), nested("spec", "PodSpec")],
    },
    TypeDef {
        name: "PodTemplate",
        fields: &[metadata(), nested("template", "PodTemplateSpec")],
    },
    TypeDef {
        name: "ReplicationController",
        fields: &[
            metadata(),
            nested("spec", "ReplicationControllerSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    TypeDef {
        name: "ReplicationControllerSpec",
        fields: &[nested("template", "PodTemplateSpec")],
    },
    // Any status whose only tagged field is `conditions` merged by `type`.
    TypeDef {
        name: "ConditionsStatus",
        fields: &[conditions()],
    },
    TypeDef {
        name: "Service",
        fields: &[
            metadata(),
            nested("spec", "ServiceSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    TypeDef {
        name: "ServiceSpec",
        fields: &[keyed_leaf("ports", "port")],
    },
    TypeDef {
        name: "Node",
        fields: &[
            metadata(),
            nested("spec", "NodeSpec"),
            nested("status", "NodeStatus"),
        ],
    },
    TypeDef {
        name: "NodeSpec",
        fields: &[set("podCIDRs")],
    },
    TypeDef {
        name: "NodeStatus",
        fields: &[conditions(), keyed_leaf("addresses", "type")],
    },
    TypeDef {
        name: "Namespace",
        fields: &[metadata(), nested("status", "ConditionsStatus")],
    },
    TypeDef {
        name: "ServiceAccount",
        fields: &[metadata(), keyed_leaf("secrets", "name")],
    },
    TypeDef {
        name: "PersistentVolumeClaim",
        fields: &[metadata(), nested("status", "ConditionsStatus")],
    },
    TypeDef {
        name: "PersistentVolume",
        fields: &[metadata()],
    },
    // apps/v1
    TypeDef {
        name: "Deployment",
        fields: &[
            metadata(),
            nested("spec", "DeploymentSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    TypeDef {
        name: "DeploymentSpec",
        fields: &[
            nested("template", "PodTemplateSpec"),
            retain("strategy", "DeploymentStrategy"),
        ],
    },
    TypeDef {
        name: "DeploymentStrategy",
        fields: &[],
    },
    TypeDef {
        name: "ReplicaSet",
        fields: &[
            metadata(),
            nested("spec", "TemplateSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    // The spec of ReplicaSet, StatefulSet, DaemonSet and Job: only `template` matters.
    TypeDef {
        name: "TemplateSpec",
        fields: &[nested("template", "PodTemplateSpec")],
    },
    TypeDef {
        name: "StatefulSet",
        fields: &[
            metadata(),
            nested("spec", "StatefulSetSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    TypeDef {
        name: "StatefulSetSpec",
        // volumeClaimTemplates has no tag: the list is replaced whole.
        fields: &[nested("template", "PodTemplateSpec")],
    },
    TypeDef {
        name: "DaemonSet",
        fields: &[
            metadata(),
            nested("spec", "TemplateSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    // batch/v1
    TypeDef {
        name: "Job",
        fields: &[
            metadata(),
            nested("spec", "TemplateSpec"),
            nested("status", "ConditionsStatus"),
        ],
    },
    TypeDef {
        name: "CronJob",
        fields: &[metadata(), nested("spec", "CronJobSpec")],
    },
    TypeDef {
        name: "CronJobSpec",
        fields: &[nested("jobTemplate", "JobTemplateSpec")],
    },
    TypeDef {
        name: "JobTemplateSpec",
        fields: &[metadata(), nested("spec", "TemplateSpec")],
    },
    // autoscaling/v2, policy/v1, apiregistration.k8s.io/v1: conditions merged by type.
    TypeDef {
        name: "HorizontalPodAutoscaler",
        fields: &[metadata(), nested("status", "ConditionsStatus")],
    },
    TypeDef {
        name: "PodDisruptionBudget",
        fields: &[metadata(), nested("status", "ConditionsStatus")],
    },
    TypeDef {
        name: "APIService",
        fields: &[metadata(), nested("status", "ConditionsStatus")],
    },
];
