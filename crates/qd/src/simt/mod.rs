//! The portable SIMT library: subgroup, block and grid primitives and atomics, written on top of the
//! core intrinsics with trace-time choices per target.

pub mod atomic;
pub mod block;
pub(crate) mod block_radix;
pub mod grid;
mod shaped;
pub mod subgroup;
pub mod vector;
