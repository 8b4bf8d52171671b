//! The TTL the kubelet may cache secrets and configmaps for, from the cluster size. The
//! overlapping ranges give hysteresis: a cluster hovering around a boundary does not flap.

pub const ANNOTATION: &str = "node.alpha.kubernetes.io/ttl";

struct Boundary {
    size_min: usize,
    size_max: usize,
    ttl_seconds: u32,
}

const BOUNDARIES: [Boundary; 5] = [
    Boundary {
        size_min: 0,
        size_max: 100,
        ttl_seconds: 0,
    },
    Boundary {
        size_min: 90,
        size_max: 500,
        ttl_seconds: 15,
    },
    Boundary {
        size_min: 450,
        size_max: 1000,
        ttl_seconds: 30,
    },
    Boundary {
        size_min: 900,
        size_max: 2000,
        ttl_seconds: 60,
    },
    Boundary {
        size_min: 1800,
        size_max: usize::MAX,
        ttl_seconds: 300,
    },
];

/// The current step of the boundaries and the node count it was computed for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TtlState {
    pub nodes: usize,
    pub step: usize,
}

impl TtlState {
    pub fn ttl_seconds(&self) -> u32 {
        BOUNDARIES[self.step].ttl_seconds
    }

    /// Moves to `nodes` nodes; true when the TTL changed.
    pub fn resize(&mut self, nodes: usize) -> bool {
        let before = self.step;
        self.nodes = nodes;
        while self.step + 1 < BOUNDARIES.len() && self.nodes > BOUNDARIES[self.step].size_max {
            self.step += 1;
        }
        while self.step > 0 && self.nodes < BOUNDARIES[self.step].size_min {
            self.step -= 1;
        }
        before != self.step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_with_hysteresis() {
        let mut s = TtlState::default();
        let cases = [
            (1, 0, false),
            (100, 0, false),
            (101, 15, true),
            (95, 15, false),
            (89, 0, true),
            (501, 30, true),
            (2001, 300, true),
            (1900, 300, false),
            (1799, 60, true),
            (0, 0, true),
        ];
        for (nodes, ttl, changed) in cases {
            assert_eq!(s.resize(nodes), changed, "{nodes} nodes");
            assert_eq!(s.ttl_seconds(), ttl, "{nodes} nodes");
        }
    }
}
