//! The kernel IR: typed SSA values, structured control flow, explicit memory spaces.
//!
//! Kernels are produced by the tracing front end ([`crate::trace`]) and consumed by every backend.
//! [`verify`] checks them (types, structure, D3 uniformity), [`print_kernel`] renders them as text,
//! [`passes::optimize`] folds constants and removes duplicate and dead pure code.

pub mod eval;
mod inst;
pub mod passes;
mod print;
mod reduce;
mod requirements;
mod types;
pub mod uniformity;
mod verify;

pub use inst::*;
pub use print::{print_kernel, render_inst};
pub use reduce::{reduce_name, ScanKind};
pub(crate) use requirements::nv_feature;
pub use types::*;
pub use verify::{verify, VerifyError, VerifyOptions};
