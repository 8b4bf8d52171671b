//! The field manager of one endpoint: records who owns what on every write (`update`) and
//! performs server-side apply (`apply`), as upstream's FieldManager stack does (version check,
//! last-applied annotation upkeep, managed fields times, the Update cap, stripped metadata).

use super::fieldpath::{FieldSet, Path, PathElement};
use super::managed::{Entry, Managed, Operation, set_managed_fields};
use super::schema::ApplySchema;
use super::typed::{compare, ensure_named_fields, merge, remove_items, to_field_set};
use crate::http::status::ApiError;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Status, StatusCause, StatusDetails,
};
use serde_json::{Value, json};

/// Who owns what an object held before its first apply, when nothing tracked it.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// kubectl's client-side apply annotation.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Which fields the endpoint does not let a write change (upstream's reset fields), so nobody
/// owns them through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Everything may change.
    Nothing,
    /// The main resource of a kind with a status subresource: `status` is reset.
    Status,
    /// The status subresource: everything but `status` is reset.
    AllButStatus,
}

/// The field manager of one endpoint.
#[derive(Debug, Clone, Copy)]
pub struct FieldManager<'a> {
    pub schema: ApplySchema<'a>,
    /// The endpoint's `apiVersion` (`apps/v1`).
    pub api_version: &'a str,
    pub kind: &'a str,
    /// `""`, `status` or `scale`.
    pub subresource: &'a str,
    pub reset: Reset,
}

/// One conflicting field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager as conflicts name it (`"a"`, `"b" using apps/v1`).
    pub manager: String,
    pub path: Path,
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// A malformed configuration (400).
    BadRequest(String),
    /// Fields owned by other managers would change (409), sorted by manager.
    Conflicts(Vec<Conflict>),
}

impl ApplyError {
    /// The `Status` upstream answers.
    pub fn into_api_error(self) -> ApiError {
        match self {
            ApplyError::BadRequest(message) => ApiError::bad_request(message),
            ApplyError::Conflicts(conflicts) => conflict_error(&conflicts),
        }
    }
}

/// Upstream's message: one line for one conflict, else the fields grouped by manager.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager, only.path
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for manager in managers {
        lines.push(format!("conflicts with {manager}:"));
        for conflict in conflicts.iter().filter(|c| c.manager == manager) {
            lines.push(format!("- {}", conflict.path));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: Some("FieldManagerConflict".into()),
            message: Some(format!("conflict with {}", c.manager)),
            field: Some(c.path.to_string()),
        })
        .collect();
    ApiError::from_status(Status {
        status: Some("Failure".into()),
        code: Some(409),
        reason: Some("Conflict".into()),
        message: Some(conflict_message(conflicts)),
        details: Some(StatusDetails {
            causes: Some(causes),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Fields nobody owns: the type, the identity and what the server sets in metadata.
fn stripped_fields() -> FieldSet {
    let mut set = FieldSet::new();
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[PathElement::Field(top.into())]);
    }
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field(field.into()),
        ]);
    }
    set
}

/// The object without its managedFields.
fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    copy
}

fn managed_fields_of(object: &Value) -> Option<&Value> {
    object.get("metadata")?.get("managedFields")
}

/// `group/version, Kind=kind` as upstream prints a GroupVersionKind.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

impl FieldManager<'_> {
    fn ignored(&self, objects: &[&Value]) -> FieldSet {
        let mut set = FieldSet::new();
        match self.reset {
            Reset::Nothing => {}
            Reset::Status => set.insert(&[PathElement::Field("status".into())]),
            Reset::AllButStatus => {
                for key in objects
                    .iter()
                    .filter_map(|o| o.as_object())
                    .flat_map(|m| m.keys())
                {
                    if key != "status" {
                        set.insert(&[PathElement::Field(key.clone())]);
                    }
                }
            }
        }
        set
    }

    fn clean(&self, set: &FieldSet, ignored: &FieldSet) -> FieldSet {
        set.recursive_difference(ignored)
            .difference(&stripped_fields())
    }

    /// The managers of the write: the request's own managedFields when it sets them (an
    /// explicit `[]` resets them), else the live object's; subresources always keep the live
    /// ones.
    fn live_or_new(&self, live: Option<&Value>, new: &Value) -> Managed {
        let from_live = || Managed::decode(live.and_then(managed_fields_of)).unwrap_or_default();
        if !self.subresource.is_empty() {
            return from_live();
        }
        let requested = managed_fields_of(new);
        if Managed::is_reset(requested) {
            return Managed::default();
        }
        match Managed::decode(requested) {
            Some(managed) if !managed.entries.is_empty() => managed,
            _ => from_live(),
        }
    }

    /// Records a non-apply write of `new` over `live` (None on create) by `manager`: it owns
    /// what it added or changed, other managers lose those fields, removed fields are owned by
    /// nobody. Sets `new`'s managedFields.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
        let mut managed = self.live_or_new(live, new);
        let live_plain = live.map(without_managed_fields);
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        // An object nothing tracks stays untracked until an apply (upstream tracks creates,
        // and skips updates of objects without managedFields).
        if live.is_some() && managed.entries.is_empty() {
            return;
        }
        let root = self.schema.root();
        let comparison = compare(live_plain.as_ref(), Some(new), root, live.is_none());
        let ignored = self.ignored(&[new]);
        let changed = self.clean(&comparison.changed(), &ignored);
        let removed = self.clean(&comparison.removed, &ignored);
        let (api_version, subresource) = (self.api_version, self.subresource);
        for entry in &mut managed.entries {
            entry.fields = entry.fields.difference(&removed);
            if !entry.is(manager, Operation::Update, api_version, subresource) {
                entry.fields = entry.fields.difference(&changed);
            }
        }
        if !changed.is_empty() {
            match managed.find_mut(manager, Operation::Update, api_version, subresource) {
                Some(entry) => {
                    entry.fields = entry.fields.union(&changed);
                    entry.time = Some(now.to_string());
                }
                None => managed.entries.push(Entry {
                    manager: manager.to_string(),
                    operation: Operation::Update,
                    api_version: api_version.to_string(),
                    time: Some(now.to_string()),
                    subresource: subresource.to_string(),
                    fields: changed,
                }),
            }
        }
        managed.drop_empty();
        managed.cap_updates();
        set_managed_fields(new, &managed);
    }

    /// Applies `config` for `manager` over `live` (None: the object is created): the merged
    /// object with its managedFields, or why not.
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        if !config.is_object() {
            return Err(ApplyError::BadRequest(
                "error decoding YAML: the applied configuration is not an object".into(),
            ));
        }
        if managed_fields_of(config).is_some_and(|v| !v.is_null()) {
            return Err(ApplyError::BadRequest(
                "metadata.managedFields must be nil".into(),
            ));
        }
        let given_version = config["apiVersion"].as_str().unwrap_or_default();
        let given_kind = config["kind"].as_str().unwrap_or_default();
        if given_version != self.api_version || given_kind != self.kind {
            return Err(ApplyError::BadRequest(format!(
                "invalid object type: {}",
                gvk_string(given_version, given_kind)
            )));
        }
        match self.apply_once(live, config, manager, force, now) {
            Err(ApplyError::Conflicts(conflicts))
                if !force
                    && manager == "kubectl"
                    && live.is_some_and(|l| allowed_by_last_applied(l, &conflicts, self)) =>
            {
                // Fields kubectl's client-side apply last set to their live values move to
                // server-side apply without conflicts (upstream's lastAppliedManager).
                self.apply_once(live, config, manager, true, now)
            }
            result => result,
        }
    }

    fn apply_once(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        let root = self.schema.root();
        let mut managed = Managed::decode(live.and_then(managed_fields_of)).unwrap_or_default();
        let mut live_plain = live.map(without_managed_fields);
        if let Some(untracked) = live_plain.as_mut().filter(|_| managed.entries.is_empty()) {
            // What the object holds is owned by one Update manager from before, so the apply
            // conflicts with the values it would change (upstream's skipNonApplied manager).
            let before = FieldManager {
                subresource: "",
                ..*self
            };
            before.update(None, untracked, BEFORE_FIRST_APPLY, now);
            managed = Managed::decode(managed_fields_of(untracked)).unwrap_or_default();
            *untracked = without_managed_fields(untracked);
        }
        let live_plain = live_plain;
        let mut merged = merge(live_plain.as_ref(), Some(config), root)
            .map_err(|e| {
                ApplyError::BadRequest(format!(
                    "failed to create typed patch object ({}): {e}",
                    gvk_string(self.api_version, self.kind)
                ))
            })?
            .unwrap_or_else(|| json!({}));
        let ignored = self.ignored(&[config]);
        // The configuration's own identity (name, type) counts for what it keeps, so dropping
        // every label never prunes `metadata` itself.
        let applied_whole = to_field_set(config, root).recursive_difference(&ignored);
        let applied = applied_whole.difference(&stripped_fields());
        let (api_version, subresource) = (self.api_version, self.subresource);
        let mine = |e: &Entry| e.is(manager, Operation::Apply, api_version, subresource);
        let last = managed
            .entries
            .iter()
            .find(|e| mine(e))
            .map(|e| e.fields.clone());
        match managed.find_mut(manager, Operation::Apply, api_version, subresource) {
            Some(entry) => {
                entry.fields = applied;
                entry.api_version = api_version.to_string();
            }
            None => managed.entries.push(Entry {
                manager: manager.to_string(),
                operation: Operation::Apply,
                api_version: api_version.to_string(),
                time: None,
                subresource: subresource.to_string(),
                fields: applied,
            }),
        }
        // Fields this manager applied before and no longer does go, unless someone owns them.
        if let Some(last) = last.filter(|l| !l.is_empty()) {
            let owned = managed
                .entries
                .iter()
                .fold(applied_whole, |all, e| all.union(&e.fields));
            let removal = ensure_named_fields(&last, root)
                .difference(&ensure_named_fields(&owned, root))
                .difference(&stripped_fields());
            remove_items(&mut merged, &removal, root);
        }
        let comparison = compare(live_plain.as_ref(), Some(&merged), root, live.is_none());
        let changed = self.clean(&comparison.changed(), &ignored);
        let removed = self.clean(&comparison.removed, &ignored);
        let mut conflicts = Vec::new();
        for entry in managed.entries.iter().filter(|e| !mine(e)) {
            for path in entry.fields.intersection(&changed).paths() {
                conflicts.push(Conflict {
                    manager: entry.describe(),
                    path,
                });
            }
        }
        if !conflicts.is_empty() && !force {
            conflicts.sort_by(|a, b| a.manager.cmp(&b.manager));
            return Err(ApplyError::Conflicts(conflicts));
        }
        for entry in managed.entries.iter_mut().filter(|e| !mine(e)) {
            entry.fields = entry.fields.difference(&changed).difference(&removed);
        }
        let object_changed = live_plain.as_ref() != Some(&merged);
        if let Some(entry) = managed.entries.iter_mut().find(|e| mine(e))
            && (object_changed || entry.time.is_none())
        {
            entry.time = Some(now.to_string());
        }
        if manager == "kubectl"
            && let Some(live) = live
            && live["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].is_string()
        {
            sync_last_applied(&mut merged, config);
        }
        managed.drop_empty();
        managed.cap_updates();
        set_managed_fields(&mut merged, &managed);
        Ok(merged)
    }
}

/// Whether every conflict is on a field kubectl's client-side apply last set (per the
/// annotation) and that still has that value.
fn allowed_by_last_applied(live: &Value, conflicts: &[Conflict], fm: &FieldManager<'_>) -> bool {
    let Some(text) = live["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].as_str() else {
        return false;
    };
    let Ok(last_applied) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let root = fm.schema.root();
    let live_plain = without_managed_fields(live);
    let differs = compare(Some(&last_applied), Some(&live_plain), root, false);
    let allowed = to_field_set(&last_applied, root).difference(&differs.modified);
    conflicts.iter().all(|c| allowed.has(&c.path.0))
}

/// kubectl's server-side apply keeps the client-side apply annotation current, so a later
/// client-side apply computes its patch from what was last applied.
fn sync_last_applied(merged: &mut Value, config: &Value) {
    let mut applied = config.clone();
    if let Some(annotations) = applied
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty()
            && let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    merged["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = json!(applied.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "2024-01-01T00:00:01Z";
    const T2: &str = "2024-01-01T00:00:02Z";

    fn fm() -> FieldManager<'static> {
        FieldManager {
            schema: ApplySchema::BuiltIn {
                group: "apps",
                version: "v1",
                kind: "Deployment",
            },
            api_version: "apps/v1",
            kind: "Deployment",
            subresource: "",
            reset: Reset::Status,
        }
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}})
    }

    fn managers(object: &Value) -> Vec<(String, String, Value)> {
        object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap().to_string(),
                    e["operation"].as_str().unwrap().to_string(),
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn apply_creates_and_owns_what_it_applied() {
        let created = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        assert_eq!(created["spec"]["replicas"], 2);
        let entries = managers(&created);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].0, "a");
        assert_eq!(entries[0].1, "Apply");
        assert_eq!(entries[0].2["f:spec"]["f:replicas"], json!({}));
        assert!(
            entries[0].2["f:metadata"].is_null(),
            "name and namespace are not owned"
        );
        assert_eq!(created["metadata"]["managedFields"][0]["time"], T1);
    }

    #[test]
    fn conflicts_name_the_other_applier_and_force_takes_over() {
        let live = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        let err = fm()
            .apply(Some(&live), &deployment(3, "a"), "b", false, T2)
            .unwrap_err();
        let ApplyError::Conflicts(conflicts) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(
            conflict_message(conflicts),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let status = err.clone().into_api_error();
        assert_eq!(status.code().as_u16(), 409);
        assert_eq!(status.reason(), "Conflict");
        let cause = &status.to_json()["details"]["causes"][0];
        assert_eq!(cause["reason"], "FieldManagerConflict");
        assert_eq!(cause["message"], "conflict with \"a\"");
        assert_eq!(cause["field"], ".spec.replicas");

        // The same value is shared, not a conflict.
        let shared = fm()
            .apply(Some(&live), &deployment(2, "a"), "b", false, T2)
            .unwrap();
        assert_eq!(managers(&shared).len(), 2);

        let forced = fm()
            .apply(Some(&live), &deployment(3, "a"), "b", true, T2)
            .unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        let entries = managers(&forced);
        let a = entries.iter().find(|e| e.0 == "a").unwrap();
        assert!(a.2["f:spec"].get("f:replicas").is_none(), "{a:?}");
        let b = entries.iter().find(|e| e.0 == "b").unwrap();
        assert_eq!(b.2["f:spec"]["f:replicas"], json!({}));
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let live = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        let err = fm()
            .apply(Some(&live), &deployment(3, "b"), "b", false, T2)
            .unwrap_err();
        let ApplyError::Conflicts(conflicts) = err else {
            panic!()
        };
        assert_eq!(
            conflict_message(&conflicts),
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
        );
    }

    #[test]
    fn fields_dropped_from_the_configuration_are_removed_unless_shared() {
        let mut config = deployment(2, "a");
        config["metadata"]["labels"] = json!({"x": "1", "y": "2"});
        let live = fm().apply(None, &config, "a", false, T1).unwrap();
        // b also applies label y.
        let b_config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"y": "2"}}});
        let live = fm().apply(Some(&live), &b_config, "b", false, T1).unwrap();
        let mut smaller = deployment(2, "a");
        smaller["spec"].as_object_mut().unwrap().remove("replicas");
        let next = fm().apply(Some(&live), &smaller, "a", false, T2).unwrap();
        assert!(next["spec"].get("replicas").is_none(), "{next}");
        assert_eq!(next["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(
            next["spec"]["template"]["spec"]["containers"][0]["image"],
            "a"
        );
    }

    #[test]
    fn updates_own_what_they_change_and_take_it_from_others() {
        let live = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        let mut new = live.clone();
        new["spec"]["replicas"] = json!(5);
        fm().update(Some(&live), &mut new, "kubectl-scale", T2);
        let entries = managers(&new);
        let scale = entries.iter().find(|e| e.0 == "kubectl-scale").unwrap();
        assert_eq!(scale.1, "Update");
        assert_eq!(scale.2, json!({"f:spec": {"f:replicas": {}}}));
        let a = entries.iter().find(|e| e.0 == "a").unwrap();
        assert!(a.2["f:spec"].get("f:replicas").is_none());

        // A write that changes nothing adds no entry.
        let mut same = new.clone();
        fm().update(Some(&new), &mut same, "other", T2);
        assert_eq!(
            same["metadata"]["managedFields"],
            new["metadata"]["managedFields"]
        );

        // Now a conflicts with the updater.
        let err = fm()
            .apply(Some(&new), &deployment(2, "a"), "a", false, T2)
            .unwrap_err();
        assert_eq!(
            err.into_api_error().message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-scale\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn dropping_all_labels_keeps_the_metadata() {
        let mut config = deployment(2, "a");
        config["metadata"]["labels"] = json!({"x": "1"});
        let live = fm().apply(None, &config, "a", false, T1).unwrap();
        let bare = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 2}});
        let next = fm().apply(Some(&live), &bare, "a", false, T2).unwrap();
        assert_eq!(next["metadata"]["name"], "d");
        assert_eq!(next["metadata"]["namespace"], "ns");
        assert!(next["metadata"].get("labels").is_none(), "{next}");
        assert_eq!(next["apiVersion"], "apps/v1");
        assert!(
            next["spec"].get("template").is_none(),
            "template was only a's"
        );
    }

    #[test]
    fn untracked_objects_stay_untracked_until_applied() {
        let untracked = deployment(2, "a");
        let mut updated = untracked.clone();
        updated["spec"]["replicas"] = json!(4);
        fm().update(Some(&untracked), &mut updated, "kubectl-edit", T2);
        assert!(updated["metadata"].get("managedFields").is_none());

        let err = fm()
            .apply(Some(&untracked), &deployment(3, "a"), "a", false, T2)
            .unwrap_err();
        assert_eq!(
            err.into_api_error().message(),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
        );
        let applied = fm()
            .apply(Some(&untracked), &deployment(2, "b"), "a", true, T2)
            .unwrap();
        let entries = managers(&applied);
        let before = entries.iter().find(|e| e.0 == BEFORE_FIRST_APPLY).unwrap();
        assert_eq!(before.1, "Update");
        assert_eq!(before.2["f:spec"]["f:replicas"], json!({}), "{before:?}");
        assert!(entries.iter().any(|e| e.0 == "a" && e.1 == "Apply"));
    }

    #[test]
    fn requests_may_set_or_reset_managed_fields() {
        let live = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        let mut reset = live.clone();
        reset["metadata"]["managedFields"] = json!([]);
        fm().update(Some(&live), &mut reset, "x", T2);
        assert!(reset["metadata"].get("managedFields").is_none());

        let mut replaced = live.clone();
        replaced["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Apply",
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]);
        fm().update(Some(&live), &mut replaced, "x", T2);
        let entries = managers(&replaced);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].0, "m");

        // Without managedFields in the request the live ones stay.
        let mut plain = live.clone();
        plain["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        fm().update(Some(&live), &mut plain, "x", T2);
        assert_eq!(
            plain["metadata"]["managedFields"],
            live["metadata"]["managedFields"]
        );
    }

    #[test]
    fn apply_checks_type_and_managed_fields() {
        let mut wrong = deployment(1, "a");
        wrong["apiVersion"] = json!("apps/v1beta1");
        assert_eq!(
            fm().apply(None, &wrong, "a", false, T1).unwrap_err(),
            ApplyError::BadRequest("invalid object type: apps/v1beta1, Kind=Deployment".into())
        );
        let mut with_managed = deployment(1, "a");
        with_managed["metadata"]["managedFields"] = json!([]);
        assert!(matches!(
            fm().apply(None, &with_managed, "a", false, T1),
            Err(ApplyError::BadRequest(m)) if m == "metadata.managedFields must be nil"
        ));
    }

    #[test]
    fn client_side_apply_migrates_without_conflicts() {
        // Created by client-side apply: an Update entry and the annotation.
        let mut config = deployment(2, "a");
        let mut created = config.clone();
        created["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: config.to_string()});
        fm().update(None, &mut created, "kubectl-client-side-apply", T1);
        // The same manifest: no value changes, no conflict.
        let same = fm()
            .apply(Some(&created), &config, "kubectl", false, T2)
            .unwrap();
        assert_eq!(managers(&same).len(), 2);
        // A changed manifest: the fields are the annotation's and still live, so allowed.
        config["spec"]["replicas"] = json!(4);
        let changed = fm()
            .apply(Some(&created), &config, "kubectl", false, T2)
            .unwrap();
        assert_eq!(changed["spec"]["replicas"], 4);
        let annotation: Value = serde_json::from_str(
            changed["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(annotation["spec"]["replicas"], 4);
    }

    #[test]
    fn status_apply_owns_only_status() {
        let status_fm = FieldManager {
            subresource: "status",
            reset: Reset::AllButStatus,
            ..fm()
        };
        let live = fm()
            .apply(None, &deployment(2, "a"), "a", false, T1)
            .unwrap();
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 9}, "status": {"replicas": 2}});
        let applied = status_fm
            .apply(Some(&live), &config, "ctl", false, T2)
            .unwrap();
        let entries = applied["metadata"]["managedFields"].as_array().unwrap();
        let ctl = entries.iter().find(|e| e["manager"] == "ctl").unwrap();
        assert_eq!(ctl["subresource"], "status");
        assert_eq!(ctl["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    }
}
