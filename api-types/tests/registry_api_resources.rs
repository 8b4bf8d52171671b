//! The registry against `kubectl api-resources -o wide` of an upstream v1.33 cluster
//! (testdata/api-resources-1.33.txt): every row must be in the registry with the same facts,
//! and every preferred-version resource of the registry must be a row.

use api_types::registry::{self, ResourceInfo};
use std::collections::HashSet;

const FIXTURE: &str = include_str!("../testdata/api-resources-1.33.txt");
const COLUMNS: [&str; 7] = [
    "NAME",
    "SHORTNAMES",
    "APIVERSION",
    "NAMESPACED",
    "KIND",
    "VERBS",
    "CATEGORIES",
];

/// One row of the table, cells trimmed.
#[derive(Debug)]
struct Row<'a> {
    name: &'a str,
    short_names: Vec<&'a str>,
    api_version: &'a str,
    namespaced: bool,
    kind: &'a str,
    verbs: Vec<&'a str>,
    categories: Vec<&'a str>,
}

fn list(cell: &str) -> Vec<&str> {
    cell.split(',').filter(|s| !s.is_empty()).collect()
}

/// kubectl's tabwriter leaves cells empty (no short names, no categories), so columns are cut
/// at the offsets where the header's titles start, not split on blanks.
fn parse(text: &str) -> Vec<Row<'_>> {
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header = lines.next().expect("header line");
    let offsets: Vec<usize> = COLUMNS
        .iter()
        .map(|c| header.find(c).unwrap_or_else(|| panic!("no {c} column")))
        .collect();
    assert!(
        offsets.windows(2).all(|w| w[0] < w[1]),
        "columns out of order"
    );
    lines
        .map(|line| {
            let cell = |i: usize| {
                let start = offsets[i].min(line.len());
                let end = offsets
                    .get(i + 1)
                    .map_or(line.len(), |e| (*e).min(line.len()));
                line[start..end].trim()
            };
            // A cell spilling into the next column would silently corrupt the comparison.
            for &o in &offsets[1..] {
                assert!(
                    o >= line.len() || line.as_bytes()[o - 1] == b' ',
                    "cell overflows its column in {line:?}"
                );
            }
            Row {
                name: cell(0),
                short_names: list(cell(1)),
                api_version: cell(2),
                namespaced: match cell(3) {
                    "true" => true,
                    "false" => false,
                    other => panic!("bad NAMESPACED {other:?} in {line:?}"),
                },
                kind: cell(4),
                verbs: list(cell(5)),
                categories: list(cell(6)),
            }
        })
        .collect()
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

fn find(row: &Row<'_>) -> &'static ResourceInfo {
    let (group, version) = split_api_version(row.api_version);
    registry::by_group_version_resource(group, version, row.name)
        .unwrap_or_else(|| panic!("{}/{} is not in the registry", row.api_version, row.name))
}

#[test]
fn fixture_parses_into_all_rows() {
    let rows = parse(FIXTURE);
    assert_eq!(rows.len(), 60);
    let pods = rows.iter().find(|r| r.name == "pods").expect("pods row");
    assert_eq!(pods.short_names, ["po"]);
    assert_eq!(pods.categories, ["all"]);
    let bindings = rows
        .iter()
        .find(|r| r.name == "bindings")
        .expect("bindings row");
    assert!(bindings.short_names.is_empty() && bindings.categories.is_empty());
    assert_eq!(bindings.verbs, ["create"]);
}

#[test]
fn every_row_matches_the_registry() {
    let mut mismatches = Vec::new();
    for row in parse(FIXTURE) {
        let r = find(&row);
        let id = format!("{}/{}", row.api_version, row.name);
        let verbs: Vec<&str> = r.verbs.iter().map(|v| v.as_str()).collect();
        let checks = [
            ("apiVersion", row.api_version.to_owned(), r.api_version()),
            ("kind", row.kind.to_owned(), r.kind.to_owned()),
            (
                "namespaced",
                row.namespaced.to_string(),
                r.namespaced.to_string(),
            ),
            ("verbs", row.verbs.join(","), verbs.join(",")),
            (
                "shortNames",
                row.short_names.join(","),
                r.short_names.join(","),
            ),
            (
                "categories",
                row.categories.join(","),
                r.categories.join(","),
            ),
            (
                "preferred",
                "true".to_owned(),
                r.is_preferred_version().to_string(),
            ),
        ];
        for (what, want, got) in checks {
            if want != got {
                mismatches.push(format!("{id}: {what} kubectl={want:?} registry={got:?}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "\n{}", mismatches.join("\n"));
}

#[test]
fn every_preferred_resource_is_a_row() {
    let rows = parse(FIXTURE);
    let listed: HashSet<(String, &str)> = rows
        .iter()
        .map(|r| (r.api_version.to_owned(), r.name))
        .collect();
    assert_eq!(listed.len(), rows.len(), "duplicate rows in the fixture");
    let missing: Vec<String> = registry::all()
        .iter()
        .filter(|r| r.is_preferred_version())
        .filter(|r| !listed.contains(&(r.api_version(), r.plural)))
        .map(|r| format!("{}/{}", r.api_version(), r.plural))
        .collect();
    assert!(missing.is_empty(), "not listed by kubectl: {missing:?}");
}

#[test]
fn non_preferred_versions_are_served_but_not_listed() {
    let others: Vec<String> = registry::all()
        .iter()
        .filter(|r| !r.is_preferred_version())
        .map(|r| format!("{}/{}", r.api_version(), r.plural))
        .collect();
    assert_eq!(others, ["autoscaling/v1/horizontalpodautoscalers"]);
}
