use super::*;
use k8s_openapi::api::core::v1::{HostAlias, PodDNSConfig, PodDNSConfigOption, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn pod(policy: &str, host_network: bool, dns: Option<PodDNSConfig>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("ns1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            dns_policy: (!policy.is_empty()).then(|| policy.into()),
            host_network: Some(host_network),
            dns_config: dns,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn resolv_conf_parsing() {
    let content = "# comment\n; other\nnameserver 10.0.0.1\nnameserver 10.0.0.2 extra\n\
                   search old.example\nsearch a.example. . b.example\noptions ndots:2 rotate\n\
                   options ndots:3 timeout:1\n";
    let got = parse_resolv_conf(content);
    assert_eq!(got.servers, strs(&["10.0.0.1", "10.0.0.2"]));
    assert_eq!(got.searches, strs(&["a.example", "b.example"]));
    assert_eq!(got.options, strs(&["ndots:3", "rotate", "timeout:1"]));
}

#[test]
fn pod_dns_policies() {
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv,
        "nameserver 8.8.8.8\nsearch corp.example\noptions rotate\n",
    )
    .unwrap();
    let cluster = DnsSettings {
        cluster_dns: vec!["10.96.0.10".parse().unwrap()],
        cluster_domain: "cluster.local".into(),
        resolv_conf: Some(resolv.clone()),
        node_ips: vec![],
    };
    let no_cluster_dns = DnsSettings {
        cluster_dns: vec![],
        ..cluster.clone()
    };
    let no_resolv = DnsSettings {
        resolv_conf: None,
        node_ips: vec!["::1".parse().unwrap()],
        ..cluster.clone()
    };
    let cluster_searches = [
        "ns1.svc.cluster.local",
        "svc.cluster.local",
        "cluster.local",
        "corp.example",
    ];
    let pod_dns = PodDNSConfig {
        nameservers: Some(strs(&["1.1.1.1", "10.96.0.10"])),
        searches: Some(strs(&["extra.example", "cluster.local"])),
        options: Some(vec![
            PodDNSConfigOption {
                name: Some("ndots".into()),
                value: Some("2".into()),
            },
            PodDNSConfigOption {
                name: Some("edns0".into()),
                value: None,
            },
        ]),
    };
    type Case<'a> = (
        &'a str,
        Pod,
        &'a DnsSettings,
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: Vec<Case> = vec![
        (
            "cluster first",
            pod("ClusterFirst", false, None),
            &cluster,
            &["10.96.0.10"],
            &cluster_searches,
            &["ndots:5"],
        ),
        (
            "empty policy is cluster first",
            pod("", false, None),
            &cluster,
            &["10.96.0.10"],
            &cluster_searches,
            &["ndots:5"],
        ),
        (
            "cluster first on host network is default",
            pod("ClusterFirst", true, None),
            &cluster,
            &["8.8.8.8"],
            &["corp.example"],
            &["rotate"],
        ),
        (
            "cluster first with host net",
            pod("ClusterFirstWithHostNet", true, None),
            &cluster,
            &["10.96.0.10"],
            &cluster_searches,
            &["ndots:5"],
        ),
        (
            "default",
            pod("Default", false, None),
            &cluster,
            &["8.8.8.8"],
            &["corp.example"],
            &["rotate"],
        ),
        (
            "no cluster dns falls back to default",
            pod("ClusterFirst", false, None),
            &no_cluster_dns,
            &["8.8.8.8"],
            &["corp.example"],
            &["rotate"],
        ),
        (
            "default without resolv.conf",
            pod("Default", false, None),
            &no_resolv,
            &["::1"],
            &["."],
            &[],
        ),
        (
            "none uses only dnsConfig",
            pod("None", false, Some(pod_dns.clone())),
            &cluster,
            &["1.1.1.1", "10.96.0.10"],
            &["extra.example", "cluster.local"],
            &["ndots:2", "edns0"],
        ),
        (
            "cluster first merges dnsConfig",
            pod("ClusterFirst", false, Some(pod_dns.clone())),
            &cluster,
            &["10.96.0.10", "1.1.1.1"],
            &[
                "ns1.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "corp.example",
                "extra.example",
            ],
            &["ndots:2", "edns0"],
        ),
    ];
    for (name, pod, settings, servers, searches, options) in cases {
        let got = pod_dns_config(&pod, settings).unwrap();
        assert_eq!(got.servers, strs(servers), "{name}: servers");
        assert_eq!(got.searches, strs(searches), "{name}: searches");
        assert_eq!(got.options, strs(options), "{name}: options");
    }
    assert!(pod_dns_config(&pod("Bogus", false, None), &cluster).is_err());
    let via_fn = dns_config(
        &pod("ClusterFirst", false, None),
        &cluster.cluster_dns,
        "cluster.local",
        Some(&resolv),
    )
    .unwrap()
    .unwrap();
    assert_eq!(via_fn.servers, strs(&["10.96.0.10"]));
}

#[test]
fn dns_limits() {
    let many: Vec<String> = (0..40).map(|i| format!("d{i}.example")).collect();
    assert_eq!(fit_search_limits(many.clone()).len(), 32);
    let long = "x".repeat(254);
    assert_eq!(fit_search_limits(vec![long, "ok".into()]), strs(&["ok"]));
    // 10 domains of 250 characters: 2510 with spaces, cut to 8 (2007 <= 2048).
    let big: Vec<String> = (0..10).map(|i| format!("{i}{}", "y".repeat(249))).collect();
    let fitted = fit_search_limits(big);
    assert_eq!(fitted.len(), 8);
    assert!(fitted.join(" ").len() <= 2048);
    let servers = PodDNSConfig {
        nameservers: Some(strs(&["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"])),
        ..Default::default()
    };
    let got = pod_dns_config(&pod("None", false, Some(servers)), &DnsSettings::default()).unwrap();
    assert_eq!(got.servers, strs(&["1.1.1.1", "2.2.2.2", "3.3.3.3"]));
}

#[test]
fn hostnames() {
    let mut p = pod("", false, None);
    assert_eq!(
        pod_hostname_and_domain(&p, "cluster.local").unwrap(),
        ("web-0".into(), String::new())
    );
    let spec = p.spec.as_mut().unwrap();
    spec.hostname = Some("h".into());
    spec.subdomain = Some("sub".into());
    assert_eq!(
        pod_hostname_and_domain(&p, "cluster.local").unwrap(),
        ("h".into(), "sub.ns1.svc.cluster.local".into())
    );
    p.spec.as_mut().unwrap().hostname = Some("Bad_Name".into());
    assert!(pod_hostname_and_domain(&p, "cluster.local").is_err());
    let mut long = pod("", false, None);
    long.metadata.name = Some(format!("{}-.-abc", "a".repeat(61)));
    assert_eq!(
        pod_hostname_and_domain(&long, "c").unwrap().0,
        "a".repeat(61)
    );
}

#[test]
fn hosts_files() {
    let aliases = vec![HostAlias {
        ip: "10.1.2.3".into(),
        hostnames: Some(strs(&["foo", "bar"])),
    }];
    let plain = managed_hosts_content(&strs(&["10.0.0.5"]), "web-0", "", &[]);
    assert!(plain.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"));
    assert!(
        plain.ends_with("fe00::2\tip6-allrouters\n10.0.0.5\tweb-0\n"),
        "{plain}"
    );
    let fqdn = managed_hosts_content(
        &strs(&["10.0.0.5", "fd00::5"]),
        "h",
        "sub.ns.svc.cl",
        &aliases,
    );
    assert!(
        fqdn.contains("10.0.0.5\th.sub.ns.svc.cl\th\nfd00::5\th.sub.ns.svc.cl\th\n"),
        "{fqdn}"
    );
    assert!(
        fqdn.ends_with("\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tbar\n"),
        "{fqdn}"
    );
    let host = host_network_hosts_content("127.0.0.1 myhost\n", &aliases);
    assert!(
        host.starts_with("# Kubernetes-managed hosts file (host network).\n127.0.0.1 myhost\n")
    );

    let dir = tempfile::tempdir().unwrap();
    let p = pod("", false, None);
    assert_eq!(ensure_hosts_file(dir.path(), &p, &[], "cl").unwrap(), None);
    let mount = ensure_hosts_file(dir.path(), &p, &strs(&["10.0.0.5"]), "cl")
        .unwrap()
        .unwrap();
    assert_eq!(mount.container_path, "/etc/hosts");
    let written = std::fs::read_to_string(&mount.host_path).unwrap();
    assert!(written.ends_with("10.0.0.5\tweb-0\n"));
}
