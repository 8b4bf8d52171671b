//! Completion indexes of Indexed Jobs and their compressed form in the status
//! (`completedIndexes`, `failedIndexes`: sorted intervals such as `"0-2,4"`).

use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeSet;

/// The annotation (and label) carrying a pod's completion index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// How many pods of this index failed before this one was created (backoffLimitPerIndex).
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";

/// Parses a compressed index list, keeping only indexes below `completions`. Malformed parts
/// are skipped rather than failing the whole sync: the status is ours, and a bad entry must
/// not wedge the Job.
pub fn parse(ranges: Option<&str>, completions: i32) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in ranges.unwrap_or("").split(',').map(str::trim) {
        if part.is_empty() {
            continue;
        }
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<i32>(), b.trim().parse::<i32>()),
            None => (part.parse::<i32>(), part.parse::<i32>()),
        };
        let (Ok(first), Ok(last)) = (first, last) else {
            continue;
        };
        if first < 0 || last < first {
            continue;
        }
        for i in first..=last.min(completions.saturating_sub(1)) {
            out.insert(i);
        }
    }
    out
}

/// Formats indexes as upstream: ascending, any run longer than one written `first-last`.
pub fn format(indexes: &BTreeSet<i32>) -> String {
    let mut out = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        if first == last {
            out.push(first.to_string());
        } else {
            out.push(format!("{first}-{last}"));
        }
    }
    out.join(",")
}

/// The completion index of a pod, from its annotation (or label); None when missing, not a
/// number or out of range.
pub fn of_pod(pod: &Pod, completions: i32) -> Option<i32> {
    let meta = &pod.metadata;
    let value = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX))
        .or_else(|| meta.labels.as_ref().and_then(|l| l.get(COMPLETION_INDEX)))?;
    let index: i32 = value.parse().ok()?;
    (0..completions).contains(&index).then_some(index)
}

/// A numeric annotation of a pod (failure counts); 0 when absent or malformed.
pub fn pod_counter(pod: &Pod, annotation: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotation))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        let cases: &[(&str, i32, &[i32], &str)] = &[
            ("", 5, &[], ""),
            ("0-2,4", 5, &[0, 1, 2, 4], "0-2,4"),
            ("1,3,5", 10, &[1, 3, 5], "1,3,5"),
            ("0-9", 5, &[0, 1, 2, 3, 4], "0-4"),
            ("3,1,2", 5, &[1, 2, 3], "1-3"),
            ("x,2,4-1,7", 8, &[2, 7], "2,7"),
            ("0,1", 3, &[0, 1], "0-1"),
        ];
        for (input, completions, want, formatted) in cases {
            let got = parse(Some(input), *completions);
            assert_eq!(got.iter().copied().collect::<Vec<_>>(), *want, "{input}");
            assert_eq!(format(&got), *formatted, "{input}");
        }
    }

    #[test]
    fn index_of_pod() {
        let mut pod = Pod::default();
        assert_eq!(of_pod(&pod, 3), None);
        pod.metadata.annotations = Some([(COMPLETION_INDEX.to_string(), "2".to_string())].into());
        assert_eq!(of_pod(&pod, 3), Some(2));
        assert_eq!(of_pod(&pod, 2), None);
        pod.metadata.annotations = None;
        pod.metadata.labels = Some([(COMPLETION_INDEX.to_string(), "1".to_string())].into());
        assert_eq!(of_pod(&pod, 3), Some(1));
    }
}
