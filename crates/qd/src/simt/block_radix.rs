//! Block radix ranking of several keys per thread (issue 17): the counting, scanning and matching
//! steps of [`super::block::radix_rank_match_atomic_or`], generalised to `K` keys per thread and to
//! blocks whose size differs from the digit count. The steps are crate-visible so the onesweep sort
//! (`crate::algorithms::sort`) can publish a tile's digit counts between counting and matching.
//!
//! Key `j` of thread `t` sits at tile position `(w * K + j) * S + lane`, where `S` is the subgroup
//! width, `w = t / S` the thread's subgroup and `lane = t % S` ("warp-striped"): each subgroup
//! holds `K * S` consecutive keys, and a subgroup's `j`-th keys are `S` consecutive ones, so loads
//! and stores of that arrangement are coalesced. With `K = 1` the position is the thread index.

use super::block::{check_block_dim, exclusive_add, shared_array, sync, thread_idx};
use super::subgroup;
use crate::trace::{self, op_scope, select, trace_error, var, Array, Int, Shuffle, Val};

/// The shape of one block ranking: threads, digits, keys per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RankShape {
    /// Threads per block (a multiple of the subgroup width).
    pub block_dim: u32,
    /// `log2` of the digit count.
    pub radix_bits: u32,
    /// Keys per thread.
    pub keys_per_thread: u32,
}

impl RankShape {
    /// The number of digits, `1 << radix_bits`.
    pub fn digits(self) -> u32 {
        1 << self.radix_bits
    }

    /// Digits each thread owns in the counting steps: one when there are at least as many threads
    /// as digits (the threads past the last digit own none), else `digits / block_dim`.
    pub fn digits_per_thread(self) -> u32 {
        (self.digits() / self.block_dim).max(1)
    }

    /// Checks the shape while tracing; `false` after recording a trace error naming `op`.
    #[track_caller]
    pub fn check(self, op: &str) -> bool {
        let sgs = subgroup::group_size();
        let d = self.digits();
        if !(1..=10).contains(&self.radix_bits) {
            trace_error(op, format!("{op}: radix_bits must be in 1..=10, got {}", self.radix_bits));
            return false;
        }
        if self.keys_per_thread == 0 || self.keys_per_thread > 64 {
            trace_error(op, format!("{op}: keys per thread must be in 1..=64, got {}", self.keys_per_thread));
            return false;
        }
        if !d.is_multiple_of(sgs) {
            trace_error(op, format!("{op}: the {d} digits must be a multiple of the subgroup size {sgs}"));
            return false;
        }
        if !check_block_dim(op, self.block_dim) {
            return false;
        }
        if self.block_dim < d && !d.is_multiple_of(self.block_dim) {
            trace_error(
                op,
                format!(
                    "{op}: with fewer threads than digits, block_dim {} must divide the {d} digits",
                    self.block_dim
                ),
            );
            return false;
        }
        true
    }
}

/// The per-subgroup digit counters of one ranking: `counters[w * digits + d]`.
#[derive(Clone, Copy)]
pub(crate) struct Counters {
    shape: RankShape,
    counters: Array<i32>,
}

/// The digits a thread owns after [`count_and_scan`]: `first .. first + counts.len()`, valid only
/// where `active` (threads past the last digit own none, and their values are zero).
pub(crate) struct OwnedDigits {
    /// The first owned digit.
    pub first: Val<i32>,
    /// Whether the thread owns any digit.
    pub active: Val<bool>,
    /// The tile's count of each owned digit.
    pub counts: Vec<Val<i32>>,
    /// The exclusive prefix (over all digits of the tile) of each owned digit.
    pub excl: Vec<Val<i32>>,
}

/// The shared i32 elements [`count_and_scan`] needs for its counters.
pub(crate) fn counter_len(shape: RankShape) -> u32 {
    shape.block_dim / subgroup::group_size() * shape.digits()
}

/// Steps 1 to 4 of the ranking: each subgroup counts its keys' digits (a shared atomic add each),
/// the owners of each digit sum the subgroups' counts and turn them into running offsets, a block
/// scan gives each digit's exclusive prefix over the tile, and every subgroup's counter starts at
/// its first rank. `counters` is a shared array of at least [`counter_len`] elements, free until
/// [`match_and_rank`] is done with it. Ends with a barrier, so [`match_and_rank`] may follow.
#[track_caller]
pub(crate) fn count_and_scan(shape: RankShape, digits: &[Val<u32>], counters: Array<i32>) -> (Counters, OwnedDigits) {
    let sgs = subgroup::group_size();
    let d = shape.digits();
    let ns = shape.block_dim / sgs;
    let t = thread_idx();
    let warp = t >> subgroup::log2_group_size() as i32;
    // 1. Clear every counter (ns * d is a multiple of block_dim: d is a multiple of sgs), count.
    for b in 0..ns * d / shape.block_dim {
        counters.set(t + (b * shape.block_dim) as i32, 0);
    }
    sync();
    let row = warp * d as i32;
    for digit in digits {
        crate::simt::atomic::atomic_add(counters.at(row + digit.cast::<i32>()), 1);
    }
    sync();
    // 2. Column upsweep: each owned digit's counters become running offsets over the subgroups.
    let per = shape.digits_per_thread();
    let owners = (d / per) as i32;
    let active = t.lt(owners);
    let first = t * per as i32;
    let mut counts = Vec::with_capacity(per as usize);
    for i in 0..per as i32 {
        let total = var(0i32);
        trace::if_(active, || {
            for w in 0..ns as i32 {
                let at = first + i + w * d as i32;
                let c = counters.get(at);
                counters.set(at, total.get());
                total.set(total.get() + c);
            }
        });
        counts.push(total.get());
    }
    // 3. The exclusive prefix over digits: a block scan of each thread's owned total.
    let mine = counts.iter().copied().reduce(|a, b| a + b).expect("one owned digit at least");
    let before = exclusive_add(mine, shape.block_dim);
    let mut excl = Vec::with_capacity(per as usize);
    let mut running = before;
    for c in &counts {
        excl.push(running);
        running += *c;
    }
    // 4. Downsweep: each subgroup's counter of a digit starts at that subgroup's first rank.
    trace::if_(active, || {
        for (i, e) in excl.iter().enumerate() {
            for w in 0..ns as i32 {
                let at = first + i as i32 + w * d as i32;
                counters.set(at, counters.get(at) + *e);
            }
        }
    });
    sync();
    (Counters { shape, counters }, OwnedDigits { first, active, counts, excl })
}

/// Lane-mask words for the match step: u32 up to 32 lanes, u64 for 64.
trait MaskWord: Int + Shuffle {}
impl MaskWord for u32 {}
impl MaskWord for u64 {}

/// Step 5: the stable rank of each key. For each `j` in turn, the lanes of a subgroup whose
/// `digits[j]` agree find each other with one ballot per digit bit (no shared memory), the highest
/// of them adds the group's size to its subgroup's counter of that digit (a shared atomic), and
/// each lane's rank is the counter's old value plus the number of its peers in lower lanes.
/// `num_bits` is how many low bits of the digits can differ (the others must be zero).
#[track_caller]
pub(crate) fn match_and_rank(c: Counters, digits: &[Val<u32>], num_bits: u32) -> Vec<Val<i32>> {
    if subgroup::group_size() == 64 {
        match_and_rank_with::<u64>(c, digits, num_bits)
    } else {
        match_and_rank_with::<u32>(c, digits, num_bits)
    }
}

#[track_caller]
fn match_and_rank_with<M: MaskWord>(c: Counters, digits: &[Val<u32>], num_bits: u32) -> Vec<Val<i32>> {
    let sgs = subgroup::group_size();
    let lane = subgroup::invocation_id();
    let warp = thread_idx() >> subgroup::log2_group_size() as i32;
    let row = warp * c.shape.digits() as i32;
    let width = M::DTYPE.bits();
    let all_lanes = Val::constant(M::ALL_ONES) >> Val::constant(M::from_bits((width - sgs) as u64));
    let bit = Val::constant(M::ONE) << lane.cast::<M>();
    // This lane and the ones below it.
    let up_to = bit | (bit - M::ONE);
    digits
        .iter()
        .map(|digit| {
            // The lanes whose digit agrees with this lane's in every bit.
            let mut peers = all_lanes;
            for b in 0..num_bits {
                // A mask test, no shift: `digit & (1 << b)` is one instruction with the vote.
                let set = (*digit & (1u32 << b)).ne(0u32);
                let votes = subgroup::ballot(set).cast::<M>();
                // Keep the lanes that voted as this lane did.
                peers = peers & select(set, votes, votes ^ M::ALL_ONES);
            }
            let leader = Val::constant(width as i32 - 1) - peers.clz().cast::<i32>();
            // Peers up to this lane, itself included: the group's size in the leader (the highest
            // peer), so one population count serves both (as CUB's match ranking does).
            let upto = (peers & up_to).popc().cast::<i32>();
            let base = var(0i32);
            let slot = row + digit.cast::<i32>();
            trace::if_(lane.eq(leader), || {
                base.set(crate::simt::atomic::atomic_add(c.counters.at(slot), upto));
            });
            subgroup::shuffle(base.get(), leader.cast::<u32>()) + upto - 1
        })
        .collect()
}

/// Block radix ranking of `K` keys per thread: the stable rank, within the block's `K *
/// block_dim` keys, of each key under the digit `(key >> bit_start) & ((1 << num_bits) - 1)`; writes
/// the per-digit counts to `bins` and their exclusive prefix to `excl_prefix` (shared arrays of `1
/// << radix_bits` i32).
///
/// The keys are warp-striped: key `j` of thread `t` is at position `(t / S * K + j) * S + t % S`
/// of the block's keys (`S` the subgroup width), so equal digits keep that order. With `K = 1` this
/// is [`radix_rank_match_atomic_or`](super::block::radix_rank_match_atomic_or) itself, with its
/// constraints (`block_dim == 1 << radix_bits`). With `K > 1`: `block_dim` a multiple of the
/// subgroup width equal to the kernel's, at least the digit count or dividing it; `radix_bits` in
/// `1..=10` with the digit count a multiple of the subgroup width; `num_bits <= radix_bits` and the
/// digit inside the 32-bit key; `K <= 64`. Each is a trace-time error.
///
/// Cost for `K > 1`: four block barriers and one block scan per call, one shared atomic per key
/// (the counts), `num_bits` ballots per key (the match), and one shared atomic and one shuffle per
/// key (the ranks). Shared memory: `(block_dim / S) << radix_bits` i32 counters.
///
/// ```
/// # use qd::prelude::*;
/// // 4 keys per thread, 64 threads, 64 digits: ranks of 256 keys.
/// let k = Kernel::explicit("rank4", 64, |k| {
///     let keys = k.array::<u32>("keys");
///     let ranks = k.array::<i32>("ranks");
///     let t = block::thread_idx();
///     let (sg, lane) = (t / 32, t % 32);
///     let pos = |j: i32| (sg * 4 + j) * 32 + lane;
///     let ks = [0, 1, 2, 3].map(|j| keys.get(pos(j)));
///     let bins = block::shared_array::<i32>(64);
///     let excl = block::shared_array::<i32>(64);
///     let r = block::radix_rank_keys(ks, 64, 6, 0, 6, bins, excl);
///     for j in 0..4 {
///         ranks.set(pos(j), r[j as usize]);
///     }
/// });
/// let d = Device::cpu();
/// let keys: Vec<u32> = (0..256).map(|i| 63 - i % 64).collect();
/// let ka = d.array_from(&keys).unwrap();
/// let ra = d.zeros::<i32>(256).unwrap();
/// d.launch_grid(&k, 1, &[ka.arg(), ra.arg()]).unwrap();
/// let ranks = ra.to_vec().unwrap();
/// // Key 63 (position 0) is the first of four 63s, after the 252 smaller keys.
/// assert_eq!(ranks[0], 252);
/// assert_eq!(ranks[63], 0); // the first 0
/// assert_eq!(ranks[127], 1); // the second 0
/// ```
#[allow(clippy::too_many_arguments)]
#[track_caller]
pub fn radix_rank_keys<const K: usize>(
    keys: [Val<u32>; K],
    block_dim: u32,
    radix_bits: u32,
    bit_start: u32,
    num_bits: u32,
    bins: Array<i32>,
    excl_prefix: Array<i32>,
) -> [Val<i32>; K] {
    if K == 1 {
        let r = super::block::radix_rank_match_atomic_or(
            keys[0],
            block_dim,
            radix_bits,
            bit_start,
            num_bits,
            bins,
            excl_prefix,
        );
        return [r; K];
    }
    const NAME: &str = "block.radix_rank_keys";
    let _op = op_scope(NAME);
    let zero = || [Val::constant(0); K];
    let shape = RankShape { block_dim, radix_bits, keys_per_thread: K as u32 };
    if !shape.check(NAME) {
        return zero();
    }
    if num_bits > radix_bits {
        trace_error(NAME, format!("{NAME}: num_bits {num_bits} must be <= radix_bits {radix_bits}"));
        return zero();
    }
    if bit_start.checked_add(num_bits).is_none_or(|end| end > 32) {
        trace_error(
            NAME,
            format!(
                "{NAME}: the digit bits bit_start {bit_start} .. bit_start + num_bits {num_bits} must lie inside the 32-bit key"
            ),
        );
        return zero();
    }
    let mask = ((1u64 << num_bits) - 1) as u32;
    let digits: Vec<Val<u32>> = keys.iter().map(|k| (*k >> bit_start) & mask).collect();
    let (counters, owned) = count_and_scan(shape, &digits, shared_array::<i32>(counter_len(shape)));
    let ranks = match_and_rank(counters, &digits, num_bits);
    // 6. Publish the digit counts and their prefix.
    trace::if_(owned.active, || {
        for (i, (c, e)) in owned.counts.iter().zip(&owned.excl).enumerate() {
            bins.set(owned.first + i as i32, *c);
            excl_prefix.set(owned.first + i as i32, *e);
        }
    });
    sync();
    std::array::from_fn(|j| ranks[j])
}
