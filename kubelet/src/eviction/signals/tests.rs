use super::*;
use crate::app::config::parse;

fn thresholds(text: &str) -> Vec<Threshold> {
    Threshold::from_config(
        &parse::eviction_thresholds(&parse::eviction_flag(text).unwrap()).unwrap(),
    )
}

const MI: i128 = 1024 * 1024;

#[test]
fn names_round_trip() {
    for (signal, name) in NAMES {
        assert_eq!(Signal::parse(name), Some(*signal));
        assert_eq!(signal.as_str(), *name);
    }
    assert_eq!(Signal::parse("memory.free"), None);
}

#[test]
fn met_thresholds_quantities_and_percentages() {
    let obs: Observations = [
        (
            Signal::MemoryAvailable,
            Observation {
                available: 50 * MI,
                capacity: 1000 * MI,
            },
        ),
        (
            Signal::NodeFsAvailable,
            Observation {
                available: 100,
                capacity: 1000,
            },
        ),
        (
            Signal::NodeFsInodesFree,
            Observation {
                available: 500,
                capacity: 1000,
            },
        ),
        (
            Signal::PidAvailable,
            Observation {
                available: 990,
                capacity: 1000,
            },
        ),
    ]
    .into();
    let cases: &[(&str, &[Signal])] = &[
        ("memory.available<100Mi", &[Signal::MemoryAvailable]),
        ("memory.available<50Mi", &[]),
        ("memory.available<5%", &[]),
        ("memory.available<5.1%", &[Signal::MemoryAvailable]),
        ("memory.available<99%", &[Signal::MemoryAvailable]),
        ("nodefs.available<10%", &[]),
        ("nodefs.available<10.1%", &[Signal::NodeFsAvailable]),
        ("nodefs.inodesFree<501", &[Signal::NodeFsInodesFree]),
        ("pid.available<99.5%", &[Signal::PidAvailable]),
        // Not observed (no image filesystem reported): never met.
        ("imagefs.available<99%", &[]),
        // 0% and 100% switch a threshold off, as upstream.
        ("nodefs.available<100%", &[]),
        ("nodefs.available<0%", &[]),
        // Memory is acted on first whatever the order.
        (
            "nodefs.available<50%,pid.available<99.9%,memory.available<1Gi",
            &[
                Signal::MemoryAvailable,
                Signal::PidAvailable,
                Signal::NodeFsAvailable,
            ],
        ),
    ];
    for (text, want) in cases {
        let met = thresholds_met(&thresholds(text), &obs, false);
        let got: Vec<Signal> = met.iter().map(|t| t.signal).collect();
        assert_eq!(&got, want, "{text}");
    }
    let met = thresholds_met(
        &thresholds("nodefs.inodesFree<600,imagefs.available<99%"),
        &obs,
        false,
    );
    assert_eq!(
        conditions_of(&met),
        [Condition::DiskPressure].into(),
        "inodes are disk pressure"
    );
}

#[test]
fn conditions_held_for_the_transition_period() {
    let t0 = Instant::now();
    let period = Duration::from_secs(30);
    let mut tracker = ConditionTracker::default();
    let memory: BTreeSet<_> = [Condition::MemoryPressure].into();
    let none = BTreeSet::new();
    let steps: &[(u64, &BTreeSet<Condition>, &[Condition])] = &[
        (0, &none, &[]),
        (1, &memory, &[Condition::MemoryPressure]),
        (10, &none, &[Condition::MemoryPressure]),
        (30, &none, &[Condition::MemoryPressure]),
        (31, &none, &[]),
        (40, &memory, &[Condition::MemoryPressure]),
        (50, &memory, &[Condition::MemoryPressure]),
        (79, &none, &[Condition::MemoryPressure]),
        (80, &none, &[]),
    ];
    for (secs, observed, want) in steps {
        let got = tracker.update(observed, t0 + Duration::from_secs(*secs), period);
        let want: BTreeSet<_> = want.iter().copied().collect();
        assert_eq!(got, want, "at {secs}s");
    }
}

#[test]
fn soft_thresholds_act_after_their_grace_period() {
    let t0 = Instant::now();
    let mut hard = thresholds("memory.available<1Gi").remove(0);
    let mut soft = hard.clone();
    soft.grace_period = Some(Duration::from_secs(60));
    let mut first = FirstObserved::default();
    let at = |s: u64| t0 + Duration::from_secs(s);
    assert_eq!(first.update(&[soft.clone()], at(0)), []);
    assert_eq!(first.update(&[soft.clone()], at(59)), []);
    assert_eq!(first.update(&[soft.clone()], at(60)), [soft.clone()]);
    // Resolved in between: the grace period starts again.
    assert_eq!(first.update(&[], at(61)), []);
    assert_eq!(first.update(&[soft.clone()], at(62)), []);
    hard.min_reclaim = Some(ThresholdValue::Percentage(0.5));
    assert_eq!(first.update(&[hard.clone()], at(63)), [hard.clone()]);
    // A minimum reclaim of 50% of 1000Mi: with 1200Mi available the 1Gi threshold is no
    // longer crossed but not resolved before 1Gi + 500Mi.
    let obs = |available_mi: i128| -> Observations {
        [(
            Signal::MemoryAvailable,
            Observation {
                available: available_mi * MI,
                capacity: 1000 * MI,
            },
        )]
        .into()
    };
    assert_eq!(thresholds_met(&[hard.clone()], &obs(1200), false), []);
    assert_eq!(
        thresholds_met(&[hard.clone()], &obs(1200), true),
        [hard.clone()]
    );
    assert_eq!(thresholds_met(&[hard.clone()], &obs(1600), true), []);
}
