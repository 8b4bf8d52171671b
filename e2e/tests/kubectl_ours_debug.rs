//! Our kubectl's `debug` against upstream's on one secured apiserver with a hand-made node and
//! no kubelet (pods are only written, so nothing attaches): ephemeral containers added through
//! `pods/ephemeralcontainers`, `--copy-to` copies, node debugging pods, every profile in each
//! of the three modes, and the refusals. Each case runs with both kubectls, each in its own
//! namespace; exit status, stdout, stderr and the resulting pods must be the same once the
//! random suffixes upstream draws for names are masked.

#[path = "kubectl_ours_debug/suite.rs"]
mod suite;

use suite::{PROFILES, Suite, mask_random};

#[tokio::test(flavor = "multi_thread")]
async fn debug_matches_upstream() {
    let suite = Suite::start().await;

    // Refusals, in upstream's order of checks.
    for args in [
        &["debug", "web"][..],
        &["debug"],
        &["debug", "--image=busybox"],
        &["debug", "web", "--image=busybox", "--profile=bogus"],
        &[
            "debug",
            "web",
            "--image=busybox",
            "--copy-to=x",
            "--target=app",
        ],
        &["debug", "web", "--copy-to=x"],
        &["debug", "web", "--copy-to=x", "--", "sh"],
        &["debug", "web", "--replace", "--image=busybox"],
        &["debug", "web", "--same-node", "--image=busybox"],
        &["debug", "web", "--set-image=app=busybox", "--image=busybox"],
        &["debug", "web", "--image=busybox", "-t"],
        &["debug", "web", "--image=Bad Image"],
        // A repeated flag's last value wins.
        &["debug", "web", "--image=busybox", "--image=Bad Image"],
        &["debug", "web", "--image=busybox", "--env=X"],
        &["debug", "web", "--image=busybox", "--env=A=1,B=2,C"],
        &["debug", "web", "--copy-to=x", "--set-image=app"],
        &[
            "debug",
            "web",
            "--image=busybox",
            "--image-pull-policy=Sometimes",
        ],
        &["debug", "web", "--copy-to=x", "--set-image=app=BAD IMG"],
        &["debug", "web", "--attach"],
        &["debug", "nope", "--image=busybox"],
        &["debug", "node/nope", "--image=busybox"],
        &["debug", "foo/x", "--image=busybox", "--profile=general"],
        &[
            "debug",
            "svc/kubernetes",
            "--image=busybox",
            "-n",
            "default",
        ],
        &[
            "debug",
            "web",
            "--image=busybox",
            "-c",
            "app",
            "--profile=general",
        ],
        &[
            "debug",
            "web",
            "--image=busybox",
            "-c",
            "z",
            "--target=nope",
            "--profile=general",
        ],
        &[
            "debug",
            "web",
            "--image=busybox",
            "--copy-to=web",
            "-c",
            "z",
            "--profile=general",
        ],
    ] {
        suite.refused(args);
    }
    suite.same_pods("the refusals");

    // Ephemeral containers: the legacy default, then every profile with most flags.
    suite.same(&[
        "debug",
        "web",
        "--image=busybox",
        "-c",
        "e1",
        "--",
        "sh",
        "-c",
        "echo hi",
    ]);
    for profile in PROFILES {
        let name = format!("e-{profile}");
        suite.same(&[
            "debug",
            "web",
            "--image=busybox",
            "-c",
            &name,
            &format!("--profile={profile}"),
            "--target=app",
            "-i",
            "--attach=false",
            "--env=A=1",
            "--image-pull-policy=IfNotPresent",
            "--arguments-only",
            "--",
            "x",
        ]);
    }
    // A name drawn at random, announced; and an existing one refused.
    suite.same(&["debug", "web", "--image=busybox", "--profile=general"]);
    suite.same(&[
        "debug",
        "web",
        "-q",
        "--image=busybox",
        "--profile=general",
        "--target=app",
    ]);
    suite.refused(&[
        "debug",
        "web",
        "--image=busybox",
        "-c",
        "e1",
        "--profile=general",
    ]);
    suite.same(&[
        "debug",
        "nonroot",
        "--image=busybox",
        "-c",
        "w",
        "--profile=netadmin",
    ]);
    suite.same_pods("the ephemeral containers");

    // Copies: every profile, the keep flags, image changes, an existing container changed.
    for profile in PROFILES {
        suite.same(&[
            "debug",
            "web",
            "--image=busybox",
            &format!("--copy-to=copy-{profile}"),
            "-c",
            "dbg",
            &format!("--profile={profile}"),
            "--",
            "sh",
        ]);
    }
    suite.same(&[
        "debug",
        "web",
        "--copy-to=copy-keep",
        "--profile=general",
        "--keep-labels",
        "--keep-annotations",
        "--keep-liveness",
        "--keep-readiness",
        "--keep-startup",
        "--keep-init-containers=false",
        "--share-processes=false",
        "--same-node",
        "-c",
        "app",
        "-i",
        "-t",
        "--attach=false",
        "--env=A=1",
        "--arguments-only",
        "--",
        "x",
        "y",
    ]);
    suite.same(&[
        "debug",
        "web",
        "--copy-to=copy-images",
        "--set-image=*=busybox:1,side=nginx:2",
        "--profile=general",
    ]);
    suite.same(&[
        "debug",
        "web",
        "--copy-to=copy-mixed",
        "--set-image=app=busybox:1",
        "--image=debian",
        "-c",
        "d2",
        "--profile=restricted",
        "--share-processes",
    ]);
    suite.same(&[
        "debug",
        "web",
        "--copy-to=copy-init",
        "-c",
        "init",
        "--profile=sysadmin",
        "--",
        "echo",
    ]);
    suite.same(&[
        "debug",
        "web",
        "--image=busybox",
        "--copy-to=copy-named",
        "--profile=general",
    ]);
    suite.same(&[
        "debug",
        "nonroot",
        "--image=busybox",
        "--copy-to=copy-nonroot",
        "-c",
        "w",
        "--profile=sysadmin",
    ]);
    suite.same_pods("the copies");
    // `--replace` deletes the original once the copy exists.
    suite.same(&[
        "debug",
        "po/nonroot",
        "--image=busybox",
        "--copy-to=replaced",
        "--replace",
        "--profile=general",
        "-c",
        "r",
    ]);
    suite.same_pods("the replacing copy");

    // Node debugging pods: every profile, and the flags that shape the container.
    for profile in PROFILES {
        suite.same_node_pod(&[
            "debug",
            "node/debug-node",
            "--image=busybox",
            &format!("--profile={profile}"),
            "--",
            "sleep",
            "1",
        ]);
    }
    suite.same_node_pod(&[
        "debug",
        "nodes/debug-node",
        "--image=busybox",
        "--profile=general",
        "-q",
        "-c",
        "shell",
        "-i",
        "--attach=false",
        "--env=X=y",
        "--arguments-only",
        "--",
        "a",
    ]);
}

/// `--custom`: a partial container merged over the profile's, in each mode, and what it may
/// not change; and `-f`: objects debugged as their file says.
#[tokio::test(flavor = "multi_thread")]
async fn debug_custom_and_filename_match_upstream() {
    let suite = Suite::start().await;
    // Upstream 1.33 dereferences a file pod's spec.securityContext unchecked: the file has one.
    let pod = suite.path("pod.yaml");
    let elsewhere = suite.path("elsewhere.yaml");
    let deployment = suite.path("deployment.yaml");
    let node = suite.path("node.yaml");
    suite.refused(&[
        "debug",
        "web",
        "-f",
        &pod,
        "--image=busybox",
        "--profile=general",
    ]);
    for refused in [&elsewhere, &deployment] {
        suite.refused(&[
            "debug",
            "-f",
            refused,
            "--image=busybox",
            "--profile=general",
        ]);
    }
    suite.same(&[
        "debug",
        "-f",
        &pod,
        "--image=busybox",
        "-c",
        "f1",
        "--profile=general",
    ]);
    suite.same(&[
        "debug",
        "-f",
        &pod,
        "--image=busybox",
        "--copy-to=copy-file",
        "-c",
        "f2",
        "--profile=legacy",
    ]);
    suite.same_pods("the pods from a file");
    suite.same_node_pod(&[
        "debug",
        "-f",
        &node,
        "--image=busybox",
        "--profile=sysadmin",
    ]);
    let json = suite.path("custom.json");
    let yaml = suite.path("custom.yaml");
    let image = suite.path("image.yaml");
    let lifecycle = suite.path("lifecycle.yaml");
    let json_flag = format!("--custom={json}");
    let yaml_flag = format!("--custom={yaml}");
    let missing = format!("--custom={}", suite.path("missing.yaml"));
    for flag in [
        format!("--custom={image}"),
        format!("--custom={lifecycle}"),
        missing,
    ] {
        suite.refused(&["debug", "web", "--image=busybox", &flag]);
    }
    suite.same(&[
        "debug",
        "web",
        "--image=busybox",
        "-c",
        "c1",
        "--profile=general",
        &yaml_flag,
        "--env=A=1",
    ]);
    suite.same(&[
        "debug",
        "nonroot",
        "--image=busybox",
        "-c",
        "c2",
        "--profile=netadmin",
        &json_flag,
    ]);
    suite.same(&[
        "debug",
        "web",
        "--image=busybox",
        "--copy-to=copy-c3",
        "-c",
        "c3",
        "--profile=sysadmin",
        &yaml_flag,
    ]);
    suite.same(&[
        "debug",
        "web",
        "--copy-to=copy-app",
        "-c",
        "app",
        "--profile=general",
        &json_flag,
        "--",
        "sh",
    ]);
    suite.same_pods("the custom profiles");
    suite.same_node_pod(&[
        "debug",
        "node/debug-node",
        "--image=busybox",
        "--profile=general",
        "-q",
        &yaml_flag,
    ]);
}

#[test]
fn random_suffixes_are_masked() {
    assert_eq!(
        mask_random("pod node-debugger-n1-x7k2p created, debugger-bcd45."),
        "pod node-debugger-n1-RAND created, debugger-RAND."
    );
    // Not a drawn suffix: vowels are not in the alphabet.
    assert_eq!(mask_random("debugger-aeiou"), "debugger-aeiou");
}
