//! The review APIs: create-only objects answered from the request path's authenticator and
//! authorizer, never stored: `selfsubjectreviews` (`kubectl auth whoami`), `tokenreviews`,
//! `selfsubjectaccessreviews` (`kubectl auth can-i`), `subjectaccessreviews`,
//! `localsubjectaccessreviews` and `selfsubjectrulesreviews`.

use super::encode::respond;
use super::handler::read_body_value_as;
use crate::http::auth::authenticator::Authenticator;
use crate::http::auth::authorizer::{Attributes, Authorizer, Decision};
use crate::http::auth::user::UserInfo;
use crate::http::negotiation::{EndpointRestrictions, negotiate_output};
use crate::http::request_info::RequestInfo;
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use http::{Request, Response, StatusCode, header};
use hyper::body::Body as HttpBody;
use serde_json::{Value, json};
use std::sync::Arc;

/// What the review APIs consult: the same authenticator and authorizer as every request.
#[derive(Clone)]
pub struct Reviewers {
    pub authenticator: Arc<Authenticator>,
    pub authorizer: Arc<dyn Authorizer>,
    /// What each `--authorization-mode` can say about a user's rules, in order, for
    /// SelfSubjectRulesReview.
    pub rule_sources: Vec<RuleSource>,
}

/// One authorization mode as a source of rules (upstream's `RuleResolver`).
#[derive(Clone)]
pub enum RuleSource {
    /// Everything is allowed: `*` rules.
    AlwaysAllow,
    /// Nothing is allowed: no rules, complete.
    AlwaysDeny,
    /// Cannot list a node's rules (incomplete for node users, nothing for others).
    Node,
    /// The rules of the user's bindings.
    Rbac(Arc<crate::auth::rbac::RbacStore>),
}

/// Whether `request` is a create of one of the review resources.
pub fn is_review(request: &RequestInfo) -> bool {
    request.verb == "create"
        && matches!(
            (request.api_group.as_str(), request.resource.as_str()),
            (
                "authentication.k8s.io",
                "selfsubjectreviews" | "tokenreviews"
            ) | (
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
                    | "subjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
            )
        )
}

/// Answers a review: 201 with the review and its `status`.
pub async fn serve<B>(
    reviewers: &Reviewers,
    request: &RequestInfo,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let media = negotiate_output(accept.as_deref(), EndpointRestrictions::NONE)?;
    let requester = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let mut review = read_body_value_as(content_type.as_deref(), req.into_body()).await?;
    if !review.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    }
    let status = match request.resource.as_str() {
        "selfsubjectreviews" => json!({"userInfo": user_json(&requester)}),
        "tokenreviews" => token_review(reviewers, &review).await,
        "selfsubjectaccessreviews" => access_review(reviewers, &requester, &review["spec"])?,
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let spec = &review["spec"];
            if request.resource == "localsubjectaccessreviews"
                && spec["resourceAttributes"]["namespace"].as_str()
                    != Some(request.namespace.as_str())
            {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match the namespace of the request ({})",
                    request.namespace
                )));
            }
            let subject = UserInfo {
                name: spec["user"].as_str().unwrap_or_default().to_string(),
                uid: spec["uid"].as_str().unwrap_or_default().to_string(),
                groups: spec["groups"]
                    .as_array()
                    .map(|g| {
                        g.iter()
                            .filter_map(|g| g.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                extra: serde_json::from_value(spec["extra"].clone()).unwrap_or_default(),
            };
            access_review(reviewers, &subject, spec)?
        }
        _ => rules_review(reviewers, &requester, &review),
    };
    let map = review
        .as_object_mut()
        .expect("checked to be an object above");
    map.insert("status".into(), status);
    map.entry("metadata").or_insert_with(|| json!({}));
    map.insert(
        "apiVersion".into(),
        json!(format!("{}/{}", request.api_group, request.api_version)),
    );
    Ok(respond(StatusCode::CREATED, &review, &media))
}

fn user_json(user: &UserInfo) -> Value {
    let mut out = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        out["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        out["extra"] = json!(user.extra);
    }
    out
}

/// Authenticates the review's token for its audiences (the apiserver's when it names none).
async fn token_review(reviewers: &Reviewers, review: &Value) -> Value {
    let token = review["spec"]["token"].as_str().unwrap_or_default();
    let asked: Vec<String> =
        serde_json::from_value(review["spec"]["audiences"].clone()).unwrap_or_default();
    let audiences = if asked.is_empty() {
        reviewers.authenticator.audiences().to_vec()
    } else {
        asked
    };
    if token.is_empty() {
        return json!({"authenticated": false, "user": {}, "error": "invalid bearer token"});
    }
    match reviewers
        .authenticator
        .authenticate_token(token, &audiences)
        .await
    {
        Ok(found) => json!({
            "authenticated": true,
            "user": user_json(&found.user),
            "audiences": found.audiences,
        }),
        Err(err) => json!({"authenticated": false, "user": {}, "error": err.to_string()}),
    }
}

/// The rules the authorization modes grant the requester in the review's namespace: each
/// mode's rules concatenated, incomplete when one of them cannot list its rules (upstream's
/// union of rule resolvers).
fn rules_review(reviewers: &Reviewers, user: &UserInfo, review: &Value) -> Value {
    let namespace = review["spec"]["namespace"].as_str().unwrap_or_default();
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    let mut incomplete = false;
    let mut errors: Vec<String> = Vec::new();
    for source in &reviewers.rule_sources {
        match source {
            RuleSource::AlwaysAllow => {
                resource_rules
                    .push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
                non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
            }
            RuleSource::AlwaysDeny => {}
            RuleSource::Node => {
                if crate::auth::node::node_identity(user).is_some() {
                    incomplete = true;
                    errors.push("node authorizer does not support user rule resolution".into());
                }
            }
            RuleSource::Rbac(rbac) => {
                let status = crate::auth::rbac::rules_review_status(rbac, user, namespace);
                let list = |key: &str| status[key].as_array().cloned().unwrap_or_default();
                resource_rules.extend(list("resourceRules"));
                non_resource_rules.extend(list("nonResourceRules"));
                incomplete |= status["incomplete"].as_bool().unwrap_or(false);
                if let Some(error) = status["evaluationError"].as_str() {
                    errors.push(error.to_string());
                }
            }
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": incomplete,
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(crate::auth::rbac::authorizer::aggregate(&errors));
    }
    status
}

/// Asks the authorizer about the attributes of a (Self)SubjectAccessReview's spec for `user`.
fn access_review(reviewers: &Reviewers, user: &UserInfo, spec: &Value) -> Result<Value, ApiError> {
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    let text = |v: &Value, field: &str| v[field].as_str().unwrap_or_default().to_string();
    let request = if resource.is_object() {
        RequestInfo {
            is_resource_request: true,
            verb: text(resource, "verb"),
            api_group: text(resource, "group"),
            api_version: text(resource, "version"),
            namespace: text(resource, "namespace"),
            resource: text(resource, "resource"),
            subresource: text(resource, "subresource"),
            name: text(resource, "name"),
            ..Default::default()
        }
    } else if non_resource.is_object() {
        RequestInfo {
            is_resource_request: false,
            verb: text(non_resource, "verb"),
            path: text(non_resource, "path"),
            ..Default::default()
        }
    } else {
        return Err(ApiError::bad_request(
            "exactly one of spec.resourceAttributes and spec.nonResourceAttributes must be set",
        ));
    };
    let decision = reviewers.authorizer.authorize(&Attributes {
        user,
        request: &request,
    });
    Ok(match decision {
        Decision::Allow => json!({"allowed": true}),
        Decision::Deny(reason) => json!({"allowed": false, "denied": true, "reason": reason}),
        Decision::NoOpinion(reason) => json!({"allowed": false, "reason": reason}),
    })
}
