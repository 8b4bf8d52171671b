//! API completeness with the real kubectl against our apiserver binary: componentstatuses and
//! the deprecation warnings of deprecated kinds, duplicate fields under fieldValidation, and
//! the API Priority and Fairness bootstrap configuration (kept across restarts).

use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;

fn write(k: &Kubectl, name: &str, text: &str) -> String {
    let path = k.dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The whitespace-separated cells of the line of `out` whose first cell is `name`.
fn row(out: &str, name: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|cells| cells.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
}

fn header(out: &str) -> Vec<&str> {
    out.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

#[tokio::test]
async fn componentstatuses_deprecations_duplicates_and_flow_control() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);

    // componentstatuses: upstream's table and deprecation warning. The storage is healthy; the
    // scheduler and controller manager may or may not run on this machine's default ports.
    let out = k.run(&["get", "cs"]);
    assert!(out.success, "{out:?}");
    assert_eq!(header(&out.stdout), ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    assert_eq!(row(&out.stdout, "etcd-0"), ["etcd-0", "Healthy", "ok"]);
    for name in ["scheduler", "controller-manager"] {
        let cells = row(&out.stdout, name);
        assert!(
            cells[1] == "Healthy" || cells[1] == "Unhealthy",
            "{cells:?}"
        );
    }
    assert!(
        out.stderr
            .contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{}",
        out.stderr
    );
    let one = k.ok(&["get", "componentstatus", "etcd-0", "-o", "json"]);
    let one: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one["conditions"][0]["type"], "Healthy");
    assert_eq!(one["conditions"][0]["status"], "True");
    let err = k.fails(&["get", "cs", "nope"]);
    assert!(
        err.contains("Error from server (NotFound): componentstatuses \"nope\" not found"),
        "{err}"
    );

    // Endpoints are deprecated in 1.33.
    let out = k.run(&["get", "endpoints", "-n", "default"]);
    assert!(out.success, "{out:?}");
    assert!(out.stdout.contains("kubernetes"), "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        ),
        "{}",
        out.stderr
    );
    let out = k.run(&["get", "endpointslices", "-n", "default"]);
    assert!(!out.stderr.contains("deprecated"), "{}", out.stderr);

    // Duplicate fields. kubectl create -f decodes a manifest and sends it re-encoded, so the
    // server never sees a duplicate from a file (upstream's server neither): the last wins.
    let yaml = write(
        &k,
        "dup.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup-yaml\ndata:\n  a: \"1\"\n  a: \"2\"\n",
    );
    k.ok(&["create", "--validate=strict", "-f", &yaml]);
    assert_eq!(
        k.ok(&["get", "cm", "dup-yaml", "-o", "jsonpath={.data.a}"]),
        "2"
    );
    // Raw bodies reach the server as written.
    let json = write(
        &k,
        "dup.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-json"},"data":{"a":"1","a":"2"},"bogus":1}"#,
    );
    let strict = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict";
    let err = k.fails(&["create", "--raw", strict, "-f", &json]);
    assert!(
        err.contains(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"data.a\", unknown field \"bogus\""
        ),
        "{err}"
    );
    let warn = "/api/v1/namespaces/default/configmaps?fieldValidation=Warn";
    let out = k.run(&["create", "--raw", warn, "-f", &json]);
    assert!(out.success, "{out:?}");
    assert!(
        out.stderr.contains("Warning: duplicate field \"data.a\""),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Warning: unknown field \"bogus\""),
        "{}",
        out.stderr
    );
    assert_eq!(
        k.ok(&["get", "cm", "dup-json", "-o", "jsonpath={.data.a}"]),
        "2"
    );

    // API Priority and Fairness: upstream's bootstrap objects and columns.
    let out = k.ok(&["get", "flowschemas"]);
    assert_eq!(
        header(&out),
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    let exempt = row(&out, "exempt");
    assert_eq!(&exempt[1..4], ["exempt", "1", "<none>"]);
    let global = row(&out, "global-default");
    assert_eq!(&global[1..4], ["global-default", "9900", "ByUser"]);
    assert_eq!(row(&out, "catch-all")[2], "10000");
    assert_eq!(out.lines().count(), 14, "13 flow schemas:\n{out}");
    // The server keeps each schema's Dangling condition (MISSINGPL), as upstream's does.
    let mut out = String::new();
    for _ in 0..50 {
        out = k.ok(&["get", "flowschemas", "--no-headers"]);
        if out
            .lines()
            .all(|l| l.split_whitespace().last() == Some("False"))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        out.lines()
            .all(|l| l.split_whitespace().last() == Some("False")),
        "{out}"
    );
    let out = k.ok(&["get", "prioritylevelconfigurations"]);
    assert_eq!(
        header(&out),
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    assert_eq!(
        &row(&out, "global-default")[..6],
        ["global-default", "Limited", "20", "128", "6", "50"]
    );
    assert_eq!(
        &row(&out, "exempt")[..6],
        ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        &row(&out, "catch-all")[..6],
        ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"]
    );

    // An administrator's changes: a suggested schema opted out of updates keeps them; a
    // mandatory level is restored; untouched objects are not rewritten by a restart.
    k.ok(&[
        "annotate",
        "flowschema",
        "global-default",
        "apf.kubernetes.io/autoupdate-spec=false",
        "--overwrite",
    ]);
    k.ok(&[
        "patch",
        "flowschema",
        "global-default",
        "--type=merge",
        "-p",
        r#"{"spec":{"matchingPrecedence":9500}}"#,
    ]);
    k.ok(&[
        "patch",
        "prioritylevelconfiguration",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":50}}}"#,
    ]);
    let rv = |k: &Kubectl, what: &str| {
        k.ok(&["get", what, "-o", "jsonpath={.metadata.resourceVersion}"])
    };
    let workload_low = rv(&k, "prioritylevelconfiguration/workload-low");
    let probes = rv(&k, "flowschema/probes");
    server.kill();
    server.restart().await.unwrap();
    let k = Kubectl::upstream(
        &dir.path().join("kubectl2"),
        &server.url(),
        &server.ca_file(),
    );
    assert_eq!(
        k.ok(&[
            "get",
            "flowschema",
            "global-default",
            "-o",
            "jsonpath={.spec.matchingPrecedence}"
        ]),
        "9500"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "prioritylevelconfiguration",
            "catch-all",
            "-o",
            "jsonpath={.spec.limited.nominalConcurrencyShares}"
        ]),
        "5"
    );
    assert_eq!(
        rv(&k, "prioritylevelconfiguration/workload-low"),
        workload_low
    );
    assert_eq!(rv(&k, "flowschema/probes"), probes);
}

#[tokio::test]
async fn componentstatus_of_a_real_etcd() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Etcd)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let out = k.ok(&["get", "componentstatus", "etcd-0"]);
    assert_eq!(row(&out, "etcd-0"), ["etcd-0", "Healthy", "ok"]);
    // The bootstrap objects are there on etcd too.
    let out = k.ok(&["get", "prioritylevelconfigurations", "-o", "name"]);
    assert_eq!(out.lines().count(), 8, "{out}");
}
