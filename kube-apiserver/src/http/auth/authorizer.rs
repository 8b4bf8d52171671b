//! Authorization: the attributes of a request, the decision interface (RBAC slots in here
//! later) and upstream's simplest modes.

use super::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::http::request_info::RequestInfo;
use crate::http::status::{ApiError, go_quote};

/// What is being asked, as upstream's `authorizer.Attributes`.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    /// Who asks.
    pub user: &'a UserInfo,
    /// What the request is about.
    pub request: &'a RequestInfo,
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The request may proceed.
    Allow,
    /// The request is refused; the reason is appended to the 403 message.
    Deny(String),
    /// This authorizer has no rule for the request (the next one in a union decides).
    NoOpinion(String),
}

/// Decides whether a user may do what a request asks. Implementations are consulted for every
/// request, so they answer from memory (RBAC from its informer caches).
pub trait Authorizer: Send + Sync + 'static {
    /// The decision for `attrs`.
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision;
}

/// `--authorization-mode=AlwaysAllow`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::Allow
    }
}

/// `--authorization-mode=AlwaysDeny`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".to_string())
    }
}

/// Allows members of `system:masters` everything, as upstream always consults first.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrivilegedGroups;

impl Authorizer for PrivilegedGroups {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        if attrs.user.in_group(SYSTEM_PRIVILEGED_GROUP) {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

/// Consults authorizers in order until one allows or denies (upstream's union authorizer).
pub struct Union(pub Vec<Box<dyn Authorizer>>);

impl Authorizer for Union {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let mut reasons = Vec::new();
        for a in &self.0 {
            match a.authorize(attrs) {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }
}

/// The chain upstream builds for a mode: the privileged-group authorizer, then `mode`.
pub fn with_privileged_groups(mode: impl Authorizer) -> Union {
    Union(vec![Box::new(PrivilegedGroups), Box::new(mode)])
}

/// Upstream's 403 for a refused request:
/// `pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace "ns"`.
pub fn forbidden(attrs: &Attributes<'_>, reason: &str) -> ApiError {
    let r = attrs.request;
    let user = go_quote(&attrs.user.name);
    let mut msg = if !r.is_resource_request {
        format!("User {user} cannot {} path {}", r.verb, go_quote(&r.path))
    } else {
        let resource = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        let scope = if r.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", go_quote(&r.namespace))
        };
        format!(
            "User {user} cannot {} resource {} in API group {} {scope}",
            r.verb,
            go_quote(&resource),
            go_quote(&r.api_group)
        )
    };
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    let (group, resource) = if r.is_resource_request {
        (r.api_group.as_str(), r.resource.as_str())
    } else {
        ("", "")
    };
    ApiError::forbidden(group, resource, &r.name, &msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfo::parse(method, path, None).expect("request info")
    }

    #[test]
    fn forbidden_messages_as_upstream() {
        let anon = UserInfo::anonymous();
        let cases = [
            (
                info("GET", "/api/v1/namespaces/default/pods"),
                "",
                "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
            ),
            (
                info("GET", "/apis/apps/v1/namespaces/ns/deployments/web/scale"),
                "",
                "deployments.apps \"web\" is forbidden: User \"system:anonymous\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"ns\"",
            ),
            (
                info("GET", "/api/v1/nodes"),
                "Everything is forbidden.",
                "nodes is forbidden: User \"system:anonymous\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: Everything is forbidden.",
            ),
            (
                info("GET", "/healthz"),
                "",
                "forbidden: User \"system:anonymous\" cannot get path \"/healthz\"",
            ),
        ];
        for (request, reason, want) in cases {
            let err = forbidden(
                &Attributes {
                    user: &anon,
                    request: &request,
                },
                reason,
            );
            assert_eq!(err.message(), want);
            assert_eq!(err.code().as_u16(), 403);
        }
    }

    #[test]
    fn modes_and_union() {
        let request = info("DELETE", "/api/v1/namespaces/a/pods/b");
        let anon = UserInfo::anonymous();
        let admin = UserInfo {
            name: "admin".into(),
            uid: String::new(),
            groups: vec![SYSTEM_PRIVILEGED_GROUP.into()],
            ..Default::default()
        };
        let at = |user| Attributes {
            user,
            request: &request,
        };
        assert_eq!(AlwaysAllow.authorize(&at(&anon)), Decision::Allow);
        assert!(matches!(
            AlwaysDeny.authorize(&at(&anon)),
            Decision::NoOpinion(_)
        ));
        let chain = with_privileged_groups(AlwaysDeny);
        assert_eq!(chain.authorize(&at(&admin)), Decision::Allow);
        assert_eq!(
            chain.authorize(&at(&anon)),
            Decision::NoOpinion("Everything is forbidden.".into())
        );
    }
}
