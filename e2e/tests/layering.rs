//! The shape rule of the workspace, read from `cargo metadata`: no component crate depends on
//! another component crate, and the libraries depend on no component.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const COMPONENTS: &[&str] = &[
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kubectl",
];

/// Which workspace crates each library may use (everything else in the workspace is off limits).
const LIBRARY_RULES: &[(&str, &[&str])] = &[
    ("api-types", &[]),
    ("component-base", &[]),
    ("client-go-rs", &["api-types"]),
    // e2e drives the components as processes, with real clients: our client library among them.
    ("e2e", &["client-go-rs", "api-types"]),
];

fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version=1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|name| members.contains(name))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn no_component_depends_on_another_component() {
    let deps = workspace_dependencies();
    for component in COMPONENTS {
        let uses = deps
            .get(*component)
            .unwrap_or_else(|| panic!("{component} is not a member"));
        for other in COMPONENTS {
            assert!(!uses.contains(*other), "{component} depends on {other}");
        }
    }
}

#[test]
fn libraries_use_only_what_they_may() {
    let deps = workspace_dependencies();
    for (library, allowed) in LIBRARY_RULES {
        let uses = deps
            .get(*library)
            .unwrap_or_else(|| panic!("{library} is not a member"));
        let forbidden: Vec<_> = uses
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(forbidden.is_empty(), "{library} depends on {forbidden:?}");
    }
    let members: BTreeSet<_> = deps.keys().map(String::as_str).collect();
    let expected: BTreeSet<_> = COMPONENTS
        .iter()
        .chain(LIBRARY_RULES.iter().map(|(name, _)| name))
        .copied()
        .collect();
    assert_eq!(
        members, expected,
        "a crate was added without a layering rule"
    );
}
