//! The key and value types the sort takes, and the order-preserving bit twiddles of the keys.
//!
//! A key becomes an unsigned word ("ordered bits") whose unsigned order is the key's order: signed
//! integers flip the sign bit; floats flip the sign bit of non-negative values and every bit of
//! negative ones, so -0.0 (ordered `0x7fff_ffff`) comes before +0.0 (`0x8000_0000`); every NaN
//! becomes all ones, above +inf, so NaNs compare equal to each other and sort last (after +inf)
//! in ascending order and first in descending order, keeping their input order. CUB instead sorts
//! NaNs by their bits (negative NaNs first). The kernels twiddle each key as they read it and
//! write the key's own bits, so NaN payloads and the sign of zero are kept.

use crate::trace::{select, Int, Num, Shuffle, Val};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

/// The unsigned words the sort ranks: `u32` for 4-byte keys, `u64` for 8-byte ones.
pub trait RadixBits: Int + Shuffle + sealed::Sealed {
    /// The bits in a word.
    const BITS: u32;

    /// `(bits >> shift) & mask` as a u32 (`shift < BITS`).
    ///
    /// ```
    /// use qd::algorithms::sort::RadixBits;
    /// use qd::prelude::*;
    ///
    /// // The second byte of each 64-bit word.
    /// let k = Kernel::range("digit", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let out = k.array::<u32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, u64::digit(a.get(i), Val::constant(8u32), Val::constant(0xffu32))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0x1234u64, 0xab00_0000_0000_cd00]).unwrap();
    /// let out = d.zeros::<u32>(2).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0x12, 0xcd]);
    /// ```
    #[track_caller]
    fn digit(bits: Val<Self>, shift: Val<u32>, mask: Val<u32>) -> Val<u32>;

    /// The word as 32-bit halves, low first (one for `u32`).
    ///
    /// ```
    /// use qd::algorithms::sort::RadixBits;
    /// use qd::prelude::*;
    ///
    /// let k = Kernel::range("halves", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let lo = k.array::<u32>("lo");
    ///     let hi = k.array::<u32>("hi");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         let words = u64::to_words(a.get(i));
    ///         lo.set(i, words[0]);
    ///         hi.set(i, words[1]);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[0x0000_0001_0000_0002u64]).unwrap();
    /// let (lo, hi) = (d.zeros::<u32>(1).unwrap(), d.zeros::<u32>(1).unwrap());
    /// d.launch(&k, &[a.arg(), lo.arg(), hi.arg()]).unwrap();
    /// assert_eq!((lo.to_vec().unwrap()[0], hi.to_vec().unwrap()[0]), (2, 1));
    /// ```
    #[track_caller]
    fn to_words(bits: Val<Self>) -> Vec<Val<u32>>;

    /// The inverse of [`RadixBits::to_words`].
    ///
    /// ```
    /// use qd::algorithms::sort::RadixBits;
    /// use qd::prelude::*;
    ///
    /// // Splits and joins again: every word comes back unchanged.
    /// let k = Kernel::range("round_trip", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, u64::from_words(&u64::to_words(a.get(i)))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[u64::MAX, 0x8000_0000_0000_0001]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [u64::MAX, 0x8000_0000_0000_0001]);
    /// ```
    #[track_caller]
    fn from_words(words: &[Val<u32>]) -> Val<Self>;
}

impl RadixBits for u32 {
    const BITS: u32 = 32;

    fn digit(bits: Val<u32>, shift: Val<u32>, mask: Val<u32>) -> Val<u32> {
        (bits >> shift) & mask
    }

    fn to_words(bits: Val<u32>) -> Vec<Val<u32>> {
        vec![bits]
    }

    fn from_words(words: &[Val<u32>]) -> Val<u32> {
        words[0]
    }
}

impl RadixBits for u64 {
    const BITS: u32 = 64;

    fn digit(bits: Val<u64>, shift: Val<u32>, mask: Val<u32>) -> Val<u32> {
        (bits >> shift.cast::<u64>()).cast::<u32>() & mask
    }

    fn to_words(bits: Val<u64>) -> Vec<Val<u32>> {
        vec![bits.cast::<u32>(), (bits >> 32u64).cast::<u32>()]
    }

    fn from_words(words: &[Val<u32>]) -> Val<u64> {
        words[0].cast::<u64>() | (words[1].cast::<u64>() << 32u64)
    }
}

/// A key type of [`sort_keys`](super::sort_keys) and [`sort_pairs`](super::sort_pairs): `u32`,
/// `i32`, `f32`, `u64`, `i64`, `f64`.
pub trait SortKey: Num + sealed::Sealed {
    /// The ordered bits' type.
    type Bits: RadixBits;

    /// Traces the key's ordered bits: unsigned words in the key's order (see the module docs).
    ///
    /// ```
    /// use qd::algorithms::sort::SortKey;
    /// use qd::prelude::*;
    ///
    /// let k = Kernel::range("ordered", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let out = k.array::<u32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, i32::ordered(a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[-1i32, 0, 1]).unwrap();
    /// let out = d.zeros::<u32>(3).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// // Unsigned order is the signed order: the sign bit is flipped.
    /// assert_eq!(out.to_vec().unwrap(), [0x7fff_ffff, 0x8000_0000, 0x8000_0001]);
    /// ```
    #[track_caller]
    fn ordered(key: Val<Self>) -> Val<Self::Bits>;

    /// The same on the host (what the tests and the fallback check against).
    ///
    /// ```
    /// use qd::algorithms::sort::SortKey;
    ///
    /// assert!((-0.0f32).ordered_host() < 0.0f32.ordered_host());
    /// assert!(f32::INFINITY.ordered_host() < f32::NAN.ordered_host());
    /// assert!((-2i64).ordered_host() < 3i64.ordered_host());
    /// ```
    fn ordered_host(self) -> u64;
}

impl SortKey for u32 {
    type Bits = u32;

    fn ordered(key: Val<u32>) -> Val<u32> {
        key
    }

    fn ordered_host(self) -> u64 {
        self as u64
    }
}

impl SortKey for u64 {
    type Bits = u64;

    fn ordered(key: Val<u64>) -> Val<u64> {
        key
    }

    fn ordered_host(self) -> u64 {
        self
    }
}

impl SortKey for i32 {
    type Bits = u32;

    fn ordered(key: Val<i32>) -> Val<u32> {
        key.bit_cast::<u32>() ^ 0x8000_0000u32
    }

    fn ordered_host(self) -> u64 {
        (self as u32 ^ 0x8000_0000) as u64
    }
}

impl SortKey for i64 {
    type Bits = u64;

    fn ordered(key: Val<i64>) -> Val<u64> {
        key.bit_cast::<u64>() ^ (1u64 << 63)
    }

    fn ordered_host(self) -> u64 {
        self as u64 ^ (1 << 63)
    }
}

impl SortKey for f32 {
    type Bits = u32;

    fn ordered(key: Val<f32>) -> Val<u32> {
        let bits = key.bit_cast::<u32>();
        let negative = (bits >> 31u32).ne(0u32);
        let flipped = bits ^ select(negative, Val::constant(u32::MAX), Val::constant(0x8000_0000u32));
        select((bits & 0x7fff_ffffu32).gt(0x7f80_0000u32), Val::constant(u32::MAX), flipped)
    }

    fn ordered_host(self) -> u64 {
        let bits = self.to_bits();
        if self.is_nan() {
            u32::MAX as u64
        } else if bits >> 31 != 0 {
            (!bits) as u64
        } else {
            (bits ^ 0x8000_0000) as u64
        }
    }
}

impl SortKey for f64 {
    type Bits = u64;

    fn ordered(key: Val<f64>) -> Val<u64> {
        let bits = key.bit_cast::<u64>();
        let negative = (bits >> 63u64).ne(0u64);
        let flipped = bits ^ select(negative, Val::constant(u64::MAX), Val::constant(1u64 << 63));
        select((bits & (u64::MAX >> 1)).gt(0x7ff0_0000_0000_0000u64), Val::constant(u64::MAX), flipped)
    }

    fn ordered_host(self) -> u64 {
        let bits = self.to_bits();
        if self.is_nan() {
            u64::MAX
        } else if bits >> 63 != 0 {
            !bits
        } else {
            bits ^ (1 << 63)
        }
    }
}

/// A value type of [`sort_pairs`](super::sort_pairs): any 4- or 8-byte scalar (`u32`, `i32`,
/// `f32`, `u64`, `i64`, `f64`). Values move as their bits.
pub trait SortValue: Num + sealed::Sealed {
    /// The bits moved: `u32` or `u64`.
    type Bits: RadixBits;

    /// Traces the value's bits.
    ///
    /// ```
    /// use qd::algorithms::sort::SortValue;
    /// use qd::prelude::*;
    ///
    /// let k = Kernel::range("value_bits", 32, |k| {
    ///     let a = k.array::<f32>("a");
    ///     let out = k.array::<u32>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, f32::to_radix_bits(a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1.0f32]).unwrap();
    /// let out = d.zeros::<u32>(1).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1.0f32.to_bits()]);
    /// ```
    #[track_caller]
    fn to_radix_bits(v: Val<Self>) -> Val<Self::Bits>;

    /// Traces the value from its bits.
    ///
    /// ```
    /// use qd::algorithms::sort::SortValue;
    /// use qd::prelude::*;
    ///
    /// let k = Kernel::range("from_bits", 32, |k| {
    ///     let a = k.array::<u64>("a");
    ///     let out = k.array::<f64>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, f64::from_radix_bits(a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[2.5f64.to_bits()]).unwrap();
    /// let out = d.zeros::<f64>(1).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [2.5]);
    /// ```
    #[track_caller]
    fn from_radix_bits(b: Val<Self::Bits>) -> Val<Self>;
}

macro_rules! sort_value {
    ($($t:ty => $b:ty),*) => {$(
        impl SortValue for $t {
            type Bits = $b;
            fn to_radix_bits(v: Val<$t>) -> Val<$b> {
                v.bit_cast::<$b>()
            }
            fn from_radix_bits(b: Val<$b>) -> Val<$t> {
                b.bit_cast::<$t>()
            }
        }
    )*};
}
sort_value!(u32 => u32, i32 => u32, f32 => u32, u64 => u64, i64 => u64, f64 => u64);
