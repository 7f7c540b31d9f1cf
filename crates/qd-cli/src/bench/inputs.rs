//! The benchmarks' inputs and how results are checked against the host.

use qd::algorithms::{self};
use qd::trace::Shuffle;

/// The inputs of every benchmark, from the conformance suite's splitmix64 stream (what
/// `bench/cub_bench.cu` draws too): integers are the top bits of a draw (`r >> 32` for 32-bit
/// types, all 64 for 64-bit); floats are `(r >> 40) * 2^-24`, uniform in [0, 1) on a grid whose sums
/// are exact in f64.
pub(super) trait BenchType: Shuffle + algorithms::Sample {
    fn draw(r: u64) -> Self;
    /// Histogram samples: integers in [0, 2^16) (`r >> 48`), floats as `draw`.
    fn sample(r: u64) -> Self;
    /// `[lower, upper)` of the 256 histogram bins.
    fn hist_bounds() -> (Self, Self);
    /// Small values for reduce-by-key (`r >> 61`, 0 to 7: float run sums stay exact).
    fn small(r: u64) -> Self;
    /// The value as an exact multiple of 2^-24 (floats) or its bits (integers), for references.
    fn grid(self) -> i128;
    fn wrapping_add(self, other: Self) -> Self;
    /// Relative rounding of one operation (0 for integers).
    const EPS: f64;
}

macro_rules! bench_int {
    ($($t:ty: $shift:expr),*) => {$(
        impl BenchType for $t {
            fn draw(r: u64) -> Self { (r >> $shift) as $t }
            fn sample(r: u64) -> Self { (r >> 48) as $t }
            fn hist_bounds() -> (Self, Self) { (0, 1 << 16) }
            fn small(r: u64) -> Self { (r >> 61) as $t }
            fn grid(self) -> i128 { self as i128 }
            fn wrapping_add(self, other: Self) -> Self { <$t>::wrapping_add(self, other) }
            const EPS: f64 = 0.0;
        }
    )*};
}
bench_int!(i32: 32, u32: 32, i64: 0, u64: 0);

macro_rules! bench_float {
    ($($t:ty: $eps:expr),*) => {$(
        impl BenchType for $t {
            fn draw(r: u64) -> Self { (r >> 40) as $t / (1u32 << 24) as $t }
            fn sample(r: u64) -> Self { Self::draw(r) }
            fn hist_bounds() -> (Self, Self) { (0.0, 1.0) }
            fn small(r: u64) -> Self { (r >> 61) as $t }
            fn grid(self) -> i128 { (self as f64 * (1u32 << 24) as f64) as i128 }
            fn wrapping_add(self, other: Self) -> Self { self + other }
            const EPS: f64 = $eps;
        }
    )*};
}
bench_float!(f32: f32::EPSILON as f64 / 2.0, f64: f64::EPSILON / 2.0);

/// `n` draws from the stream of `seed`.
pub(super) fn draws(seed: u64, n: usize) -> impl Iterator<Item = u64> {
    let mut rng = crate::conformance::Rng::new(seed);
    (0..n).map(move |_| rng.next_u64())
}

/// Whether `got` is within the rounding bound of the exact `want` (a multiple of 2^-24 for floats,
/// the value for integers) after a chain of `depth` dependent operations on non-negative values.
pub(super) fn close<T: BenchType>(got: T, want: i128, depth: f64) -> bool {
    if T::EPS == 0.0 {
        return got.grid() == want;
    }
    let exact = want as f64 / (1u32 << 24) as f64;
    let g = got.grid() as f64 / (1u32 << 24) as f64;
    (g - exact).abs() <= depth * T::EPS * exact + 1e-30
}

/// The first element where `ok` fails, as a message.
pub(super) fn check_all<T: std::fmt::Debug>(
    what: &str,
    got: &[T],
    ok: impl Fn(usize, &T) -> bool,
) -> Result<(), String> {
    match got.iter().enumerate().find(|(i, g)| !ok(*i, g)) {
        None => Ok(()),
        Some((i, g)) => Err(format!("{what}[{i}] = {g:?} is wrong")),
    }
}
