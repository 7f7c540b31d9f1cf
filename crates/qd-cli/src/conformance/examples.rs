//! Conformance cases from the seed pages' examples, plus the block, grid and atomic basics they
//! stand on.
//!
//! Every check follows one shape: random inputs from the case's [`Rng`], one launch, a host
//! reference, an exact comparison. A [`Check`] owns its kernel, so `qd tour` runs the same code as
//! `qd conformance` and `qd emit` prints the same kernels.

pub use super::flags::{last_block_done, last_block_done_with, producer_consumer, producer_consumer_with, Split, Wait};
use super::{expect_eq, fail, Case, CaseError, Outcome, Rng};
use qd::lang::{KernelFn, Params};
use qd::prelude::*;
use qd::trace::Int;
use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, BitXor};

/// Threads per block in every kernel here (a multiple of every emulated subgroup width).
pub(super) const BLOCK: u32 = 64;

/// What a successful run reports: a one-line summary of inputs and outputs for the tour.
pub type Summary = String;

type Runner = dyn Fn(&Kernel, &Device, &mut Rng) -> Result<Summary, CaseError> + Send + Sync;

/// A kernel with its host-side driver: makes random inputs, launches, compares with the host
/// reference and summarises the result.
pub struct Check {
    kernel: Kernel,
    run: Box<Runner>,
}

impl Check {
    pub(super) fn new(
        kernel: Kernel,
        run: impl Fn(&Kernel, &Device, &mut Rng) -> Result<Summary, CaseError> + Send + Sync + 'static,
    ) -> Check {
        Check { kernel, run: Box::new(run) }
    }

    /// A check of a `#[qd::kernel]`, launched through its typed launch.
    pub(super) fn typed<P: Params + 'static, L: 'static>(
        kernel: KernelFn<P, L>,
        run: impl Fn(&KernelFn<P, L>, &Device, &mut Rng) -> Result<Summary, CaseError> + Send + Sync + 'static,
    ) -> Check {
        let untyped = kernel.kernel().clone();
        Check::new(untyped, move |_, device, rng| run(&kernel, device, rng))
    }

    /// The kernel this check launches.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Runs the check: `Ok(summary)` when the device matched the host reference.
    pub fn run(&self, device: &Device, rng: &mut Rng) -> Result<Summary, CaseError> {
        (self.run)(&self.kernel, device, rng)
    }
}

/// Data types the cases run on, with the host arithmetic their references need.
pub trait Elt: Num {
    /// Short name used in case ids and kernel names (`i32`, `f64`, ...).
    const NAME: &'static str;
    /// A random value: every bit pattern for integers, a finite multiple of 1/8 for floats
    /// (readable in the tour, and never a NaN that would fail an exact comparison).
    fn random(rng: &mut Rng) -> Self;
    /// A random summand: any integer, or a small whole float so that every sum a case makes is
    /// exact whatever the order of the additions.
    fn summand(rng: &mut Rng) -> Self;
    /// `x as Self` (integers wrap).
    fn from_i64(x: i64) -> Self;
    /// Addition as the device does it (integers wrap, D5).
    fn host_add(self, o: Self) -> Self;
    /// Subtraction as the device does it.
    fn host_sub(self, o: Self) -> Self;
    /// Minimum.
    fn host_min(self, o: Self) -> Self;
    /// Maximum.
    fn host_max(self, o: Self) -> Self;
}

/// Integer [`Elt`]s: the bitwise atomics and compare-and-swap.
pub trait IntElt: Elt + Int + Ord + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self> {}

macro_rules! int_elt {
    ($($t:ty),*) => {$(
        impl Elt for $t {
            const NAME: &'static str = stringify!($t);
            fn random(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
            fn summand(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn host_add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn host_sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn host_min(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            fn host_max(self, o: Self) -> Self {
                Ord::max(self, o)
            }
        }
        impl IntElt for $t {}
    )*};
}
int_elt!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_elt {
    ($($t:ty),*) => {$(
        impl Elt for $t {
            const NAME: &'static str = stringify!($t);
            fn random(rng: &mut Rng) -> Self {
                rng.range_i64(-8000, 8000) as $t / 8.0
            }
            fn summand(rng: &mut Rng) -> Self {
                rng.range_i64(-64, 64) as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn host_add(self, o: Self) -> Self {
                self + o
            }
            fn host_sub(self, o: Self) -> Self {
                self - o
            }
            fn host_min(self, o: Self) -> Self {
                self.min(o)
            }
            fn host_max(self, o: Self) -> Self {
                self.max(o)
            }
        }
    )*};
}
float_elt!(f32, f64);

// ---------------------------------------------------------------------------------------------
// Host helpers.

/// A random length: 1 to 8 blocks.
pub(super) fn random_len(rng: &mut Rng) -> usize {
    BLOCK as usize * random_blocks(rng)
}

/// A random grid: 1 to 8 blocks, enough for blocks to run concurrently on the emulator's pool.
pub(super) fn random_blocks(rng: &mut Rng) -> usize {
    rng.range_i64(1, 9) as usize
}

/// A random-length vector of random `T`s.
fn random_data<T: Elt>(rng: &mut Rng) -> Vec<T> {
    let n = random_len(rng);
    random_vec(rng, n, T::random)
}

pub(super) fn random_vec<T>(rng: &mut Rng, n: usize, f: impl Fn(&mut Rng) -> T) -> Vec<T> {
    (0..n).map(|_| f(rng)).collect()
}

pub(super) fn upload<T: Scalar>(device: &Device, data: &[T]) -> Result<DeviceArray<T>, CaseError> {
    device.array_from(data).map_err(fail)
}

pub(super) fn download<T: Scalar>(a: &DeviceArray<T>) -> Result<Vec<T>, CaseError> {
    a.to_vec().map_err(fail)
}

/// The first few elements, for the tour's one-line summaries.
fn head<T: Debug>(xs: &[T]) -> String {
    const SHOWN: usize = 8;
    let items: Vec<String> = xs.iter().take(SHOWN).map(|x| format!("{x:?}")).collect();
    let more = if xs.len() > SHOWN { ", ..." } else { "" };
    format!("[{}{more}]", items.join(", "))
}

/// `name = [first elements, ...] (n = len)`.
pub(super) fn show<T: Debug>(name: &str, xs: &[T]) -> String {
    format!("{name} = {} (n = {})", head(xs), xs.len())
}

/// Shows a bitmask in hex.
struct Hex(u32);

impl Debug for Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// Checks that `got` is a permutation of `0..n` (as `T`).
fn expect_permutation<T: IntElt + Debug>(what: &str, got: &[T]) -> Result<(), CaseError> {
    let mut sorted = got.to_vec();
    sorted.sort();
    let want: Vec<T> = (0..got.len() as i64).map(T::from_i64).collect();
    Ok(expect_eq(&format!("{what} (sorted)"), &sorted, &want)?)
}

// ---------------------------------------------------------------------------------------------
// The subgroup page's examples.

/// The subgroup page's "broadcast lane 0 to all lanes" example.
#[qd::kernel(name = format!("broadcast_lane0_{}", T::NAME))]
fn broadcast<T: Elt + Shuffle>(a: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(a.len()) {
        a[i] = subgroup::shuffle(a[i], 0u32);
    }
}

/// Every lane reads lane 0's value: `a[i] = shuffle(a[i], 0)`.
pub fn broadcast_lane0<T: Elt + Shuffle>() -> Check {
    Check::typed(broadcast::<T>(), |kernel, device, rng| {
        let src = random_data::<T>(rng);
        let mut a = upload(device, &src)?;
        kernel.launch(device, (&mut a,)).map_err(fail)?;
        let sg = device.subgroup_size() as usize;
        let want: Vec<T> = (0..src.len()).map(|i| src[i - i % sg]).collect();
        let got = download(&a)?;
        expect_eq("a", &got, &want)?;
        Ok(format!("before {}; after {}", show("a", &src), show("a", &got)))
    })
}

/// The subgroup page's ballot example, written so it runs at any subgroup width.
#[qd::kernel(name = "ballot_count_positive")]
fn count_positive(a: &[f32], counts: &mut [u32]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(a.len()) {
        // ballot_first_n takes at most 32 lanes; on a 64-wide subgroup the upper half is left out.
        let n = subgroup::group_size().min(32);
        let mask = subgroup::ballot_first_n((a[i] > 0.0f32) as i32, n);
        if subgroup::invocation_id() == 0 {
            counts[i >> subgroup::log2_group_size() as i32] = mask;
        }
    }
}

/// `counts[g]` = ballot of `a[i] > 0` over the first `min(32, group size)` lanes of subgroup `g`,
/// written so it runs at any subgroup width.
pub fn ballot_count_positive() -> Check {
    Check::typed(count_positive(), |kernel, device, rng| {
        let n = random_len(rng);
        // A quarter zeros: zero is not positive.
        let src = random_vec(rng, n, |r| if r.range_i64(0, 4) == 0 { 0.0 } else { f32::random(r) });
        let sg = device.subgroup_size() as usize;
        let a = upload(device, &src)?;
        let mut counts = device.zeros::<u32>(n / sg).map_err(fail)?;
        kernel.launch(device, (&a, &mut counts)).map_err(fail)?;
        let want: Vec<u32> =
            (0..n / sg).map(|g| (0..sg.min(32)).filter(|&l| src[g * sg + l] > 0.0).map(|l| 1u32 << l).sum()).collect();
        let got = download(&counts)?;
        expect_eq("counts", &got, &want)?;
        let popc: Vec<u32> = got.iter().map(|m| m.count_ones()).collect();
        let got: Vec<Hex> = got.into_iter().map(Hex).collect();
        Ok(format!(
            "{}; masks {}; positives per subgroup (popcount on the host) {}",
            show("a", &src),
            head(&got),
            head(&popc)
        ))
    })
}

/// The subgroup page's identity shuffle: each lane reads its own id.
#[qd::kernel(name = format!("identity_shuffle_{}", T::NAME))]
fn identity<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(src.len()) {
        let lane = subgroup::invocation_id();
        dst[i] = subgroup::shuffle(src[i], lane as u32);
    }
}

/// The subgroup page's neighbour swap (the xor pattern through an explicit lane).
#[qd::kernel(name = format!("swap_neighbours_{}", T::NAME))]
fn swap_pairs<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(src.len()) {
        let lane = subgroup::invocation_id();
        dst[i] = subgroup::shuffle(src[i], (lane ^ 1) as u32);
    }
}

/// The subgroup page's arbitrary per-lane gather: reverse each group of 4 lanes.
#[qd::kernel(name = format!("reverse4_{}", T::NAME))]
fn reverse_fours<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(src.len()) {
        let lane = subgroup::invocation_id();
        // group_base + 3 - lane % 4, with group_base = lane / 4 * 4
        dst[i] = subgroup::shuffle(src[i], (lane / 4 * 4 + 3 - lane % 4) as u32);
    }
}

/// Runs a gather kernel and checks `dst[i] == src[base(i) + source_lane(lane(i))]`.
fn gather_check<T: Elt, L: 'static>(
    kernel: KernelFn<(qd::lang::Slice<T>, qd::lang::SliceMut<T>), L>,
    source_lane: fn(usize) -> usize,
) -> Check {
    Check::new(kernel.kernel().clone(), move |kernel, device, rng| {
        let src = random_data::<T>(rng);
        let a = upload(device, &src)?;
        let d = device.zeros::<T>(src.len()).map_err(fail)?;
        device.launch(kernel, &[a.arg(), d.arg()]).map_err(fail)?;
        let sg = device.subgroup_size() as usize;
        let want: Vec<T> = (0..src.len()).map(|i| src[i - i % sg + source_lane(i % sg)]).collect();
        let got = download(&d)?;
        expect_eq("dst", &got, &want)?;
        Ok(format!("{}; {}", show("src", &src), show("dst", &got)))
    })
}

/// Identity shuffle: every lane reads its own id, so `dst == src`.
pub fn identity_shuffle<T: Elt + Shuffle>() -> Check {
    gather_check(identity::<T>(), |l| l)
}

/// Swap neighbours: lane `l` reads lane `l ^ 1`.
pub fn swap_neighbours<T: Elt + Shuffle>() -> Check {
    gather_check(swap_pairs::<T>(), |l| l ^ 1)
}

/// Reverse within each group of 4 lanes: lane `l` reads `l / 4 * 4 + 3 - l % 4`.
pub fn reverse4<T: Elt + Shuffle>() -> Check {
    gather_check(reverse_fours::<T>(), |l| l / 4 * 4 + 3 - l % 4)
}

/// `broadcast` from a lane that differs per lane (lane `l` reads `l ^ 1`): where a broadcast needs
/// a subgroup-uniform lane (SPIR-V's `OpGroupNonUniformBroadcast`), the backend lowers it to a
/// shuffle.
pub fn broadcast_varying_lane<T: Elt + Shuffle>() -> Check {
    gather_check(broadcast_from_neighbour::<T>(), |l| l ^ 1)
}

#[qd::kernel(name = format!("broadcast_varying_lane_{}", T::NAME))]
fn broadcast_from_neighbour<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(src.len()) {
        let lane = subgroup::invocation_id() ^ 1;
        dst[i] = subgroup::broadcast(src[i], lane as u32);
    }
}

/// The subgroup page's tree reduction with `shuffle_down`.
#[qd::kernel(name = format!("reduce4_{}", T::NAME))]
fn tree_reduce4<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(src.len()) {
        let mut v = src[i];
        v = v + subgroup::shuffle_down(v, 2u32);
        v = v + subgroup::shuffle_down(v, 1u32);
        // Only lane 0 of each group of 4 holds a sum (the others read past their group).
        if i % 4 == 0 {
            dst[i] = v;
        }
    }
}

/// Tree reduction of 4 with `shuffle_down`: lane 0 of each group of 4 holds the group's sum.
pub fn reduce4<T: Elt + Shuffle>() -> Check {
    Check::typed(tree_reduce4::<T>(), |kernel, device, rng| {
        let src = random_data::<T>(rng);
        let a = upload(device, &src)?;
        let mut d = device.zeros::<T>(src.len()).map_err(fail)?;
        kernel.launch(device, (&a, &mut d)).map_err(fail)?;
        // Only lane 0 of each group stores its sum; the host adds in the device's order so float
        // sums match exactly.
        let want: Vec<T> = src.chunks(4).map(|c| c[0].host_add(c[2]).host_add(c[1].host_add(c[3]))).collect();
        let got: Vec<T> = download(&d)?.into_iter().step_by(4).collect();
        expect_eq("dst[4g]", &got, &want)?;
        Ok(format!("{}; group sums (dst[4g]) {}", show("src", &src), head(&got)))
    })
}

/// `subgroup::group_size()` seen by a kernel equals the device's, and lane ids count `0..size`.
pub fn group_size_query() -> Check {
    let kernel = Kernel::range("group_size_query", BLOCK, |k| {
        let size = k.array::<u32>("size");
        let lane = k.array::<i32>("lane");
        k.parallel_for(0, lane.len(), |i| {
            size.set(i, subgroup::group_size());
            lane.set(i, subgroup::invocation_id());
        });
    });
    Check::new(kernel, |kernel, device, rng| {
        let n = random_len(rng);
        let size = device.zeros::<u32>(n).map_err(fail)?;
        let lane = device.zeros::<i32>(n).map_err(fail)?;
        device.launch(kernel, &[size.arg(), lane.arg()]).map_err(fail)?;
        let sg = device.subgroup_size();
        expect_eq("size", &download(&size)?, &vec![sg; n])?;
        let got = download(&lane)?;
        expect_eq("lane", &got, &(0..n as i32).map(|i| i % sg as i32).collect::<Vec<_>>())?;
        Ok(format!("group_size() = {sg}; {}", show("lane", &got)))
    })
}

// ---------------------------------------------------------------------------------------------
// Atomics, block and grid examples.

/// The atomics page's reservation counter.
#[qd::kernel(name = "reservation_counter")]
fn reserve_slots(counter: &mut [i32], slots: &mut [i32]) {
    qd::loop_config(block_dim = BLOCK);
    for i in range(slots.len()) {
        let slot = atomic_add(&counter[0], 1);
        slots[i] = slot;
    }
}

/// Reservation counter: `slot = atomic_add(counter[0], 1)` hands every thread a unique slot.
pub fn reservation_counter() -> Check {
    Check::typed(reserve_slots(), |kernel, device, rng| {
        let n = random_len(rng);
        let mut counter = device.zeros::<i32>(1).map_err(fail)?;
        let mut slots = device.zeros::<i32>(n).map_err(fail)?;
        kernel.launch(device, (&mut counter, &mut slots)).map_err(fail)?;
        let got = download(&slots)?;
        expect_permutation("slots", &got)?;
        expect_eq("counter", &download(&counter)?, &[n as i32])?;
        Ok(format!("counter = {n}; {} (a permutation of 0..{n})", show("slots", &got)))
    })
}

/// The block page's shared-array exchange.
#[qd::kernel(block_dim = BLOCK, name = format!("shared_exchange_{}", T::NAME))]
fn exchange_reversed<T: Elt + Shuffle>(src: &[T], dst: &mut [T]) {
    let shared = block::shared_array::<T>(BLOCK);
    let t = block::thread_idx();
    let g = block::global_thread_idx();
    shared[t] = src[g];
    block::sync();
    dst[g] = shared[block::block_dim() - 1 - t];
}

/// Shared-array exchange across `block::sync()`: each thread writes `shared[tid]`, then reads
/// `shared[block_dim - 1 - tid]`, so every block comes out reversed.
pub fn shared_exchange<T: Elt + Shuffle>() -> Check {
    Check::typed(exchange_reversed::<T>(), |kernel, device, rng| {
        let src = random_data::<T>(rng);
        let a = upload(device, &src)?;
        let mut d = device.zeros::<T>(src.len()).map_err(fail)?;
        let blocks = (src.len() / BLOCK as usize) as u32;
        kernel.launch_grid(device, blocks, (&a, &mut d)).map_err(fail)?;
        let b = BLOCK as usize;
        let want: Vec<T> = (0..src.len()).map(|i| src[i - i % b + (b - 1 - i % b)]).collect();
        let got = download(&d)?;
        expect_eq("dst", &got, &want)?;
        Ok(format!("{}; {}", show("src", &src), show("dst", &got)))
    })
}

/// `thread_idx`, `block_idx`, `block_dim`, `grid_dim` and `global_thread_idx` over several blocks
/// of an explicit kernel.
pub fn thread_indices_explicit() -> Check {
    let kernel = Kernel::explicit("thread_indices_explicit", BLOCK, |k| {
        let tid = k.array::<i32>("tid");
        let bid = k.array::<i32>("bid");
        let dims = k.array::<i32>("dims");
        let g = block::global_thread_idx();
        tid.set(g, block::thread_idx());
        bid.set(g, block::block_idx());
        dims.set(g, block::block_dim() * 1000 + block::grid_dim());
    });
    Check::new(kernel, |kernel, device, rng| {
        let blocks = random_blocks(rng);
        let n = blocks * BLOCK as usize;
        let init = vec![-1i32; n];
        let (tid, bid, dims) = (upload(device, &init)?, upload(device, &init)?, upload(device, &init)?);
        device.launch_grid(kernel, blocks as u32, &[tid.arg(), bid.arg(), dims.arg()]).map_err(fail)?;
        let b = BLOCK as usize;
        expect_eq("tid", &download(&tid)?, &(0..n).map(|g| (g % b) as i32).collect::<Vec<_>>())?;
        expect_eq("bid", &download(&bid)?, &(0..n).map(|g| (g / b) as i32).collect::<Vec<_>>())?;
        expect_eq("block_dim * 1000 + grid_dim", &download(&dims)?, &vec![BLOCK as i32 * 1000 + blocks as i32; n])?;
        Ok(format!("{blocks} blocks of {BLOCK}"))
    })
}

/// A range kernel starting at a random `begin`: `thread_idx == (i - begin) % block_dim` and
/// `global_thread_idx == i - begin` (D1); the length need not be a multiple of the block.
pub fn thread_indices_range() -> Check {
    let kernel = Kernel::range("thread_indices_range", BLOCK, |k| {
        let begin = k.scalar::<i32>("begin");
        let tid = k.array::<i32>("tid");
        let gtid = k.array::<i32>("gtid");
        k.parallel_for(begin, begin + tid.len(), |i| {
            tid.set(i - begin, block::thread_idx());
            gtid.set(i - begin, block::global_thread_idx());
        });
    });
    Check::new(kernel, |kernel, device, rng| {
        let n = rng.range_i64(1, 300) as usize;
        let begin = rng.range_i64(-1000, 1000) as i32;
        let init = vec![-1i32; n];
        let (tid, gtid) = (upload(device, &init)?, upload(device, &init)?);
        device.launch(kernel, &[Arg::scalar(begin), tid.arg(), gtid.arg()]).map_err(fail)?;
        let b = BLOCK as i32;
        expect_eq("tid", &download(&tid)?, &(0..n as i32).map(|j| j % b).collect::<Vec<_>>())?;
        expect_eq("gtid", &download(&gtid)?, &(0..n as i32).collect::<Vec<_>>())?;
        Ok(format!("begin = {begin}, {n} iterations"))
    })
}

/// A block barrier that reduces a predicate.
#[derive(Clone, Copy, Debug)]
pub enum SyncReduce {
    /// `block::sync_all_nonzero`.
    All,
    /// `block::sync_any_nonzero`.
    Any,
    /// `block::sync_count_nonzero`.
    Count,
}

impl SyncReduce {
    /// Every variant, in case order.
    pub const ALL: [SyncReduce; 3] = [SyncReduce::All, SyncReduce::Any, SyncReduce::Count];

    /// The op's name (`sync_all_nonzero`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SyncReduce::All => "sync_all_nonzero",
            SyncReduce::Any => "sync_any_nonzero",
            SyncReduce::Count => "sync_count_nonzero",
        }
    }

    fn device(self, p: Val<i32>) -> Val<i32> {
        match self {
            SyncReduce::All => block::sync_all_nonzero(p),
            SyncReduce::Any => block::sync_any_nonzero(p),
            SyncReduce::Count => block::sync_count_nonzero(p),
        }
    }

    fn host(self, block: &[i32]) -> i32 {
        match self {
            SyncReduce::All => block.iter().all(|&p| p != 0) as i32,
            SyncReduce::Any => block.iter().any(|&p| p != 0) as i32,
            SyncReduce::Count => block.iter().filter(|&&p| p != 0).count() as i32,
        }
    }
}

/// `block::sync_{all,any,count}_nonzero`, called twice in a row (the slot must be reusable) on
/// predicates that are true when non-zero, not just when bit 0 is set.
pub fn block_sync_reduce(op: SyncReduce) -> Check {
    let kernel = Kernel::explicit(&format!("block_{}", op.name()), BLOCK, move |k| {
        let pred = k.array::<i32>("pred");
        let out = k.array::<i32>("out");
        let g = block::global_thread_idx();
        let n = block::grid_dim() * block::block_dim();
        // Unrolled while tracing: two calls, each a separate barrier.
        for round in 0..2 {
            let j = g + n * round;
            out.set(j, op.device(pred.get(j)));
        }
    });
    Check::new(kernel, move |kernel, device, rng| {
        let blocks = random_blocks(rng);
        let b = BLOCK as usize;
        let mut pred = Vec::with_capacity(2 * blocks * b);
        for _ in 0..2 * blocks {
            pred.extend(random_predicates(rng, b));
        }
        let p = upload(device, &pred)?;
        let out = device.zeros::<i32>(pred.len()).map_err(fail)?;
        device.launch_grid(kernel, blocks as u32, &[p.arg(), out.arg()]).map_err(fail)?;
        let want: Vec<i32> = pred.chunks(b).flat_map(|c| vec![op.host(c); b]).collect();
        let got = download(&out)?;
        expect_eq("out", &got, &want)?;
        let per_block: Vec<i32> = got.iter().step_by(b).copied().collect();
        Ok(format!("per block {}", head(&per_block)))
    })
}

/// One block's predicates: all zero, all non-zero, a random mix, or a single non-zero thread;
/// non-zero values include 2 and -1 (bit 0 clear or every bit set).
fn random_predicates(rng: &mut Rng, n: usize) -> Vec<i32> {
    const NONZERO: [i32; 6] = [1, 2, -1, 7, i32::MIN, i32::MAX];
    let nonzero = |r: &mut Rng| NONZERO[r.range_i64(0, NONZERO.len() as i64) as usize];
    match rng.range_i64(0, 4) {
        0 => vec![0; n],
        1 => random_vec(rng, n, nonzero),
        2 => random_vec(rng, n, |r| if r.range_i64(0, 2) == 0 { 0 } else { nonzero(r) }),
        _ => {
            let mut v = vec![0; n];
            let at = rng.range_i64(0, n as i64) as usize;
            v[at] = nonzero(rng);
            v
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Atomic read-modify-write table.

/// Elements every thread's contended atomic lands on (`acc[i % SLOTS]`).
pub(super) const SLOTS: usize = 4;

/// An atomic read-modify-write op: its device call and its host meaning.
pub struct Rmw<T> {
    /// Op name (`add`, `exchange`, ...).
    pub name: &'static str,
    device: fn(Elem<T>, Val<T>) -> Val<T>,
    host: fn(T, T) -> T,
    /// Values drawn for it.
    random: fn(&mut Rng) -> T,
}

impl<T> Clone for Rmw<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Rmw<T> {}

impl<T: Elt> Rmw<T> {
    /// Ops defined on every [`Elt`]: add, min, max, exchange.
    pub fn common() -> Vec<Rmw<T>> {
        vec![
            Rmw { name: "add", device: |e, v| atomic_add(e, v), host: T::host_add, random: T::summand },
            Rmw { name: "min", device: |e, v| atomic_min(e, v), host: T::host_min, random: T::random },
            Rmw { name: "max", device: |e, v| atomic_max(e, v), host: T::host_max, random: T::random },
            Rmw { name: "exchange", device: |e, v| atomic_exchange(e, v), host: |_, v| v, random: T::random },
        ]
    }

    /// Exchange's contended result is whichever store came last, not a fold.
    fn is_fold(&self) -> bool {
        self.name != "exchange"
    }
}

impl<T: IntElt> Rmw<T> {
    /// Ops only integers have: sub and the bitwise ones.
    pub fn integer() -> Vec<Rmw<T>> {
        vec![
            Rmw { name: "sub", device: |e, v| atomic_sub(e, v), host: T::host_sub, random: T::random },
            Rmw { name: "and", device: |e, v| atomic_and(e, v), host: |x, y| x & y, random: T::random },
            Rmw { name: "or", device: |e, v| atomic_or(e, v), host: |x, y| x | y, random: T::random },
            Rmw { name: "xor", device: |e, v| atomic_xor(e, v), host: |x, y| x ^ y, random: T::random },
        ]
    }
}

/// One atomic op on one type: `olds[i] = op(own[i], vals[i])` checks the returned old value and
/// the new value exactly; `op(acc[i % SLOTS], vals[i])` checks atomicity under contention.
pub fn atomic_rmw<T: Elt>(op: Rmw<T>) -> Check {
    let kernel = Kernel::range(&format!("atomic_{}_{}", op.name, T::NAME), BLOCK, move |k| {
        let vals = k.array::<T>("vals");
        let own = k.array::<T>("own");
        let olds = k.array::<T>("olds");
        let acc = k.array::<T>("acc");
        k.parallel_for(0, vals.len(), |i| {
            let v = vals.get(i);
            olds.set(i, (op.device)(own.at(i), v));
            (op.device)(acc.at(i % SLOTS as i32), v);
        });
    });
    Check::new(kernel, move |kernel, device, rng| {
        let n = random_len(rng);
        let vals = random_vec(rng, n, op.random);
        let own_init = random_vec(rng, n, op.random);
        let acc_init = random_vec(rng, SLOTS, op.random);
        let (v, own, acc) = (upload(device, &vals)?, upload(device, &own_init)?, upload(device, &acc_init)?);
        let olds = device.zeros::<T>(n).map_err(fail)?;
        device.launch(kernel, &[v.arg(), own.arg(), olds.arg(), acc.arg()]).map_err(fail)?;
        expect_eq("olds", &download(&olds)?, &own_init)?;
        let own_want: Vec<T> = own_init.iter().zip(&vals).map(|(&x, &y)| (op.host)(x, y)).collect();
        expect_eq("own", &download(&own)?, &own_want)?;
        let acc_got = download(&acc)?;
        for (s, (&init, &got)) in acc_init.iter().zip(&acc_got).enumerate() {
            let mine = vals.iter().skip(s).step_by(SLOTS).copied();
            if op.is_fold() {
                let want = mine.fold(init, op.host);
                if got != want {
                    return Err(format!("acc[{s}] = {got:?}, expected {want:?}").into());
                }
            } else if !mine.clone().any(|x| x == got) {
                return Err(format!("acc[{s}] = {got:?}, which no thread of that slot stored").into());
            }
        }
        Ok(format!("{}; {}", show("vals", &vals), show("acc", &acc_got)))
    })
}

/// Compare-and-swap: an exact per-element check (half the expectations hit), and, for 32- and
/// 64-bit elements, a CAS loop in which every thread retries until its increment of a shared
/// counter lands (an 8- or 16-bit counter would wrap before every thread has a ticket).
pub fn atomic_cas_check<T: IntElt>() -> Check {
    let tickets_fit = T::DTYPE.bits() >= 32;
    let kernel = Kernel::range(&format!("atomic_cas_{}", T::NAME), BLOCK, move |k| {
        let expected = k.array::<T>("expected");
        let desired = k.array::<T>("desired");
        let own = k.array::<T>("own");
        let olds = k.array::<T>("olds");
        let counter = k.array::<T>("counter");
        let tickets = k.array::<T>("tickets");
        k.parallel_for(0, own.len(), |i| {
            olds.set(i, atomic_cas(own.at(i), expected.get(i), desired.get(i)));
            if !tickets_fit {
                return;
            }
            loop_(|| {
                let cur = volatile_load(counter.at(0));
                let seen = atomic_cas(counter.at(0), cur, cur + T::ONE);
                if_(seen.eq(cur), || {
                    tickets.set(i, cur);
                    break_();
                });
            });
        });
    });
    Check::new(kernel, move |kernel, device, rng| {
        let n = random_len(rng);
        let own_init = random_vec(rng, n, T::random);
        let expected: Vec<T> =
            own_init.iter().map(|&x| if rng.range_i64(0, 2) == 0 { x } else { T::random(rng) }).collect();
        let desired = random_vec(rng, n, T::random);
        let (e, d, own) = (upload(device, &expected)?, upload(device, &desired)?, upload(device, &own_init)?);
        let olds = device.zeros::<T>(n).map_err(fail)?;
        let counter = device.zeros::<T>(1).map_err(fail)?;
        let tickets = device.zeros::<T>(n).map_err(fail)?;
        let args = [e.arg(), d.arg(), own.arg(), olds.arg(), counter.arg(), tickets.arg()];
        device.launch(kernel, &args).map_err(fail)?;
        expect_eq("olds", &download(&olds)?, &own_init)?;
        let own_want: Vec<T> =
            (0..n).map(|i| if own_init[i] == expected[i] { desired[i] } else { own_init[i] }).collect();
        expect_eq("own", &download(&own)?, &own_want)?;
        let hits = (0..n).filter(|&i| own_init[i] == expected[i]).count();
        if !tickets_fit {
            return Ok(format!("{hits} of {n} swaps hit"));
        }
        expect_permutation("tickets", &download(&tickets)?)?;
        expect_eq("counter", &download(&counter)?, &[T::from_i64(n as i64)])?;
        Ok(format!("{hits} of {n} swaps hit; {n} CAS-loop increments landed"))
    })
}

// ---------------------------------------------------------------------------------------------
// The table.

fn per_type<T: Elt + Shuffle>(checks: &mut Vec<(String, Check)>) {
    let t = T::NAME;
    checks.push((format!("examples/broadcast_lane0/{t}"), broadcast_lane0::<T>()));
    checks.push((format!("examples/broadcast_varying_lane/{t}"), broadcast_varying_lane::<T>()));
    checks.push((format!("examples/identity_shuffle/{t}"), identity_shuffle::<T>()));
    checks.push((format!("examples/swap_neighbours/{t}"), swap_neighbours::<T>()));
    checks.push((format!("examples/reverse4/{t}"), reverse4::<T>()));
    checks.push((format!("examples/reduce4/{t}"), reduce4::<T>()));
    checks.push((format!("examples/shared_exchange/{t}"), shared_exchange::<T>()));
}

fn atomics_common<T: Elt>(checks: &mut Vec<(String, Check)>) {
    for op in Rmw::<T>::common() {
        checks.push((format!("atomic/{}/{}", op.name, T::NAME), atomic_rmw(op)));
    }
}

fn atomics_integer<T: IntElt>(checks: &mut Vec<(String, Check)>) {
    atomics_common::<T>(checks);
    for op in Rmw::<T>::integer() {
        checks.push((format!("atomic/{}/{}", op.name, T::NAME), atomic_rmw(op)));
    }
    checks.push((format!("atomic/cas/{}", T::NAME), atomic_cas_check::<T>()));
}

/// Every check of this module with its case id, in a stable order.
pub fn checks() -> Vec<(String, Check)> {
    let mut checks = Vec::new();
    per_type::<f32>(&mut checks);
    per_type::<f64>(&mut checks);
    per_type::<i32>(&mut checks);
    per_type::<u32>(&mut checks);
    per_type::<i64>(&mut checks);
    per_type::<u64>(&mut checks);
    checks.push(("examples/ballot_count_positive".into(), ballot_count_positive()));
    checks.push(("examples/group_size_query".into(), group_size_query()));
    checks.push(("examples/reservation_counter".into(), reservation_counter()));
    for wait in Wait::ALL {
        for split in Split::ALL {
            let id = format!("examples/producer_consumer/{}{}", split.name(), wait.suffix());
            checks.push((id, producer_consumer_with(split, wait)));
        }
    }
    checks.push(("block/thread_indices/explicit".into(), thread_indices_explicit()));
    checks.push(("block/thread_indices/range".into(), thread_indices_range()));
    for op in SyncReduce::ALL {
        checks.push((format!("block/{}", op.name()), block_sync_reduce(op)));
    }
    checks.push(("grid/last_block_done".into(), last_block_done()));
    checks.push(("grid/last_block_done/memfence_alias".into(), last_block_done_with(true)));
    atomics_integer::<i32>(&mut checks);
    atomics_integer::<u32>(&mut checks);
    atomics_integer::<i64>(&mut checks);
    atomics_integer::<u64>(&mut checks);
    atomics_common::<f32>(&mut checks);
    atomics_common::<f64>(&mut checks);
    // 8- and 16-bit elements: neighbouring elements share a 32-bit word, so the word CAS loops
    // (the sub-word rewrite, where a target has no atomic that narrow) meet contention here.
    atomics_integer::<i8>(&mut checks);
    atomics_integer::<u8>(&mut checks);
    atomics_integer::<i16>(&mut checks);
    atomics_integer::<u16>(&mut checks);
    checks
}

/// Every kernel the cases of this module launch (for `qd emit`).
pub fn kernels() -> Vec<Kernel> {
    checks().into_iter().map(|(_, c)| c.kernel).collect()
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for (id, check) in checks() {
        let kernel = check.kernel.clone();
        cases.push(
            Case::new(id, move |device, rng| check.run(device, rng).map(|_| Outcome::Pass))
                .launching(move || vec![kernel.clone()]),
        );
    }
}
