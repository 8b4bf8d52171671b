//! The Node object: registration, status (capacity, allocatable, addresses, nodeInfo,
//! conditions) and the heartbeat Lease in `kube-node-lease`. Owner: the node engineer.
