//! Expressions of macro kernels: comparisons, `&&`/`||`, `as`, indexing and device values.
//!
//! Rust's `<`, `==` and `&&` return `bool`, so `#[qd::kernel]` rewrites them into calls of these
//! functions, which return a `bool` when both sides are compile-time values and a `Val<bool>`
//! when either side is a device value. Arithmetic operators stay as written: `Val` implements them.

use crate::trace::{if_else, var, Array, Elem, IntoIndex, IntoVal, Scalar, Val};

/// `==` and `!=` in kernel code (see [`eq`]).
#[diagnostic::on_unimplemented(
    message = "`==` / `!=` in kernel code cannot compare `{Self}` with `{R}`",
    label = "both sides must be the same scalar type, as device values (`Val<T>`) or compile-time values",
    note = "a device value and a compile-time value of another type need a cast first: `x as f32`"
)]
pub trait CmpEq<R> {
    /// `bool` for two compile-time values, `Val<bool>` otherwise.
    type Output;
    /// `self == rhs`, or `self != rhs` when `ne`.
    #[track_caller]
    fn cmp_eq(self, rhs: R, ne: bool) -> Self::Output;
}

/// `<`, `<=`, `>` and `>=` in kernel code (see [`lt`]).
#[diagnostic::on_unimplemented(
    message = "`<`, `<=`, `>`, `>=` in kernel code cannot compare `{Self}` with `{R}`",
    label = "both sides must be the same scalar type, as device values (`Val<T>`) or compile-time values",
    note = "a device value and a compile-time value of another type need a cast first: `x as f32`"
)]
pub trait CmpOrd<R> {
    /// `bool` for two compile-time values, `Val<bool>` otherwise.
    type Output;
    /// The comparison `op` of `self` and `rhs`.
    #[track_caller]
    fn cmp_ord(self, rhs: R, op: Ord) -> Self::Output;
}

/// The ordering comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ord {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl<T: Scalar, R: IntoVal<T>> CmpEq<R> for Val<T> {
    type Output = Val<bool>;
    fn cmp_eq(self, rhs: R, ne: bool) -> Val<bool> {
        if ne {
            self.ne(rhs)
        } else {
            self.eq(rhs)
        }
    }
}

impl<T: Scalar> CmpEq<Val<T>> for T {
    type Output = Val<bool>;
    fn cmp_eq(self, rhs: Val<T>, ne: bool) -> Val<bool> {
        let lhs = Val::constant(self);
        if ne {
            lhs.ne(rhs)
        } else {
            lhs.eq(rhs)
        }
    }
}

impl<T: PartialEq> CmpEq<T> for T {
    type Output = bool;
    fn cmp_eq(self, rhs: T, ne: bool) -> bool {
        (self == rhs) != ne
    }
}

impl<T: Scalar, R: IntoVal<T>> CmpOrd<R> for Val<T> {
    type Output = Val<bool>;
    fn cmp_ord(self, rhs: R, op: Ord) -> Val<bool> {
        match op {
            Ord::Lt => self.lt(rhs),
            Ord::Le => self.le(rhs),
            Ord::Gt => self.gt(rhs),
            Ord::Ge => self.ge(rhs),
        }
    }
}

impl<T: Scalar> CmpOrd<Val<T>> for T {
    type Output = Val<bool>;
    fn cmp_ord(self, rhs: Val<T>, op: Ord) -> Val<bool> {
        Val::constant(self).cmp_ord(rhs, op)
    }
}

impl<T: PartialOrd> CmpOrd<T> for T {
    type Output = bool;
    fn cmp_ord(self, rhs: T, op: Ord) -> bool {
        match op {
            Ord::Lt => self < rhs,
            Ord::Le => self <= rhs,
            Ord::Gt => self > rhs,
            Ord::Ge => self >= rhs,
        }
    }
}

/// `a == b` in kernel code.
#[track_caller]
pub fn eq<A: CmpEq<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_eq(b, false)
}

/// `a != b` in kernel code.
#[track_caller]
pub fn ne<A: CmpEq<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_eq(b, true)
}

/// `a < b` in kernel code: a `bool` for two compile-time values, else a `Val<bool>`.
#[track_caller]
pub fn lt<A: CmpOrd<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_ord(b, Ord::Lt)
}

/// `a <= b` in kernel code.
#[track_caller]
pub fn le<A: CmpOrd<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_ord(b, Ord::Le)
}

/// `a > b` in kernel code.
#[track_caller]
pub fn gt<A: CmpOrd<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_ord(b, Ord::Gt)
}

/// `a >= b` in kernel code.
#[track_caller]
pub fn ge<A: CmpOrd<B>, B>(a: A, b: B) -> A::Output {
    a.cmp_ord(b, Ord::Ge)
}

/// `&&` and `||` in kernel code, evaluating the right side only where it is needed.
#[diagnostic::on_unimplemented(
    message = "`&&` / `||` in kernel code needs `bool` or `Val<bool>` operands, not `{Self}` and `{R}`",
    label = "compare first, e.g. `x != 0`"
)]
pub trait Logic<R> {
    /// `bool` for two compile-time operands, else `Val<bool>`.
    type Output;
    /// `self && rhs()` (or `self || rhs()` when `or`): `rhs` runs only where `self` does not
    /// decide the result; for a device `self`, under an `if` on it.
    #[track_caller]
    fn logic(self, rhs: impl FnOnce() -> R, or: bool) -> Self::Output;
    /// The same without a branch, for a right side with no loads, calls or side effects.
    #[track_caller]
    fn logic_pure(self, rhs: R, or: bool) -> Self::Output;
}

impl Logic<bool> for bool {
    type Output = bool;
    fn logic(self, rhs: impl FnOnce() -> bool, or: bool) -> bool {
        if or {
            self || rhs()
        } else {
            self && rhs()
        }
    }
    fn logic_pure(self, rhs: bool, or: bool) -> bool {
        if or {
            self || rhs
        } else {
            self && rhs
        }
    }
}

impl Logic<Val<bool>> for bool {
    type Output = Val<bool>;
    #[track_caller]
    fn logic(self, rhs: impl FnOnce() -> Val<bool>, or: bool) -> Val<bool> {
        // A compile-time left side decides at trace time whether the right side is traced at all.
        if self == or {
            Val::constant(self)
        } else {
            rhs()
        }
    }
    #[track_caller]
    fn logic_pure(self, rhs: Val<bool>, or: bool) -> Val<bool> {
        self.logic(|| rhs, or)
    }
}

impl<R: IntoVal<bool>> Logic<R> for Val<bool> {
    type Output = Val<bool>;
    #[track_caller]
    fn logic(self, rhs: impl FnOnce() -> R, or: bool) -> Val<bool> {
        // The result starts as the left side and takes the right side only where the left one
        // does not decide it, so `i < n && a[i] > 0` never loads `a[i]` where `i >= n`.
        let result = var(self);
        if or {
            if_else(self, || {}, || result.set(rhs().into_val()));
        } else {
            if_else(self, || result.set(rhs().into_val()), || {});
        }
        result.get()
    }
    #[track_caller]
    fn logic_pure(self, rhs: R, or: bool) -> Val<bool> {
        if or {
            self | rhs.into_val()
        } else {
            self & rhs.into_val()
        }
    }
}

/// `a && b` in kernel code; `b` is the right side as a closure, run only where `a` holds.
#[track_caller]
pub fn and<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.logic(b, false)
}

/// `a || b` in kernel code; `b` runs only where `a` does not hold.
#[track_caller]
pub fn or<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.logic(b, true)
}

/// `a && b` for a right side without loads, calls or side effects: both sides are evaluated and
/// combined without a branch (the same result, no divergence).
#[track_caller]
pub fn and_pure<A: Logic<B>, B>(a: A, b: B) -> A::Output {
    a.logic_pure(b, false)
}

/// `a || b` for a right side without loads, calls or side effects.
#[track_caller]
pub fn or_pure<A: Logic<B>, B>(a: A, b: B) -> A::Output {
    a.logic_pure(b, true)
}

/// `x as U` in kernel code.
#[diagnostic::on_unimplemented(
    message = "`{Self} as {U}` is not a cast kernel code can make",
    label = "device values (`Val<T>`) cast to any scalar type; compile-time values cast between primitive numbers"
)]
pub trait CastTo<U> {
    /// `Val<U>` for a device value, `U` for a compile-time number.
    type Output;
    /// The cast (D5: float → int saturates, NaN → 0; int → int wraps).
    #[track_caller]
    fn cast_to(self) -> Self::Output;
}

impl<T: Scalar, U: Scalar> CastTo<U> for Val<T> {
    type Output = Val<U>;
    fn cast_to(self) -> Val<U> {
        self.cast()
    }
}

macro_rules! host_casts {
    ($($from:ty),*) => {$(
        host_casts!(@to $from; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, usize, isize);
    )*};
    (@to $from:ty; $($to:ty),*) => {$(
        impl CastTo<$to> for $from {
            type Output = $to;
            fn cast_to(self) -> $to {
                self as $to
            }
        }
    )*};
}
host_casts!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, usize, isize);

macro_rules! bool_casts {
    ($($to:ty),*) => {$(
        impl CastTo<$to> for bool {
            type Output = $to;
            fn cast_to(self) -> $to {
                self as $to
            }
        }
    )*};
}
bool_casts!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

/// `x as U` in kernel code.
#[track_caller]
pub fn cast<U, X: CastTo<U>>(x: X) -> X::Output {
    x.cast_to()
}

/// `a[i]` read in kernel code: a load from a device array, or a compile-time table's element.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be indexed with `{I}` in kernel code",
    label = "device arrays take integer indices (device or compile-time); compile-time tables take `usize`"
)]
pub trait Load<I> {
    /// The element: `Val<T>` for a device array.
    type Output;
    /// Reads element `i`.
    #[track_caller]
    fn load(&self, i: I) -> Self::Output;
}

impl<T: Scalar, I: IntoIndex> Load<I> for Array<T> {
    type Output = Val<T>;
    fn load(&self, i: I) -> Val<T> {
        self.get(i)
    }
}

impl<T: Clone> Load<usize> for [T] {
    type Output = T;
    fn load(&self, i: usize) -> T {
        self[i].clone()
    }
}

impl<T: Clone, const N: usize> Load<usize> for [T; N] {
    type Output = T;
    fn load(&self, i: usize) -> T {
        self[i].clone()
    }
}

impl<T: Clone> Load<usize> for Vec<T> {
    type Output = T;
    fn load(&self, i: usize) -> T {
        self[i].clone()
    }
}

impl<X: Load<I> + ?Sized, I> Load<I> for &X {
    type Output = X::Output;
    #[track_caller]
    fn load(&self, i: I) -> X::Output {
        (**self).load(i)
    }
}

/// `a[i]` in kernel code (a load from a device array).
#[track_caller]
pub fn index<A: Load<I> + ?Sized, I>(a: &A, i: I) -> A::Output {
    a.load(i)
}

/// `a[i] = v` in kernel code: a store into a device array.
#[track_caller]
pub fn store<T: Scalar>(a: &Array<T>, i: impl IntoIndex, v: impl IntoVal<T>) {
    a.set(i, v)
}

/// `&a[i]` in kernel code: the element as the location of an atomic or `volatile_load`.
#[track_caller]
pub fn place<T: Scalar>(a: &Array<T>, i: impl IntoIndex) -> Elem<T> {
    a.at(i)
}

/// A device value: a compile-time scalar becomes a constant, a `Val` stays itself (the values a
/// `let mut` rebinds).
#[track_caller]
pub fn dev<T: Scalar>(v: impl IntoVal<T>) -> Val<T> {
    v.into_val()
}

/// The value of a `#[qd::func]` body or branch converted to the function's declared result.
#[diagnostic::on_unimplemented(
    message = "kernel code cannot turn `{Self}` into `{O}`",
    label = "expected a value of the declared type"
)]
pub trait ToDev<O> {
    /// Converts (a compile-time scalar becomes a constant).
    #[track_caller]
    fn to_dev(self) -> O;
}

impl<T: Scalar> ToDev<Val<T>> for Val<T> {
    fn to_dev(self) -> Val<T> {
        self
    }
}

impl<T: Scalar> ToDev<Val<T>> for T {
    #[track_caller]
    fn to_dev(self) -> Val<T> {
        Val::constant(self)
    }
}

impl ToDev<()> for () {
    fn to_dev(self) {}
}

macro_rules! tuple_to_dev {
    ($(($($a:ident $o:ident $i:tt),*)),*) => {$(
        impl<$($a: ToDev<$o>, $o),*> ToDev<($($o,)*)> for ($($a,)*) {
            #[track_caller]
            fn to_dev(self) -> ($($o,)*) {
                ($(self.$i.to_dev(),)*)
            }
        }
    )*};
}
tuple_to_dev!((A0 O0 0, A1 O1 1), (A0 O0 0, A1 O1 1, A2 O2 2), (A0 O0 0, A1 O1 1, A2 O2 2, A3 O3 3));

/// Converts `v` to the declared type `O` (see [`ToDev`]).
#[track_caller]
pub fn to_dev<O, V: ToDev<O>>(v: V) -> O {
    v.to_dev()
}
