//! The user a request was authenticated as, as upstream's `user.Info`.

/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of unauthenticated (anonymous) requests.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";
/// The super-user group: always authorized and never throttled.
pub const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";

/// An authenticated (or anonymous) user; inserted as a request extension by authentication.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The user name, e.g. `admin` or `system:anonymous`.
    pub name: String,
    /// A unique id, empty when the source has none.
    pub uid: String,
    /// The groups, including `system:authenticated` or `system:unauthenticated`.
    pub groups: Vec<String>,
    /// Extra attributes (e.g. `authentication.kubernetes.io/pod-name` of a bound service
    /// account token), as upstream's `user.Info.GetExtra`.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user upstream assigns to requests without credentials.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.to_string(),
            uid: String::new(),
            groups: vec![ALL_UNAUTHENTICATED.to_string()],
            ..Default::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `system:authenticated` unless the user already carries it or
    /// `system:unauthenticated` (upstream's `AuthenticatedGroupAdder`).
    pub fn with_authenticated_group(mut self) -> Self {
        if !self.in_group(ALL_AUTHENTICATED) && !self.in_group(ALL_UNAUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.to_string());
        }
        self
    }
}
