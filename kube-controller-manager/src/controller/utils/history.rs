//! ControllerRevision helpers shared by the DaemonSet and StatefulSet controllers, as
//! upstream's `controller/history` package and the sets' `getPatch`.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

/// A revision's data: `{"spec":{"template":{..., "$patch":"replace"}}}` (upstream's
/// `getPatch`), so `kubectl rollout undo` can apply it back onto the set as it is.
pub fn template_patch(template: Option<&PodTemplateSpec>) -> Value {
    let mut template = match serde_json::to_value(template) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    template.insert("$patch".into(), json!("replace"));
    json!({"spec": {"template": template}})
}

/// One more than the highest revision number, 1 for none.
pub fn next_revision_number<'a>(
    revisions: impl IntoIterator<Item = &'a ControllerRevision>,
) -> i64 {
    revisions.into_iter().map(|r| r.revision).max().unwrap_or(0) + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    #[test]
    fn patch_replaces_the_template_even_when_absent() {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some("t".into()),
                ..Default::default()
            }),
            spec: None,
        };
        assert_eq!(
            template_patch(Some(&template)),
            json!({"spec": {"template": {"metadata": {"name": "t"}, "$patch": "replace"}}})
        );
        assert_eq!(
            template_patch(None),
            json!({"spec": {"template": {"$patch": "replace"}}})
        );
    }

    #[test]
    fn numbers_follow_the_highest() {
        let rev = |revision| ControllerRevision {
            revision,
            ..Default::default()
        };
        assert_eq!(next_revision_number(&[rev(3), rev(1)]), 4);
        assert_eq!(next_revision_number(&[]), 1);
    }
}
