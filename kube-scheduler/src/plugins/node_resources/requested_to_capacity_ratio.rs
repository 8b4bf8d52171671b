//! The RequestedToCapacityRatio strategy: a piecewise-linear function of each resource's
//! utilization, given as points on a 0..10 score scale.

use crate::apis::config::args::UtilizationShapePoint;
use crate::framework::MAX_NODE_SCORE;

/// The highest score a shape point may give (upstream's `MaxCustomPriorityScore`).
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

/// A shape with its scores scaled to the scheduler's 0..=100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape(Vec<(i64, i64)>);

impl Shape {
    /// Fails on an empty shape (nothing to interpolate).
    pub fn new(points: &[UtilizationShapePoint]) -> Result<Self, String> {
        if points.is_empty() {
            return Err("requestedToCapacityRatio shape must not be empty".into());
        }
        Ok(Self(
            points
                .iter()
                .map(|p| {
                    (
                        i64::from(p.utilization),
                        i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
                    )
                })
                .collect(),
        ))
    }

    /// The broken linear function at utilization `p` (upstream's `BuildBrokenLinearFunction`).
    fn at(&self, p: i64) -> i64 {
        let s = &self.0;
        for (i, &(u, score)) in s.iter().enumerate() {
            if p <= u {
                if i == 0 {
                    return score;
                }
                let (pu, ps) = s[i - 1];
                if u == pu {
                    return score;
                }
                return ps + (score - ps) * (p - pu) / (u - pu);
            }
        }
        s.last().map_or(0, |&(_, score)| score)
    }

    fn resource_score(&self, requested: i64, capacity: i64) -> i64 {
        if capacity == 0 || requested > capacity {
            return self.at(MAX_UTILIZATION);
        }
        self.at(requested * MAX_UTILIZATION / capacity)
    }

    /// The weighted mean over resources with a non-zero score, rounded.
    pub fn score(&self, weights: &[i64], requested: &[i64], allocatable: &[i64]) -> i64 {
        let (mut node_score, mut weight_sum) = (0i64, 0i64);
        for ((w, req), alloc) in weights.iter().zip(requested).zip(allocatable) {
            if *alloc == 0 {
                continue;
            }
            let s = self.resource_score(*req, *alloc);
            if s > 0 {
                node_score += s * w;
                weight_sum += w;
            }
        }
        if weight_sum == 0 {
            0
        } else {
            (node_score as f64 / weight_sum as f64).round() as i64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(points: &[(i32, i32)]) -> Shape {
        let p: Vec<UtilizationShapePoint> = points
            .iter()
            .map(|&(utilization, score)| UtilizationShapePoint { utilization, score })
            .collect();
        Shape::new(&p).expect("valid shape")
    }

    #[test]
    fn broken_linear_function() {
        // Upstream's TestBrokenLinearFunction, with scores on the 0..10 scale scaled by 10.
        let s = shape(&[(10, 1), (90, 9)]);
        let cases = [
            (-10, 10),
            (0, 10),
            (9, 10),
            (10, 10),
            (15, 15),
            (20, 20),
            (50, 50),
            (89, 89),
            (90, 90),
            (100, 90),
        ];
        for (p, want) in cases {
            assert_eq!(s.at(p), want, "p={p}");
        }
        let s = shape(&[(0, 2), (40, 10), (100, 0)]);
        assert_eq!(s.at(20), 60);
        assert_eq!(s.at(70), 50);
    }

    #[test]
    fn weighted_score() {
        // Bin packing shape: 0% -> 0, 100% -> 10.
        let s = shape(&[(0, 0), (100, 10)]);
        assert_eq!(s.score(&[1, 1], &[3000, 5000], &[4000, 10000]), 63);
        assert_eq!(s.score(&[1, 1], &[0, 0], &[4000, 10000]), 0);
        assert!(Shape::new(&[]).is_err());
    }
}
