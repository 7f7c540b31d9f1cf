//! Atomics (seed 003): read-modify-write on one element, returning the old value.
//!
//! The defaults are relaxed at device scope (what CUDA's `atomicAdd` is, D6); [`atomic_rmw`] and
//! [`atomic_cas_with`] take an explicit ordering and scope.
//!
//! What seed 003 rejects at compile time is a Rust type error here: compare-and-swap and the
//! bitwise atomics take integers only (the `Int` bound), and the target of any atomic is an
//! element of an array (`Elem`), never a value.
//!
//! ```compile_fail,E0277
//! use qd::prelude::*;
//! let k = Kernel::range("float_cas", 32, |k| {
//!     let a = k.array::<f32>("a");
//!     k.parallel_for(0, a.len(), |i| {
//!         atomic_cas(a.at(i), 0.0f32, 1.0f32);
//!     });
//! });
//! ```
//!
//! ```compile_fail,E0277
//! use qd::prelude::*;
//! let k = Kernel::range("float_or", 32, |k| {
//!     let a = k.array::<f64>("a");
//!     k.parallel_for(0, a.len(), |i| {
//!         atomic_or(a.at(i), 1.0f64);
//!     });
//! });
//! ```
//!
//! ```compile_fail,E0308
//! use qd::prelude::*;
//! let k = Kernel::range("value_target", 32, |k| {
//!     let a = k.array::<i32>("a");
//!     k.parallel_for(0, a.len(), |i| {
//!         atomic_add(a.get(i), 1);
//!     });
//! });
//! ```

use crate::ir::{AtomicOp, InstKind, Ordering, Scope, UnOp};
use crate::trace::{current_loc, emit_at, new_value, op_scope, Elem, Int, IntoVal, Num, Scalar, Val};

/// Atomic `op` on `target` with an explicit ordering and scope; returns the old value.
#[track_caller]
pub fn atomic_rmw<T: Scalar>(
    target_elem: Elem<T>,
    op: AtomicOp,
    value: impl IntoVal<T>,
    ordering: Ordering,
    scope: Scope,
) -> Val<T> {
    let loc = current_loc();
    let value = value.into_val();
    let dst = new_value(T::DTYPE);
    emit_at(
        InstKind::Atomic { dst: Some(dst), place: target_elem.place(), op, value: value.id(), ordering, scope },
        loc,
    );
    Val::from_id(dst)
}

macro_rules! rmw {
    ($(#[$doc:meta])* $name:ident, $op:ident, $bound:ident) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $name<T: $bound>(target: Elem<T>, value: impl IntoVal<T>) -> Val<T> {
            let _op = op_scope(stringify!($name));
            atomic_rmw(target, AtomicOp::$op, value, Ordering::Relaxed, Scope::Device)
        }
    };
}

rmw!(
    /// `old = x; x += y; old` (floats too).
    atomic_add, Add, Num);
rmw!(
    /// `x *= y` (a CAS loop on every backend).
    atomic_mul, Mul, Num);
rmw!(
    /// `x = min(x, y)` (floats: minNum, the non-NaN operand wins).
    atomic_min, Min, Num);
rmw!(
    /// `x = max(x, y)`.
    atomic_max, Max, Num);
rmw!(
    /// `x &= y` (integers only: a float is a compile error).
    atomic_and, And, Int);
rmw!(
    /// `x |= y`.
    atomic_or, Or, Int);
rmw!(
    /// `x ^= y`.
    atomic_xor, Xor, Int);
rmw!(
    /// `x = y`, returning the old value.
    atomic_exchange, Exchange, Num);

/// `x -= y`: rewritten to `atomic_add(x, -y)` (seed 003; wrapping negation for integers).
///
/// Floats use a true negation, not `0 - y`: the two differ for signed zeros (`-0.0 - +0.0` is
/// `-0.0`, while `-0.0 + (0 - 0.0)` would be `+0.0`).
#[track_caller]
pub fn atomic_sub<T: Num>(target: Elem<T>, value: impl IntoVal<T>) -> Val<T> {
    let _op = op_scope("atomic_sub");
    let neg = if T::DTYPE.is_float() { negate(value.into_val()) } else { Val::constant(T::ZERO) - value.into_val() };
    atomic_rmw(target, AtomicOp::Add, neg, Ordering::Relaxed, Scope::Device)
}

/// `-v` for any numeric type (`ops::Neg` is only implemented for the signed ones).
#[track_caller]
fn negate<T: Num>(v: Val<T>) -> Val<T> {
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Unary { dst, op: UnOp::Neg, a: v.id() }, current_loc());
    Val::from_id(dst)
}

/// Compare and swap: writes `desired` when `x == expected`; returns the old value (integers only).
#[track_caller]
pub fn atomic_cas<T: Int>(target: Elem<T>, expected: impl IntoVal<T>, desired: impl IntoVal<T>) -> Val<T> {
    let _op = op_scope("atomic_cas");
    atomic_cas_with(target, expected, desired, Ordering::Relaxed, Scope::Device)
}

/// Compare and swap with an explicit ordering and scope.
#[track_caller]
pub fn atomic_cas_with<T: Int>(
    target_elem: Elem<T>,
    expected: impl IntoVal<T>,
    desired: impl IntoVal<T>,
    ordering: Ordering,
    scope: Scope,
) -> Val<T> {
    let loc = current_loc();
    let (e, d) = (expected.into_val(), desired.into_val());
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Cas { dst, place: target_elem.place(), expected: e.id(), desired: d.id(), ordering, scope }, loc);
    Val::from_id(dst)
}
