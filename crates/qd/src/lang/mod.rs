//! The kernel language of `#[qd::kernel]` and `#[qd::func]` (D24, D25), and what their expansions
//! call.
//!
//! A kernel is an ordinary Rust function; the macro rewrites its body into the calls of the tracing
//! builder ([`crate::trace`]), which stays the foundation (library code is written with it, and a
//! builder kernel and its macro twin trace to the same IR). Kernel authors never call the items of
//! this module by name; they are public because the expansion runs in the user's crate.
//!
//! ```
//! use qd::prelude::*;
//!
//! // The subgroup page's tree reduction: lane 0 of each group of 4 holds the group's sum.
//! #[qd::kernel]
//! fn reduce4(src: &[f32], dst: &mut [f32]) {
//!     qd::loop_config(block_dim = 64);
//!     for i in range(src.len()) {
//!         let mut val = src[i];
//!         val = val + subgroup::shuffle_down(val, 2u32);
//!         val = val + subgroup::shuffle_down(val, 1u32);
//!         if i % 4 == 0 {
//!             dst[i] = val;
//!         }
//!     }
//! }
//!
//! let device = Device::cpu();
//! let src = device.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
//! let mut dst = device.zeros::<f32>(64).unwrap();
//! reduce4().launch(&device, (&src, &mut dst)).unwrap();
//! assert_eq!(dst.to_vec().unwrap()[4], 4.0 + 5.0 + 6.0 + 7.0);
//! ```
//!
//! # Values: known while tracing, or only on the device
//!
//! A kernel runs once on the host per target while it is traced. Plain Rust values (`u32`,
//! `subgroup::group_size()`, compile-time parameters, closures) are known then; device values
//! (`Val<T>`: array elements, thread indices, scalar parameters) only on the device. The macros
//! cannot see types, so the constructs below go through traits here that decide by type:
//!
//! | you write | compile-time operands | a device operand |
//! |---|---|---|
//! | `a + b`, `a << b`, `!a`, `-a` (Rust's operators and precedence) | Rust's arithmetic | the traced op (`Val` implements the operator traits) |
//! | `a < b`, `a == b` ([`lt`], [`eq`], ...) | a `bool` | a `Val<bool>` |
//! | `a && b`, `a \|\| b` ([`and`], [`or`]) | Rust's | `b` runs only where `a` does not decide: `i < n && a[i] > 0` never loads `a[i]` where `i >= n`; a right side without loads or calls is evaluated without a branch |
//! | `x as f32` ([`cast`]) | Rust's cast | the D5 device cast |
//! | `if c { .. } else { .. }` ([`branch`]) | only the selected branch is traced (the seeds' `static`) | a device `if`; as an expression, the branch values merge in a local |
//! | `a[i]`, `a[i] = v`, `&a[i]` ([`index`], [`store`], [`place`]) | compile-time tables (`[T; N]`, slices, `Vec`) read with a `usize` | loads and stores of device, shared and per-thread arrays; `&a[i]` is the location atomics and `volatile_load` take |
//!
//! # Statements
//!
//! - `let x = e;` binds as Rust does. A scalar type annotation means a device value
//!   (`let x: f32 = 1.0;` is a `Val<f32>`); `#[comptime] let x = e;` keeps a plain Rust value.
//! - `let mut x = e;` is a device value. Assigned only where it is declared (not inside the
//!   body of an `if` or a loop), it is rebound as Rust would (no local, the builder's IR);
//!   otherwise it becomes a device local ([`Var`]). `#[comptime] let mut` keeps a Rust variable.
//! - `x = e`, `x += e` (every compound operator), `a[i] op= e`, `(k, v) = f(..)`.
//! - `while c { .. }`, `loop { .. }` and `for i in a..b { .. }` are device loops, left with
//!   `break` / `continue`. `for x in qd::unroll(items)` (any other iterator too) is a loop run
//!   while tracing: its body is traced once per item, and `break` / `continue` under
//!   compile-time conditions leave it (under a device condition they are a trace error).
//! - `return` ends the thread in a kernel (D2: not inside a loop or the parallel loop); in a
//!   `#[qd::func]` it gives the function's result, also from inside device `if`s.
//! - `match` and `if let` are Rust's, on compile-time values (`match split { Split::Block => .. }`).
//! - Method calls, function calls, closures, tuples, struct and array expressions and macros are
//!   written as usual (macro arguments are not rewritten).
//!
//! # Kernels
//!
//! `#[qd::kernel] fn name(params) { body }` becomes `fn name(compile-time params) ->`
//! [`KernelFn`]. A parameter `a: &[T]` is a device array launched with `&DeviceArray<T>`, `a: &mut
//! [T]` one launched with `&mut DeviceArray<T>`, any other `n: T` a scalar launched by value;
//! `#[comptime] p: P` parameters (and the function's generic and const parameters) are arguments of
//! `name(..)` and plain Rust values in the body (operator closures for the generic reductions and
//! scans, sizes, enums). A wrong argument type or count at launch is a compile error.
//!
//! - A *range* kernel holds the parallel loop at the top of its body, written as the seeds write
//!   it: `qd::loop_config(block_dim = 64);` then `for i in range(n) { .. }` (or
//!   `range(begin, end)`; `i` is a `Val<i32>`, D1). Launch it with [`KernelFn::launch`].
//! - Without a parallel loop the kernel is *explicit*: `#[qd::kernel(block_dim = 64)]`, launched on
//!   a grid with [`KernelFn::launch_grid`].
//! - `#[qd::kernel(name = expr)]` names the kernel (default: the function's name); `block_dim` and
//!   `name` may use the compile-time parameters.
//! - `name()` without compile-time parameters returns the same kernel every time (one per
//!   instantiation of its generic parameters), so its compiled form is reused; with
//!   `#[comptime]` parameters each call makes a new kernel: keep the value to launch it again.
//! - [`KernelFn::kernel`] is the untyped [`Kernel`] (`qd emit`, `Device::compile`).
//!
//! # Device functions
//!
//! `#[qd::func]` marks a function called from kernel code; it is inlined (traced where it is
//! called). Its scalar parameters take device values or constants (`x: f32` accepts a `Val<f32>`
//! or `1.5`), `&[T]` parameters take arrays, `&T` ones take locations (`&a[i]`), `#[comptime]`
//! ones take plain values; a scalar or tuple result is a device value.
//!
//! # Errors
//!
//! Syntax the language does not have (`while let`, loop labels, `continue` in the parallel loop,
//! inclusive device ranges, ...) is a compile error at the user's tokens saying what to write
//! instead; so are device values of mixed types (`expected a f32 value ... found Val<i32>`) and a
//! run-time range given to `qd::unroll` (`tests/compile_fail/` pins them). Every call the
//! expansion makes carries the user's span, so trace errors and emulator errors name the line in
//! the kernel.

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
