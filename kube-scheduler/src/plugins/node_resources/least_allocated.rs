//! The LeastAllocated strategy: nodes with more free capacity score higher (spreading).

use crate::framework::MAX_NODE_SCORE;

/// The weighted mean of each resource's free share, 0..=100; resources a node lacks
/// (allocatable 0) do not count.
pub fn least_resource_score(weights: &[i64], requested: &[i64], allocatable: &[i64]) -> i64 {
    let (mut node_score, mut weight_sum) = (0i64, 0i64);
    for ((w, req), alloc) in weights.iter().zip(requested).zip(allocatable) {
        if *alloc == 0 {
            continue;
        }
        node_score += least_requested_score(*req, *alloc) * w;
        weight_sum += w;
    }
    if weight_sum == 0 {
        0
    } else {
        node_score / weight_sum
    }
}

/// The unused share of `capacity` scaled to 0..=100; 0 when over-committed.
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights, requested, allocatable, expected score.
    type Case = (&'static [i64], &'static [i64], &'static [i64], i64);

    #[test]
    fn scores_free_share() {
        let cases: &[Case] = &[
            (&[1, 1], &[0, 0], &[4000, 10000], 100),
            (&[1, 1], &[3000, 5000], &[4000, 10000], 37),
            (&[1, 1], &[5000, 5000], &[4000, 10000], 25),
            (&[1, 2], &[2000, 5000], &[4000, 10000], 50),
            (&[1, 1], &[1000, 0], &[4000, 0], 75),
            (&[1, 1], &[0, 0], &[0, 0], 0),
        ];
        for (w, r, a, want) in cases {
            assert_eq!(least_resource_score(w, r, a), *want, "{r:?}/{a:?}");
        }
    }
}
