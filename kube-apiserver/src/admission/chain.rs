//! The admission chain: which plugins run, in upstream's order, from
//! `--enable-admission-plugins` / `--disable-admission-plugins`; and the per-request runner the
//! store calls.

use super::{Attributes, Operation, Plugin, plugins};
use crate::registry::{RegistryError, WriteAdmission};
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// One plugin upstream knows: its name, whether upstream enables it by default, and how we
/// build it (None: we do not implement it, so naming it in a flag is an error).
struct Known {
    name: &'static str,
    default_on: bool,
    build: Option<fn() -> Box<dyn Plugin>>,
}

const fn known(
    name: &'static str,
    default_on: bool,
    build: Option<fn() -> Box<dyn Plugin>>,
) -> Known {
    Known {
        name,
        default_on,
        build,
    }
}

fn boxed<P: Plugin + Default + 'static>() -> Box<dyn Plugin> {
    Box::new(P::default())
}

/// Upstream's plugins in the order they run (1.33's `AllOrderedPlugins`), whatever order the
/// flags name them in.
const ORDERED: &[Known] = &[
    known(
        "AlwaysAdmit",
        false,
        Some(boxed::<plugins::always::AlwaysAdmit>),
    ),
    known("NamespaceAutoProvision", false, None),
    known(
        "NamespaceLifecycle",
        true,
        Some(boxed::<plugins::namespace_lifecycle::NamespaceLifecycle>),
    ),
    known("NamespaceExists", false, None),
    known("LimitPodHardAntiAffinityTopology", false, None),
    known(
        "LimitRanger",
        true,
        Some(boxed::<plugins::limit_ranger::LimitRanger>),
    ),
    known(
        "ServiceAccount",
        true,
        Some(boxed::<plugins::service_account::ServiceAccount>),
    ),
    known(
        "NodeRestriction",
        false,
        Some(boxed::<plugins::node_restriction::NodeRestriction>),
    ),
    known(
        "TaintNodesByCondition",
        true,
        Some(boxed::<plugins::taint_nodes::TaintNodesByCondition>),
    ),
    known("AlwaysPullImages", false, None),
    known("ImagePolicyWebhook", false, None),
    known(
        "PodSecurity",
        true,
        Some(boxed::<plugins::pod_security::PodSecurity>),
    ),
    known("PodNodeSelector", false, None),
    known("Priority", true, Some(boxed::<plugins::priority::Priority>)),
    known(
        "DefaultTolerationSeconds",
        true,
        Some(boxed::<plugins::default_toleration::DefaultTolerationSeconds>),
    ),
    known("PodTolerationRestriction", false, None),
    known("EventRateLimit", false, None),
    known("ExtendedResourceToleration", false, None),
    known(
        "DefaultStorageClass",
        true,
        Some(boxed::<plugins::default_storage_class::DefaultStorageClass>),
    ),
    known(
        "StorageObjectInUseProtection",
        true,
        Some(boxed::<plugins::storage_protection::StorageObjectInUseProtection>),
    ),
    known("OwnerReferencesPermissionEnforcement", false, None),
    known("PersistentVolumeClaimResize", true, None),
    known(
        "RuntimeClass",
        true,
        Some(boxed::<plugins::runtime_class::RuntimeClass>),
    ),
    known("CertificateApproval", true, None),
    known("CertificateSigning", true, None),
    known("ClusterTrustBundleAttest", true, None),
    known("CertificateSubjectRestriction", true, None),
    known("DefaultIngressClass", true, None),
    known("DenyServiceExternalIPs", false, None),
    known("PodTopologyLabels", false, None),
    known("MutatingAdmissionPolicy", false, None),
    known(
        "MutatingAdmissionWebhook",
        true,
        Some(boxed::<plugins::webhook::MutatingAdmissionWebhook>),
    ),
    known("ValidatingAdmissionPolicy", true, None),
    known(
        "ValidatingAdmissionWebhook",
        true,
        Some(boxed::<plugins::webhook::ValidatingAdmissionWebhook>),
    ),
    known(
        "ResourceQuota",
        true,
        Some(boxed::<plugins::resource_quota::ResourceQuota>),
    ),
    known(
        "AlwaysDeny",
        false,
        Some(boxed::<plugins::always::AlwaysDeny>),
    ),
];

/// `--enable-admission-plugins` and `--disable-admission-plugins`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdmissionConfig {
    pub enable: Vec<String>,
    pub disable: Vec<String>,
}

impl AdmissionConfig {
    /// The names of the plugins that will run, in order; an unknown name, a name both enabled
    /// and disabled, or enabling a plugin we do not implement is an error.
    pub fn resolve(&self) -> Result<Vec<&'static str>, String> {
        for name in self.enable.iter().chain(&self.disable) {
            if !ORDERED.iter().any(|k| k.name == name) {
                return Err(format!("{name} is not a known admission plugin"));
            }
        }
        if let Some(both) = self.enable.iter().find(|n| self.disable.contains(n)) {
            return Err(format!(
                "{both} plugins are both enabled and disabled: they cannot be"
            ));
        }
        if let Some(k) = ORDERED
            .iter()
            .find(|k| k.build.is_none() && self.enable.iter().any(|n| n == k.name))
        {
            return Err(format!(
                "admission plugin {} is not implemented by this apiserver",
                k.name
            ));
        }
        Ok(ORDERED
            .iter()
            .filter(|k| k.build.is_some())
            .filter(|k| {
                let named = |list: &[String]| list.iter().any(|n| n == k.name);
                (k.default_on || named(&self.enable)) && !named(&self.disable)
            })
            .map(|k| k.name)
            .collect())
    }
}

/// The plugins that run, in order.
pub struct Chain {
    plugins: Vec<Box<dyn Plugin>>,
}

impl Chain {
    /// Builds the plugins `config` selects.
    pub fn new(config: &AdmissionConfig) -> Result<Self, String> {
        let names = config.resolve()?;
        let plugins = ORDERED
            .iter()
            .filter(|k| names.contains(&k.name))
            .filter_map(|k| k.build.map(|build| build()))
            .collect();
        Ok(Chain { plugins })
    }

    /// A chain of exactly `plugins` (tests).
    pub fn of(plugins: Vec<Box<dyn Plugin>>) -> Self {
        Chain { plugins }
    }

    /// The names of the plugins, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// The mutating phase of every plugin, in order.
    pub async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), crate::http::status::ApiError> {
        if attrs.operation == Operation::Delete {
            return Ok(());
        }
        for plugin in &self.plugins {
            plugin.admit(attrs, object, old, state).await?;
        }
        Ok(())
    }

    /// The validating phase of every plugin, in order.
    pub async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), crate::http::status::ApiError> {
        for plugin in &self.plugins {
            plugin.validate(attrs, object, old, state).await?;
        }
        Ok(())
    }
}

/// The chain bound to one request: what the store calls on every write it makes for it.
pub struct RequestAdmission {
    pub chain: Arc<Chain>,
    pub attrs: Attributes,
    pub state: Arc<ApiState>,
}

impl RequestAdmission {
    /// The attributes with the name filled from the object when the request has none (a
    /// create with generateName, each item of a deletecollection).
    fn attrs_for(&self, object: Option<&Value>) -> std::borrow::Cow<'_, Attributes> {
        if !self.attrs.name.is_empty() {
            return std::borrow::Cow::Borrowed(&self.attrs);
        }
        let mut attrs = self.attrs.clone();
        attrs.name = super::object_name(&self.attrs, object).to_string();
        std::borrow::Cow::Owned(attrs)
    }
}

#[async_trait]
impl WriteAdmission for RequestAdmission {
    async fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), RegistryError> {
        // The borrowed attributes do not borrow `object`, so it stays free to mutate.
        let attrs = self.attrs_for(Some(object));
        self.chain
            .admit(&attrs, object, old, &self.state)
            .await
            .map_err(|e| RegistryError::Rejected(Box::new(e)))
    }

    async fn validate(
        &self,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), RegistryError> {
        let attrs = self.attrs_for(object.or(old));
        check_rbac_write(&attrs, object, &self.state)
            .map_err(|e| RegistryError::Rejected(Box::new(e)))?;
        self.chain
            .validate(&attrs, object, old, &self.state)
            .await
            .map_err(|e| RegistryError::Rejected(Box::new(e)))
    }
}

/// Upstream's RBAC storage refuses roles and bindings granting more than their writer holds
/// (unless they may `escalate` or `bind`); it is part of the RBAC API, not a plugin, so it
/// runs whatever the flags say, whenever RBAC is on.
fn check_rbac_write(
    attrs: &Attributes,
    object: Option<&Value>,
    state: &ApiState,
) -> Result<(), crate::http::status::ApiError> {
    let security = state.security();
    let (Some(rbac), Some(object)) = (&security.rbac, object) else {
        return Ok(());
    };
    let is_rbac = attrs.resource.group == "rbac.authorization.k8s.io"
        && attrs.subresource.is_empty()
        && matches!(
            attrs.resource.plural,
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        );
    if !is_rbac || !matches!(attrs.operation, Operation::Create | Operation::Update) {
        return Ok(());
    }
    crate::auth::rbac::authorize_rbac_write(
        security.authorizer.as_ref(),
        rbac,
        &attrs.user,
        attrs.resource.plural,
        &attrs.namespace,
        object,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(enable: &[&str], disable: &[&str]) -> AdmissionConfig {
        AdmissionConfig {
            enable: enable.iter().map(|s| s.to_string()).collect(),
            disable: disable.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn upstream_order_whatever_the_flag_order() {
        let names = config(&["AlwaysDeny", "NodeRestriction"], &["ResourceQuota"])
            .resolve()
            .expect("valid");
        let pos = |n: &str| names.iter().position(|x| *x == n).expect(n);
        assert!(pos("NamespaceLifecycle") < pos("NodeRestriction"));
        assert!(pos("NodeRestriction") < pos("PodSecurity"));
        assert!(pos("ValidatingAdmissionWebhook") < pos("AlwaysDeny"));
        assert!(!names.contains(&"ResourceQuota"));
        assert!(!names.contains(&"AlwaysAdmit"));
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(config(&["Nope"], &[]).resolve().is_err());
        assert!(config(&["Priority"], &["Priority"]).resolve().is_err());
        assert_eq!(
            config(&["AlwaysPullImages"], &[]).resolve(),
            Err("admission plugin AlwaysPullImages is not implemented by this apiserver".into())
        );
        // Disabling an unimplemented default plugin is fine.
        assert!(config(&[], &["CertificateApproval"]).resolve().is_ok());
    }
}
