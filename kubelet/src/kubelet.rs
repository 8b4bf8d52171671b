//! The kubelet itself: the sync loop over pod updates, PLEG events and probe results, per-pod
//! workers, admission, mirror pods, and the `RuntimeHelper` the runtime calls back into.
//! Owner: the core engineer.
