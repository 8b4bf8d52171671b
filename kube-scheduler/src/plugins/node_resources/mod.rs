//! NodeResourcesFit and NodeResourcesBalancedAllocation, and the resource-allocation scoring
//! they share (upstream's `resourceAllocationScorer` and its strategies).

pub mod balanced_allocation;
pub mod fit;
pub mod least_allocated;
pub mod most_allocated;
pub mod requested_to_capacity_ratio;
pub mod resource_allocation;
