//! Device-wide algorithms built on the SIMT library: whole-array operations launched from the host.

pub mod sort;
