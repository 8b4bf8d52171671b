//! listers
