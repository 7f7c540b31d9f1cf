//! Conformance cases for the block algorithms of seed 000: reductions, scans and radix ranking,
//! on blocks of one and of several subgroups.

use super::{expect_eq, fail, Case, CaseResult, Outcome, Rng};
use qd::prelude::*;
use qd::trace::Shuffle;

/// Values the block cases draw: small integers, exact in every dtype (sums never round).
fn values<T: HostNum>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::from_f64(rng.range_i64(-1000, 1000) as f64)).collect()
}

/// Host conversion for the case data.
pub trait HostNum: Shuffle + PartialOrd {
    /// From a small integer-valued f64.
    fn from_f64(x: f64) -> Self;
    /// To f64 (exact for the values drawn).
    fn to_f64(self) -> f64;
    /// The dtype's name for case ids.
    const NAME: &'static str;
}

macro_rules! host_num {
    ($($t:ty),*) => {$(
        impl HostNum for $t {
            fn from_f64(x: f64) -> Self {
                // Unsigned types take the magnitude so values stay small and exact.
                if <$t>::MIN == <$t as Num>::ZERO { x.abs() as $t } else { x as $t }
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            const NAME: &'static str = stringify!($t);
        }
    )*};
}
host_num!(i32, i64, u32, u64, f32, f64);

#[derive(Clone, Copy)]
enum Algo {
    Reduce,
    ReduceAll,
    Inclusive,
    Exclusive,
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Min,
    Max,
}

/// The subgroup width the kernels [`Case::launching`] names are sized for.
const NAMED_SUBGROUP_SIZE: u32 = 32;

/// `out[i] = algo_op(a[i])` over blocks of `bd` threads.
fn algo_kernel<T: HostNum>(name: &str, algo: Algo, op: Op, bd: u32) -> Kernel {
    Kernel::range(name, bd, move |k| {
        let a = k.array::<T>("a");
        let out = k.array::<T>("out");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            let r = match (algo, op) {
                (Algo::Reduce, Op::Add) => block::reduce_add(v, bd),
                (Algo::Reduce, Op::Min) => block::reduce_min(v, bd),
                (Algo::Reduce, Op::Max) => block::reduce_max(v, bd),
                (Algo::ReduceAll, Op::Add) => block::reduce_all_add(v, bd),
                (Algo::ReduceAll, Op::Min) => block::reduce_all_min(v, bd),
                (Algo::ReduceAll, Op::Max) => block::reduce_all_max(v, bd),
                (Algo::Inclusive, Op::Add) => block::inclusive_add(v, bd),
                (Algo::Inclusive, Op::Min) => block::inclusive_min(v, bd),
                (Algo::Inclusive, Op::Max) => block::inclusive_max(v, bd),
                (Algo::Exclusive, Op::Add) => block::exclusive_add(v, bd),
                (Algo::Exclusive, Op::Min) => block::exclusive_min(v, bd),
                (Algo::Exclusive, Op::Max) => block::exclusive_max(v, bd),
            };
            // `reduce_*` defines the result in thread 0 only: the others store nothing (the
            // emulator's strict mode would report an implementation-defined value reaching memory).
            match algo {
                Algo::Reduce => if_(block::thread_idx().eq(0), || out.set(i, r)),
                _ => out.set(i, r),
            }
        });
    })
}

fn case<T: HostNum>(d: &Device, rng: &mut Rng, name: &str, algo: Algo, op: Op, subgroups: u32) -> CaseResult {
    let bd = d.subgroup_size() * subgroups;
    let k = algo_kernel::<T>(name, algo, op, bd);
    let n = bd as usize * 4;
    let a: Vec<T> = values(rng, n);
    let da = d.array_from(&a).map_err(fail)?;
    let out = d.zeros::<T>(n).map_err(fail)?;
    d.launch(&k, &[da.arg(), out.arg()]).map_err(fail)?;
    let got = out.to_vec().map_err(fail)?;
    let f = |x: f64, y: f64| match op {
        Op::Add => x + y,
        Op::Min => x.min(y),
        Op::Max => x.max(y),
    };
    let identity = match op {
        Op::Add => T::ZERO,
        Op::Min => T::MAX,
        Op::Max => T::MIN,
    };
    for (b, blk) in a.chunks(bd as usize).enumerate() {
        let x: Vec<f64> = blk.iter().map(|v| v.to_f64()).collect();
        let mut acc = x[0];
        let mut inc = vec![acc];
        for v in &x[1..] {
            acc = f(acc, *v);
            inc.push(acc);
        }
        let base = b * bd as usize;
        let got_blk = &got[base..base + bd as usize];
        let want: Vec<T> = match algo {
            Algo::Reduce => {
                expect_eq("thread 0", &got_blk[..1], &[T::from_f64(acc)])?;
                continue;
            }
            Algo::ReduceAll => vec![T::from_f64(acc); bd as usize],
            Algo::Inclusive => inc.iter().map(|v| T::from_f64(*v)).collect(),
            Algo::Exclusive => {
                std::iter::once(identity).chain(inc[..inc.len() - 1].iter().map(|v| T::from_f64(*v))).collect()
            }
        };
        expect_eq(&format!("block {b}"), got_blk, &want)?;
    }
    Ok(Outcome::Pass)
}

/// Radix rank of `num_bits` digits from `bit_start` in 256-thread blocks: the ranks, and each
/// block's digit counts and their exclusive prefix.
fn radix_rank_kernel(bit_start: u32, num_bits: u32) -> Kernel {
    Kernel::range(&format!("block_radix_rank_{bit_start}_{num_bits}"), 256, move |k| {
        let keys = k.array::<u32>("keys");
        let ranks = k.array::<i32>("ranks");
        let bins_out = k.array::<i32>("bins");
        let excl_out = k.array::<i32>("excl");
        k.parallel_for(0, keys.len(), |i| {
            let bins = block::shared_array::<i32>(256);
            let excl = block::shared_array::<i32>(256);
            let r = block::radix_rank_match_atomic_or(keys.get(i), 256, 8, bit_start, num_bits, bins, excl);
            let t = block::thread_idx();
            ranks.set(i, r);
            bins_out.set(i, bins.get(t));
            excl_out.set(i, excl.get(t));
        });
    })
}

fn radix_rank_case(d: &Device, rng: &mut Rng, bit_start: u32, num_bits: u32) -> CaseResult {
    let k = radix_rank_kernel(bit_start, num_bits);
    let n = 256 * 2;
    let keys: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32 >> 8).collect();
    let ka = d.array_from(&keys).map_err(fail)?;
    let (ranks, bins, excl) =
        (d.zeros::<i32>(n).map_err(fail)?, d.zeros::<i32>(n).map_err(fail)?, d.zeros::<i32>(n).map_err(fail)?);
    d.launch(&k, &[ka.arg(), ranks.arg(), bins.arg(), excl.arg()]).map_err(fail)?;
    let digit = |k: u32| ((k >> bit_start) & ((1 << num_bits) - 1)) as usize;
    let (mut want_r, mut want_b, mut want_e) = (Vec::new(), Vec::new(), Vec::new());
    for blk in keys.chunks(256) {
        let mut count = vec![0i32; 256];
        for k in blk {
            count[digit(*k)] += 1;
        }
        let prefix: Vec<i32> = (0..256).map(|d| count[..d].iter().sum()).collect();
        for (i, k) in blk.iter().enumerate() {
            want_r.push(prefix[digit(*k)] + blk[..i].iter().filter(|x| digit(**x) == digit(*k)).count() as i32);
        }
        want_b.extend(count);
        want_e.extend(prefix);
    }
    expect_eq("bins", &bins.to_vec().map_err(fail)?, &want_b)?;
    expect_eq("exclusive prefix", &excl.to_vec().map_err(fail)?, &want_e)?;
    expect_eq("ranks", &ranks.to_vec().map_err(fail)?, &want_r)?;
    Ok(Outcome::Pass)
}

/// One configuration of [`block::radix_rank_keys`] with `K > 1`: block size, digit bits, the digit's
/// bits, and whether the keys take few distinct values (long runs of peers in every subgroup).
#[derive(Clone, Copy)]
struct RankKeys {
    block: u32,
    radix_bits: u32,
    bit_start: u32,
    num_bits: u32,
    few_distinct: bool,
}

/// Ranks `K` warp-striped keys per thread in blocks of `c.block` threads; each block ranks its
/// `K * c.block` consecutive keys and writes its digit counts and their prefix.
fn radix_rank_keys_kernel<const K: usize>(c: RankKeys) -> Kernel {
    let name = format!(
        "block_radix_rank_keys{K}_b{}_r{}_{}_{}{}",
        c.block,
        c.radix_bits,
        c.bit_start,
        c.num_bits,
        if c.few_distinct { "_few" } else { "" }
    );
    Kernel::explicit(&name, c.block, move |k| {
        let keys = k.array::<u32>("keys");
        let ranks = k.array::<i32>("ranks");
        let bins_out = k.array::<i32>("bins");
        let excl_out = k.array::<i32>("excl");
        let digits = 1u32 << c.radix_bits;
        let t = block::thread_idx();
        let sg = subgroup::group_size() as i32;
        let (warp, lane) = (t / sg, subgroup::invocation_id());
        let base = block::block_idx() * (K as u32 * c.block) as i32;
        let pos = |j: usize| base + (warp * K as i32 + j as i32) * sg + lane;
        let ks: [Val<u32>; K] = std::array::from_fn(|j| keys.get(pos(j)));
        let bins = block::shared_array::<i32>(digits);
        let excl = block::shared_array::<i32>(digits);
        let r = block::radix_rank_keys(ks, c.block, c.radix_bits, c.bit_start, c.num_bits, bins, excl);
        for (j, rank) in r.iter().enumerate() {
            ranks.set(pos(j), *rank);
        }
        for d in (0..digits).step_by(c.block as usize) {
            let di = t + d as i32;
            if_(di.lt(digits as i32), || {
                let at = block::block_idx() * digits as i32 + di;
                bins_out.set(at, bins.get(di));
                excl_out.set(at, excl.get(di));
            });
        }
    })
}

fn radix_rank_keys_case<const K: usize>(d: &Device, rng: &mut Rng, c: RankKeys) -> CaseResult {
    let k = radix_rank_keys_kernel::<K>(c);
    let (tile, blocks, digits) = (K * c.block as usize, 2usize, 1usize << c.radix_bits);
    let n = tile * blocks;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            let x = rng.next_u64() as u32;
            if c.few_distinct {
                // Three values of the digit's bits: most subgroups hold long runs of peers.
                [0, 0x5555_5555, u32::MAX][(x % 3) as usize] & !(1 << 31)
            } else {
                x
            }
        })
        .collect();
    let ka = d.array_from(&keys).map_err(fail)?;
    let ranks = d.zeros::<i32>(n).map_err(fail)?;
    let (bins, excl) = (d.zeros::<i32>(digits * blocks).map_err(fail)?, d.zeros::<i32>(digits * blocks).map_err(fail)?);
    d.launch_grid(&k, blocks as u32, &[ka.arg(), ranks.arg(), bins.arg(), excl.arg()]).map_err(fail)?;
    let digit = |k: u32| ((k >> c.bit_start) & ((1u64 << c.num_bits) - 1) as u32) as usize;
    let (mut want_r, mut want_b, mut want_e) = (Vec::new(), Vec::new(), Vec::new());
    for blk in keys.chunks(tile) {
        let mut count = vec![0i32; digits];
        for k in blk {
            count[digit(*k)] += 1;
        }
        let prefix: Vec<i32> = (0..digits).map(|d| count[..d].iter().sum()).collect();
        let mut seen = vec![0i32; digits];
        for k in blk {
            want_r.push(prefix[digit(*k)] + seen[digit(*k)]);
            seen[digit(*k)] += 1;
        }
        want_b.extend(count);
        want_e.extend(prefix);
    }
    expect_eq("bins", &bins.to_vec().map_err(fail)?, &want_b)?;
    expect_eq("exclusive prefix", &excl.to_vec().map_err(fail)?, &want_e)?;
    expect_eq("ranks", &ranks.to_vec().map_err(fail)?, &want_r)?;
    Ok(Outcome::Pass)
}

/// The `K > 1` configurations: as many threads as digits, fewer (two digits per thread), more (a
/// third of the threads own none), a partial digit, a digit at the top of the key, few distinct keys.
fn register_radix_rank_keys(cases: &mut Vec<Case>) {
    fn add<const K: usize>(cases: &mut Vec<Case>, c: RankKeys) {
        let few = if c.few_distinct { "_few_distinct" } else { "" };
        let id = format!(
            "block/radix_rank_keys/k{K}_block{}_radix{}_start{}_bits{}{few}",
            c.block, c.radix_bits, c.bit_start, c.num_bits
        );
        cases.push(
            Case::new(id, move |d, rng| radix_rank_keys_case::<K>(d, rng, c))
                .launching(move || vec![radix_rank_keys_kernel::<K>(c)]),
        );
    }
    let c = |block, radix_bits, bit_start, num_bits, few_distinct| RankKeys {
        block,
        radix_bits,
        bit_start,
        num_bits,
        few_distinct,
    };
    add::<4>(cases, c(256, 8, 0, 8, false));
    add::<4>(cases, c(256, 8, 8, 8, true));
    add::<2>(cases, c(128, 8, 4, 6, false));
    add::<3>(cases, c(192, 7, 25, 7, false));
    add::<5>(cases, c(384, 8, 24, 8, true));
}

fn register_dtype<T: HostNum>(cases: &mut Vec<Case>) {
    for (algo, an) in [
        (Algo::Reduce, "reduce"),
        (Algo::ReduceAll, "reduce_all"),
        (Algo::Inclusive, "inclusive"),
        (Algo::Exclusive, "exclusive"),
    ] {
        for (op, on) in [(Op::Add, "add"), (Op::Min, "min"), (Op::Max, "max")] {
            for sgs in [1u32, 4] {
                let id = format!("block/{an}_{on}/{}/sg_per_block{sgs}", T::NAME);
                let name = id.replace('/', "_");
                let named = name.clone();
                cases.push(
                    Case::new(id, move |d, rng| case::<T>(d, rng, &name, algo, op, sgs))
                        .launching(move || vec![algo_kernel::<T>(&named, algo, op, NAMED_SUBGROUP_SIZE * sgs)]),
                );
            }
        }
    }
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    register_dtype::<i32>(cases);
    register_dtype::<i64>(cases);
    register_dtype::<u32>(cases);
    register_dtype::<u64>(cases);
    register_dtype::<f32>(cases);
    register_dtype::<f64>(cases);
    for (start, bits) in [(0, 8), (8, 8), (4, 6)] {
        cases.push(
            Case::new(format!("block/radix_rank_match_atomic_or/start{start}_bits{bits}"), move |d, rng| {
                radix_rank_case(d, rng, start, bits)
            })
            .launching(move || vec![radix_rank_kernel(start, bits)]),
        );
    }
    register_radix_rank_keys(cases);
}
