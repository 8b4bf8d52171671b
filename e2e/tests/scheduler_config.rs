//! kube-scheduler's `--config` as a real process reads it: a bad file is a one-line error that
//! names the field and exit status 1; `--write-config-to` writes the defaulted configuration
//! (the default profile's plugins and their args) and exits 0.

use e2e::bin;
use std::path::Path;
use std::process::{Command, Output};

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn scheduler(args: &[String]) -> Output {
    Command::new(bin("kube-scheduler"))
        .args(args)
        .output()
        .expect("running kube-scheduler")
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("writing the config file");
    path.display().to_string()
}

#[test]
fn bad_config_files_name_the_field_and_exit_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases: &[(&str, String, &str)] = &[
        (
            "negative score weight",
            format!(
                "{HEAD}profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n      - name: NodeAffinity\n        weight: -1\n"
            ),
            "profiles[0].plugins.score.enabled[1].weight: Invalid value: -1",
        ),
        (
            "unknown field",
            format!("{HEAD}parallelism: 4\npercentageOfNodeToScore: 10\n"),
            "unknown field \"percentageOfNodeToScore\"",
        ),
        (
            "wrong type",
            format!("{HEAD}parallelism: lots\n"),
            "parallelism: invalid type: string \"lots\"",
        ),
        (
            "removed beta version",
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
                .to_string(),
            "kubescheduler.config.k8s.io/v1beta3 is no longer served",
        ),
        (
            "plugin args",
            format!(
                "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: LeastAllocated\n        resources:\n        - name: cpu\n          weight: 0\n        - name: memory\n          weight: 500\n"
            ),
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[1].weight: Invalid value: 500",
        ),
        (
            "unknown plugin",
            format!(
                "{HEAD}profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n"
            ),
            "profiles[0].plugins.filter.enabled[0].name: Invalid value: \"NoSuchPlugin\"",
        ),
    ];
    for (i, (what, body, want)) in cases.iter().enumerate() {
        let path = write(dir.path(), &format!("bad-{i}.yaml"), body);
        let out = scheduler(&[format!("--config={path}"), "--leader-elect=false".into()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.starts_with("Error: "), "{what}: {stderr}");
        assert!(stderr.contains(want), "{what}: want {want:?} in {stderr}");
    }
}

#[test]
fn write_config_to_writes_the_defaulted_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(
        dir.path(),
        "config.yaml",
        &format!(
            "{HEAD}parallelism: 8\nprofiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 5\n"
        ),
    );
    let out_path = dir.path().join("written.yaml");
    let out = scheduler(&[
        format!("--config={config}"),
        format!("--write-config-to={}", out_path.display()),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&out_path).expect("the written config");
    let written: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
    assert_eq!(written["apiVersion"], "kubescheduler.config.k8s.io/v1");
    assert_eq!(written["parallelism"], 8);
    assert_eq!(written["podMaxBackoffSeconds"], 10);
    assert_eq!(written["leaderElection"]["resourceName"], "kube-scheduler");
    let profile = &written["profiles"][0];
    assert_eq!(profile["schedulerName"], "default-scheduler");
    let multi_point = profile["plugins"]["multiPoint"]["enabled"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = multi_point
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names.first(), Some(&"SchedulingGates"));
    assert_eq!(names.last(), Some(&"DefaultBinder"));
    let weight = |name: &str| {
        multi_point
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["weight"].clone())
    };
    assert_eq!(weight("ImageLocality"), Some(serde_json::json!(5)));
    assert_eq!(weight("TaintToleration"), Some(serde_json::json!(3)));
    let args = profile["pluginConfig"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fit = args
        .iter()
        .find(|c| c["name"] == "NodeResourcesFit")
        .expect("NodeResourcesFit args are defaulted");
    assert_eq!(fit["args"]["scoringStrategy"]["type"], "LeastAllocated");
    assert_eq!(fit["args"]["kind"], "NodeResourcesFitArgs");
}

#[test]
fn written_config_reads_back_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("first.yaml");
    let second = dir.path().join("second.yaml");
    let out = scheduler(&[format!("--write-config-to={}", first.display())]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = scheduler(&[
        format!("--config={}", first.display()),
        format!("--write-config-to={}", second.display()),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &Path| std::fs::read_to_string(p).expect("written config");
    assert_eq!(read(&first), read(&second));
}
