//! Traced values whose dtype is known only at run time, and the macros that call a generic function
//! at the concrete Rust type of a [`DType`].

use qd::ir::DType;
use qd::trace::{Scalar, Val, BF16, F16};

/// A traced value of any generated dtype.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum DVal {
    Bool(Val<bool>),
    I8(Val<i8>),
    I16(Val<i16>),
    I32(Val<i32>),
    I64(Val<i64>),
    U8(Val<u8>),
    U16(Val<u16>),
    U32(Val<u32>),
    U64(Val<u64>),
    F16(Val<F16>),
    BF16(Val<BF16>),
    F32(Val<f32>),
    F64(Val<f64>),
}

/// Moves a `Val<T>` in and out of a [`DVal`].
pub trait Pick: Scalar {
    /// The `Val<Self>` inside `v` (a dtype mismatch is a generator bug).
    fn pick(v: DVal) -> Val<Self>;
    /// Wraps a value.
    fn wrap(v: Val<Self>) -> DVal;
}

macro_rules! pick {
    ($($t:ty => $variant:ident),*) => {$(
        impl Pick for $t {
            fn pick(v: DVal) -> Val<$t> {
                match v {
                    DVal::$variant(x) => x,
                    other => panic!("generator bug: expected {}, got {:?}", <$t as Scalar>::DTYPE, other.dtype()),
                }
            }
            fn wrap(v: Val<$t>) -> DVal {
                DVal::$variant(v)
            }
        }
    )*};
}
pick!(bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
      F16 => F16, BF16 => BF16, f32 => F32, f64 => F64);

impl DVal {
    /// The value's dtype.
    pub fn dtype(self) -> DType {
        match self {
            DVal::Bool(_) => DType::Bool,
            DVal::I8(_) => DType::I8,
            DVal::I16(_) => DType::I16,
            DVal::I32(_) => DType::I32,
            DVal::I64(_) => DType::I64,
            DVal::U8(_) => DType::U8,
            DVal::U16(_) => DType::U16,
            DVal::U32(_) => DType::U32,
            DVal::U64(_) => DType::U64,
            DVal::F16(_) => DType::F16,
            DVal::BF16(_) => DType::BF16,
            DVal::F32(_) => DType::F32,
            DVal::F64(_) => DType::F64,
        }
    }
}

/// `$f::<T>(args)` (or `$f::<P.., T>(args)`) for the Rust type `T` of a dtype of the named class:
/// `scalar` (every value type), `num`, `int`, `signed` (signed integers and floats), `float`,
/// `shuffle` (the subgroup shuffle types).
#[macro_export]
#[doc(hidden)]
macro_rules! at_type {
    (@arm $f:ident [$($p:ty),*] ($($a:expr),*) $t:ty) => { $f::<$($p,)* $t>($($a),*) };
    (scalar $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::Bool => $crate::at_type!(@arm $f [$($p),*] ($($a),*) bool),
            d => $crate::at_type!(num d, $f [$($p),*] ($($a),*)),
        }
    };
    (num $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::F16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) qd::trace::F16),
            qd::ir::DType::BF16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) qd::trace::BF16),
            qd::ir::DType::I8 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i8),
            qd::ir::DType::I16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i16),
            qd::ir::DType::U8 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u8),
            qd::ir::DType::U16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u16),
            d => $crate::at_type!(shuffle d, $f [$($p),*] ($($a),*)),
        }
    };
    (int $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::I8 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i8),
            qd::ir::DType::I16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i16),
            qd::ir::DType::I32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i32),
            qd::ir::DType::I64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i64),
            qd::ir::DType::U8 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u8),
            qd::ir::DType::U16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u16),
            qd::ir::DType::U32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u32),
            qd::ir::DType::U64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u64),
            d => panic!("generator bug: {d} is not an integer type"),
        }
    };
    (signed $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::I8 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i8),
            qd::ir::DType::I16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i16),
            qd::ir::DType::I32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i32),
            qd::ir::DType::I64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i64),
            d => $crate::at_type!(float d, $f [$($p),*] ($($a),*)),
        }
    };
    (float $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::F16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) qd::trace::F16),
            qd::ir::DType::BF16 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) qd::trace::BF16),
            qd::ir::DType::F32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) f32),
            qd::ir::DType::F64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) f64),
            d => panic!("generator bug: {d} is not a float type"),
        }
    };
    (shuffle $d:expr, $f:ident [$($p:ty),*] ($($a:expr),*)) => {
        match $d {
            qd::ir::DType::I32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i32),
            qd::ir::DType::U32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u32),
            qd::ir::DType::I64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) i64),
            qd::ir::DType::U64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) u64),
            qd::ir::DType::F32 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) f32),
            qd::ir::DType::F64 => $crate::at_type!(@arm $f [$($p),*] ($($a),*) f64),
            d => panic!("generator bug: {d} is not a shuffle type"),
        }
    };
}
