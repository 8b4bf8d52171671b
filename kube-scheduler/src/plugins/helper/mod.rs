//! Matching rules that several plugins share: node selector terms and node affinity, taints and
//! tolerations, score normalization, and reading the objects a queueing hint is given.

pub mod node_affinity;
pub mod normalize;
pub mod objects;
pub mod taints;

pub use normalize::default_normalize_score;
