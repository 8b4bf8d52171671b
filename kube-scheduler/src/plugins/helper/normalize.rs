//! Upstream's `helper.DefaultNormalizeScore`.

use crate::framework::NodeScore;

/// Scales scores so the highest becomes `max_priority` (all stay 0 when every score is 0, or
/// all become `max_priority` when reversed); `reverse` turns "fewer is better" counts around.
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [NodeScore]) {
    let max_count = scores.iter().map(|s| s.score).max().unwrap_or(0);
    if max_count == 0 {
        if reverse {
            for s in scores.iter_mut() {
                s.score = max_priority;
            }
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut score = max_priority * s.score / max_count;
        if reverse {
            score = max_priority - score;
        }
        s.score = score;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(v: &[i64]) -> Vec<NodeScore> {
        v.iter()
            .enumerate()
            .map(|(i, s)| NodeScore {
                name: format!("n{i}").into(),
                score: *s,
            })
            .collect()
    }

    #[test]
    fn normalizes_as_upstream() {
        // Cases from upstream's normalize_score_test.go.
        let cases: &[(&[i64], bool, &[i64])] = &[
            (&[10, 20, 30], false, &[33, 66, 100]),
            (&[10, 20, 30], true, &[67, 34, 0]),
            (&[0, 0, 0], false, &[0, 0, 0]),
            (&[0, 0, 0], true, &[100, 100, 100]),
            (&[2, 4, 5], false, &[40, 80, 100]),
            (&[2, 4, 5], true, &[60, 20, 0]),
            (&[], false, &[]),
        ];
        for (input, reverse, want) in cases {
            let mut s = scores(input);
            default_normalize_score(100, *reverse, &mut s);
            let got: Vec<i64> = s.iter().map(|s| s.score).collect();
            assert_eq!(&got, want, "input {input:?} reverse {reverse}");
        }
    }
}
