//! The scheduling framework: plugin interfaces per extension point, the state they share in a
//! cycle, what the scheduler knows about nodes and pods, and the runner of one profile.

pub mod cycle_state;
pub mod events;
pub mod interface;
pub mod node_info;
pub mod parallelize;
pub mod pod_info;
pub mod registry;
pub mod resource;
pub mod runtime;
pub mod snapshot;
pub mod status;
pub mod testing;

pub use cycle_state::CycleState;
pub use interface::*;
pub use node_info::NodeInfo;
pub use pod_info::PodInfo;
pub use registry::{PluginContext, PluginFactory, Registry};
pub use runtime::Framework;
pub use snapshot::Snapshot;
pub use status::{Code, Status};
