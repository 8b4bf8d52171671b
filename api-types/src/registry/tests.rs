//! Consistency checks on the table itself; behaviour against upstream is tested in
//! `api-types/tests/registry*.rs`.

use super::*;
use std::collections::HashSet;

fn group_index(name: &str) -> usize {
    groups()
        .iter()
        .position(|g| g.name == name)
        .unwrap_or(usize::MAX)
}

#[test]
fn every_row_is_in_a_declared_group_version_and_every_version_is_used() {
    for r in all() {
        let g = group(r.group).unwrap_or_else(|| panic!("{} has undeclared group", r.plural));
        assert!(
            g.versions.contains(&r.version),
            "{}/{} not declared",
            r.group_version(),
            r.plural
        );
    }
    for g in groups() {
        assert!(!g.versions.is_empty(), "group {:?} has no versions", g.name);
        for v in g.versions {
            assert!(
                resources_in(g.name, v).next().is_some(),
                "{:?}/{v} serves nothing",
                g.name
            );
        }
    }
}

#[test]
fn table_is_in_discovery_order() {
    for pair in all().windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let ga = group(a.group).expect("declared group");
        let key = |r: &ResourceInfo| {
            let g = group_index(r.group);
            let v = ga
                .versions
                .iter()
                .position(|v| *v == r.version)
                .filter(|_| r.group == a.group)
                .unwrap_or(0);
            (g, v, r.plural)
        };
        assert!(
            key(a) < key(b),
            "{}/{} must come before {}/{}",
            a.group_version(),
            a.plural,
            b.group_version(),
            b.plural
        );
    }
}

#[test]
fn names_are_unique_and_well_formed() {
    let mut gvr = HashSet::new();
    let mut gvk = HashSet::new();
    for r in all() {
        assert!(
            gvr.insert((r.group, r.version, r.plural)),
            "dup {}",
            r.plural
        );
        assert!(gvk.insert((r.group, r.version, r.kind)), "dup {}", r.kind);
        // True of every built-in: discovery's singularName is the lower-cased kind.
        assert_eq!(r.singular, r.kind.to_ascii_lowercase());
        assert_eq!(r.plural, r.plural.to_ascii_lowercase());
        for s in r.short_names {
            assert_eq!(*s, s.to_ascii_lowercase());
        }
    }
}

#[test]
fn verbs_and_subresources_are_sorted_and_unique() {
    let sorted = |verbs: &[Verb]| verbs.windows(2).all(|w| w[0].as_str() < w[1].as_str());
    for r in all() {
        assert!(!r.verbs.is_empty() && sorted(r.verbs), "{}", r.plural);
        assert!(
            r.subresources.windows(2).all(|w| w[0].name < w[1].name),
            "{} subresources not sorted",
            r.plural
        );
        for s in r.subresources {
            assert!(
                !s.verbs.is_empty() && sorted(s.verbs),
                "{}/{}",
                r.plural,
                s.name
            );
        }
    }
}

#[test]
fn only_persisted_resources_have_a_storage_version() {
    for r in all() {
        // Virtual resources are create-only or read-only; persisted ones are full CRUD.
        let persisted = r.supports(Verb::Update);
        assert_eq!(r.storage.is_some(), persisted, "{}", r.plural);
        if let Some(s) = r.storage {
            let cohabiting_events = r.group == "events.k8s.io" && s == GroupVersion::new("", "v1");
            assert!(s.group == r.group || cohabiting_events, "{}", r.plural);
        }
    }
}

#[test]
fn verb_names_round_trip() {
    for v in Verb::ALL {
        assert_eq!(Verb::parse(v.as_str()), Some(v));
        assert_eq!(v.to_string(), v.as_str());
    }
    assert_eq!(Verb::parse("escalate"), None);
    assert_eq!(Verb::parse("GET"), None);
}

#[test]
fn api_version_strings() {
    assert_eq!(api_version("", "v1"), "v1");
    assert_eq!(api_version("apps", "v1"), "apps/v1");
    assert_eq!(GroupVersion::new("", "v1").to_string(), "v1");
    assert_eq!(
        GroupVersion::new("batch", "v1").api_version(),
        GroupVersion::new("batch", "v1").to_string()
    );
}
