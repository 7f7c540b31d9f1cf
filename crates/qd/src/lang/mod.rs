//! What `#[qd::kernel]` and `#[qd::func]` expand to (D24, D25): the builder calls of
//! [`crate::trace`] behind Rust syntax. Kernel authors do not call these by name; they are public
//! because the expansion runs in the user's crate.
//!
//! The macros cannot see types, so every construct whose meaning depends on whether a value is
//! known while tracing (a plain Rust value: sizes, dtypes, operator closures, `subgroup::group_size()`)
//! or only on the device (`Val<T>`) goes through a trait here that picks it by type: `if` on a
//! `bool` traces one branch and on a `Val<bool>` emits a device `if`; `a < b` is a `bool` or a
//! `Val<bool>`; `x as u32` is a Rust cast or a device cast.

mod flow;
mod launch;
mod ops;

pub use flow::{branch, unroll, while_, Flow, If, Join, ReturnValue, Returns, Unroll};
pub use launch::{Explicit, KernelCache, KernelFn, Param, Params, Range, Slice, SliceMut, Value};
pub use ops::{
    and, and_pure, cast, dev, eq, ge, gt, index, le, lt, ne, or, or_pure, place, store, to_dev, CastTo, CmpEq, CmpOrd,
    Load, Logic, Ord, ToDev,
};

pub use crate::trace::{break_, continue_, for_range, loop_, return_, var, IntoVal, KernelBuilder, Val, Var};
pub use crate::trace::{Array, Elem, Kernel, Scalar};
