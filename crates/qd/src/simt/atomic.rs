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
///
/// ```
/// use qd::prelude::*;
/// use qd::ir::{AtomicOp, Ordering, Scope};
/// // A counter shared by one block only: block scope is enough, and cheaper on some GPUs.
/// let k = Kernel::explicit("count", 64, |k| {
///     let counts = k.array::<u32>("counts");
///     let local = block::shared_array::<u32>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || local.set(0, 0u32));
///     block::sync();
///     atomic_rmw(local.at(0), AtomicOp::Add, 1u32, Ordering::Relaxed, Scope::Block);
///     block::sync();
///     if_(t.eq(0), || {
///         atomic_rmw(counts.at(0), AtomicOp::Add, local.get(0), Ordering::Release, Scope::Device);
///     });
/// });
/// let d = Device::cpu();
/// let counts = d.zeros::<u32>(1).unwrap();
/// d.launch_grid(&k, 4, &[counts.arg()]).unwrap();
/// assert_eq!(counts.to_vec().unwrap(), [256]);
/// ```
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
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let x = k.array::<i32>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_add(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(1..=100).collect::<Vec<i32>>()).unwrap();
    /// let x = d.array_from(&[0i32]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [5050]);
    /// ```
    atomic_add, Add, Num);
rmw!(
    /// `x *= y` (a CAS loop on every backend).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<i64>("a");
    ///     let x = k.array::<i64>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_mul(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[2i64; 40]).unwrap();
    /// let x = d.array_from(&[1i64]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [1 << 40]);
    /// ```
    atomic_mul, Mul, Num);
rmw!(
    /// `x = min(x, y)` (floats: minNum, the non-NaN operand wins).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let x = k.array::<f32>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_min(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(0..64).map(|v| (v as f32 - 20.0).abs()).collect::<Vec<f32>>()).unwrap();
    /// let x = d.array_from(&[f32::INFINITY]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [0.0]);
    /// ```
    atomic_min, Min, Num);
rmw!(
    /// `x = max(x, y)`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let x = k.array::<u64>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_max(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(0..64).map(|v| v * 3 % 50).collect::<Vec<u64>>()).unwrap();
    /// let x = d.array_from(&[0u64]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [49]);
    /// ```
    atomic_max, Max, Num);
rmw!(
    /// `x &= y` (integers only: a float is a compile error).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<u32>("a");
    ///     let x = k.array::<u32>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_and(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(0..32).map(|b| !(1u32 << b)).collect::<Vec<u32>>()).unwrap();
    /// let x = d.array_from(&[u32::MAX]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [0]);
    /// ```
    atomic_and, And, Int);
rmw!(
    /// `x |= y`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<u32>("a");
    ///     let x = k.array::<u32>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_or(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(0..32).map(|b| 1u32 << b).collect::<Vec<u32>>()).unwrap();
    /// let x = d.array_from(&[0u32]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [u32::MAX]);
    /// ```
    atomic_or, Or, Int);
rmw!(
    /// `x ^= y`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("k", 64, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let x = k.array::<i32>("x");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_xor(x.at(0), a.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[5i32; 7]).unwrap();
    /// let x = d.array_from(&[0i32]).unwrap();
    /// d.launch(&k, &[a.arg(), x.arg()]).unwrap();
    /// assert_eq!(x.to_vec().unwrap(), [5]); // an odd number of 5s
    /// ```
    atomic_xor, Xor, Int);
rmw!(
    /// `x = y`, returning the old value.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Each thread swaps its value in and keeps the one it took out: nothing is lost.
    /// let k = Kernel::range("swap", 64, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let slot = k.array::<i32>("slot");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, atomic_exchange(slot.at(0), a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&(1..=64).collect::<Vec<i32>>()).unwrap();
    /// let slot = d.array_from(&[0i32]).unwrap();
    /// d.launch(&k, &[a.arg(), slot.arg()]).unwrap();
    /// let mut all = a.to_vec().unwrap();
    /// all.push(slot.to_vec().unwrap()[0]);
    /// all.sort();
    /// assert_eq!(all, (0..=64).collect::<Vec<i32>>());
    /// ```
    atomic_exchange, Exchange, Num);

/// `x -= y`: rewritten to `atomic_add(x, -y)` (seed 003; wrapping negation for integers).
///
/// Floats use a true negation, not `0 - y`: the two differ for signed zeros (`-0.0 - +0.0` is
/// `-0.0`, while `-0.0 + (0 - 0.0)` would be `+0.0`).
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("spend", 64, |k| {
///     let budget = k.array::<f64>("budget");
///     let cost = k.array::<f64>("cost");
///     k.parallel_for(0, cost.len(), |i| {
///         atomic_sub(budget.at(0), cost.get(i));
///     });
/// });
/// let d = Device::cpu();
/// let budget = d.array_from(&[100.0f64]).unwrap();
/// let cost = d.array_from(&[0.25f64; 64]).unwrap();
/// d.launch(&k, &[budget.arg(), cost.arg()]).unwrap();
/// assert_eq!(budget.to_vec().unwrap(), [84.0]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // A lock-free maximum of f32 values through their bits (positive floats order like their bits).
/// let k = Kernel::range("fmax", 64, |k| {
///     let a = k.array::<f32>("a");
///     let best = k.array::<u32>("best");
///     k.parallel_for(0, a.len(), |i| {
///         let mine = a.get(i).bit_cast::<u32>();
///         let seen = var(best.get(0));
///         while_(
///             || seen.get().lt(mine),
///             || seen.set(atomic_cas(best.at(0), seen.get(), mine)), // retry with what was there
///         );
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..128).map(|x| (x * 37 % 101) as f32 * 0.5).collect::<Vec<_>>()).unwrap();
/// let best = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[a.arg(), best.arg()]).unwrap();
/// assert_eq!(f32::from_bits(best.to_vec().unwrap()[0]), 50.0);
/// ```
#[track_caller]
pub fn atomic_cas<T: Int>(target: Elem<T>, expected: impl IntoVal<T>, desired: impl IntoVal<T>) -> Val<T> {
    let _op = op_scope("atomic_cas");
    atomic_cas_with(target, expected, desired, Ordering::Relaxed, Scope::Device)
}

/// Compare and swap with an explicit ordering and scope.
///
/// ```
/// use qd::prelude::*;
/// use qd::ir::{Ordering, Scope};
/// // A spin lock around a non-atomic read-modify-write: acquire to take it, release to give it back.
/// let k = Kernel::explicit("locked", 32, |k| {
///     let lock = k.array::<u32>("lock");
///     let total = k.array::<u32>("total");
///     if_(block::thread_idx().eq(0), || {
///         while_(|| atomic_cas_with(lock.at(0), 0u32, 1u32, Ordering::Acquire, Scope::Device).ne(0u32), || {});
///         total.set(0, total.get(0) + 1u32);
///         atomic_cas_with(lock.at(0), 1u32, 0u32, Ordering::Release, Scope::Device);
///     });
/// });
/// let d = Device::cpu();
/// let (lock, total) = (d.zeros::<u32>(1).unwrap(), d.zeros::<u32>(1).unwrap());
/// d.launch_grid(&k, 16, &[lock.arg(), total.arg()]).unwrap();
/// assert_eq!(total.to_vec().unwrap(), [16]);
/// ```
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
