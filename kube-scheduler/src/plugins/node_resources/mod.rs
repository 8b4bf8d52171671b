//! NodeResourcesFit and NodeResourcesBalancedAllocation.

pub mod balanced_allocation;
pub mod fit;
