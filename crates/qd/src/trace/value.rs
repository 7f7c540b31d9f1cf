//! Typed handles to traced values and the arithmetic on them.

use super::scalar::{Float, Int, Num, Scalar, Signed};
use super::{emit, with};
use crate::ir::{BinOp, CmpOp, Const, DType, InstKind, SrcLoc, UnOp, ValueId};
use std::marker::PhantomData;
use std::ops;

/// A traced value of type `T` (a register on the device).
///
/// Arithmetic follows D5 on every backend: integers wrap, shift amounts are taken modulo the width,
/// float add/mul are never contracted into FMA.
pub struct Val<T> {
    id: ValueId,
    generation: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for Val<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Val<T> {}

impl<T> std::fmt::Debug for Val<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.id.0)
    }
}

impl<T: Scalar> Val<T> {
    pub(crate) fn from_id(id: ValueId) -> Val<T> {
        let generation = with(|s| s.generation);
        Val { id, generation, _t: PhantomData }
    }

    /// The IR value id (checked to belong to the trace in progress).
    #[track_caller]
    pub fn id(self) -> ValueId {
        let loc = SrcLoc::caller();
        with(|s| {
            if s.generation != self.generation {
                s.fail("value", loc, "uses a value from another kernel's trace".into());
                // Any valid id keeps the trace going until the error is reported.
                if s.kernel.values.is_empty() {
                    s.new_value(T::DTYPE);
                }
                return ValueId(0);
            }
            self.id
        })
    }

    /// A constant.
    #[track_caller]
    pub fn constant(x: T) -> Val<T> {
        let dst = new_value(T::DTYPE);
        emit(InstKind::Const { dst, value: Const { dtype: T::DTYPE, bits: x.to_bits() } });
        Val::from_id(dst)
    }

    /// Converts to `U` with D5 semantics (float → int saturates, NaN → 0; int → int wraps).
    #[track_caller]
    pub fn cast<U: Scalar>(self) -> Val<U> {
        cast(self)
    }

    /// Reinterprets the bits as `U` (same width).
    #[track_caller]
    pub fn bit_cast<U: Scalar>(self) -> Val<U> {
        bit_cast(self)
    }

    /// `self == other` (floats: IEEE, NaN unequal, +0 == -0).
    #[track_caller]
    #[allow(clippy::should_implement_trait)]
    pub fn eq(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Eq, self, other.into_val())
    }
    /// `self != other`.
    #[track_caller]
    #[allow(clippy::should_implement_trait)]
    pub fn ne(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Ne, self, other.into_val())
    }
    /// `self < other`.
    #[track_caller]
    pub fn lt(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Lt, self, other.into_val())
    }
    /// `self <= other`.
    #[track_caller]
    pub fn le(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Le, self, other.into_val())
    }
    /// `self > other`.
    #[track_caller]
    pub fn gt(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Gt, self, other.into_val())
    }
    /// `self >= other`.
    #[track_caller]
    pub fn ge(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Ge, self, other.into_val())
    }
}

impl<T: Num> Val<T> {
    /// Minimum (floats: minNum, NaN-suppressing).
    #[track_caller]
    pub fn min(self, other: impl IntoVal<T>) -> Val<T> {
        binary(BinOp::Min, self, other.into_val())
    }
    /// Maximum (floats: maxNum).
    #[track_caller]
    pub fn max(self, other: impl IntoVal<T>) -> Val<T> {
        binary(BinOp::Max, self, other.into_val())
    }
    /// True when non-zero (D: a predicate is true when `!= 0`).
    #[track_caller]
    pub fn nonzero(self) -> Val<bool> {
        self.ne(T::ZERO)
    }
}

impl<T: Signed> Val<T> {
    /// Absolute value (integers wrap at the minimum).
    #[track_caller]
    pub fn abs(self) -> Val<T> {
        unary(UnOp::Abs, self)
    }
}

impl<T: Float> Val<T> {
    /// Square root.
    #[track_caller]
    pub fn sqrt(self) -> Val<T> {
        unary(UnOp::Sqrt, self)
    }
}

impl<T: Int> Val<T> {
    /// Number of set bits (32- and 64-bit operands).
    #[track_caller]
    pub fn popc(self) -> Val<u32> {
        bit_count(UnOp::Popc, self)
    }
    /// Leading zeros (32- and 64-bit operands).
    #[track_caller]
    pub fn clz(self) -> Val<u32> {
        bit_count(UnOp::Clz, self)
    }
}

impl Val<bool> {
    /// As an i32 0 or 1.
    #[track_caller]
    pub fn to_i32(self) -> Val<i32> {
        cast(self)
    }
}

#[track_caller]
fn bit_count<T: Int>(op: UnOp, a: Val<T>) -> Val<u32> {
    if !matches!(T::DTYPE.bits(), 32 | 64) {
        super::trace_error(
            if op == UnOp::Popc { "popc" } else { "clz" },
            format!("popc/clz take 32- or 64-bit integers, got {}", T::DTYPE),
        );
    }
    let dst = new_value(DType::U32);
    emit(InstKind::Unary { dst, op, a: a.id() });
    Val::from_id(dst)
}

/// Conversion into a traced value: a `Val<T>` itself or a plain `T` constant.
#[diagnostic::on_unimplemented(
    message = "expected a `{T}` value (a `Val<{T}>` device value or a `{T}` constant), found `{Self}`",
    label = "not a `{T}`",
    note = "device values of different types do not mix: cast one first (`x as {T}` in kernel code, `x.cast::<{T}>()` in the builder)"
)]
pub trait IntoVal<T> {
    /// Converts, emitting a constant when needed.
    #[track_caller]
    fn into_val(self) -> Val<T>;
}

impl<T: Scalar> IntoVal<T> for Val<T> {
    fn into_val(self) -> Val<T> {
        self
    }
}

impl<T: Scalar> IntoVal<T> for T {
    #[track_caller]
    fn into_val(self) -> Val<T> {
        Val::constant(self)
    }
}

/// Anything usable as an array index or lane id: integer values and plain integers.
pub trait IntoIndex {
    /// The index as an IR value.
    #[track_caller]
    fn into_index(self) -> ValueId;
}

impl<T: Int> IntoIndex for Val<T> {
    #[track_caller]
    fn into_index(self) -> ValueId {
        self.id()
    }
}

macro_rules! const_index {
    ($($t:ty),*) => {$(
        impl IntoIndex for $t {
            #[track_caller]
            fn into_index(self) -> ValueId {
                Val::constant(self).id()
            }
        }
    )*};
}
const_index!(i32, u32, i64, u64);

impl IntoIndex for usize {
    #[track_caller]
    fn into_index(self) -> ValueId {
        Val::constant(self as u64).id()
    }
}

#[track_caller]
pub(crate) fn new_value(d: DType) -> ValueId {
    with(|s| s.new_value(d))
}

#[track_caller]
fn binary<T: Scalar>(op: BinOp, a: Val<T>, b: Val<T>) -> Val<T> {
    let dst = new_value(T::DTYPE);
    emit(InstKind::Binary { dst, op, a: a.id(), b: b.id() });
    Val::from_id(dst)
}

#[track_caller]
fn unary<T: Scalar>(op: UnOp, a: Val<T>) -> Val<T> {
    let dst = new_value(T::DTYPE);
    emit(InstKind::Unary { dst, op, a: a.id() });
    Val::from_id(dst)
}

#[track_caller]
fn cmp<T: Scalar>(op: CmpOp, a: Val<T>, b: Val<T>) -> Val<bool> {
    let dst = new_value(DType::Bool);
    emit(InstKind::Cmp { dst, op, a: a.id(), b: b.id() });
    Val::from_id(dst)
}

/// Converts `v` to `U` with D5 semantics.
#[track_caller]
pub fn cast<T: Scalar, U: Scalar>(v: Val<T>) -> Val<U> {
    if T::DTYPE == U::DTYPE {
        return Val::from_id(v.id());
    }
    let dst = new_value(U::DTYPE);
    emit(InstKind::Cast { dst, a: v.id() });
    Val::from_id(dst)
}

/// Reinterprets the bits of `v` as `U`; the widths must match.
#[track_caller]
pub fn bit_cast<T: Scalar, U: Scalar>(v: Val<T>) -> Val<U> {
    if T::DTYPE.bits() != U::DTYPE.bits() {
        super::trace_error("bit_cast", format!("bit_cast from {} to {} changes the width", T::DTYPE, U::DTYPE));
    }
    let dst = new_value(U::DTYPE);
    emit(InstKind::BitCast { dst, a: v.id() });
    Val::from_id(dst)
}

/// `cond ? a : b`, evaluated on every lane without branching.
#[track_caller]
pub fn select<T: Scalar>(cond: impl IntoVal<bool>, a: impl IntoVal<T>, b: impl IntoVal<T>) -> Val<T> {
    let (c, a, b) = (cond.into_val(), a.into_val(), b.into_val());
    let dst = new_value(T::DTYPE);
    emit(InstKind::Select { dst, cond: c.id(), a: a.id(), b: b.id() });
    Val::from_id(dst)
}

/// Fused multiply-add `a * b + c` (the only way to get an FMA, D5).
#[track_caller]
pub fn fma<T: Float>(a: impl IntoVal<T>, b: impl IntoVal<T>, c: impl IntoVal<T>) -> Val<T> {
    let (a, b, c) = (a.into_val(), b.into_val(), c.into_val());
    let dst = new_value(T::DTYPE);
    emit(InstKind::Fma { dst, a: a.id(), b: b.id(), c: c.id() });
    Val::from_id(dst)
}

macro_rules! bin_trait {
    ($trait:ident, $method:ident, $op:ident, $bound:ident) => {
        impl<T: $bound, R: IntoVal<T>> ops::$trait<R> for Val<T> {
            type Output = Val<T>;
            #[track_caller]
            fn $method(self, rhs: R) -> Val<T> {
                binary(BinOp::$op, self, rhs.into_val())
            }
        }
    };
}
bin_trait!(Add, add, Add, Num);
bin_trait!(Sub, sub, Sub, Num);
bin_trait!(Mul, mul, Mul, Num);
bin_trait!(Div, div, Div, Num);
bin_trait!(Rem, rem, Rem, Num);
bin_trait!(Shl, shl, Shl, Int);
bin_trait!(Shr, shr, Shr, Int);
bin_trait!(BitAnd, bitand, And, Int);
bin_trait!(BitOr, bitor, Or, Int);
bin_trait!(BitXor, bitxor, Xor, Int);

impl<R: IntoVal<bool>> ops::BitAnd<R> for Val<bool> {
    type Output = Val<bool>;
    #[track_caller]
    fn bitand(self, rhs: R) -> Val<bool> {
        binary(BinOp::And, self, rhs.into_val())
    }
}
impl<R: IntoVal<bool>> ops::BitOr<R> for Val<bool> {
    type Output = Val<bool>;
    #[track_caller]
    fn bitor(self, rhs: R) -> Val<bool> {
        binary(BinOp::Or, self, rhs.into_val())
    }
}
impl<R: IntoVal<bool>> ops::BitXor<R> for Val<bool> {
    type Output = Val<bool>;
    #[track_caller]
    fn bitxor(self, rhs: R) -> Val<bool> {
        binary(BinOp::Xor, self, rhs.into_val())
    }
}
impl ops::Not for Val<bool> {
    type Output = Val<bool>;
    #[track_caller]
    fn not(self) -> Val<bool> {
        unary(UnOp::Not, self)
    }
}

impl<T: Signed> ops::Neg for Val<T> {
    type Output = Val<T>;
    #[track_caller]
    fn neg(self) -> Val<T> {
        unary(UnOp::Neg, self)
    }
}

/// Bitwise not for integers (`!x`).
macro_rules! int_not {
    ($($t:ty),*) => {$(
        impl ops::Not for Val<$t> {
            type Output = Val<$t>;
            #[track_caller]
            fn not(self) -> Val<$t> {
                unary(UnOp::Not, self)
            }
        }
    )*};
}
int_not!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `literal op value` for the common scalar types.
macro_rules! lhs_scalar {
    ($($t:ty),*) => {$(
        impl ops::Add<Val<$t>> for $t {
            type Output = Val<$t>;
            #[track_caller]
            fn add(self, rhs: Val<$t>) -> Val<$t> { binary(BinOp::Add, Val::constant(self), rhs) }
        }
        impl ops::Sub<Val<$t>> for $t {
            type Output = Val<$t>;
            #[track_caller]
            fn sub(self, rhs: Val<$t>) -> Val<$t> { binary(BinOp::Sub, Val::constant(self), rhs) }
        }
        impl ops::Mul<Val<$t>> for $t {
            type Output = Val<$t>;
            #[track_caller]
            fn mul(self, rhs: Val<$t>) -> Val<$t> { binary(BinOp::Mul, Val::constant(self), rhs) }
        }
        impl ops::Div<Val<$t>> for $t {
            type Output = Val<$t>;
            #[track_caller]
            fn div(self, rhs: Val<$t>) -> Val<$t> { binary(BinOp::Div, Val::constant(self), rhs) }
        }
    )*};
}
lhs_scalar!(i32, u32, i64, u64, f32, f64);

macro_rules! assign_ops {
    ($($trait:ident, $method:ident, $op:tt, $bound:ident);*) => {$(
        impl<T: $bound, R: IntoVal<T>> ops::$trait<R> for Val<T> {
            #[track_caller]
            fn $method(&mut self, rhs: R) {
                *self = *self $op rhs.into_val();
            }
        }
    )*};
}
assign_ops!(AddAssign, add_assign, +, Num; SubAssign, sub_assign, -, Num; MulAssign, mul_assign, *, Num);
