//! The container manager: the host's capacity, node allocatable, and the QoS cgroup hierarchy
//! (`/kubepods`, `/kubepods/burstable`, `/kubepods/besteffort`, per-pod cgroups) with the
//! cgroupfs driver on cgroup v1. Owner: the node engineer.
