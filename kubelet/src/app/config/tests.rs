use super::*;
use clap::Parser;
use std::time::Duration;

fn config(file: Option<&str>, flags: &[&str]) -> anyhow::Result<Config> {
    let dir = tempfile::tempdir()?;
    let mut args = vec![
        "kubelet".to_string(),
        "--hostname-override=Node-A".to_string(),
    ];
    if let Some(text) = file {
        let path = dir.path().join("kubelet-config.yaml");
        std::fs::write(&path, text)?;
        args.push(format!("--config={}", path.display()));
    }
    args.extend(flags.iter().map(|s| s.to_string()));
    let options = Options::try_parse_from(args)?;
    Config::try_from(options)
}

const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

#[test]
fn defaults_are_upstreams() {
    let c = config(None, &[]).unwrap();
    let k = &c.kubelet;
    assert_eq!(c.node_name, "node-a");
    assert_eq!(k.pod_logs_dir, "/var/log/pods");
    assert_eq!(k.sync_frequency, Duration::from_secs(60));
    assert_eq!(k.file_check_frequency, Duration::from_secs(20));
    assert_eq!(k.http_check_frequency, Duration::from_secs(20));
    assert_eq!(k.node_status_update_frequency, Duration::from_secs(10));
    assert_eq!(k.node_status_report_frequency, Duration::from_secs(300));
    assert_eq!(k.node_lease_duration_seconds, 40);
    assert_eq!(k.runtime_request_timeout, Duration::from_secs(120));
    assert_eq!(
        (
            k.image_gc_high_threshold_percent,
            k.image_gc_low_threshold_percent
        ),
        (85, 80)
    );
    assert_eq!(k.max_pods, 110);
    assert_eq!(k.container_log_max_size, "10Mi");
    assert_eq!(k.container_log_max_files, 5);
    assert_eq!(
        k.container_runtime_endpoint,
        "unix:///run/containerd/containerd.sock"
    );
    assert_eq!(
        c.image_service_endpoint(),
        "unix:///run/containerd/containerd.sock"
    );
    assert_eq!(k.authorization.mode, "Webhook");
    assert!(k.authentication.webhook.enabled && !k.authentication.anonymous.enabled);
    assert_eq!(c.eviction_hard.len(), 4);
    assert_eq!(c.cgroup_root(), "/");
    assert_eq!(c.serving.secure_port, 10250);
    assert_eq!(c.healthz_addr, Some("127.0.0.1:10248".parse().unwrap()));
    assert_eq!(c.read_only_addr, None);
    assert!(k.register_node && k.cgroups_per_qos && k.fail_swap_on);
    let configz = c.configz();
    assert_eq!(configz["kubeletconfig"]["maxPods"], 110);
    assert_eq!(configz["kubeletconfig"]["syncFrequency"], "1m0s");
    assert_eq!(
        configz["kubeletconfig"]["evictionHard"]["memory.available"],
        "100Mi"
    );
}

#[test]
fn file_values_and_flags_win() {
    let file = format!(
        "{HEADER}port: 11250\nhealthzPort: 0\nreadOnlyPort: 10255\nsyncFrequency: 5s\n\
         maxPods: 20\ncgroupRoot: /kt-a\nclusterDNS: [10.0.0.10]\nclusterDomain: cluster.local\n\
         staticPodPath: manifests\npodLogsDir: /tmp/pods\nnodeStatusUpdateFrequency: 1s\n\
         containerRuntimeEndpoint: unix:///tmp/a.sock\nregisterWithTaints:\n- key: a\n  value: b\n  effect: NoSchedule\n\
         kubeReserved: {{cpu: 100m}}\nauthentication:\n  anonymous: {{enabled: true}}\n\
         authorization: {{mode: AlwaysAllow}}\n"
    );
    let c = config(Some(&file), &[]).unwrap();
    assert_eq!(c.kubelet.port, 11250);
    assert_eq!(c.healthz_addr, None);
    assert_eq!(c.read_only_addr, Some("0.0.0.0:10255".parse().unwrap()));
    assert_eq!(c.kubelet.sync_frequency, Duration::from_secs(5));
    assert_eq!(c.kubelet.max_pods, 20);
    assert_eq!(c.cgroup_root(), "/kt-a");
    assert_eq!(c.cluster_dns, vec!["10.0.0.10".parse::<IpAddr>().unwrap()]);
    assert!(
        c.static_pod_path().unwrap().is_absolute(),
        "relative to the file"
    );
    assert_eq!(c.register_with_taints()[0].value.as_deref(), Some("b"));
    assert_eq!(c.kube_reserved["cpu"].milli_value(), 100);
    assert!(c.kubelet.authentication.anonymous.enabled);
    assert!(
        c.kubelet.authentication.webhook.enabled,
        "unset nested fields keep defaults"
    );
    assert_eq!(c.kubelet.authorization.mode, "AlwaysAllow");

    let c = config(
        Some(&file),
        &[
            "--port=12250",
            "--sync-frequency=7s",
            "--max-pods=30",
            "--cgroup-root=/kt-b",
            "--container-runtime-endpoint=unix:///tmp/b.sock",
            "--register-with-taints=x=y:NoExecute,z:NoSchedule",
            "--eviction-hard=memory.available<1Mi",
            "--register-node=false",
            "--node-ip=127.0.0.1",
            "--node-labels=a=b,c=d",
            "--healthz-port=10300",
        ],
    )
    .unwrap();
    assert_eq!(c.kubelet.port, 12250);
    assert_eq!(c.serving.secure_port, 12250);
    assert_eq!(c.kubelet.sync_frequency, Duration::from_secs(7));
    assert_eq!(c.kubelet.max_pods, 30);
    assert_eq!(c.cgroup_root(), "/kt-b");
    assert_eq!(c.kubelet.container_runtime_endpoint, "unix:///tmp/b.sock");
    assert_eq!(c.kubelet.register_with_taints.len(), 2);
    assert_eq!(c.eviction_hard.len(), 1);
    assert!(!c.kubelet.register_node);
    assert_eq!(c.node_ips, vec!["127.0.0.1".parse::<IpAddr>().unwrap()]);
    assert_eq!(c.node_labels.len(), 2);
    assert_eq!(c.healthz_addr, Some("127.0.0.1:10300".parse().unwrap()));
    // What the flags did not name stays as the file said.
    assert_eq!(c.kubelet.cluster_domain, "cluster.local");
}

#[test]
fn unknown_fields_are_named() {
    for (body, field) in [
        ("bogusField: 1\n", "\"bogusField\""),
        (
            "authentication:\n  webhook:\n    enabeld: true\n",
            "enabeld",
        ),
    ] {
        let err = config(Some(&format!("{HEADER}{body}")), &[]).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("unknown field") && msg.contains(field),
            "{msg}"
        );
        assert!(msg.contains("kubelet-config.yaml"), "{msg}");
    }
}

#[test]
fn invalid_values_are_refused() {
    let cases = [
        (format!("{HEADER}port: 70000\n"), "port"),
        (format!("{HEADER}port: 0\n"), "port"),
        (format!("{HEADER}healthzPort: -1\n"), "healthzPort"),
        (
            format!("{HEADER}imageGCHighThresholdPercent: 101\n"),
            "imageGCHighThresholdPercent",
        ),
        (
            format!("{HEADER}imageGCLowThresholdPercent: 90\n"),
            "imageGCLowThresholdPercent",
        ),
        (format!("{HEADER}syncFrequency: fast\n"), "invalid duration"),
        (format!("{HEADER}cgroupDriver: systemd\n"), "cgroupfs"),
        (
            format!("{HEADER}kubeReserved: {{memory: lots}}\n"),
            "kubeReserved",
        ),
        (
            format!("{HEADER}evictionHard: {{memory.available: 200%}}\n"),
            "evictionHard",
        ),
        (
            format!("{HEADER}authorization: {{mode: RBAC}}\n"),
            "authorization.mode",
        ),
        (format!("{HEADER}maxPods: -1\n"), "maxPods"),
        (
            format!("{HEADER}containerLogMaxSize: huge\n"),
            "containerLogMaxSize",
        ),
        (format!("{HEADER}clusterDNS: [not-an-ip]\n"), "clusterDNS"),
        (
            "apiVersion: v1\nkind: KubeletConfiguration\n".to_string(),
            "registered",
        ),
        ("port: 10250\n".to_string(), "'apiVersion' is missing"),
        (
            format!("{HEADER}registerWithTaints: [{{key: a, effect: Bad}}]\n"),
            "effect",
        ),
    ];
    for (file, want) in cases {
        let err = config(Some(&file), &[]).expect_err(&file);
        let msg = format!("{err:#}");
        assert!(msg.contains(want), "{file}: {msg}");
    }
    for flags in [
        &["--cgroup-driver=systemd"][..],
        &["--node-ip=nope"],
        &["--node-ip=127.0.0.1,127.0.0.2"],
        &["--register-with-taints=a"],
        &["--kube-reserved=cpu"],
    ] {
        assert!(config(None, flags).is_err(), "{flags:?}");
    }
}

#[test]
fn zero_durations_take_defaults() {
    let c = config(
        Some(&format!("{HEADER}syncFrequency: 0s\nmaxPods: 0\n")),
        &[],
    )
    .unwrap();
    assert_eq!(c.kubelet.sync_frequency, Duration::from_secs(60));
    assert_eq!(c.kubelet.max_pods, 110);
}

#[test]
fn json_files_load() {
    let c = config(
        Some(r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","port":10251}"#),
        &[],
    )
    .unwrap();
    assert_eq!(c.kubelet.port, 10251);
}

#[test]
fn a_repeated_flag_takes_its_last_value() {
    let c = config(
        None,
        &["--port=11000", "--port=11001", "--hostname-override=b"],
    )
    .unwrap();
    assert_eq!(c.kubelet.port, 11001);
    assert_eq!(c.node_name, "b");
}
