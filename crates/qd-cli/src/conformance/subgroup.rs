//! Conformance cases: the subgroup library (seed 002, issue 4).
//!
//! Every op × every accepted dtype × every `log2_size` from 0 to 6, with fresh random inputs from the
//! case's stream and a host reference computed per tile. A case whose tile is wider than the device's
//! subgroup is skipped. Kernels use blocks of 64 threads (one subgroup where that is wider) and a
//! launch of a few blocks, so element `i` sits in lane `i % group_size()` and tile `i / 2^L`. Each case's kernel is named after its id
//! (`subgroup/reduce_add_tiled/i32/L3` launches `sg_reduce_add_tiled_i32_L3`) and built by one
//! constructor that both the run and [`Case::launching`] call.
//!
//! Checks: tile lane 0 for `reduce_*` (the other lanes are undefined), every lane for everything
//! else, only in-range lanes for `shuffle_up` / `shuffle_down`, and for the full-subgroup forms also
//! full versus tiled-at-`log2_group_size()` equal on every lane (bit for bit, undefined lanes
//! included). Float inputs are chosen so every result is exact (quarter-integers for sums, powers of
//! two for products), so floats compare bit for bit too.

use super::{fail, Case, CaseError, CaseResult, Outcome, Rng};
use qd::prelude::*;
use qd::simt::subgroup as sg;
use qd::simt::subgroup::Shuffle;

/// Blocks per launch.
const BLOCKS: usize = 3;
/// The largest `log2_size` any backend has (wave64).
const MAX_L: u32 = 6;

// ---------------------------------------------------------------------------------------------------
// Host side: dtypes, inputs, references
// ---------------------------------------------------------------------------------------------------

/// How to draw random inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dist {
    /// Integers: any bits (wrapping arithmetic is exact); floats: quarter-integers in ±1024, so
    /// sums of up to 64 of them are exact.
    Any,
    /// Factors for products: small integers; floats: ±0.5, ±1, ±2 (products are exact).
    Small,
    /// Mostly-set bits (for and-scans).
    Dense,
    /// Mostly-clear bits (for or-scans).
    Sparse,
    /// Few distinct values in `0..n` (keys with many ties, all_equal patterns).
    Few(u32),
}

/// The dtypes the subgroup ops move, with host arithmetic that matches D5.
trait HostNum: Shuffle {
    const NAME: &'static str;
    const IS_INT: bool;
    fn draw(rng: &mut Rng, dist: Dist) -> Self;
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn min_(a: Self, b: Self) -> Self;
    fn max_(a: Self, b: Self) -> Self;
    fn and(a: Self, b: Self) -> Self;
    fn or(a: Self, b: Self) -> Self;
    fn xor(a: Self, b: Self) -> Self;
    fn lt(a: Self, b: Self) -> bool;
    fn nan() -> Self;
    fn neg_zero() -> Self;
}

macro_rules! host_int {
    ($t:ty, $signed:expr) => {
        impl HostNum for $t {
            const NAME: &'static str = stringify!($t);
            const IS_INT: bool = true;
            fn draw(rng: &mut Rng, dist: Dist) -> Self {
                match dist {
                    Dist::Any => rng.next_u64() as $t,
                    Dist::Small => {
                        if $signed {
                            [-2i64, -1, 1, 2, 3][rng.range_i64(0, 5) as usize] as $t
                        } else {
                            rng.range_i64(1, 4) as $t
                        }
                    }
                    Dist::Dense => (rng.next_u64() | rng.next_u64() | rng.next_u64()) as $t,
                    Dist::Sparse => (rng.next_u64() & rng.next_u64() & rng.next_u64()) as $t,
                    Dist::Few(n) => {
                        let k = rng.range_i64(0, n.max(1) as i64);
                        (if $signed { k - n as i64 / 2 } else { k }) as $t
                    }
                }
            }
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            fn min_(a: Self, b: Self) -> Self {
                a.min(b)
            }
            fn max_(a: Self, b: Self) -> Self {
                a.max(b)
            }
            fn and(a: Self, b: Self) -> Self {
                a & b
            }
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            fn xor(a: Self, b: Self) -> Self {
                a ^ b
            }
            fn lt(a: Self, b: Self) -> bool {
                a < b
            }
            fn nan() -> Self {
                unreachable!("integers have no NaN")
            }
            fn neg_zero() -> Self {
                0
            }
        }
    };
}
host_int!(i32, true);
host_int!(u32, false);
host_int!(i64, true);
host_int!(u64, false);

macro_rules! host_float {
    ($t:ty) => {
        impl HostNum for $t {
            const NAME: &'static str = stringify!($t);
            const IS_INT: bool = false;
            fn draw(rng: &mut Rng, dist: Dist) -> Self {
                match dist {
                    Dist::Small => [0.5, 1.0, 2.0, -0.5, -1.0, -2.0][rng.range_i64(0, 6) as usize],
                    Dist::Few(n) => (rng.range_i64(0, n.max(1) as i64) - n as i64 / 2) as $t * 0.5,
                    _ => rng.range_i64(-4096, 4097) as $t * 0.25,
                }
            }
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            fn min_(a: Self, b: Self) -> Self {
                a.min(b)
            }
            fn max_(a: Self, b: Self) -> Self {
                a.max(b)
            }
            fn and(_: Self, _: Self) -> Self {
                unreachable!("bitwise ops take integers")
            }
            fn or(_: Self, _: Self) -> Self {
                unreachable!("bitwise ops take integers")
            }
            fn xor(_: Self, _: Self) -> Self {
                unreachable!("bitwise ops take integers")
            }
            fn lt(a: Self, b: Self) -> bool {
                a < b
            }
            fn nan() -> Self {
                <$t>::NAN
            }
            fn neg_zero() -> Self {
                -0.0
            }
        }
    };
}
host_float!(f32);
host_float!(f64);

/// The binary operators of the reductions and scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinOp {
    Add,
    Mul,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl BinOp {
    fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Mul => "mul",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
        }
    }

    fn bitwise(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Xor)
    }

    fn apply<T: HostNum>(self, a: T, b: T) -> T {
        match self {
            BinOp::Add => T::add(a, b),
            BinOp::Mul => T::mul(a, b),
            BinOp::Min => T::min_(a, b),
            BinOp::Max => T::max_(a, b),
            BinOp::And => T::and(a, b),
            BinOp::Or => T::or(a, b),
            BinOp::Xor => T::xor(a, b),
        }
    }

    /// The identity the exclusive scans put in tile lane 0.
    fn identity<T: HostNum>(self) -> T {
        match self {
            BinOp::Add | BinOp::Or | BinOp::Xor => T::ZERO,
            BinOp::Mul => T::ONE,
            BinOp::And => T::from_bits(u64::MAX),
            BinOp::Min => T::MAX,
            BinOp::Max => T::MIN,
        }
    }

    fn dist(self) -> Dist {
        match self {
            BinOp::Mul => Dist::Small,
            BinOp::And => Dist::Dense,
            BinOp::Or => Dist::Sparse,
            _ => Dist::Any,
        }
    }
}

/// Reductions and scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Reduce,
    ReduceAll,
    Segmented,
    Inclusive,
    Exclusive,
}

impl Family {
    fn prefix(self) -> &'static str {
        match self {
            Family::Reduce => "reduce_",
            Family::ReduceAll => "reduce_all_",
            Family::Segmented => "segmented_reduce_",
            Family::Inclusive => "inclusive_",
            Family::Exclusive => "exclusive_",
        }
    }

    fn ops(self) -> &'static [BinOp] {
        match self {
            Family::Reduce | Family::ReduceAll | Family::Segmented => &[BinOp::Add, BinOp::Min, BinOp::Max],
            Family::Inclusive | Family::Exclusive => {
                &[BinOp::Add, BinOp::Mul, BinOp::Min, BinOp::Max, BinOp::And, BinOp::Or, BinOp::Xor]
            }
        }
    }

    /// The host reference for every lane (`reduce_*`: meaningful in tile lane 0 only).
    fn reference<T: HostNum>(self, op: BinOp, vals: &[T], heads: &[i32], tile: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(vals.len());
        for (t, chunk) in vals.chunks(tile).enumerate() {
            let base = t * tile;
            let total = chunk[1..].iter().fold(chunk[0], |acc, &x| op.apply(acc, x));
            for k in 0..chunk.len() {
                out.push(match self {
                    Family::Reduce | Family::ReduceAll => total,
                    Family::Inclusive => chunk[1..=k].iter().fold(chunk[0], |acc, &x| op.apply(acc, x)),
                    Family::Exclusive => chunk[..k].iter().fold(op.identity(), |acc, &x| op.apply(acc, x)),
                    Family::Segmented => {
                        let h = (0..=k).rev().find(|&j| j == 0 || heads[base + j] != 0).unwrap_or(0);
                        chunk[h + 1..=k].iter().fold(chunk[h], |acc, &x| op.apply(acc, x))
                    }
                });
            }
        }
        out
    }
}

/// `op_tiled(v, head, l)` on the device (`head` is used by the segmented family only).
fn tiled_fn<T: Shuffle>(fam: Family, op: BinOp) -> fn(Val<T>, Val<i32>, u32) -> Val<T> {
    use BinOp as O;
    use Family as F;
    match (fam, op) {
        (F::Reduce, O::Add) => |v, _, l| sg::reduce_add_tiled(v, l),
        (F::Reduce, O::Min) => |v, _, l| sg::reduce_min_tiled(v, l),
        (F::Reduce, O::Max) => |v, _, l| sg::reduce_max_tiled(v, l),
        (F::ReduceAll, O::Add) => |v, _, l| sg::reduce_all_add_tiled(v, l),
        (F::ReduceAll, O::Min) => |v, _, l| sg::reduce_all_min_tiled(v, l),
        (F::ReduceAll, O::Max) => |v, _, l| sg::reduce_all_max_tiled(v, l),
        (F::Segmented, O::Add) => |v, h, l| sg::segmented_reduce_add_tiled(v, h, l),
        (F::Segmented, O::Min) => |v, h, l| sg::segmented_reduce_min_tiled(v, h, l),
        (F::Segmented, O::Max) => |v, h, l| sg::segmented_reduce_max_tiled(v, h, l),
        (F::Inclusive, O::Add) => |v, _, l| sg::inclusive_add_tiled(v, l),
        (F::Inclusive, O::Mul) => |v, _, l| sg::inclusive_mul_tiled(v, l),
        (F::Inclusive, O::Min) => |v, _, l| sg::inclusive_min_tiled(v, l),
        (F::Inclusive, O::Max) => |v, _, l| sg::inclusive_max_tiled(v, l),
        (F::Inclusive, O::And) => |v, _, l| sg::inclusive_and_tiled(v, l),
        (F::Inclusive, O::Or) => |v, _, l| sg::inclusive_or_tiled(v, l),
        (F::Inclusive, O::Xor) => |v, _, l| sg::inclusive_xor_tiled(v, l),
        (F::Exclusive, O::Add) => |v, _, l| sg::exclusive_add_tiled(v, l),
        (F::Exclusive, O::Mul) => |v, _, l| sg::exclusive_mul_tiled(v, l),
        (F::Exclusive, O::Min) => |v, _, l| sg::exclusive_min_tiled(v, l),
        (F::Exclusive, O::Max) => |v, _, l| sg::exclusive_max_tiled(v, l),
        (F::Exclusive, O::And) => |v, _, l| sg::exclusive_and_tiled(v, l),
        (F::Exclusive, O::Or) => |v, _, l| sg::exclusive_or_tiled(v, l),
        (F::Exclusive, O::Xor) => |v, _, l| sg::exclusive_xor_tiled(v, l),
        _ => unreachable!("no {}{} op", fam.prefix(), op.name()),
    }
}

/// The full-subgroup form `op(v, head)` on the device.
fn full_fn<T: Shuffle>(fam: Family, op: BinOp) -> fn(Val<T>, Val<i32>) -> Val<T> {
    use BinOp as O;
    use Family as F;
    match (fam, op) {
        (F::Reduce, O::Add) => |v, _| sg::reduce_add(v),
        (F::Reduce, O::Min) => |v, _| sg::reduce_min(v),
        (F::Reduce, O::Max) => |v, _| sg::reduce_max(v),
        (F::ReduceAll, O::Add) => |v, _| sg::reduce_all_add(v),
        (F::ReduceAll, O::Min) => |v, _| sg::reduce_all_min(v),
        (F::ReduceAll, O::Max) => |v, _| sg::reduce_all_max(v),
        (F::Segmented, O::Add) => |v, h| sg::segmented_reduce_add(v, h),
        (F::Segmented, O::Min) => |v, h| sg::segmented_reduce_min(v, h),
        (F::Segmented, O::Max) => |v, h| sg::segmented_reduce_max(v, h),
        (F::Inclusive, O::Add) => |v, _| sg::inclusive_add(v),
        (F::Inclusive, O::Mul) => |v, _| sg::inclusive_mul(v),
        (F::Inclusive, O::Min) => |v, _| sg::inclusive_min(v),
        (F::Inclusive, O::Max) => |v, _| sg::inclusive_max(v),
        (F::Inclusive, O::And) => |v, _| sg::inclusive_and(v),
        (F::Inclusive, O::Or) => |v, _| sg::inclusive_or(v),
        (F::Inclusive, O::Xor) => |v, _| sg::inclusive_xor(v),
        (F::Exclusive, O::Add) => |v, _| sg::exclusive_add(v),
        (F::Exclusive, O::Mul) => |v, _| sg::exclusive_mul(v),
        (F::Exclusive, O::Min) => |v, _| sg::exclusive_min(v),
        (F::Exclusive, O::Max) => |v, _| sg::exclusive_max(v),
        (F::Exclusive, O::And) => |v, _| sg::exclusive_and(v),
        (F::Exclusive, O::Or) => |v, _| sg::exclusive_or(v),
        (F::Exclusive, O::Xor) => |v, _| sg::exclusive_xor(v),
        _ => unreachable!("no {}{} op", fam.prefix(), op.name()),
    }
}

// ---------------------------------------------------------------------------------------------------
// Device side: one kernel shape for every case
// ---------------------------------------------------------------------------------------------------

/// Threads per block of the subgroup kernels: 64, or one subgroup where that is wider, so blocks
/// hold whole subgroups on every width. The kernels [`Case::launching`] names use 64.
const BLOCK: u32 = 64;

fn block_dim(d: &Device) -> u32 {
    BLOCK.max(d.subgroup_size())
}

/// A case's kernel name and the block size to build it with.
struct Named {
    name: String,
    block: u32,
}

/// The random constant a move case draws (a shuffle offset or lane) fixed for the kernel
/// [`Case::launching`] names: valid on every width from 4 lanes up.
const NAMED_MOVE_CONSTANT: u32 = 2;

fn len(d: &Device) -> usize {
    block_dim(d) as usize * BLOCKS
}

fn log2_sg(d: &Device) -> u32 {
    d.subgroup_size().trailing_zeros()
}

/// The kernel name of a case: its id with `subgroup/` shortened to `sg_` and `/` as `_`
/// (`subgroup/reduce_add_tiled/i32/L3` launches `sg_reduce_add_tiled_i32_L3`).
fn kernel_name(case_id: &str) -> String {
    case_id.replacen("subgroup/", "sg_", 1).replace('/', "_")
}

/// Adds a case whose kernels `kernels(name)` builds from the case's kernel name; `run` gets the
/// same name and builds its kernels with the same constructors (see [`Case::launching`]).
fn push(
    cases: &mut Vec<Case>,
    id: String,
    kernels: impl Fn(&Named) -> Vec<Kernel> + Send + Sync + 'static,
    run: impl Fn(&Device, &mut Rng, &Named) -> CaseResult + Send + Sync + 'static,
) {
    let name = kernel_name(&id);
    let run_name = name.clone();
    cases.push(
        Case::new(id, move |d, rng| run(d, rng, &Named { name: run_name.clone(), block: block_dim(d) }))
            .launching(move || kernels(&Named { name: name.clone(), block: BLOCK })),
    );
}

/// The kernel shape of every case: `(o1[i], o2[i]) = f(a[i], b[i])`.
fn kernel2<A: Scalar, B: Scalar, R1: Scalar, R2: Scalar>(
    named: &Named,
    f: impl Fn(Val<A>, Val<B>) -> (Val<R1>, Val<R2>) + Send + Sync + 'static,
) -> Kernel {
    kernel2_where(named, Defined::Every, f)
}

/// Which lanes an op defines a result in; the others store nothing, so no implementation-defined
/// value reaches memory (the emulator's strict mode reports one that does).
#[derive(Clone, Copy)]
enum Defined {
    /// Every lane.
    Every,
    /// Lane 0 of each tile of `2^log2` lanes (`reduce_*_tiled`).
    TileLeaders(u32),
    /// Lane 0 of the subgroup (`reduce_*`).
    SubgroupLeader,
    /// Lanes at least `c` (`shuffle_up` by `c`).
    From(u32),
    /// Lanes below the subgroup width minus `c` (`shuffle_down` by `c`).
    Below(u32),
}

impl Defined {
    fn holds(self) -> Val<bool> {
        let lane = sg::invocation_id().cast::<u32>();
        match self {
            Defined::Every => Val::constant(true),
            Defined::TileLeaders(log2) => (lane & ((1u32 << log2) - 1)).eq(0u32),
            Defined::SubgroupLeader => lane.eq(0u32),
            Defined::From(c) => lane.ge(c),
            Defined::Below(c) => (lane + c).lt(sg::group_size()),
        }
    }
}

/// [`kernel2`] storing only the lanes where `defined` holds.
fn kernel2_where<A: Scalar, B: Scalar, R1: Scalar, R2: Scalar>(
    named: &Named,
    defined: Defined,
    f: impl Fn(Val<A>, Val<B>) -> (Val<R1>, Val<R2>) + Send + Sync + 'static,
) -> Kernel {
    Kernel::range(&named.name, named.block, move |k| {
        let a = k.array::<A>("a");
        let b = k.array::<B>("b");
        let o1 = k.array::<R1>("o1");
        let o2 = k.array::<R2>("o2");
        k.parallel_for(0, a.len(), |i| {
            let (r1, r2) = f(a.get(i), b.get(i));
            let store = || {
                o1.set(i, r1);
                o2.set(i, r2);
            };
            match defined {
                Defined::Every => store(),
                _ => if_(defined.holds(), store),
            }
        });
    })
}

/// `o1[i] = f(a[i], b[i])` (`o2` is written with zeros).
fn kernel1<A: Scalar, B: Scalar, R: Scalar>(
    name: &Named,
    f: impl Fn(Val<A>, Val<B>) -> Val<R> + Send + Sync + 'static,
) -> Kernel {
    kernel1_where(name, Defined::Every, f)
}

/// [`kernel1`] storing only the lanes where `defined` holds.
fn kernel1_where<A: Scalar, B: Scalar, R: Scalar>(
    name: &Named,
    defined: Defined,
    f: impl Fn(Val<A>, Val<B>) -> Val<R> + Send + Sync + 'static,
) -> Kernel {
    kernel2_where(name, defined, move |x, y| (f(x, y), Val::<u32>::constant(0)))
}

/// Launches a [`kernel2`] on `a` and `b`; returns both outputs.
fn run2<A: Scalar, B: Scalar, R1: Scalar, R2: Scalar>(
    d: &Device,
    kernel: &Kernel,
    a: &[A],
    b: &[B],
) -> Result<(Vec<R1>, Vec<R2>), CaseError> {
    let n = a.len();
    let (da, db) = (d.array_from(a).map_err(fail)?, d.array_from(b).map_err(fail)?);
    let (o1, o2) = (d.zeros::<R1>(n).map_err(fail)?, d.zeros::<R2>(n).map_err(fail)?);
    d.launch(kernel, &[da.arg(), db.arg(), o1.arg(), o2.arg()]).map_err(fail)?;
    Ok((o1.to_vec().map_err(fail)?, o2.to_vec().map_err(fail)?))
}

/// Launches a [`kernel1`]; returns its output.
fn run1<A: Scalar, B: Scalar, R: Scalar>(d: &Device, kernel: &Kernel, a: &[A], b: &[B]) -> Result<Vec<R>, CaseError> {
    Ok(run2::<A, B, R, u32>(d, kernel, a, b)?.0)
}

/// Compares `got` with `want` bit for bit on the lanes `check` selects, naming the first mismatch
/// with its lane and tile.
fn check<T: Scalar>(
    what: &str,
    got: &[T],
    want: &[T],
    sg_size: usize,
    tile: usize,
    check: impl Fn(usize) -> bool,
) -> Result<(), CaseError> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()).into());
    }
    for i in 0..got.len() {
        if check(i) && got[i].to_bits() != want[i].to_bits() {
            return Err(format!(
                "{what}[{i}] (lane {}, tile {} of {tile} lanes) = {:?}, expected {:?}",
                i % sg_size,
                i / tile,
                got[i],
                want[i]
            )
            .into());
        }
    }
    Ok(())
}

fn draw<T: HostNum>(rng: &mut Rng, n: usize, dist: Dist) -> Vec<T> {
    (0..n).map(|_| T::draw(rng, dist)).collect()
}

/// Random head flags: about one lane in four, with assorted non-zero ("truthy") values.
fn draw_heads(rng: &mut Rng, n: usize) -> Vec<i32> {
    (0..n)
        .map(|_| if rng.range_i64(0, 4) == 0 { [1, -1, 42, 7, i32::MIN][rng.range_i64(0, 5) as usize] } else { 0 })
        .collect()
}

// ---------------------------------------------------------------------------------------------------
// Reductions and scans
// ---------------------------------------------------------------------------------------------------

/// A reduction or scan: `l = Some(L)` the tiled form; `None` the full form beside the tiled form
/// at the subgroup's width (`o1`, `o2`).
fn reduction_kernel<T: HostNum>(name: &Named, fam: Family, op: BinOp, l: Option<u32>) -> Kernel {
    // `reduce_*` defines its result in each tile's lane 0 only (the full form: lane 0).
    let reduce = fam == Family::Reduce;
    match l {
        Some(l) => {
            let f = tiled_fn::<T>(fam, op);
            let defined = if reduce { Defined::TileLeaders(l) } else { Defined::Every };
            kernel1_where(name, defined, move |v: Val<T>, h: Val<i32>| f(v, h, l))
        }
        None => {
            let (f, t) = (full_fn::<T>(fam, op), tiled_fn::<T>(fam, op));
            let defined = if reduce { Defined::SubgroupLeader } else { Defined::Every };
            kernel2_where(name, defined, move |v: Val<T>, h: Val<i32>| (f(v, h), t(v, h, sg::log2_group_size())))
        }
    }
}

fn reduction_case<T: HostNum>(
    d: &Device,
    rng: &mut Rng,
    name: &Named,
    fam: Family,
    op: BinOp,
    l: Option<u32>,
) -> CaseResult {
    let lsg = log2_sg(d);
    let tl = l.unwrap_or(lsg);
    let n = len(d);
    let vals: Vec<T> = draw(rng, n, op.dist());
    let heads = draw_heads(rng, n);
    let tile = 1usize << tl;
    let want = fam.reference(op, &vals, &heads, tile);
    let lane0_only = fam == Family::Reduce;
    let sgs = d.subgroup_size() as usize;
    let what = format!("{}{}", fam.prefix(), op.name());
    let kernel = reduction_kernel::<T>(name, fam, op, l);
    if l.is_some() {
        let got: Vec<T> = run1(d, &kernel, &vals, &heads)?;
        check(&what, &got, &want, sgs, tile, |i| !lane0_only || i.is_multiple_of(tile))?;
    } else {
        let (full, tiled): (Vec<T>, Vec<T>) = run2(d, &kernel, &vals, &heads)?;
        check(&format!("{what} (full vs tiled)"), &full, &tiled, sgs, tile, |_| true)?;
        check(&what, &full, &want, sgs, tile, |i| !lane0_only || i.is_multiple_of(tile))?;
    }
    Ok(Outcome::Pass)
}

fn register_reductions<T: HostNum>(cases: &mut Vec<Case>) {
    for fam in [Family::Reduce, Family::ReduceAll, Family::Segmented, Family::Inclusive, Family::Exclusive] {
        for &op in fam.ops() {
            if op.bitwise() && !T::IS_INT {
                continue;
            }
            let name = format!("{}{}", fam.prefix(), op.name());
            for l in std::iter::once(None).chain((0..=MAX_L).map(Some)) {
                let id = match l {
                    None => format!("subgroup/{name}/{}", T::NAME),
                    Some(l) => format!("subgroup/{name}_tiled/{}/L{l}", T::NAME),
                };
                push(
                    cases,
                    id,
                    move |k| vec![reduction_kernel::<T>(k, fam, op, l)],
                    move |d, rng, k| reduction_case::<T>(d, rng, k, fam, op, l),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Bitonic sort
// ---------------------------------------------------------------------------------------------------

/// The sort's kernels: the tiled form for `Some(L)`; for `None` the full form, then the tiled form
/// at the subgroup's width (a second kernel, `<name>_as_tiled`).
fn sort_kernels<K: HostNum, V: HostNum>(name: &Named, l: Option<u32>) -> Vec<Kernel> {
    match l {
        Some(l) => vec![kernel2(name, move |k: Val<K>, v: Val<V>| sg::bitonic_sort_kv_tiled(k, v, l))],
        None => vec![
            kernel2(name, |k: Val<K>, v: Val<V>| sg::bitonic_sort_kv(k, v)),
            kernel2(&Named { name: format!("{}_as_tiled", name.name), block: name.block }, |k: Val<K>, v: Val<V>| {
                sg::bitonic_sort_kv_tiled(k, v, sg::log2_group_size())
            }),
        ],
    }
}

fn sort_case<K: HostNum, V: HostNum>(d: &Device, rng: &mut Rng, name: &Named, l: Option<u32>) -> CaseResult {
    let tl = l.unwrap_or(log2_sg(d));
    let n = len(d);
    let tile = 1usize << tl;
    // Few distinct keys, so the (key, value) tie-break is exercised; values with ties too.
    let keys: Vec<K> = draw(rng, n, Dist::Few((tile as u32 / 2).max(2)));
    let vals: Vec<V> = draw(rng, n, Dist::Few(tile as u32 * 2));
    let mut want_k = Vec::with_capacity(n);
    let mut want_v = Vec::with_capacity(n);
    for t in 0..n / tile {
        let mut pairs: Vec<(K, V)> = (t * tile..(t + 1) * tile).map(|i| (keys[i], vals[i])).collect();
        pairs.sort_by(|a, b| {
            let lt = |x: &(K, V), y: &(K, V)| K::lt(x.0, y.0) || (x.0 == y.0 && V::lt(x.1, y.1));
            if lt(a, b) {
                std::cmp::Ordering::Less
            } else if lt(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        want_k.extend(pairs.iter().map(|p| p.0));
        want_v.extend(pairs.iter().map(|p| p.1));
    }
    let sgs = d.subgroup_size() as usize;
    let kernels = sort_kernels::<K, V>(name, l);
    let (got_k, got_v): (Vec<K>, Vec<V>) = run2(d, &kernels[0], &keys, &vals)?;
    if let Some(as_tiled) = kernels.get(1) {
        let (k2, v2): (Vec<K>, Vec<V>) = run2(d, as_tiled, &keys, &vals)?;
        check("keys (full vs tiled)", &got_k, &k2, sgs, tile, |_| true)?;
        check("values (full vs tiled)", &got_v, &v2, sgs, tile, |_| true)?;
    }
    check("keys", &got_k, &want_k, sgs, tile, |_| true)?;
    check("values", &got_v, &want_v, sgs, tile, |_| true)?;
    Ok(Outcome::Pass)
}

fn register_sort_for_key<K: HostNum>(cases: &mut Vec<Case>) {
    fn one<K: HostNum, V: HostNum>(cases: &mut Vec<Case>) {
        let kv = format!("{}_{}", K::NAME, V::NAME);
        for l in std::iter::once(None).chain((0..=MAX_L).map(Some)) {
            let id = match l {
                None => format!("subgroup/bitonic_sort_kv/{kv}"),
                Some(l) => format!("subgroup/bitonic_sort_kv_tiled/{kv}/L{l}"),
            };
            push(cases, id, move |k| sort_kernels::<K, V>(k, l), move |d, rng, k| sort_case::<K, V>(d, rng, k, l));
        }
    }
    one::<K, i32>(cases);
    one::<K, u32>(cases);
    one::<K, i64>(cases);
    one::<K, u64>(cases);
    one::<K, f32>(cases);
    one::<K, f64>(cases);
}

// ---------------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Shuffle,
    Up,
    Down,
    Xor,
    Broadcast,
    BroadcastFirst,
}

impl Move {
    fn name(self) -> &'static str {
        match self {
            Move::Shuffle => "shuffle",
            Move::Up => "shuffle_up",
            Move::Down => "shuffle_down",
            Move::Xor => "shuffle_xor",
            Move::Broadcast => "broadcast",
            Move::BroadcastFirst => "broadcast_first",
        }
    }
}

/// A data movement: `shuffle` takes per-lane sources from `b`; the others a compile-time `c`.
fn move_kernel<T: HostNum>(name: &Named, mv: Move, c: u32) -> Kernel {
    match mv {
        Move::Shuffle => kernel1(name, |v: Val<T>, s: Val<u32>| sg::shuffle(v, s)),
        // Lanes whose source is out of range get an implementation-defined value: not stored.
        Move::Up => kernel1_where(name, Defined::From(c), move |v: Val<T>, _: Val<u32>| sg::shuffle_up(v, c)),
        Move::Down => kernel1_where(name, Defined::Below(c), move |v: Val<T>, _: Val<u32>| sg::shuffle_down(v, c)),
        Move::Xor => kernel1(name, move |v: Val<T>, _: Val<u32>| sg::shuffle_xor(v, c)),
        Move::Broadcast => kernel1(name, move |v: Val<T>, _: Val<u32>| sg::broadcast(v, c)),
        Move::BroadcastFirst => kernel1(name, |v: Val<T>, _: Val<u32>| sg::broadcast_first(v)),
    }
}

fn move_case<T: HostNum>(d: &Device, rng: &mut Rng, name: &Named, mv: Move) -> CaseResult {
    let n = len(d);
    let sgs = d.subgroup_size() as usize;
    let vals: Vec<T> = draw(rng, n, Dist::Any);
    // Per-lane source lanes for shuffle; one constant offset / mask / lane for the others.
    let src: Vec<u32> = (0..n).map(|_| rng.range_i64(0, sgs as i64) as u32).collect();
    let c = rng.range_i64(0, sgs as i64) as u32;
    let got: Vec<T> = run1(d, &move_kernel::<T>(name, mv, c), &vals, &src)?;
    let c = c as usize;
    let mut want = vals.clone();
    let mut valid = vec![true; n];
    for i in 0..n {
        let (base, lane) = (i - i % sgs, i % sgs);
        let from = match mv {
            Move::Shuffle => Some(src[i] as usize),
            Move::Up => lane.checked_sub(c),
            Move::Down => Some(lane + c).filter(|&s| s < sgs),
            Move::Xor => Some(lane ^ c),
            Move::Broadcast => Some(c),
            Move::BroadcastFirst => Some(0),
        };
        match from {
            Some(s) => want[i] = vals[base + s],
            None => valid[i] = false,
        }
    }
    check(mv.name(), &got, &want, sgs, sgs, |i| valid[i])?;
    Ok(Outcome::Pass)
}

fn register_moves<T: HostNum>(cases: &mut Vec<Case>) {
    for mv in [Move::Shuffle, Move::Up, Move::Down, Move::Xor, Move::Broadcast, Move::BroadcastFirst] {
        push(
            cases,
            format!("subgroup/{}/{}", mv.name(), T::NAME),
            move |k| vec![move_kernel::<T>(k, mv, NAMED_MOVE_CONSTANT)],
            move |d, rng, k| move_case::<T>(d, rng, k, mv),
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// Votes and all_equal
// ---------------------------------------------------------------------------------------------------

/// Per-tile predicate patterns: all true, all false, one lane flipped either way, or random; the
/// true values are assorted non-zero integers.
fn draw_predicates(rng: &mut Rng, n: usize, tile: usize) -> Vec<i32> {
    let mut p = Vec::with_capacity(n);
    let truthy = |rng: &mut Rng| [1, 2, -1, 99, i32::MIN][rng.range_i64(0, 5) as usize];
    for _ in 0..n / tile {
        let mode = rng.range_i64(0, 5);
        let odd = rng.range_i64(0, tile as i64) as usize;
        for k in 0..tile {
            let on = match mode {
                0 => true,
                1 => false,
                2 => k != odd,
                3 => k == odd,
                _ => rng.range_i64(0, 2) == 0,
            };
            p.push(if on { truthy(rng) } else { 0 });
        }
    }
    p
}

/// `all_true` / `any_true`: the tiled form for `Some(L)`, else the full form beside the tiled form
/// at the subgroup's width.
fn vote_kernel(name: &Named, all: bool, l: Option<u32>) -> Kernel {
    let tiled = move |x: Val<i32>, l: u32| if all { sg::all_true_tiled(x, l) } else { sg::any_true_tiled(x, l) };
    match l {
        Some(l) => kernel1(name, move |x: Val<i32>, _: Val<i32>| tiled(x, l)),
        None => kernel2(name, move |x: Val<i32>, _: Val<i32>| {
            let full = if all { sg::all_true(x) } else { sg::any_true(x) };
            (full, tiled(x, sg::log2_group_size()))
        }),
    }
}

fn vote_case(d: &Device, rng: &mut Rng, name: &Named, all: bool, l: Option<u32>) -> CaseResult {
    let tl = l.unwrap_or(log2_sg(d));
    let (n, tile, sgs) = (len(d), 1usize << tl, d.subgroup_size() as usize);
    let p = draw_predicates(rng, n, tile);
    let want: Vec<i32> = p
        .chunks(tile)
        .flat_map(|c| {
            let r = if all { c.iter().all(|&x| x != 0) } else { c.iter().any(|&x| x != 0) };
            std::iter::repeat_n(r as i32, tile)
        })
        .collect();
    let what = if all { "all_true" } else { "any_true" };
    let kernel = vote_kernel(name, all, l);
    let got: Vec<i32> = if l.is_some() {
        run1(d, &kernel, &p, &p)?
    } else {
        let (full, tiled): (Vec<i32>, Vec<i32>) = run2(d, &kernel, &p, &p)?;
        check(&format!("{what} (full vs tiled)"), &full, &tiled, sgs, tile, |_| true)?;
        full
    };
    check(what, &got, &want, sgs, tile, |_| true)?;
    Ok(Outcome::Pass)
}

/// Values for all_equal: per tile all equal, all equal but one lane, or random; with `contract`,
/// float patterns instead: ±0 mixed (equal), NaN at the tile start, one NaN, all NaN.
fn draw_equal_patterns<T: HostNum>(rng: &mut Rng, n: usize, tile: usize, contract: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n / tile {
        let mode = rng.range_i64(0, if contract { 5 } else { 3 });
        let odd = rng.range_i64(0, tile as i64) as usize;
        let same = T::draw(rng, Dist::Few(8));
        for k in 0..tile {
            let x = match (contract, mode) {
                (false, 0) => same,
                (false, 1) => {
                    if k == odd {
                        T::add(same, T::ONE)
                    } else {
                        same
                    }
                }
                (false, _) => T::draw(rng, Dist::Few(2)),
                (true, 0) | (true, 4) => {
                    if rng.range_i64(0, 2) == 0 {
                        T::neg_zero()
                    } else {
                        T::ZERO
                    }
                }
                (true, 1) => {
                    if k == 0 {
                        T::nan()
                    } else {
                        same
                    }
                }
                (true, 2) => {
                    if k == odd {
                        T::nan()
                    } else {
                        same
                    }
                }
                (true, _) => T::nan(),
            };
            out.push(x);
        }
    }
    out
}

/// `all_equal`: the tiled form for `Some(L)`, else the full form beside the tiled form at the
/// subgroup's width.
fn all_equal_kernel<T: HostNum>(name: &Named, l: Option<u32>) -> Kernel {
    match l {
        Some(l) => kernel1(name, move |x: Val<T>, _: Val<T>| sg::all_equal_tiled(x, l)),
        None => kernel2(name, |x: Val<T>, _: Val<T>| (sg::all_equal(x), sg::all_equal_tiled(x, sg::log2_group_size()))),
    }
}

fn all_equal_case<T: HostNum>(d: &Device, rng: &mut Rng, name: &Named, l: Option<u32>, contract: bool) -> CaseResult {
    let tl = l.unwrap_or(log2_sg(d));
    let (n, tile, sgs) = (len(d), 1usize << tl, d.subgroup_size() as usize);
    let vals: Vec<T> = draw_equal_patterns(rng, n, tile, contract);
    // Native ==: NaN unequal (even to itself), +0 == -0.
    let want: Vec<i32> =
        vals.chunks(tile).flat_map(|c| std::iter::repeat_n(c.iter().all(|x| *x == c[0]) as i32, tile)).collect();
    let kernel = all_equal_kernel::<T>(name, l);
    let got: Vec<i32> = if l.is_some() {
        run1(d, &kernel, &vals, &vals)?
    } else {
        let (full, tiled): (Vec<i32>, Vec<i32>) = run2(d, &kernel, &vals, &vals)?;
        check("all_equal (full vs tiled)", &full, &tiled, sgs, tile, |_| true)?;
        full
    };
    check("all_equal", &got, &want, sgs, tile, |_| true)?;
    Ok(Outcome::Pass)
}

fn register_all_equal<T: HostNum>(cases: &mut Vec<Case>) {
    let contracts: &[bool] = if T::IS_INT { &[false] } else { &[false, true] };
    for &contract in contracts {
        let suffix = if contract { "/float_contract" } else { "" };
        for l in std::iter::once(None).chain((0..=MAX_L).map(Some)) {
            let id = match l {
                None => format!("subgroup/all_equal/{}{suffix}", T::NAME),
                Some(l) => format!("subgroup/all_equal_tiled/{}{suffix}/L{l}", T::NAME),
            };
            push(
                cases,
                id,
                move |k| vec![all_equal_kernel::<T>(k, l)],
                move |d, rng, k| all_equal_case::<T>(d, rng, k, l, contract),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Ballots, lane masks, identity
// ---------------------------------------------------------------------------------------------------

/// The ballot of each subgroup (bit `k` for lane `k`), per element.
fn host_ballot(p: &[i32], sgs: usize) -> Vec<u64> {
    p.chunks(sgs)
        .flat_map(|c| {
            let m = c.iter().enumerate().fold(0u64, |m, (k, &x)| m | (((x != 0) as u64) << k));
            std::iter::repeat_n(m, sgs)
        })
        .collect()
}

/// `ballot` of an `i32` predicate, or of a `bool` (`as_bool`).
fn ballot_kernel(name: &Named, as_bool: bool) -> Kernel {
    if as_bool {
        kernel1(name, |x: Val<i32>, _: Val<i32>| sg::ballot(x.ne(0)))
    } else {
        kernel1(name, |x: Val<i32>, _: Val<i32>| sg::ballot(x))
    }
}

fn ballot_case(d: &Device, rng: &mut Rng, name: &Named, as_bool: bool) -> CaseResult {
    let (n, sgs) = (len(d), d.subgroup_size() as usize);
    let p = draw_predicates(rng, n, 4.min(sgs));
    let want = host_ballot(&p, sgs);
    let got: Vec<u64> = run1(d, &ballot_kernel(name, as_bool), &p, &p)?;
    check("ballot", &got, &want, sgs, sgs, |_| true)?;
    Ok(Outcome::Pass)
}

fn ballot_first_n_kernel(name: &Named, nb: u32) -> Kernel {
    kernel1(name, move |x: Val<i32>, _: Val<i32>| sg::ballot_first_n(x, nb))
}

fn ballot_first_n_case(d: &Device, rng: &mut Rng, name: &Named, nb: u32) -> CaseResult {
    let (n, sgs) = (len(d), d.subgroup_size() as usize);
    let p = draw_predicates(rng, n, 4.min(sgs));
    let low = if nb == 32 { u32::MAX } else { (1u32 << nb) - 1 };
    let want: Vec<u32> = host_ballot(&p, sgs).into_iter().map(|m| m as u32 & low).collect();
    let got: Vec<u32> = run1(d, &ballot_first_n_kernel(name, nb), &p, &p)?;
    check("ballot_first_n", &got, &want, sgs, sgs, |_| true)?;
    Ok(Outcome::Pass)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mask {
    Lt,
    Le,
    Eq,
    Gt,
    Ge,
}

impl Mask {
    fn name(self) -> &'static str {
        match self {
            Mask::Lt => "lanemask_lt",
            Mask::Le => "lanemask_le",
            Mask::Eq => "lanemask_eq",
            Mask::Gt => "lanemask_gt",
            Mask::Ge => "lanemask_ge",
        }
    }

    fn host(self, id: u32) -> u32 {
        (0..32)
            .filter(|&i| match self {
                Mask::Lt => i < id,
                Mask::Le => i <= id,
                Mask::Eq => i == id,
                Mask::Gt => i > id,
                Mask::Ge => i >= id,
            })
            .fold(0, |m, i| m | 1 << i)
    }
}

/// A lane mask of the id in `a`, or (`own_lane`) of `invocation_id()` on lanes 0..31.
fn lanemask_kernel(name: &Named, m: Mask, own_lane: bool) -> Kernel {
    let f: fn(Val<u32>) -> Val<u32> = match m {
        Mask::Lt => |x| sg::lanemask_lt(x),
        Mask::Le => |x| sg::lanemask_le(x),
        Mask::Eq => |x| sg::lanemask_eq(x),
        Mask::Gt => |x| sg::lanemask_gt(x),
        Mask::Ge => |x| sg::lanemask_ge(x),
    };
    if own_lane {
        kernel1(name, move |x: Val<u32>, _: Val<u32>| {
            // invocation_id() on lanes 0..31, the same id the host used elsewhere.
            let lane = sg::invocation_id().cast::<u32>();
            f(select(lane.lt(32u32), lane, x))
        })
    } else {
        kernel1(name, move |x: Val<u32>, _: Val<u32>| f(x))
    }
}

fn lanemask_case(d: &Device, rng: &mut Rng, name: &Named, m: Mask, own_lane: bool) -> CaseResult {
    let (n, sgs) = (len(d), d.subgroup_size() as usize);
    // Either this lane's id (lanes 0..31 only are meaningful) or a random id in 0..=31 per lane.
    let ids: Vec<u32> =
        (0..n).map(|i| if own_lane { (i % sgs % 32) as u32 } else { rng.range_i64(0, 32) as u32 }).collect();
    let want: Vec<u32> = ids.iter().map(|&id| m.host(id)).collect();
    let got: Vec<u32> = run1(d, &lanemask_kernel(name, m, own_lane), &ids, &ids)?;
    check(m.name(), &got, &want, sgs, sgs, |_| true)?;
    Ok(Outcome::Pass)
}

/// Identification and control: invocation_id, group_size, log2_group_size, elect, sync, mem_fence.
fn identity_kernel(name: &Named, what: &'static str) -> Kernel {
    kernel1(name, move |_: Val<u32>, _: Val<u32>| match what {
        "invocation_id" => sg::invocation_id().cast::<u32>(),
        "group_size" => Val::constant(sg::group_size()),
        "log2_group_size" => Val::constant(sg::log2_group_size()),
        "elect" => sg::elect().cast::<u32>(),
        "sync" => {
            // A subgroup barrier on both sides of an exchange.
            sg::sync();
            let r = sg::shuffle_xor(sg::invocation_id().cast::<u32>(), 1u32);
            sg::sync();
            r
        }
        _ => {
            // mem_fence between the exchange and its use.
            let r = sg::shuffle_xor(sg::invocation_id().cast::<u32>(), 1u32);
            sg::mem_fence();
            r
        }
    })
}

fn identity_case(d: &Device, name: &Named, what: &'static str) -> CaseResult {
    let (n, sgs) = (len(d), d.subgroup_size() as usize);
    let zeros = vec![0u32; n];
    let got: Vec<u32> = run1(d, &identity_kernel(name, what), &zeros, &zeros)?;
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let lane = (i % sgs) as u32;
            match what {
                "invocation_id" => lane,
                "group_size" => sgs as u32,
                "log2_group_size" => sgs.trailing_zeros(),
                "elect" => (lane == 0) as u32,
                _ => lane ^ 1,
            }
        })
        .collect();
    check(what, &got, &want, sgs, sgs, |_| true)?;
    Ok(Outcome::Pass)
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    // Data movement.
    register_moves::<i32>(cases);
    register_moves::<u32>(cases);
    register_moves::<i64>(cases);
    register_moves::<u64>(cases);
    register_moves::<f32>(cases);
    register_moves::<f64>(cases);

    // Identification and control.
    for what in ["invocation_id", "group_size", "log2_group_size", "elect", "sync", "mem_fence"] {
        push(
            cases,
            format!("subgroup/{what}"),
            move |k| vec![identity_kernel(k, what)],
            move |d, _, k| identity_case(d, k, what),
        );
    }

    // Ballots and lane masks.
    for (as_bool, ty) in [(false, "i32"), (true, "bool")] {
        push(
            cases,
            format!("subgroup/ballot/{ty}"),
            move |k| vec![ballot_kernel(k, as_bool)],
            move |d, rng, k| ballot_case(d, rng, k, as_bool),
        );
    }
    for nb in [1, 4, 8, 16, 24, 31, 32] {
        push(
            cases,
            format!("subgroup/ballot_first_n/n{nb}"),
            move |k| vec![ballot_first_n_kernel(k, nb)],
            move |d, rng, k| ballot_first_n_case(d, rng, k, nb),
        );
    }
    for m in [Mask::Lt, Mask::Le, Mask::Eq, Mask::Gt, Mask::Ge] {
        for (own_lane, of) in [(false, "u32"), (true, "invocation_id")] {
            push(
                cases,
                format!("subgroup/{}/{of}", m.name()),
                move |k| vec![lanemask_kernel(k, m, own_lane)],
                move |d, rng, k| lanemask_case(d, rng, k, m, own_lane),
            );
        }
    }

    // Votes.
    for (all, name) in [(true, "all_true"), (false, "any_true")] {
        for l in std::iter::once(None).chain((0..=MAX_L).map(Some)) {
            let id = match l {
                None => format!("subgroup/{name}"),
                Some(l) => format!("subgroup/{name}_tiled/L{l}"),
            };
            push(cases, id, move |k| vec![vote_kernel(k, all, l)], move |d, rng, k| vote_case(d, rng, k, all, l));
        }
    }
    register_all_equal::<i32>(cases);
    register_all_equal::<u32>(cases);
    register_all_equal::<i64>(cases);
    register_all_equal::<u64>(cases);
    register_all_equal::<f32>(cases);
    register_all_equal::<f64>(cases);

    // Reductions and scans.
    register_reductions::<i32>(cases);
    register_reductions::<u32>(cases);
    register_reductions::<i64>(cases);
    register_reductions::<u64>(cases);
    register_reductions::<f32>(cases);
    register_reductions::<f64>(cases);

    // Sorting: every key dtype × every value dtype.
    register_sort_for_key::<i32>(cases);
    register_sort_for_key::<u32>(cases);
    register_sort_for_key::<i64>(cases);
    register_sort_for_key::<u64>(cases);
    register_sort_for_key::<f32>(cases);
    register_sort_for_key::<f64>(cases);
}
