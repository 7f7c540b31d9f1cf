//! Keeping float values where every backend computes the same bits (D27): each float a program
//! makes is sent through [`guard`], which maps anything outside a per-type window of normal
//! magnitudes (denormals, zeros of either sign, infinities, NaN) to `+0.0`. So no denormal reaches
//! an operation (lavapipe flushes f32 denormals), no NaN is ever made (so no NaN payloads and no
//! NaN min/max), and no `-0.0` meets a min/max.

use crate::dval::Pick;
use qd::prelude::{select, Val};
use qd::trace::{Float, BF16, F16};

/// The float types' host conversions and windows.
pub trait Fl: Float + Pick {
    /// The value nearest `x` (round to nearest even).
    fn from_f64(x: f64) -> Self;
    /// As an f64 (exact).
    fn to_f64(self) -> f64;
    /// Smallest magnitude kept (a power of two, well above the type's denormals).
    const LO: f64;
    /// Largest magnitude kept (a power of two, so sums of two stay finite).
    const HI: f64;
    /// Integer magnitudes below this are exact in the type, products of two included.
    const EXACT_INT: i32;
}

impl Fl for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const LO: f64 = 1.0 / (1u64 << 60) as f64;
    const HI: f64 = (1u64 << 60) as f64;
    const EXACT_INT: i32 = 1024;
}

impl Fl for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    const LO: f64 = 1.0 / (1u64 << 60) as f64 / (1u64 << 60) as f64;
    const HI: f64 = (1u64 << 60) as f64 * (1u64 << 60) as f64;
    const EXACT_INT: i32 = 1024;
}

impl Fl for F16 {
    fn from_f64(x: f64) -> F16 {
        F16::from_f32(x as f32)
    }
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    const LO: f64 = 1.0 / 4096.0;
    const HI: f64 = 16384.0;
    const EXACT_INT: i32 = 32;
}

impl Fl for BF16 {
    fn from_f64(x: f64) -> BF16 {
        BF16::from_f32(x as f32)
    }
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    const LO: f64 = 1.0 / (1u64 << 60) as f64;
    const HI: f64 = (1u64 << 60) as f64;
    const EXACT_INT: i32 = 16;
}

/// `x` when its magnitude is inside `[LO, HI]`, else `+0.0` (NaN fails both comparisons).
#[track_caller]
pub fn guard<T: Fl>(x: Val<T>) -> Val<T> {
    let m = x.abs();
    let keep = m.ge(T::from_f64(T::LO)) & m.le(T::from_f64(T::HI));
    select(keep, x, T::from_f64(0.0))
}

/// Whether the host value `x` is one [`guard`] keeps unchanged (or `+0.0`).
pub fn in_window<T: Fl>(x: T) -> bool {
    let v = x.to_f64();
    let m = v.abs();
    (v == 0.0 && v.is_sign_positive()) || ((T::LO..=T::HI).contains(&m))
}
