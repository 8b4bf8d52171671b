//! The string forms the kubelet's flags and file take: `key=value` maps, taints, eviction
//! thresholds and resource quantities.

use anyhow::{Context, bail};
use api_types::resource::{Quantity, ResourceList};
use std::collections::BTreeMap;

/// A hard eviction threshold: `signal < value`, where value is an amount or a percentage of
/// the capacity the signal is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct EvictionThreshold {
    pub signal: String,
    pub value: ThresholdValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdValue {
    Quantity(Quantity),
    /// A fraction of the capacity, in `0.0..=1.0`.
    Percentage(f64),
}

impl ThresholdValue {
    /// The threshold as an amount of `capacity` (bytes, inodes, pids).
    pub fn amount(&self, capacity: i128) -> i128 {
        match self {
            ThresholdValue::Quantity(q) => q.value(),
            ThresholdValue::Percentage(p) => (capacity as f64 * p).round() as i128,
        }
    }
}

/// The signals upstream's eviction manager knows.
pub const EVICTION_SIGNALS: &[&str] = &[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "containerfs.available",
    "containerfs.inodesFree",
    "allocatableMemory.available",
    "pid.available",
];

/// `memory.available<100Mi,nodefs.available<10%` (the `--eviction-hard` flag) as a map.
pub fn eviction_flag(text: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((signal, value)) = item.split_once('<') else {
            bail!("invalid --eviction-hard {item:?}: want <signal><<value>");
        };
        map.insert(signal.trim().to_string(), value.trim().to_string());
    }
    Ok(map)
}

/// Validates and parses an `evictionHard` map.
pub fn eviction_thresholds(
    map: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<EvictionThreshold>> {
    let mut thresholds = Vec::new();
    for (signal, value) in map {
        if !EVICTION_SIGNALS.contains(&signal.as_str()) {
            bail!("evictionHard: unsupported eviction signal {signal:?}");
        }
        let value = if let Some(percent) = value.strip_suffix('%') {
            let p: f64 = percent
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| (0.0..=100.0).contains(p))
                .with_context(|| format!("evictionHard[{signal}]: invalid percentage {value:?}"))?;
            ThresholdValue::Percentage(p / 100.0)
        } else {
            let q = Quantity::parse(value)
                .filter(|q| !q.is_negative())
                .with_context(|| format!("evictionHard[{signal}]: invalid quantity {value:?}"))?;
            ThresholdValue::Quantity(q)
        };
        thresholds.push(EvictionThreshold {
            signal: signal.clone(),
            value,
        });
    }
    Ok(thresholds)
}

/// `cpu=100m,memory=1Gi` (the `--kube-reserved`/`--system-reserved` flags) as a map.
pub fn map_flag(flag: &str, text: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            bail!("invalid --{flag} {item:?}: want key=value");
        };
        map.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(map)
}

/// Validates a `kubeReserved`/`systemReserved` map into quantities.
pub fn reserved(field: &str, map: &BTreeMap<String, String>) -> anyhow::Result<ResourceList> {
    let mut list = ResourceList::new();
    for (name, value) in map {
        if !matches!(
            name.as_str(),
            "cpu" | "memory" | "ephemeral-storage" | "pid"
        ) {
            bail!("{field}: unsupported resource {name:?} (cpu, memory, ephemeral-storage, pid)");
        }
        let q = Quantity::parse(value)
            .filter(|q| !q.is_negative())
            .with_context(|| format!("{field}[{name}]: invalid quantity {value:?}"))?;
        list.insert(name.clone(), q);
    }
    Ok(list)
}

/// `--node-labels` entries (`key=value`) as a map.
pub fn labels(items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for item in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            bail!("invalid --node-labels {item:?}: want key=value");
        };
        if k.is_empty() {
            bail!("invalid --node-labels {item:?}: empty key");
        }
        map.insert(k.to_string(), v.to_string());
    }
    Ok(map)
}

/// A `--register-with-taints` entry: `key=value:Effect` or `key:Effect`.
pub fn taint(item: &str) -> anyhow::Result<super::file::TaintSpec> {
    let Some((key_value, effect)) = item.rsplit_once(':') else {
        bail!("invalid taint spec {item:?}: want <key>=<value>:<effect>");
    };
    let (key, value) = match key_value.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (key_value, None),
    };
    if key.is_empty() {
        bail!("invalid taint spec {item:?}: empty key");
    }
    Ok(super::file::TaintSpec {
        key: key.to_string(),
        value,
        effect: effect.to_string(),
    })
}

/// Checks a taint's effect, as upstream's validation.
pub fn check_taint(t: &super::file::TaintSpec) -> anyhow::Result<()> {
    if !matches!(
        t.effect.as_str(),
        "NoSchedule" | "PreferNoSchedule" | "NoExecute"
    ) {
        bail!(
            "registerWithTaints: invalid effect {:?} for taint {:?}: NoSchedule, PreferNoSchedule or NoExecute",
            t.effect,
            t.key
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_values() {
        let map = eviction_flag("memory.available<100Mi, nodefs.available<10%").unwrap();
        let t = eviction_thresholds(&map).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].signal, "memory.available");
        assert_eq!(t[0].value.amount(0), 100 * 1024 * 1024);
        assert_eq!(t[1].value.amount(1000), 100);
        for bad in ["memory.available=1", "x.available<1"] {
            let parsed = eviction_flag(bad).and_then(|m| eviction_thresholds(&m));
            assert!(parsed.is_err(), "{bad}");
        }
        let bad: BTreeMap<_, _> = [("memory.available".to_string(), "101%".to_string())].into();
        assert!(eviction_thresholds(&bad).is_err());
    }

    #[test]
    fn taints() {
        let cases = [
            ("a=b:NoSchedule", Some(("a", Some("b"), "NoSchedule"))),
            ("a:NoExecute", Some(("a", None, "NoExecute"))),
            (
                "example.com/k=v:PreferNoSchedule",
                Some(("example.com/k", Some("v"), "PreferNoSchedule")),
            ),
            ("novalue", None),
            ("=v:NoSchedule", None),
        ];
        for (input, want) in cases {
            let got = taint(input).ok();
            let got = got
                .as_ref()
                .map(|t| (t.key.as_str(), t.value.as_deref(), t.effect.as_str()));
            assert_eq!(got, want, "{input}");
        }
        assert!(check_taint(&taint("a:Bogus").unwrap()).is_err());
    }

    #[test]
    fn reserved_and_labels() {
        let m = map_flag("kube-reserved", "cpu=100m,memory=1Gi").unwrap();
        let r = reserved("kubeReserved", &m).unwrap();
        assert_eq!(r["cpu"].milli_value(), 100);
        assert!(reserved("kubeReserved", &map_flag("x", "gpu=1").unwrap()).is_err());
        assert!(reserved("kubeReserved", &map_flag("x", "cpu=lots").unwrap()).is_err());
        assert!(map_flag("x", "cpu").is_err());
        let l = labels(&["a=b".into(), "c=".into()]).unwrap();
        assert_eq!(l["a"], "b");
        assert_eq!(l["c"], "");
        assert!(labels(&["nolabel".into()]).is_err());
    }
}
