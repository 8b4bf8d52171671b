//! `/metrics/resource`: upstream's resource metrics (what metrics-server scrapes) rendered
//! from a summary in the Prometheus text format, with sample timestamps in milliseconds.

use super::summary::{CpuStats, MemoryStats, Summary};
use jiff::Timestamp;
use std::fmt::Write;

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<String>,
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\"")
        })
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn sample(labels: &str, value: f64, at: Timestamp) -> String {
    format!("{labels} {value} {}", at.as_millisecond())
}

fn cpu_sample(l: &str, c: &Option<CpuStats>) -> Option<String> {
    let c = c.as_ref()?;
    Some(sample(l, c.usage_core_nano_seconds as f64 / 1e9, c.time))
}

fn mem_sample(l: &str, m: &Option<MemoryStats>, rss: bool) -> Option<String> {
    let m = m.as_ref()?;
    let v = if rss {
        m.rss_bytes
    } else {
        m.working_set_bytes
    };
    Some(sample(l, v as f64, m.time))
}

pub fn render(s: &Summary) -> String {
    let node = labels(&[]);
    let mut fams = vec![
        Family {
            name: "container_cpu_usage_seconds_total",
            help: "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
            kind: "counter",
            samples: vec![],
        },
        Family {
            name: "container_memory_rss_bytes",
            help: "[ALPHA] Current rss of the container in bytes",
            kind: "gauge",
            samples: vec![],
        },
        Family {
            name: "container_memory_working_set_bytes",
            help: "[STABLE] Current working set of the container in bytes",
            kind: "gauge",
            samples: vec![],
        },
        Family {
            name: "container_start_time_seconds",
            help: "[STABLE] Start time of the container since unix epoch in seconds",
            kind: "gauge",
            samples: vec![],
        },
        Family {
            name: "node_cpu_usage_seconds_total",
            help: "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
            kind: "counter",
            samples: cpu_sample(&node, &s.node.cpu).into_iter().collect(),
        },
        Family {
            name: "node_memory_rss_bytes",
            help: "[ALPHA] Current rss of the node in bytes",
            kind: "gauge",
            samples: mem_sample(&node, &s.node.memory, true)
                .into_iter()
                .collect(),
        },
        Family {
            name: "node_memory_working_set_bytes",
            help: "[STABLE] Current working set of the node in bytes",
            kind: "gauge",
            samples: mem_sample(&node, &s.node.memory, false)
                .into_iter()
                .collect(),
        },
        Family {
            name: "pod_cpu_usage_seconds_total",
            help: "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
            kind: "counter",
            samples: vec![],
        },
        Family {
            name: "pod_memory_working_set_bytes",
            help: "[STABLE] Current working set of the pod in bytes",
            kind: "gauge",
            samples: vec![],
        },
    ];
    for pod in &s.pods {
        let (ns, name) = (pod.pod_ref.namespace.as_str(), pod.pod_ref.name.as_str());
        let pl = labels(&[("namespace", ns), ("pod", name)]);
        fams[7].samples.extend(cpu_sample(&pl, &pod.cpu));
        fams[8].samples.extend(mem_sample(&pl, &pod.memory, false));
        for c in &pod.containers {
            let cl = labels(&[("container", &c.name), ("namespace", ns), ("pod", name)]);
            fams[0].samples.extend(cpu_sample(&cl, &c.cpu));
            fams[1].samples.extend(mem_sample(&cl, &c.memory, true));
            fams[2].samples.extend(mem_sample(&cl, &c.memory, false));
            if let (Some(start), Some(m)) = (c.start_time, &c.memory) {
                let secs = start.as_nanosecond() as f64 / 1e9;
                fams[3].samples.push(sample(&cl, secs, m.time));
            }
        }
    }
    let mut out = String::new();
    for f in fams.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for s in &f.samples {
            let _ = writeln!(out, "{}{s}", f.name);
        }
    }
    let _ = writeln!(
        out,
        "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise"
    );
    let _ = writeln!(out, "# TYPE resource_scrape_error gauge");
    let _ = writeln!(out, "resource_scrape_error 0");
    out
}

#[cfg(test)]
mod tests {
    use super::super::summary::*;
    use super::*;

    #[test]
    fn renders_node_pod_and_container_families() {
        let t: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let cpu = Some(CpuStats {
            time: t,
            usage_nano_cores: None,
            usage_core_nano_seconds: 1_500_000_000,
        });
        let mem = Some(MemoryStats {
            time: t,
            available_bytes: None,
            usage_bytes: 10,
            working_set_bytes: 8,
            rss_bytes: 4,
            page_faults: 0,
            major_page_faults: 0,
        });
        let summary = Summary {
            node: NodeStats {
                node_name: "n1".into(),
                start_time: None,
                cpu: cpu.clone(),
                memory: mem.clone(),
                network: None,
                fs: None,
                runtime: None,
                rlimit: None,
            },
            pods: vec![PodStats {
                pod_ref: PodReference {
                    name: "p".into(),
                    namespace: "ns".into(),
                    uid: "u".into(),
                },
                start_time: None,
                containers: vec![ContainerStats {
                    name: "c".into(),
                    start_time: Some(t),
                    cpu: cpu.clone(),
                    memory: mem.clone(),
                    logs: None,
                }],
                cpu,
                memory: mem,
                network: None,
                ephemeral_storage: None,
                process_stats: None,
            }],
        };
        let text = render(&summary);
        for want in [
            "node_cpu_usage_seconds_total 1.5 1704067200000\n",
            "node_memory_working_set_bytes 8 1704067200000\n",
            "pod_cpu_usage_seconds_total{namespace=\"ns\",pod=\"p\"} 1.5 1704067200000\n",
            "container_memory_working_set_bytes{container=\"c\",namespace=\"ns\",pod=\"p\"} 8 1704067200000\n",
            "container_start_time_seconds{container=\"c\",namespace=\"ns\",pod=\"p\"} 1704067200 1704067200000\n",
            "# TYPE container_cpu_usage_seconds_total counter\n",
            "resource_scrape_error 0\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }
}
