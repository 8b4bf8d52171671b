//! The generic store: create, get, update (main or status), delete for any resource, with
//! upstream's object-meta rules, optimistic concurrency, finalizers and graceful deletion.

use super::admission::WriteAdmission;
use super::error::{MODIFIED_CONFLICT, RegistryError};
use super::keys;
use super::meta::{self, meta_mut};
use super::services::ServiceAllocator;
use super::strategy::{Part, Strategy};
use super::validate;
use crate::storage::backend::{Backend, KeyValue, StorageError};
use crate::storage::codec;
use api_types::registry::ResourceInfo;
use serde_json::{Value, json};
use std::sync::Arc;

/// How many times a write that lost a compare-and-swap is retried before giving up (upstream
/// retries without bound; a bound keeps a hot key from pinning a request forever).
const MAX_CAS_RETRIES: usize = 32;

/// Metadata fields only the server sets: kept from the stored object on update.
const SERVER_OWNED_META: &[&str] = &["deletionTimestamp", "deletionGracePeriodSeconds"];

/// Options of a delete (`metav1.DeleteOptions`).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// `Orphan`, `Background` or `Foreground`.
    pub propagation_policy: Option<String>,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Deleted(Value),
    /// Deletion started (deletionTimestamp set): finalizers or a grace period hold it.
    Pending(Value),
}

/// One resource's store.
#[derive(Clone)]
pub struct ResourceStore {
    pub strategy: Strategy,
    backend: Arc<dyn Backend>,
    /// Cluster IPs and node ports, for the services resource only.
    services: Option<Arc<ServiceAllocator>>,
    /// `dryRun=All`: every check runs, nothing is written or allocated.
    dry_run: bool,
    /// The request's admission chain; None for the apiserver's own writes.
    admission: Option<Arc<dyn WriteAdmission>>,
    /// Records managedFields on what each write stores (server-side apply's field manager).
    tracker: Option<Arc<dyn crate::apply::WriteTracker>>,
}

impl ResourceStore {
    pub fn new(info: &'static ResourceInfo, backend: Arc<dyn Backend>) -> Self {
        Self {
            strategy: Strategy::for_resource(info),
            backend,
            services: None,
            dry_run: false,
            admission: None,
            tracker: None,
        }
    }

    /// The store of one served version of a custom resource.
    pub fn for_custom(
        info: &'static ResourceInfo,
        backend: Arc<dyn Backend>,
        custom: Arc<crate::crd::CustomResource>,
    ) -> Self {
        Self {
            strategy: Strategy::for_custom(info, custom),
            ..Self::new(info, backend)
        }
    }

    /// The same store recording managedFields with `tracker` on every create and update.
    pub fn with_tracker(&self, tracker: Arc<dyn crate::apply::WriteTracker>) -> Self {
        Self {
            tracker: Some(tracker),
            ..self.clone()
        }
    }

    /// The same store running `admission` on every write it makes.
    pub fn with_admission(&self, admission: Arc<dyn WriteAdmission>) -> Self {
        Self {
            admission: Some(admission),
            ..self.clone()
        }
    }

    async fn admit(&self, object: &mut Value, old: Option<&Value>) -> Result<(), RegistryError> {
        match &self.admission {
            Some(admission) => admission.mutate(object, old).await,
            None => Ok(()),
        }
    }

    async fn admission_check(
        &self,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), RegistryError> {
        match &self.admission {
            Some(admission) => admission.validate(object, old).await,
            None => Ok(()),
        }
    }

    /// The same store answering as if it wrote (`dryRun=All`): validation, admission and
    /// conflicts are checked, the response is what would be stored, and storage is untouched.
    pub fn dry_run(&self) -> Self {
        Self {
            dry_run: true,
            ..self.clone()
        }
    }

    /// The store allocates cluster IPs and node ports with `allocator` (services only).
    pub fn with_service_allocator(mut self, allocator: Arc<ServiceAllocator>) -> Self {
        self.services = Some(allocator);
        self
    }

    /// A custom resource is stored in its CRD's storage version whatever version it was
    /// written in (the `None` conversion: only `apiVersion` changes; the `Webhook` one asks
    /// the CRD's webhook, whose failure fails the write).
    async fn to_storage_version(&self, object: Value) -> Result<Value, RegistryError> {
        match &self.strategy.custom {
            Some(custom) => custom
                .to_storage(self.info(), object)
                .await
                .map_err(|e| RegistryError::Rejected(Box::new(e))),
            None => Ok(object),
        }
    }

    /// A stored object as a write through this store's version sees it (admission, the
    /// mutation, validation against the old object): converted by the CRD's webhook when it
    /// has one. None when the stored form serves as it is (built-in resources, the `None`
    /// conversion), so that path copies nothing.
    async fn served_form(&self, stored: &Value) -> Result<Option<Value>, RegistryError> {
        match &self.strategy.custom {
            Some(custom) if custom.conversion.is_some() => custom
                .from_storage(self.info(), stored.clone())
                .await
                .map(Some)
                .map_err(|e| RegistryError::Rejected(Box::new(e))),
            _ => Ok(None),
        }
    }

    /// Gives back what a deleted object held.
    async fn release(&self, object: &Value) {
        if let Some(services) = &self.services {
            services.release(object).await;
        }
    }

    pub fn info(&self) -> &'static ResourceInfo {
        self.strategy.info
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn key(&self, namespace: Option<&str>, name: &str) -> String {
        keys::object_key(self.info(), namespace, name)
    }

    fn not_found(&self, name: &str) -> RegistryError {
        RegistryError::NotFound {
            group: self.info().group.into(),
            resource: self.info().plural.into(),
            name: name.into(),
        }
    }

    fn conflict(&self, name: &str, message: impl Into<String>) -> RegistryError {
        RegistryError::Conflict {
            group: self.info().group.into(),
            resource: self.info().plural.into(),
            name: name.into(),
            message: message.into(),
        }
    }

    fn invalid(&self, name: &str, errors: api_types::validation::ErrorList) -> RegistryError {
        RegistryError::Invalid {
            group: self.info().group.into(),
            kind: self.info().kind.into(),
            name: name.into(),
            errors,
        }
    }

    /// Creates `object` in `namespace` (the request's; `None` for cluster-scoped resources).
    pub async fn create(
        &self,
        namespace: Option<&str>,
        mut object: Value,
    ) -> Result<Value, RegistryError> {
        let info = self.info();
        self.place_in_namespace(&mut object, namespace)?;
        self.admit(&mut object, None).await?;
        if meta::meta_str(&object, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            return Err(RegistryError::BadRequest(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        if meta::name(&object).is_none()
            && let Some(prefix) = meta::meta_str(&object, "generateName").filter(|p| !p.is_empty())
        {
            let name = meta::generate_name(prefix);
            meta_mut(&mut object).insert("name".into(), json!(name));
        }
        let name = meta::name(&object).unwrap_or_default().to_string();
        {
            let m = meta_mut(&mut object);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(meta::now()));
            for field in SERVER_OWNED_META {
                m.remove(*field);
            }
            m.remove("resourceVersion");
        }
        validate::default(&self.strategy, &mut object).map_err(|errs| self.invalid(&name, errs))?;
        self.strategy.prepare_for_create(&mut object);
        if let Some(tracker) = &self.tracker {
            tracker.track(&mut object, None);
        }
        let errs = validate::on_create(&self.strategy, &object);
        if !errs.is_empty() {
            return Err(self.invalid(&name, errs));
        }
        self.admission_check(Some(&object), None).await?;
        let mut object = self.to_storage_version(object).await?;
        let key = self.key(namespace, &name);
        if self.dry_run {
            // Addresses and ports are not allocated for a dry run; existence is still checked.
            if self.backend.get(&key, None).await?.is_some() {
                return Err(RegistryError::AlreadyExists {
                    group: info.group.into(),
                    resource: info.plural.into(),
                    name: name.clone(),
                });
            }
            return Ok(object);
        }
        if let Some(services) = &self.services {
            services.allocate(&mut object).await?;
        }
        let created = self.backend.create(&key, codec::encode(&object)?).await;
        if created.is_err() {
            self.release(&object).await;
        }
        let kv = created.map_err(|err| match err {
            StorageError::AlreadyExists { .. } => RegistryError::AlreadyExists {
                group: info.group.into(),
                resource: info.plural.into(),
                name: name.clone(),
            },
            other => other.into(),
        })?;
        Ok(codec::written(object, &kv)?)
    }

    /// Sets the object's namespace from the request (cluster-scoped objects have none); a
    /// different namespace in the body is a 400 as upstream.
    fn place_in_namespace(
        &self,
        object: &mut Value,
        namespace: Option<&str>,
    ) -> Result<(), RegistryError> {
        if !object.is_object() {
            return Err(RegistryError::BadRequest(
                "the body is not an object".into(),
            ));
        }
        if !self.info().namespaced {
            meta_mut(object).remove("namespace");
            return Ok(());
        }
        let Some(ns) = namespace else {
            return Err(RegistryError::BadRequest(
                "the server could not find the requested resource: a namespace is required".into(),
            ));
        };
        match meta::namespace(object) {
            Some(given) if given != ns => Err(RegistryError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
                    .into(),
            )),
            _ => {
                meta_mut(object).insert("namespace".into(), json!(ns));
                Ok(())
            }
        }
    }

    async fn read(&self, key: &str, name: &str) -> Result<KeyValue, RegistryError> {
        self.backend
            .get(key, None)
            .await?
            .ok_or_else(|| self.not_found(name))
    }

    /// The object now.
    pub async fn get(&self, namespace: Option<&str>, name: &str) -> Result<Value, RegistryError> {
        let kv = self.read(&self.key(namespace, name), name).await?;
        Ok(codec::decode(&kv)?)
    }

    /// Replaces the object (PUT), or only its status (`part` Status). A resourceVersion in
    /// `object` must match the stored one (409 otherwise); without one the write is
    /// unconditional, as upstream allows.
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        object: Value,
        part: Part,
    ) -> Result<Value, RegistryError> {
        let mut object = object;
        self.place_in_namespace(&mut object, namespace)?;
        if let Some(body_name) = meta::name(&object)
            && body_name != name
        {
            return Err(RegistryError::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        meta_mut(&mut object).insert("name".into(), json!(name));
        self.guaranteed_update(namespace, name, part, |_| Ok(object.clone()))
            .await
    }

    /// Reads the object, computes its new state with `mutate`, and writes it with
    /// compare-and-swap, retrying from a fresh read when another write got there first. A
    /// resourceVersion in the result of `mutate` that differs from the stored one is a 409.
    pub async fn guaranteed_update<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        part: Part,
        mut mutate: F,
    ) -> Result<Value, RegistryError>
    where
        F: FnMut(&Value) -> Result<Value, RegistryError>,
    {
        let key = self.key(namespace, name);
        for _ in 0..MAX_CAS_RETRIES {
            let current = self.read(&key, name).await?;
            let stored = codec::decode(&current)?;
            let served = self.served_form(&stored).await?;
            let old = served.as_ref().unwrap_or(&stored);
            let mut new = mutate(old)?;
            if !new.is_object() {
                return Err(RegistryError::BadRequest(
                    "the body is not an object".into(),
                ));
            }
            self.admit(&mut new, Some(old)).await?;
            if let Some(rv) = meta::meta_str(&new, "resourceVersion").filter(|rv| !rv.is_empty()) {
                let wanted: i64 = rv.parse().map_err(|_| {
                    RegistryError::BadRequest(format!("invalid resourceVersion {rv:?}"))
                })?;
                if wanted != current.mod_revision {
                    return Err(self.conflict(name, MODIFIED_CONFLICT));
                }
            }
            self.carry_system_fields(&mut new, old);
            if part == Part::Binding {
                // The binding storage writes nodeName and the PodScheduled condition as given,
                // as upstream's: no pod defaulting, managedFields or update validation (which
                // forbids nodeName changes); the binding request itself was admitted.
                self.strategy.prepare_for_update(&mut new, old, part);
            } else {
                validate::default(&self.strategy, &mut new)
                    .map_err(|errs| self.invalid(name, errs))?;
                self.strategy.prepare_for_update(&mut new, old, part);
                if let (Some(services), Part::Main, false) = (&self.services, part, self.dry_run) {
                    services.reconcile_update(&mut new, old).await?;
                }
                if let Some(tracker) = &self.tracker {
                    tracker.track(&mut new, Some(old));
                }
                let errs = match part {
                    Part::EphemeralContainers => {
                        super::ephemeral::validate_update(&self.strategy, &new, old)
                    }
                    _ => validate::on_update(&self.strategy, &new, old),
                };
                if !errs.is_empty() {
                    return Err(self.invalid(name, errs));
                }
            }
            self.admission_check(Some(&new), Some(old)).await?;
            let new = self.to_storage_version(new).await?;
            if same_but_resource_version(&new, &stored) {
                // Upstream skips writes that change nothing: the resourceVersion stays.
                return Ok(stored);
            }
            if self.dry_run {
                return Ok(new);
            }
            if meta::is_terminating(&new) && self.nothing_holds_deletion(&new) {
                return match self.backend.delete(&key, Some(current.mod_revision)).await {
                    Ok((_, revision)) => {
                        self.release(&new).await;
                        let mut gone = new;
                        codec::set_resource_version(&mut gone, revision);
                        Ok(gone)
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(StorageError::NotFound { .. }) => Err(self.not_found(name)),
                    Err(err) => Err(err.into()),
                };
            }
            match self
                .backend
                .update(&key, codec::encode(&new)?, current.mod_revision)
                .await
            {
                Ok(kv) => return Ok(codec::written(new, &kv)?),
                Err(StorageError::Conflict { .. }) => continue,
                Err(StorageError::NotFound { .. }) => return Err(self.not_found(name)),
                Err(err) => return Err(err.into()),
            }
        }
        Err(self.conflict(name, MODIFIED_CONFLICT))
    }

    /// Keeps what clients cannot change from `old`: uid and creationTimestamp when the client
    /// left them out (a different value is a validation error), and the deletion fields always.
    fn carry_system_fields(&self, new: &mut Value, old: &Value) {
        // Borrowed, not copied: the old metadata holds managedFields, often most of an object.
        let empty = serde_json::Map::new();
        let old_meta = old
            .get("metadata")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let m = meta_mut(new);
        for field in ["uid", "creationTimestamp"] {
            let missing = m.get(field).is_none_or(|v| v.is_null() || v == "");
            if missing && let Some(value) = old_meta.get(field) {
                m.insert(field.into(), value.clone());
            }
        }
        for field in SERVER_OWNED_META {
            match old_meta.get(*field) {
                Some(value) => m.insert((*field).into(), value.clone()),
                None => m.remove(*field),
            };
        }
        if let Some(rv) = old_meta.get("resourceVersion")
            && m.get("resourceVersion").is_none_or(|v| v == "")
        {
            m.insert("resourceVersion".into(), rv.clone());
        }
    }

    /// A terminating object whose finalizers are all gone and whose grace period is over (or
    /// never was) is deleted by the write that removed the last finalizer.
    fn nothing_holds_deletion(&self, object: &Value) -> bool {
        let grace_over = object["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0)
            == 0;
        let namespace_finalized = !(self.info().group.is_empty()
            && self.info().plural == "namespaces"
            && object["spec"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty()));
        grace_over && namespace_finalized && meta::finalizers(object).is_empty()
    }

    /// Deletes the object, or starts its deletion when finalizers or a grace period hold it.
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome, RegistryError> {
        let key = self.key(namespace, name);
        for _ in 0..MAX_CAS_RETRIES {
            let current = self.read(&key, name).await?;
            let object = codec::decode(&current)?;
            self.check_preconditions(name, &object, options)?;
            // Admission sees the object in the request's version; nothing is converted
            // when no admission runs.
            let served = match self.admission {
                Some(_) => self.served_form(&object).await?,
                None => None,
            };
            self.admission_check(None, Some(served.as_ref().unwrap_or(&object)))
                .await?;

            let mut next = object.clone();
            let mut finalizers = meta::finalizers(&next);
            // An explicit policy replaces the garbage collector's finalizer of an earlier
            // deletion, as upstream's deletionFinalizersForGarbageCollection.
            if let Some(policy) = options.propagation_policy.as_deref() {
                finalizers.retain(|f| f != "orphan" && f != "foregroundDeletion");
                match policy {
                    "Orphan" => finalizers.push("orphan".into()),
                    "Foreground" => finalizers.push("foregroundDeletion".into()),
                    _ => {}
                }
            } else if self.strategy.orphans_by_default()
                && !finalizers.iter().any(|f| f == "foregroundDeletion")
            {
                add_once(&mut finalizers, "orphan");
            }
            if let Some(finalizer) = self.strategy.deletion_finalizer()
                && !meta::is_terminating(&object)
            {
                add_once(&mut finalizers, finalizer);
            }
            meta::set_finalizers(&mut next, &finalizers);
            let is_namespace = self.info().group.is_empty() && self.info().plural == "namespaces";
            // Only graceful kinds (pods) honour gracePeriodSeconds; a pod with nothing to stop
            // (unscheduled, finished) goes at once whatever was asked, as upstream.
            let grace = match self.strategy.graceful_delete_seconds(&object) {
                None | Some(0) => 0,
                Some(default) => options.grace_period_seconds.unwrap_or(default).max(0),
            };

            let held = !finalizers.is_empty()
                || grace > 0
                || (is_namespace && !self.nothing_holds_deletion(&next));
            if held {
                let already = meta::is_terminating(&object);
                let m = meta_mut(&mut next);
                let shorter = m
                    .get("deletionGracePeriodSeconds")
                    .and_then(Value::as_i64)
                    .is_none_or(|old| grace < old);
                if !already || shorter {
                    m.insert("deletionTimestamp".into(), json!(meta::now_plus(grace)));
                    m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                }
                if is_namespace && let Some(map) = next.as_object_mut() {
                    map.insert("status".into(), json!({"phase": "Terminating"}));
                }
                if next == object {
                    return Ok(DeleteOutcome::Pending(object));
                }
                if self.dry_run {
                    return Ok(DeleteOutcome::Pending(next));
                }
                match self
                    .backend
                    .update(&key, codec::encode(&next)?, current.mod_revision)
                    .await
                {
                    Ok(kv) => return Ok(DeleteOutcome::Pending(codec::written(next, &kv)?)),
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(StorageError::NotFound { .. }) => return Err(self.not_found(name)),
                    Err(err) => return Err(err.into()),
                }
            }
            if self.dry_run {
                return Ok(DeleteOutcome::Deleted(object));
            }
            match self.backend.delete(&key, Some(current.mod_revision)).await {
                Ok((_, revision)) => {
                    self.release(&object).await;
                    let mut gone = object;
                    codec::set_resource_version(&mut gone, revision);
                    return Ok(DeleteOutcome::Deleted(gone));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(StorageError::NotFound { .. }) => return Err(self.not_found(name)),
                Err(err) => return Err(err.into()),
            }
        }
        Err(self.conflict(name, MODIFIED_CONFLICT))
    }

    fn check_preconditions(
        &self,
        name: &str,
        object: &Value,
        options: &DeleteOptions,
    ) -> Result<(), RegistryError> {
        if let Some(uid) = &options.precondition_uid {
            let actual = meta::meta_str(object, "uid").unwrap_or_default();
            if uid != actual {
                return Err(self.conflict(
                    name,
                    format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &options.precondition_resource_version {
            let actual = meta::meta_str(object, "resourceVersion").unwrap_or_default();
            if rv != actual {
                return Err(self.conflict(
                    name,
                    format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn add_once(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|f| f == item) {
        list.push(item.to_string());
    }
}

fn without_resource_version(object: &Value) -> Value {
    let mut copy = object.clone();
    meta_mut(&mut copy).remove("resourceVersion");
    copy
}

/// Whether `a` and `b` are equal but for `metadata.resourceVersion` (a missing or non-object
/// `metadata` counting as an empty one), compared in place: this runs on every update, and
/// copies of both trees cost more than the comparison.
fn same_but_resource_version(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return without_resource_version(a) == without_resource_version(b);
    };
    type Map = serde_json::Map<String, Value>;
    fn meta(object: &Map) -> impl Iterator<Item = (&String, &Value)> {
        object
            .get("metadata")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(key, _)| *key != "resourceVersion")
    }
    fn rest(object: &Map) -> impl Iterator<Item = (&String, &Value)> {
        object.iter().filter(|(key, _)| *key != "metadata")
    }
    rest(a).eq(rest(b)) && meta(a).eq(meta(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-place comparison agrees with comparing copies without the resourceVersion.
    #[test]
    fn same_but_resource_version_matches_the_copying_comparison() {
        let values = [
            json!({"metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a", "resourceVersion": "2"}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a"}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a"}, "spec": {"x": 2}}),
            json!({"metadata": {"name": "b", "resourceVersion": "1"}, "spec": {"x": 1}}),
            json!({"metadata": {}, "spec": {"x": 1}}),
            json!({"metadata": {"resourceVersion": "3"}, "spec": {"x": 1}}),
            json!({"spec": {"x": 1}}),
            json!({"metadata": null, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "a"}, "status": {}}),
            json!([1]),
            json!(null),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(
                    same_but_resource_version(a, b),
                    without_resource_version(a) == without_resource_version(b),
                    "{a} vs {b}"
                );
            }
        }
    }
}
