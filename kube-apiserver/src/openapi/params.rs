//! The path and query parameters of resource operations, with upstream's names and types.

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
        }
    }
}

/// One parameter of an operation (or of every operation of a path).
#[derive(Debug, Clone)]
pub struct Param {
    pub name: &'static str,
    pub location: Location,
    pub description: String,
    /// `string`, `boolean` or `integer`.
    pub ty: &'static str,
    pub required: bool,
}

fn query(name: &'static str, ty: &'static str, description: &str) -> Param {
    Param {
        name,
        location: Location::Query,
        description: description.to_owned(),
        ty,
        required: false,
    }
}

/// `{name}`: the object the path names.
pub fn name(kind: &str) -> Param {
    Param {
        name: "name",
        location: Location::Path,
        description: format!("name of the {kind}"),
        ty: "string",
        required: true,
    }
}

/// `{namespace}`.
pub fn namespace() -> Param {
    Param {
        name: "namespace",
        location: Location::Path,
        description: "object name and auth scope, such as for teams and projects".to_owned(),
        ty: "string",
        required: true,
    }
}

/// `pretty`, accepted by every non-watch path.
pub fn pretty() -> Param {
    query(
        "pretty",
        "string",
        "If 'true', then the output is pretty printed.",
    )
}

fn dry_run() -> Param {
    query(
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed. An invalid or unrecognized value is an error.",
    )
}

fn field_manager(patch: bool) -> Param {
    let mut text = String::from(
        "fieldManager is a name associated with the actor or entity that is making these changes. It must be at most 128 printable characters.",
    );
    if patch {
        text.push_str(" Required for apply patches (application/apply-patch), optional otherwise.");
    }
    query("fieldManager", "string", &text)
}

/// `fieldValidation`: kubectl's `--validate=strict` checks for this parameter on PATCH
/// operations before relying on server-side field validation.
fn field_validation() -> Param {
    query(
        "fieldValidation",
        "string",
        "fieldValidation instructs the server how to handle unknown or duplicate fields in the request object (POST/PUT/PATCH). Valid values are: - Ignore: drop unknown fields silently and keep the last of duplicates. - Warn: as Ignore, with a warning header for each dropped or duplicate field (the default). - Strict: fail the request with a BadRequest error listing every unknown and duplicate field.",
    )
}

/// Parameters of create and replace (POST and PUT).
pub fn write() -> Vec<Param> {
    vec![dry_run(), field_manager(false), field_validation()]
}

/// Parameters of PATCH.
pub fn patch() -> Vec<Param> {
    vec![
        dry_run(),
        field_manager(true),
        field_validation(),
        query(
            "force",
            "boolean",
            "Force re-acquires conflicting fields owned by other managers on apply requests. It must be unset for non-apply patches.",
        ),
    ]
}

fn grace_period() -> Param {
    query(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted. Must be non-negative; zero means delete immediately. Unset uses the type's default.",
    )
}

fn ignore_store_read_error() -> Param {
    query(
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        "if set to true, deletes a corrupt object that cannot be read from storage (decode or transformation error), bypassing admission and finalizers. Unsafe: it may break the cluster.",
    )
}

fn orphan_dependents() -> Param {
    query(
        "orphanDependents",
        "boolean",
        "Deprecated: use propagationPolicy. Whether the dependent objects should be orphaned.",
    )
}

fn propagation_policy() -> Param {
    query(
        "propagationPolicy",
        "string",
        "Whether and how garbage collection is performed: 'Orphan' orphans the dependents, 'Background' deletes them in the background, 'Foreground' deletes them before the owner.",
    )
}

/// Parameters of DELETE of one object.
pub fn delete() -> Vec<Param> {
    vec![
        dry_run(),
        grace_period(),
        ignore_store_read_error(),
        orphan_dependents(),
        propagation_policy(),
    ]
}

fn cont() -> Param {
    query(
        "continue",
        "string",
        "The continue token returned by a previous list call with a limit, to fetch the next chunk of results from the same snapshot.",
    )
}
fn field_selector() -> Param {
    query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    )
}
fn label_selector() -> Param {
    query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    )
}
fn limit() -> Param {
    query(
        "limit",
        "integer",
        "The maximum number of responses to return for a list call. When more exist, the list metadata carries a continue token.",
    )
}
fn resource_version() -> Param {
    query(
        "resourceVersion",
        "string",
        "Constrains which resource versions the request may be served from. Defaults to unset.",
    )
}
fn resource_version_match() -> Param {
    query(
        "resourceVersionMatch",
        "string",
        "How resourceVersion is applied to list calls: 'Exact' or 'NotOlderThan'. Defaults to unset.",
    )
}
fn send_initial_events() -> Param {
    query(
        "sendInitialEvents",
        "boolean",
        "With watch=true, starts the watch with synthetic events for the current state of the objects, followed by a bookmark annotated \"k8s.io/initial-events-end\".",
    )
}
fn timeout_seconds() -> Param {
    query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call, regardless of activity.",
    )
}

/// Parameters of list and watch (GET of a collection).
pub fn list() -> Vec<Param> {
    vec![
        query(
            "allowWatchBookmarks",
            "boolean",
            "allowWatchBookmarks requests watch events of type BOOKMARK. Servers may send them at their discretion; ignored for non-watch requests.",
        ),
        cont(),
        field_selector(),
        label_selector(),
        limit(),
        resource_version(),
        resource_version_match(),
        send_initial_events(),
        timeout_seconds(),
        query(
            "watch",
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
        ),
    ]
}

/// Parameters of DELETE of a collection.
pub fn delete_collection() -> Vec<Param> {
    vec![
        cont(),
        dry_run(),
        field_selector(),
        grace_period(),
        ignore_store_read_error(),
        label_selector(),
        limit(),
        orphan_dependents(),
        propagation_policy(),
        resource_version(),
        resource_version_match(),
        send_initial_events(),
        timeout_seconds(),
    ]
}

/// Parameters of `pods/log`.
pub fn pod_log() -> Vec<Param> {
    vec![
        query(
            "container",
            "string",
            "The container for which to stream logs. Defaults to the only container if there is one.",
        ),
        query("follow", "boolean", "Follow the log stream of the pod."),
        query(
            "insecureSkipTLSVerifyBackend",
            "boolean",
            "Do not verify the serving certificate of the kubelet the logs come from.",
        ),
        query(
            "limitBytes",
            "integer",
            "The number of bytes to read from the server before terminating the log output.",
        ),
        query(
            "previous",
            "boolean",
            "Return the logs of the previous terminated container.",
        ),
        query(
            "sinceSeconds",
            "integer",
            "A relative time in seconds before the current time from which to show logs.",
        ),
        query(
            "tailLines",
            "integer",
            "The number of lines from the end of the logs to show.",
        ),
        query(
            "timestamps",
            "boolean",
            "Add an RFC3339 timestamp at the beginning of every line of log output.",
        ),
    ]
}
