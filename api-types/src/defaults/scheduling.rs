//! scheduling.k8s.io defaults.

use k8s_openapi::api::scheduling::v1::PriorityClass;

/// Upstream's default preemption policy: a pod of this class may preempt lower ones.
pub const DEFAULT_PREEMPTION_POLICY: &str = "PreemptLowerPriority";

/// `SetDefaults_PriorityClass`: the preemption policy when none is set.
pub fn default_priority_class(pc: &mut PriorityClass) {
    pc.preemption_policy
        .get_or_insert_with(|| DEFAULT_PREEMPTION_POLICY.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_policy_defaults_and_is_kept() {
        let mut pc = PriorityClass::default();
        default_priority_class(&mut pc);
        assert_eq!(
            pc.preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
        pc.preemption_policy = Some("Never".into());
        default_priority_class(&mut pc);
        assert_eq!(pc.preemption_policy.as_deref(), Some("Never"));
    }
}
