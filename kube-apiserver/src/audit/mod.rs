//! Auditing, as upstream's (`--audit-policy-file`, `--audit-log-*`): a policy decides per
//! request how much is recorded, and the log backend writes `audit.k8s.io/v1` events for the
//! stages of each audited request. The layers that produce the events are
//! `crate::http::layers::audit`; without a policy they only set the `Audit-ID` header.

pub mod body;
pub mod context;
pub mod event;
pub mod log;
pub mod policy;
pub mod request;
pub mod rotate;

use std::sync::Arc;

use event::Event;
use log::{LogBackend, LogConfig};
use policy::{Policy, Stage, StageSet};

/// The validated audit flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditConfig {
    /// `--audit-policy-file`, read and validated.
    pub policy: Option<Policy>,
    /// `--audit-log-path` and the rest of the log backend's flags; None without a path.
    pub log: Option<LogConfig>,
}

impl AuditConfig {
    /// Opens the log backend. None when nothing is audited: without a policy (upstream records
    /// nothing then, though it still creates the log file) or without a backend.
    pub fn build(&self) -> std::io::Result<Option<Arc<Auditor>>> {
        let Some(log) = &self.log else {
            return Ok(None);
        };
        let backend = LogBackend::open(log)?;
        Ok(self
            .policy
            .clone()
            .map(|policy| Arc::new(Auditor { policy, backend })))
    }
}

/// The policy and the backend: everything the audit layers need.
#[derive(Debug)]
pub struct Auditor {
    /// Which requests are recorded, and how much of them.
    pub policy: Policy,
    /// Where events go.
    pub backend: LogBackend,
}

impl Auditor {
    /// Writes `event` at `stage` (stamped now, or at arrival for `RequestReceived`) unless the
    /// stage is omitted; false when the event was lost.
    pub fn emit(&self, event: &mut Event, stage: Stage, omit: StageSet) -> bool {
        if omit.contains(stage) {
            return true;
        }
        event.stage = stage;
        event.stage_timestamp = if stage == Stage::RequestReceived {
            event.request_received_timestamp
        } else {
            jiff::Timestamp::now()
        };
        // Upstream's counters: every event handed to the backend, and those it lost.
        metrics::counter!("apiserver_audit_event_total").increment(1);
        let written = self.backend.process(event);
        if !written {
            metrics::counter!("apiserver_audit_error_total", "plugin" => "log").increment(1);
        }
        written
    }
}
