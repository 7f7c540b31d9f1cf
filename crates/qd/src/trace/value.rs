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
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Each traced value is one IR value.
    /// let k = Kernel::explicit("ids", 32, |_| {
    ///     let a = block::thread_idx();
    ///     let b = a + 1;
    ///     assert_ne!(a.id(), b.id());
    /// });
    /// Device::cpu().trace(&k).unwrap();
    /// ```
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
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("consts", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let half = Val::constant(0.5f32);
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * half));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[4.0f32, 6.0]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn constant(x: T) -> Val<T> {
        let dst = new_value(T::DTYPE);
        emit(InstKind::Const { dst, value: Const { dtype: T::DTYPE, bits: x.to_bits() } });
        Val::from_id(dst)
    }

    /// Converts to `U` with D5 semantics (float → int saturates, NaN → 0; int → int wraps).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Float to integer truncates and saturates; NaN gives 0 (Rust's `as`).
    /// let k = Kernel::range("to_int", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let out = k.array::<u8>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).cast::<u8>()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[2.9f32, -1.0, 300.0, f32::NAN]).unwrap();
    /// let out = d.zeros::<u8>(4).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [2, 0, 255, 0]);
    /// ```
    #[track_caller]
    pub fn cast<U: Scalar>(self) -> Val<U> {
        cast(self)
    }

    /// Reinterprets the bits as `U` (same width).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("bits", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let out = k.array::<u32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).bit_cast::<u32>()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1.0f32, -0.0]).unwrap();
    /// let out = d.zeros::<u32>(2).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0x3F80_0000, 0x8000_0000]);
    /// ```
    #[track_caller]
    pub fn bit_cast<U: Scalar>(self) -> Val<U> {
        bit_cast(self)
    }

    /// `self == other` (floats: IEEE, NaN unequal, +0 == -0).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("eq", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).eq(0.0f32).to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0.0f32, -0.0, f32::NAN, 1.0]).unwrap();
    /// let out = d.zeros::<i32>(4).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1, 1, 0, 0]); // +0 == -0; NaN equals nothing
    /// ```
    #[track_caller]
    #[allow(clippy::should_implement_trait)]
    pub fn eq(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Eq, self, other.into_val())
    }
    /// `self != other`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("ne", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).ne(3).to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[3i32, 4]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 1]);
    /// ```
    #[track_caller]
    #[allow(clippy::should_implement_trait)]
    pub fn ne(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Ne, self, other.into_val())
    }
    /// `self < other`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("lt", 32, |k| {
    ///     let a = k.array::<u32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).lt(10u32).cast::<u32>()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[9u32, 10, u32::MAX]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1, 0, 0]); // unsigned comparison
    /// ```
    #[track_caller]
    pub fn lt(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Lt, self, other.into_val())
    }
    /// `self <= other`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("le", 32, |k| {
    ///     let a = k.array::<i64>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, select(a.get(i).le(0i64), 0i64, a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[-5i64, 0, 5]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 0, 5]);
    /// ```
    #[track_caller]
    pub fn le(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Le, self, other.into_val())
    }
    /// `self > other`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("gt", 32, |k| {
    ///     let a = k.array::<f64>("a");
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).gt(0.5f64).to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0.25f64, 0.75]).unwrap();
    /// let out = d.zeros::<i32>(2).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0, 1]);
    /// ```
    #[track_caller]
    pub fn gt(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Gt, self, other.into_val())
    }
    /// `self >= other`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("ge", 32, |k| {
    ///     let a = k.array::<i8>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).ge(-1i8).cast::<i8>()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[-2i8, -1, 0]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 1, 1]);
    /// ```
    #[track_caller]
    pub fn ge(self, other: impl IntoVal<T>) -> Val<bool> {
        cmp(CmpOp::Ge, self, other.into_val())
    }
}

impl<T: Num> Val<T> {
    /// Minimum (floats: minNum, NaN-suppressing).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Floats: a NaN operand loses to a number.
    /// let k = Kernel::range("min", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).min(1.0f32)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0.5f32, 2.0, f32::NAN]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0.5, 1.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn min(self, other: impl IntoVal<T>) -> Val<T> {
        binary(BinOp::Min, self, other.into_val())
    }
    /// Maximum (floats: maxNum).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("relu", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).max(0)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[-7i32, 7]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 7]);
    /// ```
    #[track_caller]
    pub fn max(self, other: impl IntoVal<T>) -> Val<T> {
        binary(BinOp::Max, self, other.into_val())
    }
    /// True when non-zero (D: a predicate is true when `!= 0`).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("nz", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).nonzero().to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0u64, 1 << 40]).unwrap();
    /// let out = d.zeros::<i32>(2).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0, 1]);
    /// ```
    #[track_caller]
    pub fn nonzero(self) -> Val<bool> {
        self.ne(T::ZERO)
    }
}

impl<T: Signed> Val<T> {
    /// Absolute value (integers wrap at the minimum).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Integers wrap at the minimum, as Rust's wrapping_abs.
    /// let k = Kernel::range("abs", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).abs()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[-3i32, 3, i32::MIN]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [3, 3, i32::MIN]);
    /// ```
    #[track_caller]
    pub fn abs(self) -> Val<T> {
        unary(UnOp::Abs, self)
    }
}

impl<T: Float> Val<T> {
    /// Square root.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("norm", 32, |k| {
    ///     let xy = k.array::<f64>("xy");
    ///     let out = k.array::<f64>("out");
    ///     k.parallel_for(0, out.len(), |i| {
    ///         let (x, y) = (xy.get(2 * i), xy.get(2 * i + 1));
    ///         out.set(i, (x * x + y * y).sqrt());
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let xy = d.array_from(&[3.0f64, 4.0, 5.0, 12.0]).unwrap();
    /// let out = d.zeros::<f64>(2).unwrap();
    /// d.launch(&k, &[xy.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5.0, 13.0]);
    /// ```
    #[track_caller]
    pub fn sqrt(self) -> Val<T> {
        unary(UnOp::Sqrt, self)
    }
}

impl<T: Int> Val<T> {
    /// Number of set bits (32- and 64-bit operands).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("popc", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let out = k.array::<u32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).popc()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0u64, 0b1011, u64::MAX]).unwrap();
    /// let out = d.zeros::<u32>(3).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0, 3, 64]);
    /// ```
    #[track_caller]
    pub fn popc(self) -> Val<u32> {
        bit_count(UnOp::Popc, self)
    }
    /// Leading zeros (32- and 64-bit operands).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("clz", 32, |k| {
    ///     let a = k.array::<u32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).clz()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1u32, 0x8000_0000, 0]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [31, 0, 32]);
    /// ```
    #[track_caller]
    pub fn clz(self) -> Val<u32> {
        bit_count(UnOp::Clz, self)
    }
}

impl Val<bool> {
    /// As an i32 0 or 1.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("count", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let n = k.array::<i32>("n");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         atomic_add(n.at(0), a.get(i).gt(2).to_i32());
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, 2, 3, 4, 5]).unwrap();
    /// let n = d.zeros::<i32>(1).unwrap();
    /// d.launch(&k, &[a.arg(), n.arg()]).unwrap();
    /// assert_eq!(n.to_vec().unwrap(), [3]);
    /// ```
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
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::trace::IntoVal;
    /// // Library functions take `impl IntoVal<T>`: a traced value or a plain constant.
    /// fn double<T: Num>(v: impl IntoVal<T>) -> Val<T> {
    ///     let v = v.into_val();
    ///     v + v
    /// }
    /// let k = Kernel::range("double", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, double(a.get(i)) + double(100)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, 2]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [202, 204]);
    /// ```
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
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::trace::IntoIndex;
    /// // Any integer value or constant indexes an array: it becomes an i32 IR value.
    /// let k = Kernel::range("swap_pairs", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         let j = i.cast::<u32>() ^ 1u32; // a u32 index
    ///         let _index: qd::ir::ValueId = 1usize.into_index(); // what `get` does with an index
    ///         out.set(i, a.get(j) + a.get(0usize));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[10i32, 20]).unwrap();
    /// let out = d.zeros::<i32>(2).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [30, 20]);
    /// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("widen", 32, |k| {
///     let a = k.array::<i16>("a");
///     let out = k.array::<i64>("out");
///     k.parallel_for(0, a.len(), |i| out.set(i, cast::<i16, i64>(a.get(i)) * 100_000i64));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[-2i16, 30000]).unwrap();
/// let out = d.zeros::<i64>(2).unwrap();
/// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [-200_000, 3_000_000_000]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // The exponent field of an f64.
/// let k = Kernel::range("exponent", 32, |k| {
///     let a = k.array::<f64>("a");
///     let out = k.array::<u64>("out");
///     k.parallel_for(0, a.len(), |i| out.set(i, (bit_cast::<f64, u64>(a.get(i)) >> 52u64) & 0x7FFu64));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[1.0f64, 8.0]).unwrap();
/// let out = d.zeros::<u64>(2).unwrap();
/// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1023, 1026]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("sign", 32, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, select(a.get(i).lt(0.0f32), -1.0f32, 1.0f32)));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[-2.5f32, 0.0, 9.0]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [-1.0, 1.0, 1.0]);
/// ```
#[track_caller]
pub fn select<T: Scalar>(cond: impl IntoVal<bool>, a: impl IntoVal<T>, b: impl IntoVal<T>) -> Val<T> {
    let (c, a, b) = (cond.into_val(), a.into_val(), b.into_val());
    let dst = new_value(T::DTYPE);
    emit(InstKind::Select { dst, cond: c.id(), a: a.id(), b: b.id() });
    Val::from_id(dst)
}

/// Fused multiply-add `a * b + c` (the only way to get an FMA, D5).
///
/// ```
/// use qd::prelude::*;
/// // One rounding instead of two: 0.1 * 10 - 1 is not exactly 0 in f32 when fused.
/// let k = Kernel::range("fma", 32, |k| {
///     let out = k.array::<f32>("out");
///     k.parallel_for(0, out.len(), |i| out.set(i, fma(0.1f32, 10.0f32, -1.0f32)));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<f32>(1).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[0], 0.1f32.mul_add(10.0, -1.0));
/// ```
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
