//! The outcome of a plugin call, as upstream's `framework.Status`.

use std::fmt;

/// What a plugin's answer means to the scheduling cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Code {
    #[default]
    Success,
    /// An internal failure: the pod is retried with backoff, no preemption is tried.
    Error,
    /// The node does not fit now; preemption may help.
    Unschedulable,
    /// The node does not fit and preemption cannot change that.
    UnschedulableAndUnresolvable,
    /// Permit: wait for an allow or reject.
    Wait,
    /// The plugin has nothing to do for this pod (its Filter/Score are skipped).
    Skip,
    /// PreEnqueue: the pod is not ready to be scheduled (gated).
    Pending,
}

/// A plugin's answer: a code, the reasons shown to users, and the plugin that gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<String>,
    /// The plugin that failed (set by the framework when a plugin returns a non-success).
    pub plugin: String,
}

impl Status {
    pub fn success() -> Self {
        Self::default()
    }

    pub fn new(code: Code, reason: impl Into<String>) -> Self {
        Self {
            code,
            reasons: vec![reason.into()],
            plugin: String::new(),
        }
    }

    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Self {
        Self {
            code,
            reasons,
            plugin: String::new(),
        }
    }

    pub fn error(reason: impl Into<String>) -> Self {
        Self::new(Code::Error, reason)
    }

    pub fn unschedulable(reason: impl Into<String>) -> Self {
        Self::new(Code::Unschedulable, reason)
    }

    pub fn unresolvable(reason: impl Into<String>) -> Self {
        Self::new(Code::UnschedulableAndUnresolvable, reason)
    }

    /// A plugin's Filter/Score found no state from its PreFilter/PreScore (upstream's
    /// "reading ... from cycleState" error).
    pub fn state_not_found(key: &str) -> Self {
        Self::error(format!("reading {key:?} from cycleState: not found"))
    }

    pub fn skip() -> Self {
        Self::with_reasons(Code::Skip, Vec::new())
    }

    pub fn with_plugin(mut self, plugin: &str) -> Self {
        if self.plugin.is_empty() {
            self.plugin = plugin.to_string();
        }
        self
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Unschedulable or UnschedulableAndUnresolvable: the node was rejected, not broken.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }

    /// The reasons joined as upstream's `Status.Message`.
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}
