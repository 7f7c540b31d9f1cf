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
    #[track_caller]
    fn digit(bits: Val<Self>, shift: Val<u32>, mask: Val<u32>) -> Val<u32>;

    /// The word as 32-bit halves, low first (one for `u32`).
    #[track_caller]
    fn to_words(bits: Val<Self>) -> Vec<Val<u32>>;

    /// The inverse of [`RadixBits::to_words`].
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
    #[track_caller]
    fn ordered(key: Val<Self>) -> Val<Self::Bits>;

    /// The same on the host (what the tests and the fallback check against).
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
    #[track_caller]
    fn to_radix_bits(v: Val<Self>) -> Val<Self::Bits>;

    /// Traces the value from its bits.
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
