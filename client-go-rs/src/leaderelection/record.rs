//! The leader election record and its mapping onto a `Lease`'s spec.

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// What a lock stores about its holder (client-go's `LeaderElectionRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaderElectionRecord {
    /// Identity of the holder; empty when nobody holds the lock.
    pub holder_identity: String,
    /// How long, after a renewal observed by a candidate, the holder keeps the lock.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lock.
    pub acquire_time: Option<Timestamp>,
    /// When the holder last renewed it.
    pub renew_time: Option<Timestamp>,
    /// How many times the lock changed hands.
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// Reads a lease's spec; missing fields read as empty or zero, as client-go does.
    pub fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(spec) = spec else {
            return Self::default();
        };
        Self {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            leader_transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    /// Writes the record into `spec`, keeping fields the record does not own (strategy,
    /// preferred holder).
    pub fn apply_to(&self, spec: &mut LeaseSpec) {
        spec.holder_identity =
            Some(self.holder_identity.clone()).filter(|holder| !holder.is_empty());
        spec.lease_duration_seconds = Some(self.lease_duration_seconds);
        spec.acquire_time = self.acquire_time.map(MicroTime);
        spec.renew_time = self.renew_time.map(MicroTime);
        spec.lease_transitions = Some(self.leader_transitions);
    }

    /// The record as a fresh spec.
    pub fn to_spec(&self) -> LeaseSpec {
        let mut spec = LeaseSpec::default();
        self.apply_to(&mut spec);
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_a_spec() {
        let r = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(Timestamp::UNIX_EPOCH),
            renew_time: Some(Timestamp::UNIX_EPOCH),
            leader_transitions: 3,
        };
        assert_eq!(LeaderElectionRecord::from_spec(Some(&r.to_spec())), r);
    }

    #[test]
    fn empty_holder_is_cleared_and_missing_spec_reads_empty() {
        let r = LeaderElectionRecord {
            lease_duration_seconds: 1,
            ..Default::default()
        };
        assert_eq!(r.to_spec().holder_identity, None);
        assert_eq!(
            LeaderElectionRecord::from_spec(None),
            LeaderElectionRecord::default()
        );
    }
}
