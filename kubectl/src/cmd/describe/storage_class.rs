//! `describeStorageClass`: provisioner, parameters, mount options, policies and the allowed
//! topologies.

use super::core::format_labels;
use super::events;
use super::writer::{PrefixWriter, arr, obj, s};
use serde_json::Value;

/// `storageutil.IsDefaultAnnotationText`: either the GA or the beta annotation says "true".
fn is_default(sc: &Value) -> &'static str {
    let annotations = obj(sc, "/metadata/annotations");
    let says_true =
        |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str) == Some("true");
    if says_true("storageclass.kubernetes.io/is-default-class")
        || says_true("storageclass.beta.kubernetes.io/is-default-class")
    {
        "Yes"
    } else {
        "No"
    }
}

/// `describeStorageClass`.
pub fn describe(sc: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(sc, "/metadata/name")));
    w.write(0, &format!("IsDefaultClass:\t{}\n", is_default(sc)));
    w.write(
        0,
        &format!(
            "Annotations:\t{}\n",
            format_labels(obj(sc, "/metadata/annotations"))
        ),
    );
    w.write(0, &format!("Provisioner:\t{}\n", s(sc, "/provisioner")));
    w.write(
        0,
        &format!("Parameters:\t{}\n", format_labels(obj(sc, "/parameters"))),
    );
    let expansion = match sc.get("allowVolumeExpansion").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    w.write(0, &format!("AllowVolumeExpansion:\t{expansion}\n"));
    let options = arr(sc, "/mountOptions");
    if options.is_empty() {
        w.write(0, "MountOptions:\t<none>\n");
    } else {
        w.write(0, "MountOptions:\n");
        for option in options {
            w.write(1, &format!("{}\n", option.as_str().unwrap_or_default()));
        }
    }
    if let Some(policy) = sc.get("reclaimPolicy").and_then(Value::as_str) {
        w.write(0, &format!("ReclaimPolicy:\t{policy}\n"));
    }
    if let Some(mode) = sc.get("volumeBindingMode").and_then(Value::as_str) {
        w.write(0, &format!("VolumeBindingMode:\t{mode}\n"));
    }
    if let Some(terms) = sc.get("allowedTopologies").and_then(Value::as_array) {
        allowed_topologies(&mut w, terms);
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `printAllowedTopologies`: one `Term N:` block per term, one `key in [values]` per line.
fn allowed_topologies(w: &mut PrefixWriter, terms: &[Value]) {
    w.write(0, "AllowedTopologies:\t");
    if terms.is_empty() {
        w.line("<none>");
        return;
    }
    w.line("");
    for (i, term) in terms.iter().enumerate() {
        w.write(1, &format!("Term {i}:\t"));
        let requirements = arr(term, "/matchLabelExpressions");
        if requirements.is_empty() {
            w.line("<none>");
            continue;
        }
        for (j, req) in requirements.iter().enumerate() {
            if j != 0 {
                w.write(1, "\t");
            }
            let values: Vec<&str> = arr(req, "/values")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let mut text = format!("{} in", s(req, "/key"));
            if !values.is_empty() {
                text.push_str(&format!(" [{}]", values.join(", ")));
            }
            w.write(0, &format!("{text}\n"));
        }
    }
}
