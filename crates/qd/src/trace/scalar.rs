//! Host-side scalar types and their IR dtypes.

use crate::ir::DType;

/// A Rust type that maps to one IR dtype and can cross the host/device boundary as raw bits.
pub trait Scalar: Copy + Send + Sync + 'static + std::fmt::Debug + PartialEq {
    /// The IR type.
    const DTYPE: DType;
    /// Bits, zero-extended to 64.
    ///
    /// ```
    /// use qd::trace::{Scalar, F16};
    /// // How values cross to the device: their bits, zero-extended to 64.
    /// assert_eq!((-1i8).to_bits(), 0xFF);
    /// assert_eq!(1.0f32.to_bits(), 0x3F80_0000);
    /// assert_eq!(true.to_bits(), 1);
    /// assert_eq!(F16::from_f32(1.0).to_bits(), 0x3C00);
    /// ```
    fn to_bits(self) -> u64;
    /// From bits (the low bits of `b`).
    ///
    /// ```
    /// use qd::trace::Scalar;
    /// assert_eq!(<i16 as Scalar>::from_bits(0xFFFF), -1);
    /// assert_eq!(<f64 as Scalar>::from_bits(0x4000_0000_0000_0000), 2.0);
    /// assert!(!<bool as Scalar>::from_bits(0));
    /// ```
    fn from_bits(b: u64) -> Self;
}

/// Integers and floats: types arithmetic and min/max are defined on.
pub trait Num: Scalar {
    /// The additive identity.
    const ZERO: Self;
    /// The multiplicative identity.
    const ONE: Self;
    /// Largest value (+inf for floats): the identity of min.
    const MAX: Self;
    /// Smallest value (-inf for floats, 0 for unsigned): the identity of max.
    const MIN: Self;
}

/// Integer types: bitwise operations and shifts.
pub trait Int: Num {
    /// All bits set: the identity of bitwise and.
    const ALL_ONES: Self;
}

/// Signed integers and floats: negation.
pub trait Signed: Num {}

/// Floating-point types.
pub trait Float: Num + Signed {}

/// Types a subgroup shuffle moves: 32- and 64-bit integers and floats.
pub trait Shuffle: Num {}

macro_rules! int_scalar {
    ($t:ty, $d:ident, $u:ty) => {
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(b: u64) -> Self {
                b as $u as $t
            }
        }
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const MAX: Self = <$t>::MAX;
            const MIN: Self = <$t>::MIN;
        }
        impl Int for $t {
            const ALL_ONES: Self = !0;
        }
    };
}
int_scalar!(i8, I8, u8);
int_scalar!(i16, I16, u16);
int_scalar!(i32, I32, u32);
int_scalar!(i64, I64, u64);
int_scalar!(u8, U8, u8);
int_scalar!(u16, U16, u16);
int_scalar!(u32, U32, u32);
int_scalar!(u64, U64, u64);

impl Signed for i8 {}
impl Signed for i16 {}
impl Signed for i32 {}
impl Signed for i64 {}
impl Shuffle for i32 {}
impl Shuffle for u32 {}
impl Shuffle for i64 {}
impl Shuffle for u64 {}
impl Shuffle for f32 {}
impl Shuffle for f64 {}

impl Scalar for bool {
    const DTYPE: DType = DType::Bool;
    fn to_bits(self) -> u64 {
        self as u64
    }
    fn from_bits(b: u64) -> Self {
        b & 1 != 0
    }
}

impl Scalar for f32 {
    const DTYPE: DType = DType::F32;
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}
impl Num for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const MAX: Self = f32::INFINITY;
    const MIN: Self = f32::NEG_INFINITY;
}
impl Signed for f32 {}
impl Float for f32 {}

impl Scalar for f64 {
    const DTYPE: DType = DType::F64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}
impl Num for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const MAX: Self = f64::INFINITY;
    const MIN: Self = f64::NEG_INFINITY;
}
impl Signed for f64 {}
impl Float for f64 {}

/// IEEE half precision, stored as its bits (converted through f32 on the host).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct F16(pub u16);

/// bfloat16, stored as its bits.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BF16(pub u16);

impl F16 {
    /// Rounds an f32 to the nearest half (ties to even).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let h = F16::from_f32(0.1);
    /// assert_eq!(h.to_f32(), 0.099975586); // the nearest f16
    /// assert_eq!(F16::from_f32(1e6).to_f32(), f32::INFINITY); // overflows
    /// ```
    pub fn from_f32(x: f32) -> F16 {
        F16(f32_to_f16_bits(x))
    }
    /// Widens exactly.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Half-precision arrays: each element's arithmetic runs in f32, rounded back after each op.
    /// let k = Kernel::range("halve", 32, |k| {
    ///     let a = k.array::<F16>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * F16::from_f32(0.5)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[F16::from_f32(3.0), F16::from_f32(-1.0)]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// let back: Vec<f32> = a.to_vec().unwrap().iter().map(|h| h.to_f32()).collect();
    /// assert_eq!(back, [1.5, -0.5]);
    /// ```
    pub fn to_f32(self) -> f32 {
        f16_bits_to_f32(self.0)
    }
}

impl BF16 {
    /// Rounds an f32 to the nearest bf16 (ties to even).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // bfloat16 keeps f32's range with 8 bits of precision.
    /// let big = BF16::from_f32(1e30).to_f32();
    /// assert!((big / 1e30 - 1.0).abs() < 1.0 / 256.0);
    /// assert_eq!(BF16::from_f32(1.0 + 1.0 / 512.0).to_f32(), 1.0); // rounded to nearest even
    /// ```
    pub fn from_f32(x: f32) -> BF16 {
        let b = x.to_bits();
        if x.is_nan() {
            return BF16(((b >> 16) as u16) | 0x40);
        }
        let round = 0x7FFF + ((b >> 16) & 1);
        BF16((b.wrapping_add(round) >> 16) as u16)
    }
    /// Widens exactly.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("bf", 32, |k| {
    ///     let a = k.array::<BF16>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + a.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[BF16::from_f32(1.5), BF16::from_f32(-3.0)]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// let back: Vec<f32> = a.to_vec().unwrap().iter().map(|b| b.to_f32()).collect();
    /// assert_eq!(back, [3.0, -6.0]);
    /// ```
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

macro_rules! half_scalar {
    ($t:ident, $d:ident, $one:expr, $inf:expr, $neg_inf:expr) => {
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn to_bits(self) -> u64 {
                self.0 as u64
            }
            fn from_bits(b: u64) -> Self {
                $t(b as u16)
            }
        }
        impl Num for $t {
            const ZERO: Self = $t(0);
            const ONE: Self = $t($one);
            const MAX: Self = $t($inf);
            const MIN: Self = $t($neg_inf);
        }
        impl Signed for $t {}
        impl Float for $t {}
    };
}
half_scalar!(F16, F16, 0x3C00, 0x7C00, 0xFC00);
half_scalar!(BF16, BF16, 0x3F80, 0x7F80, 0xFF80);

/// f32 → f16 bits, round to nearest even, with overflow to infinity and subnormals.
///
/// ```
/// use qd::trace::f32_to_f16_bits;
/// assert_eq!(f32_to_f16_bits(1.0), 0x3C00);
/// assert_eq!(f32_to_f16_bits(-2.0), 0xC000);
/// assert_eq!(f32_to_f16_bits(65520.0), 0x7C00); // rounds up to infinity
/// ```
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1FFF;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// f16 bits → f32, exact.
///
/// ```
/// use qd::trace::f16_bits_to_f32;
/// assert_eq!(f16_bits_to_f32(0x3C00), 1.0);
/// assert_eq!(f16_bits_to_f32(0x0001), 5.9604645e-8); // the smallest subnormal
/// ```
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1F) as u32;
    let man = (h & 0x3FF) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: normalise.
            let mut e = 127 - 15 + 1;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3FF) << 13)
        }
    } else if exp == 0x1F {
        sign | 0x7F80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips() {
        for x in [0.0f32, 1.0, -2.5, 65504.0, 6.1035156e-5, 5.9604645e-8, 0.333] {
            let h = F16::from_f32(x);
            assert!((h.to_f32() - x).abs() <= x.abs() * 1e-3 + 1e-7, "{x} -> {}", h.to_f32());
        }
        assert_eq!(F16::from_f32(1.0).0, 0x3C00);
        assert!(F16::from_f32(1e6).to_f32().is_infinite());
        assert_eq!(BF16::from_f32(1.0).0, 0x3F80);
    }
}
