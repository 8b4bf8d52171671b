//! The thresholds from the KubeletConfiguration, as upstream's `ParseThresholdConfig`: hard
//! (`evictionHard`), soft (`evictionSoft`, each with its `evictionSoftGracePeriod`), their
//! `evictionMinimumReclaim`, and with `pods` in `enforceNodeAllocatable` a copy of the hard
//! `memory.available` threshold on `allocatableMemory.available`.

use super::signals::{Signal, Threshold, disabled};
use crate::app::config::{Config, ThresholdValue, parse};
use anyhow::{Context, bail};
use component_base::duration::GoDuration;
use std::collections::BTreeMap;

/// `evictionMinimumReclaim`: signal -> quantity or percentage.
fn minimum_reclaims(
    value: Option<&serde_json::Value>,
) -> anyhow::Result<BTreeMap<Signal, ThresholdValue>> {
    let mut out = BTreeMap::new();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(out);
    };
    let map: BTreeMap<String, String> = serde_json::from_value(value.clone())
        .context("evictionMinimumReclaim: want a map of signal to quantity")?;
    // The same grammar as thresholds, so the threshold parser checks it.
    for t in parse::eviction_thresholds(&map)
        .map_err(|e| anyhow::anyhow!("{e:#}").context("evictionMinimumReclaim"))?
    {
        let signal = Signal::parse(&t.signal).with_context(|| {
            format!("evictionMinimumReclaim: unsupported signal {:?}", t.signal)
        })?;
        out.insert(signal, t.value);
    }
    Ok(out)
}

/// All thresholds the manager acts on.
pub fn thresholds(config: &Config) -> anyhow::Result<Vec<Threshold>> {
    let k = &config.kubelet;
    let mut out = Threshold::from_config(&config.eviction_hard);
    let soft = parse::eviction_thresholds(&k.eviction_soft)
        .map_err(|e| anyhow::anyhow!("{e:#}").context("evictionSoft"))?;
    for t in soft {
        let Some(signal) = Signal::parse(&t.signal) else {
            continue;
        };
        let Some(period) = k.eviction_soft_grace_period.get(&t.signal) else {
            bail!(
                "grace period must be specified for the soft eviction threshold {}",
                t.signal
            );
        };
        let period: GoDuration = period
            .parse()
            .map_err(|e| anyhow::anyhow!("evictionSoftGracePeriod[{}]: {e}", t.signal))?;
        if disabled(&t.value) {
            continue;
        }
        out.push(Threshold {
            signal,
            value: t.value,
            grace_period: Some(period.0),
            min_reclaim: None,
        });
    }
    for signal in k.eviction_soft_grace_period.keys() {
        if Signal::parse(signal).is_none() {
            bail!("evictionSoftGracePeriod: unsupported eviction signal {signal:?}");
        }
    }
    let reclaims = minimum_reclaims(k.eviction_minimum_reclaim.as_ref())?;
    for t in &mut out {
        t.min_reclaim = reclaims.get(&t.signal).cloned();
    }
    if k.enforce_node_allocatable.iter().any(|e| e == "pods") {
        let copies: Vec<Threshold> = out
            .iter()
            .filter(|t| t.signal == Signal::MemoryAvailable && t.is_hard())
            .map(|t| Threshold {
                signal: Signal::AllocatableMemoryAvailable,
                ..t.clone()
            })
            .collect();
        out.extend(copies);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config(yaml: &str) -> anyhow::Result<Config> {
        use clap::Parser;
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{yaml}"
            ),
        )?;
        let options = crate::app::options::Options::try_parse_from([
            "kubelet".to_string(),
            "--hostname-override=n".to_string(),
            format!("--config={}", path.display()),
        ])?;
        Config::try_from(options)
    }

    #[test]
    fn parses_hard_soft_and_minimum_reclaim() {
        let c = config(
            "evictionHard: {memory.available: 100Mi, nodefs.available: 0%}\n\
             evictionSoft: {nodefs.available: 15%}\n\
             evictionSoftGracePeriod: {nodefs.available: 1m30s}\n\
             evictionMinimumReclaim: {memory.available: 50Mi}\n",
        )
        .unwrap();
        let t = thresholds(&c).unwrap();
        let summary: Vec<(Signal, Option<Duration>, bool)> = t
            .iter()
            .map(|t| (t.signal, t.grace_period, t.min_reclaim.is_some()))
            .collect();
        assert_eq!(
            summary,
            [
                (Signal::MemoryAvailable, None, true),
                (
                    Signal::NodeFsAvailable,
                    Some(Duration::from_secs(90)),
                    false
                ),
                (Signal::AllocatableMemoryAvailable, None, true),
            ]
        );
    }

    #[test]
    fn refuses_soft_thresholds_without_grace_periods() {
        let cases = [
            (
                "evictionSoft: {memory.available: 1Gi}\n",
                "grace period must be specified",
            ),
            (
                "evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: soon}\n",
                "evictionSoftGracePeriod[memory.available]",
            ),
            (
                "evictionMinimumReclaim: {memory.available: -1}\n",
                "evictionMinimumReclaim",
            ),
        ];
        for (yaml, want) in cases {
            let err = config(yaml).and_then(|c| thresholds(&c)).unwrap_err();
            assert!(format!("{err:#}").contains(want), "{yaml}: {err:#}");
        }
    }
}
