//! informers
