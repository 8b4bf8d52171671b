//! component-base
