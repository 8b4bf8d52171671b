//! The objects a queueing hint receives arrive as `&dyn Any`; the queue may hand over either
//! the object itself or the `Arc` it keeps, so hints accept both.

use k8s_openapi::api::core::v1::{Node, Pod};
use std::any::Any;
use std::sync::Arc;

fn downcast<T: 'static>(obj: Option<&dyn Any>) -> Option<&T> {
    let obj = obj?;
    obj.downcast_ref::<T>()
        .or_else(|| obj.downcast_ref::<Arc<T>>().map(|a| &**a))
}

/// The event's object as a Node, if it is one.
pub fn as_node(obj: Option<&dyn Any>) -> Option<&Node> {
    downcast::<Node>(obj)
}

/// The event's object as a Pod, if it is one.
pub fn as_pod(obj: Option<&dyn Any>) -> Option<&Pod> {
    downcast::<Pod>(obj)
}
