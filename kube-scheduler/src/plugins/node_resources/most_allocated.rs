//! The MostAllocated strategy: fuller nodes score higher (bin packing).

use crate::framework::MAX_NODE_SCORE;

/// The weighted mean of each resource's used share, 0..=100; resources a node lacks
/// (allocatable 0) do not count.
pub fn most_resource_score(weights: &[i64], requested: &[i64], allocatable: &[i64]) -> i64 {
    let (mut node_score, mut weight_sum) = (0i64, 0i64);
    for ((w, req), alloc) in weights.iter().zip(requested).zip(allocatable) {
        if *alloc == 0 {
            continue;
        }
        node_score += most_requested_score(*req, *alloc) * w;
        weight_sum += w;
    }
    if weight_sum == 0 {
        0
    } else {
        node_score / weight_sum
    }
}

/// The used share of `capacity` scaled to 0..=100; requests above capacity (pods without
/// requests get default amounts) count as full.
fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights, requested, allocatable, expected score.
    type Case = (&'static [i64], &'static [i64], &'static [i64], i64);

    #[test]
    fn scores_used_share() {
        let cases: &[Case] = &[
            (&[1, 1], &[0, 0], &[4000, 10000], 0),
            (&[1, 1], &[3000, 5000], &[4000, 10000], 62),
            (&[1, 1], &[5000, 5000], &[4000, 10000], 75),
            (&[1, 2], &[2000, 5000], &[4000, 10000], 50),
            (&[1, 1], &[0, 0], &[0, 0], 0),
        ];
        for (w, r, a, want) in cases {
            assert_eq!(most_resource_score(w, r, a), *want, "{r:?}/{a:?}");
        }
    }
}
