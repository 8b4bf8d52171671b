//! Helpers of the RBAC integration tests: a user, and whether RBAC allows it a request.

use kube_apiserver::auth::rbac::RbacAuthorizer;
use kube_apiserver::http::auth::authorizer::{Attributes, Authorizer, Decision};
use kube_apiserver::http::auth::user::UserInfo;
use kube_apiserver::http::request_info::RequestInfo;

pub fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

/// The request info of `method` on `path` (which may carry a query).
pub fn request(method: &str, path: &str) -> RequestInfo {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    RequestInfo::parse(method, path, query).expect("request info")
}

/// Whether `a` allows `u` the request; RBAC never denies, so a Deny fails the test.
pub fn allowed(a: &RbacAuthorizer, u: &UserInfo, method: &str, path: &str) -> bool {
    let r = request(method, path);
    match a.authorize(&Attributes {
        user: u,
        request: &r,
    }) {
        Decision::Allow => true,
        Decision::NoOpinion(_) => false,
        Decision::Deny(r) => panic!("RBAC never denies, got {r}"),
    }
}
