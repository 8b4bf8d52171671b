//! leaderelection
