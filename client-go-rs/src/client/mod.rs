//! Typed and dynamic clients: thin helpers over [`kube::Api`], with resource names resolved
//! through our static registry (`api_types::registry`) instead of a discovery round trip.

mod dynamic;
mod typed;

pub use dynamic::{ClientError, DynamicClient, DynamicResource};
pub use typed::Clientset;
