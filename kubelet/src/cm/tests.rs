use super::*;
use serde_json::json;

fn options(root: &str) -> CgroupOptions {
    CgroupOptions {
        cgroup_root: root.into(),
        cgroups_per_qos: true,
        pod_pids_limit: 100,
        cpu_cfs_quota: true,
        cpu_cfs_quota_period_us: 100_000,
    }
}

fn pod(uid: &str, resources: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}
    }))
    .unwrap()
}

/// A directory laid out like /sys/fs/cgroup (plain files stand for the interface files).
fn fake_mount() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for s in ["cpu", "cpuacct", "cpuset", "memory", "pids"] {
        std::fs::create_dir(dir.path().join(s)).unwrap();
    }
    std::fs::write(dir.path().join("cpuset/cpuset.cpus"), "0-1").unwrap();
    std::fs::write(dir.path().join("cpuset/cpuset.mems"), "0").unwrap();
    dir
}

#[test]
fn hierarchy_paths_and_limits() {
    let mount = fake_mount();
    let cm = ContainerManager::start_at(mount.path(), options("/kt-a")).unwrap();
    let m = mount.path();
    for s in ["cpu", "memory", "pids", "cpuset"] {
        assert!(m.join(s).join("kt-a/kubepods/burstable").is_dir(), "{s}");
        assert!(m.join(s).join("kt-a/kubepods/besteffort").is_dir(), "{s}");
    }
    assert_eq!(
        std::fs::read_to_string(m.join("cpuset/kt-a/kubepods/besteffort/cpuset.cpus")).unwrap(),
        "0-1"
    );
    assert_eq!(
        cm.fs
            .read("cpu", "/kt-a/kubepods/besteffort", "cpu.shares")
            .unwrap(),
        "2"
    );

    let guaranteed = pod("g1", json!({"limits": {"cpu": "500m", "memory": "32Mi"}}));
    let burstable = pod("b1", json!({"requests": {"cpu": "100m"}}));
    let best_effort = pod("e1", json!({}));
    assert_eq!(cm.pod_cgroup_parent(&guaranteed), "/kt-a/kubepods/podg1");
    assert_eq!(
        cm.pod_cgroup_parent(&burstable),
        "/kt-a/kubepods/burstable/podb1"
    );
    assert_eq!(
        cm.pod_cgroup_parent(&best_effort),
        "/kt-a/kubepods/besteffort/pode1"
    );
    for p in [&guaranteed, &burstable, &best_effort] {
        cm.ensure_pod_cgroup(p).unwrap();
        assert!(cm.pod_cgroup_exists(p));
    }
    let g = "/kt-a/kubepods/podg1";
    assert_eq!(cm.fs.read("cpu", g, "cpu.shares").unwrap(), "512");
    assert_eq!(cm.fs.read("cpu", g, "cpu.cfs_quota_us").unwrap(), "50000");
    assert_eq!(
        cm.fs.read("memory", g, "memory.limit_in_bytes").unwrap(),
        "33554432"
    );
    assert_eq!(cm.fs.read("pids", g, "pids.max").unwrap(), "100");
    let b = "/kt-a/kubepods/burstable/podb1";
    assert_eq!(cm.fs.read("cpu", b, "cpu.shares").unwrap(), "102");
    assert!(
        cm.fs.read("memory", b, "memory.limit_in_bytes").is_err(),
        "no limit set"
    );

    let mut uids: Vec<_> = cm.pod_cgroups().into_iter().map(|(u, _)| u).collect();
    uids.sort();
    assert_eq!(uids, ["b1", "e1", "g1"]);
    cm.remove_pod_cgroup("g1").unwrap();
    assert!(!cm.pod_cgroup_exists(&guaranteed));
    assert!(!m.join("memory/kt-a/kubepods/podg1").exists());
    assert!(
        m.join("memory/kt-a/kubepods/burstable").is_dir(),
        "QoS cgroups stay"
    );
    cm.remove_pod_cgroup("missing").unwrap();
}

#[test]
fn without_cgroups_per_qos_pods_use_the_runtime_default() {
    let mount = fake_mount();
    let mut o = options("/");
    o.cgroups_per_qos = false;
    let cm = ContainerManager::start_at(mount.path(), o).unwrap();
    let p = pod("x", json!({}));
    assert_eq!(cm.pod_cgroup_parent(&p), "");
    cm.ensure_pod_cgroup(&p).unwrap();
    assert!(!mount.path().join("cpu/kubepods").exists());
}

#[test]
fn default_root_is_slash() {
    let mount = fake_mount();
    let cm = ContainerManager::start_at(mount.path(), options("/")).unwrap();
    assert_eq!(cm.kubepods(), "/kubepods");
    assert_eq!(
        cm.pod_cgroup_parent(&pod("u", json!({}))),
        "/kubepods/besteffort/podu"
    );
}

#[test]
fn needs_cgroup_v1() {
    let empty = tempfile::tempdir().unwrap();
    let err = ContainerManager::start_at(empty.path(), options("/")).unwrap_err();
    assert!(err.to_string().contains("cgroup v1"), "{err}");
}

/// On the real hierarchy (root, cgroup v1): limits land in the kernel's files and removal
/// works; everything under a random root, removed at the end.
#[test]
fn real_cgroup_v1() {
    let mount = Path::new("/sys/fs/cgroup");
    if !mount.join("cpu/cpu.shares").exists() || !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: no writable cgroup v1 here");
        return;
    }
    let root = format!("/kt-unit-{}", std::process::id());
    let cm = ContainerManager::start_at(mount, options(&root)).unwrap();
    let p = pod(
        "real1",
        json!({"limits": {"cpu": "200m", "memory": "16Mi"}}),
    );
    cm.ensure_pod_cgroup(&p).unwrap();
    let cgroup = cm.pod_cgroup_parent(&p);
    let result = (|| -> anyhow::Result<()> {
        assert_eq!(cm.fs.read("cpu", &cgroup, "cpu.cfs_quota_us")?, "20000");
        assert_eq!(
            cm.fs.read("memory", &cgroup, "memory.limit_in_bytes")?,
            "16777216"
        );
        assert_eq!(cm.fs.read("pids", &cgroup, "pids.max")?, "100");
        cm.remove_pod_cgroup("real1")?;
        assert!(!cm.pod_cgroup_exists(&p));
        Ok(())
    })();
    let cleanup = cm.fs.remove(&root);
    result.unwrap();
    cleanup.unwrap();
    assert!(
        !mount
            .join("cpu")
            .join(root.trim_start_matches('/'))
            .exists()
    );
}
