//! A CRD's status as upstream's naming and establishing controllers keep it: the names it may
//! use (`acceptedNames`), `NamesAccepted` and `Established`, and `storedVersions`.

use serde_json::{Value, json};

/// One status condition.
pub struct Condition<'a> {
    pub kind: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: &'a str,
}

impl<'a> Condition<'a> {
    pub fn new(kind: &'a str, status: bool, reason: &'a str, message: &'a str) -> Self {
        Self {
            kind,
            status,
            reason,
            message,
        }
    }
}

/// Sets a condition in `status.conditions`; its `lastTransitionTime` changes only when its
/// status does.
pub fn set(status: &mut Value, condition: Condition<'_>) {
    let status_text = if condition.status { "True" } else { "False" };
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(list) = status["conditions"].as_array_mut() else {
        return;
    };
    let existing = list.iter_mut().find(|c| c["type"] == condition.kind);
    let transition = match &existing {
        Some(old) if old["status"] == status_text => old["lastTransitionTime"].clone(),
        _ => json!(crate::registry::meta::now()),
    };
    let new = json!({
        "type": condition.kind,
        "status": status_text,
        "lastTransitionTime": transition,
        "reason": condition.reason,
        "message": condition.message,
    });
    match existing {
        Some(old) => *old = new,
        None => list.push(new),
    }
}

/// Whether `status` has the condition `kind` with status True.
pub fn is_true(status: &Value, kind: &str) -> bool {
    status["conditions"].as_array().is_some_and(|list| {
        list.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

/// `spec.names` with upstream's defaults: the singular is the lower-cased kind, the list kind
/// `<Kind>List`.
pub fn requested_names(crd: &Value) -> Value {
    let mut names = crd["spec"]["names"].clone();
    if !names.is_object() {
        return json!({});
    }
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    if names["singular"].as_str().is_none_or(str::is_empty) {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names["listKind"].as_str().is_none_or(str::is_empty) {
        names["listKind"] = json!(format!("{kind}List"));
    }
    names
}

/// Whether a CRD's names can be served, and if not why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesVerdict {
    pub accepted: bool,
    pub reason: String,
    pub message: String,
}

/// Compares a CRD's requested names with those other CRDs of its group already serve and with
/// the built-in resources of the group.
pub fn names_verdict(crd: &Value, others: &[std::sync::Arc<Value>]) -> NamesVerdict {
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let names = requested_names(crd);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (plural, singular, kind, list_kind) = (
        text(&names["plural"]),
        text(&names["singular"]),
        text(&names["kind"]),
        text(&names["listKind"]),
    );
    let short_names: Vec<String> = names["shortNames"]
        .as_array()
        .map(|s| s.iter().map(text).collect())
        .unwrap_or_default();
    let conflict = |reason: &str, taken: &str| NamesVerdict {
        accepted: false,
        reason: reason.into(),
        message: format!("{taken:?} is already in use"),
    };
    if api_types::registry::by_group_resource(group, &plural).is_some() {
        return conflict("PluralConflict", &plural);
    }
    for other in others
        .iter()
        .filter(|o| o["spec"]["group"].as_str() == Some(group))
    {
        let theirs = &other["status"]["acceptedNames"];
        let used: Vec<String> = [&theirs["plural"], &theirs["singular"]]
            .into_iter()
            .map(text)
            .filter(|s| !s.is_empty())
            .collect();
        if used.contains(&plural) {
            return conflict("PluralConflict", &plural);
        }
        if used.contains(&singular) {
            return conflict("SingularConflict", &singular);
        }
        let their_short: Vec<String> = theirs["shortNames"]
            .as_array()
            .map(|s| s.iter().map(text).collect())
            .unwrap_or_default();
        if let Some(taken) = short_names
            .iter()
            .find(|s| their_short.contains(s) || used.contains(s))
        {
            return conflict("ShortNamesConflict", taken);
        }
        let kinds = [text(&theirs["kind"]), text(&theirs["listKind"])];
        if kinds.contains(&kind) {
            return conflict("KindConflict", &kind);
        }
        if kinds.contains(&list_kind) {
            return conflict("ListKindConflict", &list_kind);
        }
    }
    NamesVerdict {
        accepted: true,
        reason: "NoConflicts".into(),
        message: "no conflicts found".into(),
    }
}

/// Sets acceptedNames, the NamesAccepted and Established conditions and storedVersions.
pub fn apply_verdict(status: &mut Value, verdict: &NamesVerdict, crd: &Value) {
    set(
        status,
        Condition::new(
            "NamesAccepted",
            verdict.accepted,
            &verdict.reason,
            &verdict.message,
        ),
    );
    if verdict.accepted {
        status["acceptedNames"] = requested_names(crd);
        set(
            status,
            Condition::new(
                "Established",
                true,
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        );
        if let Some(storage) = super::registry::storage_version(crd) {
            if !status["storedVersions"].is_array() {
                status["storedVersions"] = json!([]);
            }
            if let Some(stored) = status["storedVersions"].as_array_mut()
                && !stored.iter().any(|v| v == storage.as_str())
            {
                stored.push(json!(storage));
            }
        }
    } else if !is_true(status, "Established") {
        set(
            status,
            Condition::new(
                "Established",
                false,
                "NotAccepted",
                "not all names are accepted",
            ),
        );
        if !status["acceptedNames"].is_object() {
            status["acceptedNames"] = json!({"plural": "", "kind": ""});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn crd(plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "names": {"plural": plural, "kind": kind, "shortNames": short},
                     "versions": [{"name": "v1", "served": true, "storage": true}]},
        })
    }

    fn accepted(mut crd: Value) -> Arc<Value> {
        crd["status"]["acceptedNames"] = requested_names(&crd);
        Arc::new(crd)
    }

    #[test]
    fn names_default_and_conflict() {
        let a = crd("widgets", "Widget", &["wd"]);
        assert_eq!(requested_names(&a)["singular"], "widget");
        assert_eq!(requested_names(&a)["listKind"], "WidgetList");
        assert!(names_verdict(&a, &[]).accepted);

        let others = [accepted(a.clone())];
        let same_plural = crd("widgets", "Gadget", &[]);
        let verdict = names_verdict(&same_plural, &others);
        assert_eq!(verdict.reason, "PluralConflict");
        assert_eq!(verdict.message, "\"widgets\" is already in use");
        // The default singular of kind Widget is taken before the kind itself is compared.
        assert_eq!(
            names_verdict(&crd("gadgets", "Widget", &[]), &others).reason,
            "SingularConflict"
        );
        let mut same_kind = crd("gadgets", "Widget", &[]);
        same_kind["spec"]["names"]["singular"] = json!("gadget");
        assert_eq!(names_verdict(&same_kind, &others).reason, "KindConflict");
        assert_eq!(
            names_verdict(&crd("gadgets", "Gadget", &["wd"]), &others).reason,
            "ShortNamesConflict"
        );
        assert!(names_verdict(&crd("gadgets", "Gadget", &["gd"]), &others).accepted);
    }

    #[test]
    fn verdict_establishes_and_records_the_storage_version() {
        let c = crd("widgets", "Widget", &[]);
        let mut status = json!({});
        apply_verdict(&mut status, &names_verdict(&c, &[]), &c);
        assert!(is_true(&status, "NamesAccepted"));
        assert!(is_true(&status, "Established"));
        assert_eq!(status["storedVersions"], json!(["v1"]));
        let first = status["conditions"][0]["lastTransitionTime"].clone();
        apply_verdict(&mut status, &names_verdict(&c, &[]), &c);
        assert_eq!(status["conditions"][0]["lastTransitionTime"], first);
        assert_eq!(status["conditions"].as_array().unwrap().len(), 2);
    }
}
