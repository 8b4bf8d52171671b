//! Turning an [`ErrorList`] into the `Status` the apiserver returns (422 `Invalid`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

use super::errors::ErrorList;
use super::quote::go_quote;

impl ErrorList {
    /// Builds upstream's `NewInvalid` status: code 422, reason `Invalid`, one cause per error,
    /// message `<Kind>[.<group>] "<name>" is invalid: <errors>`.
    pub fn to_status(&self, group: &str, kind: &str, name: &str) -> Status {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = if self.is_empty() {
            format!("{qualified_kind} {} is invalid", go_quote(name))
        } else {
            format!("{qualified_kind} {} is invalid: {self}", go_quote(name))
        };
        let causes = self
            .iter()
            .map(|e| StatusCause {
                reason: Some(e.error_type.reason().to_string()),
                message: Some(e.body()),
                field: Some(e.field.clone()),
            })
            .collect();
        Status {
            status: Some("Failure".to_string()),
            code: Some(422),
            reason: Some("Invalid".to_string()),
            message: Some(message),
            details: Some(StatusDetails {
                name: Some(name.to_string()),
                group: Some(group.to_string()),
                kind: Some(kind.to_string()),
                causes: Some(causes),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::validation::{ErrorList, FieldError, FieldPath};

    #[test]
    fn single_error_status() {
        let errs: ErrorList =
            FieldError::required(&FieldPath::new("spec").child("containers"), "").into();
        let st = errs.to_status("", "Pod", "p1");
        assert_eq!(st.code, Some(422));
        assert_eq!(st.reason.as_deref(), Some("Invalid"));
        assert_eq!(st.status.as_deref(), Some("Failure"));
        assert_eq!(
            st.message.as_deref(),
            Some("Pod \"p1\" is invalid: spec.containers: Required value")
        );
        let d = st.details.expect("details");
        assert_eq!(d.kind.as_deref(), Some("Pod"));
        assert_eq!(d.name.as_deref(), Some("p1"));
        let causes = d.causes.expect("causes");
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].reason.as_deref(), Some("FieldValueRequired"));
        assert_eq!(causes[0].message.as_deref(), Some("Required value"));
        assert_eq!(causes[0].field.as_deref(), Some("spec.containers"));
    }

    #[test]
    fn several_errors_with_group() {
        let mut errs = ErrorList::new();
        errs.push(FieldError::invalid(
            &FieldPath::new("spec").child("replicas"),
            -1i64,
            "must be greater than or equal to 0",
        ));
        errs.push(FieldError::required(
            &FieldPath::new("spec").child("selector"),
            "",
        ));
        let st = errs.to_status("apps", "Deployment", "d");
        assert_eq!(
            st.message.as_deref(),
            Some(
                "Deployment.apps \"d\" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.selector: Required value]"
            )
        );
        let json = serde_json::to_value(&st).expect("serialise");
        assert_eq!(json["kind"], "Status");
        assert_eq!(json["apiVersion"], "v1");
        assert_eq!(json["details"]["group"], "apps");
        assert_eq!(json["details"]["causes"][0]["reason"], "FieldValueInvalid");
    }
}
