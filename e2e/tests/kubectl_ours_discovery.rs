//! Our kubectl's discovery against upstream's on the same secured apiserver: the requests a
//! cold and a warm `get pods` cost (counted from the apiserver's own per-request log, `-v=3`,
//! by user agent), `api-resources` and `api-versions` with a cold and a warm cache and after a
//! CRD appears, a cache directory shared by both kubectls, and the server's `Warning:` headers
//! (`get cs`) printed alike.

use e2e::kubectl::Kubectl;
use e2e::kubectl_compare::{Fixture, Mode};
use e2e::secure::SecureCluster;
use std::path::Path;
use std::time::{Duration, Instant};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.disco.example.com
spec:
  group: disco.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
    shortNames: [gd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// Requests the apiserver logged from kubectl binaries (not the version dispatcher in front of
/// upstream's), with the user agent that tells the two kubectls apart.
fn kubectl_requests(cluster: &SecureCluster) -> Vec<(String, String)> {
    cluster
        .server
        .logs()
        .lines()
        .filter(|l| l.contains(" HTTP ") && l.contains("user_agent=kubectl/"))
        .filter_map(|l| {
            let uri = l.split(" uri=").nth(1)?.split(' ').next()?.to_owned();
            let agent = l.split(" user_agent=").nth(1)?.split(" resp=").next()?;
            Some((agent.to_owned(), uri))
        })
        .collect()
}

/// Runs `args` with `kubectl` and returns the URIs of the requests it made. The apiserver logs
/// a request before it answers it, so every request is in the log once kubectl has exited.
fn counted(cluster: &SecureCluster, kubectl: &Kubectl, args: &[&str]) -> Vec<String> {
    let before = kubectl_requests(cluster).len();
    let out = kubectl.run(args);
    assert!(out.success, "kubectl {args:?}: {}", out.stderr);
    let after = kubectl_requests(cluster);
    let agents: std::collections::BTreeSet<&str> =
        after[before..].iter().map(|(a, _)| a.as_str()).collect();
    assert!(
        agents.len() <= 1,
        "requests from several clients: {agents:?}"
    );
    after[before..].iter().map(|(_, uri)| uri.clone()).collect()
}

fn clear_cache(kubectl: &Kubectl) {
    let cache = kubectl.dir().join("cache");
    if cache.exists() {
        std::fs::remove_dir_all(&cache).expect("removing the discovery cache");
    }
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_costs_and_output_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start_with("disco", &["-v=3"]).await;
    let dir = cluster.dir().to_path_buf();
    let server = cluster.server.url();
    let ca = cluster.server.ca_file();

    // Cold, then warm: ours never asks more than upstream.
    clear_cache(&cmp.upstream);
    clear_cache(&cmp.ours);
    let get_pods = ["get", "pods", "-n", "disco-up"];
    let up_cold = counted(&cluster, &cmp.upstream, &get_pods);
    let ours_cold = counted(&cluster, &cmp.ours, &get_pods);
    assert!(
        ours_cold.len() <= up_cold.len(),
        "cold get pods: ours {ours_cold:?}, upstream {up_cold:?}"
    );
    // Both ask only `/api`, `/apis` and the list.
    assert_eq!(ours_cold.len(), 3, "{ours_cold:?}");
    let up_warm = counted(&cluster, &cmp.upstream, &get_pods);
    let ours_warm = counted(&cluster, &cmp.ours, &get_pods);
    assert!(
        ours_warm.len() <= up_warm.len(),
        "warm get pods: ours {ours_warm:?}, upstream {up_warm:?}"
    );
    assert_eq!(ours_warm.len(), 1, "{ours_warm:?}");

    // The same discovery cache layout: every file upstream wrote from the aggregated answer,
    // ours wrote (upstream's `http/` response cache is another matter).
    let (up_files, our_files) = (
        files(&cmp.upstream.dir().join("cache/discovery")),
        files(&cmp.ours.dir().join("cache/discovery")),
    );
    assert!(
        up_files
            .iter()
            .any(|f| f.ends_with("apps/v1/serverresources.json"))
    );
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|f| !b.contains(f)).cloned().collect()
    };
    assert!(
        our_files == up_files,
        "cache files only ours wrote: {:?}; only upstream's: {:?}",
        only(&our_files, &up_files),
        only(&up_files, &our_files)
    );

    // Each kubectl reads the other's cache: ours in upstream's dir, upstream in ours.
    let ours_in_up = Kubectl::new(&e2e::bin("kubectl"), cmp.upstream.dir(), &server, &ca);
    let up_in_ours = Kubectl::upstream(cmp.ours.dir(), &server, &ca);
    for kubectl in [&ours_in_up, &up_in_ours] {
        let uris = counted(
            &cluster,
            kubectl,
            &["get", "deploy,cm,hpa", "-n", "disco-up"],
        );
        assert_eq!(uris.len(), 3, "{uris:?}");
        assert!(
            uris.iter()
                .all(|u| !u.contains("/apis?") && !u.ends_with("/apis"))
        );
    }

    for cache in ["cold", "warm"] {
        if cache == "cold" {
            clear_cache(&cmp.upstream);
            clear_cache(&cmp.ours);
        }
        cmp.shared(&["api-resources"], Mode::Exact);
        cmp.shared(
            &["api-resources", "--namespaced=false", "-o", "wide"],
            Mode::Exact,
        );
        cmp.shared(&["api-versions"], Mode::Exact);
    }

    // A CRD after both caches are warm: its names do not resolve from the cache, which is then
    // refetched; afterwards both list it alike.
    let crd = dir.join("crd.yaml");
    std::fs::write(&crd, CRD).unwrap();
    cmp.upstream.ok(&["apply", "-f", crd.to_str().unwrap()]);
    cmp.upstream.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.disco.example.com",
        "--timeout=60s",
    ]);
    // The apiserver's discovery follows the CRD controller; wait until it serves the group.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cmp
        .upstream
        .run(&["get", "--raw", "/apis/disco.example.com/v1"])
        .success
    {
        assert!(Instant::now() < deadline, "the CRD's group is never served");
        std::thread::sleep(Duration::from_millis(100));
    }
    cmp.step_table(&["get", "gadgets"]);
    cmp.step_table(&["get", "gd"]);
    cmp.shared(&["api-resources"], Mode::Exact);
    cmp.shared(
        &[
            "api-resources",
            "--api-group=disco.example.com",
            "-o",
            "wide",
        ],
        Mode::Exact,
    );
    cmp.shared(&["api-versions"], Mode::Exact);
    cmp.step_table(&["get", "all"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn server_warnings_print_as_upstream() {
    let fixture = Fixture::start("warn").await;
    let cmp = &fixture.cmp;
    // componentstatuses is deprecated: one warning per distinct text, however many requests
    // carried it (two GETs in the last case). Only stderr and the exit status are compared:
    // the statuses probe the default scheduler and controller-manager ports, which another
    // test on this machine may open between the two runs.
    for args in [
        &["get", "cs"][..],
        &["get", "componentstatuses", "-o", "name"],
        &["get", "cs/etcd-0", "cs/scheduler"],
    ] {
        let (up, ours) = (cmp.upstream.run(args), cmp.ours.run(args));
        assert_eq!(ours.success, up.success, "{args:?}: {ours:?} {up:?}");
        assert_eq!(ours.stderr, up.stderr, "{args:?}: stderr (left ours)");
        assert_eq!(
            ours.stderr, "Warning: v1 ComponentStatus is deprecated in v1.19+\n",
            "{args:?}"
        );
    }
}
