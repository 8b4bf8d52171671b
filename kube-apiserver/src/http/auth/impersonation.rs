//! Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-<key>` headers): a user allowed
//! to `impersonate` those users, groups, uids and extras acts as them, as upstream's
//! `WithImpersonation`.

use super::authorizer::{Attributes, Authorizer, Decision, forbidden};
use super::user::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo};
use crate::http::request_info::RequestInfo;
use crate::http::status::ApiError;
use http::HeaderMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Whether the request asks to impersonate anyone.
pub fn requested(headers: &HeaderMap) -> bool {
    headers.keys().any(|k| {
        let k = k.as_str();
        k == USER || k == GROUP || k == UID || k.starts_with(EXTRA_PREFIX)
    })
}

/// The user `requester` acts as, after checking they may impersonate each requested part;
/// a refusal is upstream's 403, a malformed request a 400.
pub fn impersonate(
    authorizer: &dyn Authorizer,
    requester: &UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let user = values(USER).into_iter().next();
    let groups = values(GROUP);
    let uid = values(UID).into_iter().next();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for name in headers.keys() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            // Keys travel percent-encoded so that they may hold any character.
            let key = percent_decode(key).to_lowercase();
            extra.entry(key).or_default().extend(values(name.as_str()));
        }
    }
    let Some(user) = user else {
        return Err(ApiError::bad_request(format!(
            "requested {} without impersonating a user",
            describe(&groups, uid.as_deref(), &extra)
        )));
    };
    if uid.as_deref().is_some_and(str::is_empty) {
        return Err(ApiError::bad_request(
            "impersonating an empty uid is not allowed",
        ));
    }

    let check = |resource: &str, group: &str, namespace: &str, name: &str, sub: &str| {
        let request = RequestInfo {
            is_resource_request: true,
            verb: "impersonate".into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        };
        let attrs = Attributes {
            user: requester,
            request: &request,
        };
        match authorizer.authorize(&attrs) {
            Decision::Allow => Ok(()),
            Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(forbidden(&attrs, &reason)),
        }
    };
    let service_account = user
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'));
    match service_account {
        Some((namespace, name)) => check("serviceaccounts", "", namespace, name, "")?,
        None => check("users", "", "", &user, "")?,
    }
    for group in &groups {
        check("groups", "", "", group, "")?;
    }
    if let Some(uid) = &uid {
        check("uids", "authentication.k8s.io", "", uid, "")?;
    }
    for (key, vals) in &extra {
        for v in vals {
            check("userextras", "authentication.k8s.io", "", v, key)?;
        }
    }

    let mut all_groups = groups;
    if let Some((namespace, _)) = service_account {
        for g in [
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ] {
            if !all_groups.contains(&g) {
                all_groups.push(g);
            }
        }
    }
    let marker = if user == ANONYMOUS {
        ALL_UNAUTHENTICATED
    } else {
        ALL_AUTHENTICATED
    };
    if !all_groups.iter().any(|g| g == marker) {
        all_groups.push(marker.to_string());
    }
    Ok(UserInfo {
        name: user,
        uid: uid.unwrap_or_default(),
        groups: all_groups,
        extra,
    })
}

fn describe(
    groups: &[String],
    uid: Option<&str>,
    extra: &std::collections::BTreeMap<String, Vec<String>>,
) -> String {
    let mut parts: Vec<String> = groups.iter().map(|g| format!("{{Group {g}}}")).collect();
    if let Some(uid) = uid {
        parts.push(format!("{{UID {uid}}}"));
    }
    for (k, vals) in extra {
        for v in vals {
            parts.push(format!("{{Extra {k} {v}}}"));
        }
    }
    format!("[{}]", parts.join(" "))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::auth::authorizer::AlwaysAllow;
    use http::HeaderValue;

    struct OnlyUsers;
    impl Authorizer for OnlyUsers {
        fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
            if attrs.request.resource == "users" {
                Decision::Allow
            } else {
                Decision::NoOpinion(String::new())
            }
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), ALL_AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    #[test]
    fn impersonated_users_get_the_requested_groups_only() {
        let h = headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes", "view"),
        ]);
        assert!(requested(&h));
        let bob = impersonate(&AlwaysAllow, &alice(), &h).expect("allowed");
        assert_eq!(bob.name, "bob");
        assert_eq!(bob.groups, vec!["ops", ALL_AUTHENTICATED]);
        assert_eq!(bob.extra["scopes"], vec!["view"]);
        let sa = impersonate(
            &AlwaysAllow,
            &alice(),
            &headers(&[("Impersonate-User", "system:serviceaccount:ns:builder")]),
        )
        .expect("allowed");
        assert_eq!(
            sa.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                ALL_AUTHENTICATED
            ]
        );
    }

    #[test]
    fn refusals_as_upstream() {
        let err = impersonate(
            &OnlyUsers,
            &alice(),
            &headers(&[("Impersonate-User", "bob"), ("Impersonate-Group", "admins")]),
        )
        .expect_err("groups are not allowed");
        assert_eq!(err.code().as_u16(), 403);
        assert_eq!(
            err.message(),
            "groups \"admins\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
        );
        let err = impersonate(
            &AlwaysAllow,
            &alice(),
            &headers(&[("Impersonate-Group", "x")]),
        )
        .expect_err("no user");
        assert_eq!(err.code().as_u16(), 400);
        assert_eq!(
            err.message(),
            "requested [{Group x}] without impersonating a user"
        );
        assert!(!requested(&headers(&[("Accept", "x")])));
    }
}
