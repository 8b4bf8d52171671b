//! The pod lifecycle event generator: relists the runtime every second and turns changes of
//! container and sandbox states into per-pod events (CRI events are not implemented by
//! containerd 1.6). Owner: the core engineer.
