//! Conformance cases for the device-wide algorithms (`qd::algorithms`, D20): every algorithm and
//! dtype on random and adversarial inputs (all equal, all distinct, alternating and empty
//! selections, out-of-range samples) against host references, sizes spanning several tiles (and
//! one 2^20 case per algorithm), and the look-back's decoupled fallback forced, in reverse tile
//! order, on every device.

use super::{expect_eq, fail, Case, CaseError, CaseResult, Outcome, Rng};
use qd::algorithms::{self as algo, kernels, Operator, Predicate, Sample, TileOrder, Tuning, Workspace};
use qd::prelude::*;
use qd::trace::Shuffle;
use std::sync::LazyLock;

/// Elements of most cases: at least two tiles of every algorithm, not a multiple of any.
const N: usize = 7_001;
/// The large size of CI (one case per algorithm).
const LARGE: usize = 1 << 20;

/// An algorithm's error as a case error: a capability the target lacks is a skip.
fn algo_err(e: algo::Error) -> CaseError {
    match e {
        algo::Error::Device { source, .. } => fail(*source),
        other => CaseError::Failed(other.to_string()),
    }
}

/// Host arithmetic of the dtypes, matching the device's (integers wrap; floats are fed values whose
/// sums are exact in any order).
trait Host: Shuffle {
    /// A random value (floats: small integers, so sums are exact).
    fn random(rng: &mut Rng) -> Self;
    /// Distinct values for distinct `i`.
    fn distinct(i: usize) -> Self;
    fn add(self, other: Self) -> Self;
    fn min_(self, other: Self) -> Self;
    fn max_(self, other: Self) -> Self;
}

macro_rules! host_int {
    ($($t:ty),*) => {$(
        impl Host for $t {
            fn random(rng: &mut Rng) -> Self { rng.next_u64() as $t }
            fn distinct(i: usize) -> Self { (i as $t).wrapping_mul(3) }
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn min_(self, o: Self) -> Self { self.min(o) }
            fn max_(self, o: Self) -> Self { self.max(o) }
        }
    )*};
}
host_int!(i32, u32, i64, u64);

macro_rules! host_float {
    ($($t:ty),*) => {$(
        impl Host for $t {
            fn random(rng: &mut Rng) -> Self { rng.range_i64(-1000, 1000) as $t }
            // Alternating signs keep every partial sum small, so sums stay exact.
            fn distinct(i: usize) -> Self { if i % 2 == 0 { i as $t } else { -(i as $t) - 0.5 } }
            fn add(self, o: Self) -> Self { self + o }
            fn min_(self, o: Self) -> Self { self.min(o) }
            fn max_(self, o: Self) -> Self { self.max(o) }
        }
    )*};
}
host_float!(f32, f64);

/// The operators of the cases, made once so their kernels are compiled once.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Min,
    Max,
    /// A custom operator: `max(|a|, |b|)` on floats, xor on integers.
    Custom,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Min => "min",
            Op::Max => "max",
            Op::Custom => "custom",
        }
    }
}

/// Device operator and host function of `op` on `T`.
trait WithOps: Host {
    fn op(op: Op) -> Operator<Self>;
    fn host(op: Op) -> fn(Self, Self) -> Self;
}

static XOR_I32: LazyLock<Operator<i32>> = LazyLock::new(|| Operator::custom("xor", 0, |a, b| a ^ b));
static ABSMAX_F64: LazyLock<Operator<f64>> =
    LazyLock::new(|| Operator::custom("absmax", 0.0, |a, b| a.abs().max(b.abs())));

macro_rules! with_ops {
    ($t:ty, $custom:expr, $host_custom:expr) => {
        impl WithOps for $t {
            fn op(op: Op) -> Operator<$t> {
                match op {
                    Op::Add => Operator::add(),
                    Op::Min => Operator::min(),
                    Op::Max => Operator::max(),
                    Op::Custom => $custom,
                }
            }
            fn host(op: Op) -> fn($t, $t) -> $t {
                match op {
                    Op::Add => Host::add,
                    Op::Min => Host::min_,
                    Op::Max => Host::max_,
                    Op::Custom => $host_custom,
                }
            }
        }
    };
}
with_ops!(i32, XOR_I32.clone(), |a, b| a ^ b);
with_ops!(f64, ABSMAX_F64.clone(), |a: f64, b: f64| a.abs().max(b.abs()));
with_ops!(u32, unreachable!("custom operators are tested on i32 and f64"), |_, _| unreachable!());
with_ops!(i64, unreachable!("custom operators are tested on i32 and f64"), |_, _| unreachable!());
with_ops!(u64, unreachable!("custom operators are tested on i32 and f64"), |_, _| unreachable!());
with_ops!(f32, unreachable!("custom operators are tested on i32 and f64"), |_, _| unreachable!());

/// Input shapes of the reductions and scans.
#[derive(Clone, Copy, Debug)]
enum Input {
    Random,
    /// Every element the same.
    Equal,
    /// Every element different.
    Distinct,
}

fn input<T: Host>(kind: Input, n: usize, rng: &mut Rng) -> Vec<T> {
    match kind {
        Input::Random => (0..n).map(|_| T::random(rng)).collect(),
        Input::Equal => vec![T::random(rng); n],
        Input::Distinct => (0..n).map(T::distinct).collect(),
    }
}

fn input_name(kind: Input) -> &'static str {
    match kind {
        Input::Random => "random",
        Input::Equal => "equal",
        Input::Distinct => "distinct",
    }
}

fn reduce_case<T: WithOps>(d: &Device, rng: &mut Rng, op: Op, kind: Input, n: usize) -> CaseResult {
    let x = input::<T>(kind, n, rng);
    let a = d.array_from(&x).map_err(fail)?;
    let out = d.zeros::<T>(1).map_err(fail)?;
    let operator = T::op(op);
    Workspace::new(d).reduce(&a, &out, &operator).map_err(algo_err)?;
    let want = x.iter().fold(operator.identity(), |acc, &v| T::host(op)(acc, v));
    expect_eq("reduction", &out.to_vec().map_err(fail)?, &[want])?;
    Ok(Outcome::Pass)
}

fn scan_case<T: WithOps>(
    d: &Device,
    rng: &mut Rng,
    op: Op,
    inclusive: bool,
    kind: Input,
    n: usize,
    tuning: Tuning,
) -> CaseResult {
    let x = input::<T>(kind, n, rng);
    let a = d.array_from(&x).map_err(fail)?;
    let out = d.zeros::<T>(n).map_err(fail)?;
    let operator = T::op(op);
    let mut ws = Workspace::with_tuning(d, tuning);
    // Twice: the second launch finds the first one's tile states (an earlier epoch).
    for _ in 0..2 {
        if inclusive {
            ws.inclusive_scan(&a, &out, &operator).map_err(algo_err)?;
        } else {
            ws.exclusive_scan(&a, &out, &operator).map_err(algo_err)?;
        }
    }
    let f = T::host(op);
    let mut acc = operator.identity();
    let want: Vec<T> = x
        .iter()
        .map(|&v| {
            let before = acc;
            acc = f(acc, v);
            if inclusive {
                acc
            } else {
                before
            }
        })
        .collect();
    expect_eq(if inclusive { "inclusive scan" } else { "exclusive scan" }, &out.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// Flag patterns of the selections.
#[derive(Clone, Copy, Debug)]
enum Flags {
    Random,
    Alternating,
    None,
    All,
}

fn flags(kind: Flags, n: usize, rng: &mut Rng) -> Vec<u8> {
    (0..n)
        .map(|i| match kind {
            Flags::Random => rng.next_u64().is_multiple_of(3) as u8,
            Flags::Alternating => (i % 2) as u8 * 3,
            Flags::None => 0,
            Flags::All => 1,
        })
        .collect()
}

fn select_case<T: Host>(d: &Device, rng: &mut Rng, kind: Flags, n: usize, tuning: Tuning) -> CaseResult {
    let x = input::<T>(Input::Random, n, rng);
    let f = flags(kind, n, rng);
    let (a, fa) = (d.array_from(&x).map_err(fail)?, d.array_from(&f).map_err(fail)?);
    let out = d.zeros::<T>(n).map_err(fail)?;
    let count = d.zeros::<u32>(1).map_err(fail)?;
    Workspace::with_tuning(d, tuning).select_flagged(&a, &fa, &out, &count).map_err(algo_err)?;
    let want: Vec<T> = x.iter().zip(&f).filter(|(_, &k)| k != 0).map(|(&v, _)| v).collect();
    expect_eq("count", &count.to_vec().map_err(fail)?, &[want.len() as u32])?;
    expect_eq("selected", &out.to_vec().map_err(fail)?[..want.len()], &want)?;
    Ok(Outcome::Pass)
}

static NEGATIVE: LazyLock<Predicate<i32>> = LazyLock::new(|| Predicate::new("negative", |x| x.lt(0)));

fn select_if_case(d: &Device, rng: &mut Rng, n: usize) -> CaseResult {
    let x = input::<i32>(Input::Random, n, rng);
    let a = d.array_from(&x).map_err(fail)?;
    let out = d.zeros::<i32>(n).map_err(fail)?;
    let got = algo::select_if(d, &a, &out, &NEGATIVE).map_err(algo_err)?;
    let want: Vec<i32> = x.iter().copied().filter(|&v| v < 0).collect();
    expect_eq("count", &[got], &[want.len()])?;
    expect_eq("selected", &out.to_vec().map_err(fail)?[..want.len()], &want)?;
    Ok(Outcome::Pass)
}

/// Key patterns of reduce-by-key.
#[derive(Clone, Copy, Debug)]
enum Keys {
    /// Runs of random length (1 to 16) of a few keys, neighbours possibly equal.
    Runs,
    Equal,
    Distinct,
}

fn keys(kind: Keys, n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut key = 0u32;
    let mut left = 0u64;
    (0..n)
        .map(|i| match kind {
            Keys::Runs => {
                if left == 0 {
                    key = (rng.next_u64() % 5) as u32;
                    left = 1 + rng.next_u64() % 16;
                }
                left -= 1;
                key
            }
            Keys::Equal => 7,
            Keys::Distinct => i as u32,
        })
        .collect()
}

fn reduce_by_key_case<V: WithOps>(d: &Device, rng: &mut Rng, kind: Keys, n: usize, tuning: Tuning) -> CaseResult {
    let k = keys(kind, n, rng);
    let v = input::<V>(Input::Random, n, rng);
    let (ka, va) = (d.array_from(&k).map_err(fail)?, d.array_from(&v).map_err(fail)?);
    let (uk, agg) = (d.zeros::<u32>(n).map_err(fail)?, d.zeros::<V>(n).map_err(fail)?);
    let runs = d.zeros::<u32>(1).map_err(fail)?;
    let op = V::op(Op::Add);
    Workspace::with_tuning(d, tuning).reduce_by_key(&ka, &va, &uk, &agg, &runs, &op).map_err(algo_err)?;
    let (mut want_k, mut want_v) = (Vec::new(), Vec::<V>::new());
    for (i, (&key, &val)) in k.iter().zip(&v).enumerate() {
        if i == 0 || k[i - 1] != key {
            want_k.push(key);
            want_v.push(val);
        } else {
            let last = want_v.last_mut().expect("a run is open");
            *last = last.add(val);
        }
    }
    let r = want_k.len();
    expect_eq("run count", &runs.to_vec().map_err(fail)?, &[r as u32])?;
    expect_eq("unique keys", &uk.to_vec().map_err(fail)?[..r], &want_k)?;
    expect_eq("aggregates", &agg.to_vec().map_err(fail)?[..r], &want_v)?;
    Ok(Outcome::Pass)
}

/// Sample dtypes of the histogram: random bits, from which `range` picks the bounds.
trait HistSample: Sample + std::fmt::Debug {
    fn random(rng: &mut Rng) -> Self;
    /// `(lower, upper)` inside the type's range, covering part of the samples.
    fn bounds() -> (Self, Self);
}

/// Integers: random bits shifted right by `$shift` (so 64-bit ranges times the bins fit 64 bits),
/// bounds inside that span.
macro_rules! hist_int {
    ($($t:ty: $shift:expr),*) => {$(
        impl HistSample for $t {
            fn random(rng: &mut Rng) -> Self { (rng.next_u64() as $t) >> $shift }
            fn bounds() -> (Self, Self) { ((<$t>::MIN >> $shift) / 2 + (<$t>::MAX >> $shift) / 8, (<$t>::MAX >> $shift) / 2) }
        }
    )*};
}
hist_int!(i8: 0, u8: 0, i16: 0, u16: 0, i32: 0, u32: 0, i64: 6, u64: 6);

macro_rules! hist_float {
    ($($t:ty),*) => {$(
        impl HistSample for $t {
            fn random(rng: &mut Rng) -> Self { (rng.unit_f64() * 3.0 - 1.0) as $t }
            fn bounds() -> (Self, Self) { (0.0, 1.0) }
        }
    )*};
}
hist_float!(f32, f64);

/// Sample patterns of the histogram.
#[derive(Clone, Copy, Debug)]
enum Samples {
    /// Uniform over a wider range than the bins': some dropped.
    Random,
    /// Every sample in one bin (contended counters).
    Equal,
    /// Every sample outside the range.
    Outside,
}

const BINS: u32 = 100;

fn histogram_case<T: HistSample>(d: &Device, rng: &mut Rng, kind: Samples, n: usize) -> CaseResult {
    let (lo, hi) = T::bounds();
    let x: Vec<T> = match kind {
        Samples::Random => (0..n).map(|_| T::random(rng)).collect(),
        Samples::Equal => vec![lo; n],
        Samples::Outside => vec![hi; n],
    };
    let a = d.array_from(&x).map_err(fail)?;
    let h = d.array_from(&vec![9u32; BINS as usize]).map_err(fail)?;
    let mut ws = Workspace::new(d);
    // Twice: the second launch finds the accumulator the first left zero.
    for _ in 0..2 {
        ws.histogram_even(&a, &h, BINS, lo, hi).map_err(algo_err)?;
    }
    let mut want = vec![0u32; BINS as usize];
    for &v in &x {
        if let Some(b) = v.bin_even(BINS, lo, hi) {
            want[b as usize] += 1;
        }
    }
    expect_eq("histogram", &h.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// The tuning of the fallback cases: small tiles, so a block waits on many predecessors.
fn fallback(order: TileOrder) -> Tuning {
    Tuning { block: Some(64), items: Some(3), order, force_fallback: true }
}

macro_rules! each_dtype {
    ($m:ident) => {
        $m!(i32);
        $m!(u32);
        $m!(i64);
        $m!(u64);
        $m!(f32);
        $m!(f64);
    };
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    macro_rules! per_dtype {
        ($ty:ty) => {
            let dt = <$ty as Scalar>::DTYPE;
            for kind in [Input::Random, Input::Equal] {
                cases.push(
                    Case::new(format!("algorithms/reduce/add/{dt}/{}", input_name(kind)), move |d, rng| {
                        reduce_case::<$ty>(d, rng, Op::Add, kind, N)
                    })
                    .launching(|| vec![kernels::reduce(&<$ty as WithOps>::op(Op::Add), &Tuning::default())]),
                );
            }
            for inclusive in [true, false] {
                let which = if inclusive { "inclusive" } else { "exclusive" };
                for kind in [Input::Random, Input::Distinct] {
                    cases.push(
                        Case::new(format!("algorithms/{which}_scan/add/{dt}/{}", input_name(kind)), move |d, rng| {
                            scan_case::<$ty>(d, rng, Op::Add, inclusive, kind, N, Tuning::default())
                        })
                        .launching(move || {
                            vec![kernels::scan(&<$ty as WithOps>::op(Op::Add), inclusive, &Tuning::default())]
                        }),
                    );
                }
            }
            for kind in [Flags::Random, Flags::Alternating, Flags::None, Flags::All] {
                cases.push(
                    Case::new(format!("algorithms/select_flagged/{dt}/{kind:?}").to_lowercase(), move |d, rng| {
                        select_case::<$ty>(d, rng, kind, N, Tuning::default())
                    })
                    .launching(|| vec![kernels::select_flagged::<$ty, u8>(&Tuning::default())]),
                );
            }
            for kind in [Keys::Runs, Keys::Equal, Keys::Distinct] {
                cases.push(
                    Case::new(format!("algorithms/reduce_by_key/u32_{dt}/{kind:?}").to_lowercase(), move |d, rng| {
                        reduce_by_key_case::<$ty>(d, rng, kind, N, Tuning::default())
                    })
                    .launching(|| {
                        vec![kernels::reduce_by_key::<u32, $ty>(&<$ty as WithOps>::op(Op::Add), &Tuning::default())]
                    }),
                );
            }
        };
    }
    each_dtype!(per_dtype);
    // The other operators, on one integer and one float type.
    for op in [Op::Min, Op::Max, Op::Custom] {
        cases.push(
            Case::new(format!("algorithms/reduce/{}/i32/random", op.name()), move |d, rng| {
                reduce_case::<i32>(d, rng, op, Input::Random, N)
            })
            .launching(move || vec![kernels::reduce(&i32::op(op), &Tuning::default())]),
        );
        cases.push(
            Case::new(format!("algorithms/inclusive_scan/{}/i32/random", op.name()), move |d, rng| {
                scan_case::<i32>(d, rng, op, true, Input::Random, N, Tuning::default())
            })
            .launching(move || vec![kernels::scan(&i32::op(op), true, &Tuning::default())]),
        );
        cases.push(
            Case::new(format!("algorithms/exclusive_scan/{}/f64/random", op.name()), move |d, rng| {
                scan_case::<f64>(d, rng, op, false, Input::Random, N, Tuning::default())
            })
            .launching(move || vec![kernels::scan(&f64::op(op), false, &Tuning::default())]),
        );
    }
    cases.push(
        Case::new("algorithms/select_if/i32/negative", |d, rng| select_if_case(d, rng, N))
            .launching(|| vec![kernels::select_if(&NEGATIVE, &Tuning::default())]),
    );
    macro_rules! histogram_cases {
        ($($ty:ty),*) => {$(
            for kind in [Samples::Random, Samples::Equal, Samples::Outside] {
                let dt = <$ty as Scalar>::DTYPE;
                cases.push(
                    Case::new(format!("algorithms/histogram_even/{dt}/{kind:?}").to_lowercase(), move |d, rng| {
                        histogram_case::<$ty>(d, rng, kind, N)
                    })
                    .launching(|| {
                        let (lo, hi) = <$ty as HistSample>::bounds();
                        kernels::histogram_even(BINS, lo, hi, &Tuning::default()).into_iter().collect()
                    }),
                );
            }
        )*};
    }
    histogram_cases!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    // The CI size.
    cases.push(
        Case::new("algorithms/reduce/add/i32/random/n2^20", |d, rng| {
            reduce_case::<i32>(d, rng, Op::Add, Input::Random, LARGE)
        })
        .launching(|| vec![kernels::reduce(&i32::op(Op::Add), &Tuning::default())]),
    );
    cases.push(
        Case::new("algorithms/inclusive_scan/add/i32/random/n2^20", |d, rng| {
            scan_case::<i32>(d, rng, Op::Add, true, Input::Random, LARGE, Tuning::default())
        })
        .launching(|| vec![kernels::scan(&i32::op(Op::Add), true, &Tuning::default())]),
    );
    // The decoupled fallback on every device: forced in ticket order, and in reverse order, where
    // every block waits on blocks that start after it.
    for order in [TileOrder::Ticket, TileOrder::Reversed] {
        let name = format!("{order:?}").to_lowercase();
        cases.push(
            Case::new(format!("algorithms/inclusive_scan/fallback/{name}/i32"), move |d, rng| {
                scan_case::<i32>(d, rng, Op::Add, true, Input::Random, 4000, fallback(order))
            })
            .launching(move || vec![kernels::scan(&i32::op(Op::Add), true, &fallback(order))]),
        );
        cases.push(
            Case::new(format!("algorithms/exclusive_scan/fallback/{name}/f64"), move |d, rng| {
                scan_case::<f64>(d, rng, Op::Custom, false, Input::Random, 4000, fallback(order))
            })
            .launching(move || vec![kernels::scan(&f64::op(Op::Custom), false, &fallback(order))]),
        );
        cases.push(
            Case::new(format!("algorithms/select_flagged/fallback/{name}/i64"), move |d, rng| {
                select_case::<i64>(d, rng, Flags::Random, 4000, fallback(order))
            })
            .launching(move || vec![kernels::select_flagged::<i64, u8>(&fallback(order))]),
        );
        cases.push(
            Case::new(format!("algorithms/reduce_by_key/fallback/{name}/u32_f32"), move |d, rng| {
                reduce_by_key_case::<f32>(d, rng, Keys::Runs, 4000, fallback(order))
            })
            .launching(move || vec![kernels::reduce_by_key::<u32, f32>(&f32::op(Op::Add), &fallback(order))]),
        );
    }
}
