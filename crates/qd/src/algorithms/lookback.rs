//! Single-pass prefix propagation between tiles (D20): decoupled look-back (Merrill and Garland
//! 2016) where started blocks are guaranteed to progress, decoupled fallback (Smith, Levien and
//! Owens, SPAA 2025) where they are not (D13).
//!
//! Every tile publishes its *aggregate* (the operator over its own elements) as soon as it has it,
//! then walks back over its predecessors' published values until it meets an inclusive *prefix*,
//! and publishes its own prefix. The pieces are reusable by any single-pass algorithm (scan,
//! select, reduce-by-key, the radix sort's digit offsets):
//!
//! - [`TileStates`]: status words. A tile's value travels as 32-bit pieces; each piece shares a word
//!   with the tile's status (`epoch << 2 | state`): `status << 32 | piece` in a u64 where the target
//!   has atomic u64 accesses (`Feature::OrderedAccess(u64, device)`), else two u32 words of
//!   `status << 16 | half piece`. A reader takes a value only when every word of the tile carries
//!   the same status, so no fence orders value and flag. The words are read and written as relaxed
//!   atomics at device scope (D33: on CUDA `ld.relaxed.gpu` / `st.relaxed.gpu`, which stay in L2,
//!   where a volatile access is system scope), or volatile where a target lacks the atomic access.
//!   The epoch (one per launch, growing) makes words of earlier launches read as invalid, so the
//!   array is never reset between launches.
//! - [`LookBack::exclusive_prefix`]: the loop. With forward progress (and no loop cap), one subgroup
//!   spins on a window of one subgroup's width of predecessors, combines them in tile order with a
//!   shuffle tree, and steps back a window at a time ([`look_back_subgroup`]); between polls of a
//!   window that is not ready it backs off with `nanosleep` where the target has it
//!   ([`back_off`]). Without it, the whole
//!   block takes part ([`look_back_block`]): the spin is bounded by [`SPIN_LIMIT`] polls, after
//!   which the block computes the first unpublished predecessor's aggregate itself (the
//!   algorithm's `aggregate_of`), publishes it with an atomic max (which never replaces a prefix the
//!   owner published: statuses order `invalid < aggregate < prefix` within an epoch) and goes on.
//!
//! The fallback's aggregate must be bit-identical to the one the owner computes, since a reader may
//! take some words from one writer and the rest from the other: algorithms compute both with the
//! same function.

use super::TileOrder;
use crate::ir::{DType, LoadKind, Ordering, Scope, StoreKind};
use crate::simt::atomic::{atomic_add, atomic_max};
use crate::simt::{block, subgroup};
use crate::target::{Feature, MemSpace, NvFeature, Target};
use crate::trace::{
    break_, if_, if_else, loop_, select, target, var, while_, Array, KernelBuilder, Scalar, Shuffle, Val, Var,
};

/// A tile's value as 32-bit pieces; the look-back moves and stores them, the algorithm's combine
/// function interprets them.
pub(crate) type Pieces = Vec<Val<u32>>;

/// `combine(earlier, later)`: the algorithm's operator on packed values, earlier tiles on the left.
pub(crate) type Combine<'a> = &'a dyn Fn(&[Val<u32>], &[Val<u32>]) -> Pieces;

/// Tile states, in the low two bits of a status.
pub(crate) const AGGREGATE: u32 = 1;
pub(crate) const PREFIX: u32 = 2;

/// Polls of a window before a block without forward progress computes a missing predecessor itself:
/// far below lavapipe's 65 535-iteration loop cap, long enough (tens of microseconds on a GPU) that
/// a predecessor that is running publishes first.
pub(crate) const SPIN_LIMIT: u32 = 64;

/// The sleep between two polls of a window that is not ready, in nanoseconds (a `nanosleep` hint:
/// the hardware sleeps between 0 and twice this). CUB's tuned delay for 4- and 8-byte scans on sm_90
/// is a fixed 576 to 688 ns (`fixed_delay_constructor_t` in `tuning_scan.cuh`); one poll of a
/// window costs about an L2 round trip, so the sleep roughly halves the polls while a predecessor
/// is late.
pub(crate) const BACKOFF_NS: u32 = 640;

/// Grids of fewer tiles do not back off (as CUB's `GridThreshold`): there the look-back's latency
/// is the launch's, and few blocks contend for the status words.
pub(crate) const BACKOFF_MIN_TILES: i32 = 500;

/// Between two polls of a window that is not ready: sleeps [`BACKOFF_NS`] where the target can
/// (`nv.nanosleep`) and the grid has at least [`BACKOFF_MIN_TILES`] blocks; nothing elsewhere.
#[track_caller]
pub(crate) fn back_off() {
    if target().has(Feature::Nv(NvFeature::Nanosleep)) {
        if_(block::grid_dim().ge(BACKOFF_MIN_TILES), || crate::nv::nanosleep(BACKOFF_NS));
    }
}

/// The words tile states are stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WordKind {
    /// `status << 32 | piece`: one word per 32-bit piece.
    U64,
    /// `status << 16 | half piece`: two words per 32-bit piece, a 14-bit epoch.
    U32,
}

impl WordKind {
    /// The words `target` can read and write whole: u64 where it has atomic u64 accesses.
    pub(crate) fn for_target(target: &Target) -> WordKind {
        if target.has(Feature::OrderedAccess(DType::U64, MemSpace::Device)) {
            WordKind::U64
        } else {
            WordKind::U32
        }
    }

    /// Words per 32-bit piece.
    pub(crate) fn words_per_piece(self) -> usize {
        match self {
            WordKind::U64 => 1,
            WordKind::U32 => 2,
        }
    }

    /// The largest epoch a status holds (then the array is zeroed and epochs start again at 1).
    pub(crate) fn max_epoch(self) -> u32 {
        match self {
            WordKind::U64 => (1 << 30) - 1,
            WordKind::U32 => (1 << 14) - 1,
        }
    }
}

/// How many 32-bit pieces a value of `T` takes.
pub(crate) fn pieces_of<T: Scalar>() -> usize {
    T::DTYPE.size_bytes().div_ceil(4)
}

/// `v` as 32-bit pieces (low first).
#[track_caller]
pub(crate) fn to_pieces<T: Shuffle>(v: Val<T>) -> Pieces {
    match T::DTYPE.size_bytes() {
        8 => {
            let bits = v.bit_cast::<u64>();
            vec![bits.cast::<u32>(), (bits >> 32u64).cast::<u32>()]
        }
        _ => vec![v.bit_cast::<u32>()],
    }
}

/// The value of `T` whose pieces are `p` (low first).
#[track_caller]
pub(crate) fn from_pieces<T: Shuffle>(p: &[Val<u32>]) -> Val<T> {
    match T::DTYPE.size_bytes() {
        8 => (p[0].cast::<u64>() | (p[1].cast::<u64>() << 32u64)).bit_cast::<T>(),
        _ => p[0].bit_cast::<T>(),
    }
}

/// Constant pieces of a host value.
#[track_caller]
pub(crate) fn const_pieces<T: Scalar>(x: T) -> Pieces {
    let bits = x.to_bits();
    (0..pieces_of::<T>()).map(|i| Val::constant((bits >> (32 * i)) as u32)).collect()
}

/// Per-piece `select`.
#[track_caller]
pub(crate) fn select_pieces(c: Val<bool>, a: &[Val<u32>], b: &[Val<u32>]) -> Pieces {
    a.iter().zip(b).map(|(&x, &y)| select(c, x, y)).collect()
}

fn vars(init: &[Val<u32>]) -> Vec<Var<u32>> {
    init.iter().map(|&x| var(x)).collect()
}

fn get(v: &[Var<u32>]) -> Pieces {
    v.iter().map(|x| x.get()).collect()
}

fn set(v: &[Var<u32>], x: &[Val<u32>]) {
    for (d, &s) in v.iter().zip(x) {
        d.set(s);
    }
}

/// The status array of one launch, as a kernel sees it.
#[derive(Clone, Copy)]
pub(crate) struct TileStates {
    words: Words,
    /// 32-bit pieces per tile value.
    pieces: usize,
    epoch: Val<u32>,
    /// How words are read and written (see [`word_access`]).
    access: (LoadKind, StoreKind),
}

/// Status words are relaxed atomics at device scope where `target` has atomic accesses of `word`
/// (every reader and writer is on the device; the value travels in the word, so nothing else
/// needs ordering), else volatile. On CUDA a volatile access is system scope (`.STRONG.SYS` in
/// SASS), a stronger promise than a look-back needs.
pub(crate) fn word_access(target: &Target, word: DType) -> (LoadKind, StoreKind) {
    if target.has(Feature::OrderedAccess(word, MemSpace::Device)) {
        let (o, s) = (Ordering::Relaxed, Scope::Device);
        (LoadKind::Ordered(o, s), StoreKind::Ordered(o, s))
    } else {
        (LoadKind::Volatile, StoreKind::Volatile)
    }
}

#[derive(Clone, Copy)]
enum Words {
    U64(Array<u64>),
    U32(Array<u32>),
}

impl TileStates {
    /// A status: `epoch << 2 | state` (values of `read`'s status below `status(AGGREGATE)` are
    /// invalid: unpublished, an earlier launch's, or words that disagree).
    #[track_caller]
    pub(crate) fn status(&self, state: u32) -> Val<u32> {
        (self.epoch << 2u32) | state
    }

    fn words_per_tile(&self) -> i32 {
        let wpp = match self.words {
            Words::U64(_) => 1,
            Words::U32(_) => 2,
        };
        (self.pieces * wpp) as i32
    }

    /// The words of `tile`'s value with `status` (one per piece, or two halves per piece).
    #[track_caller]
    fn store(&self, tile: Val<i32>, status: Val<u32>, value: &[Val<u32>], max: bool) {
        let base = tile * self.words_per_tile();
        match self.words {
            Words::U64(a) => {
                let s = status.cast::<u64>() << 32u64;
                for (i, p) in value.iter().enumerate() {
                    let w = s | p.cast::<u64>();
                    put(a, base + i as i32, w, max, self.access.1);
                }
            }
            Words::U32(a) => {
                let s = status << 16u32;
                for (i, &p) in value.iter().enumerate() {
                    put(a, base + 2 * i as i32, s | (p & 0xFFFFu32), max, self.access.1);
                    put(a, base + 2 * i as i32 + 1, s | (p >> 16u32), max, self.access.1);
                }
            }
        }
    }

    /// Publishes `tile`'s value in `state` (each word one atomic or volatile store).
    #[track_caller]
    pub(crate) fn publish(&self, tile: Val<i32>, state: u32, value: &[Val<u32>]) {
        self.store(tile, self.status(state), value, false);
    }

    /// Publishes an aggregate a successor computed for `tile` (atomic max on each word: a no-op
    /// where the owner already published its prefix).
    #[track_caller]
    pub(crate) fn publish_fallback(&self, tile: Val<i32>, value: &[Val<u32>]) {
        self.store(tile, self.status(AGGREGATE), value, true);
    }

    /// One read of `tile`'s words: the status they agree on (0 when they disagree: a write in
    /// progress) and the value.
    #[track_caller]
    pub(crate) fn read(&self, tile: Val<i32>) -> (Val<u32>, Pieces) {
        let base = tile * self.words_per_tile();
        let load = self.access.0;
        let mut statuses = Vec::new();
        let mut value = Vec::new();
        match self.words {
            Words::U64(a) => {
                for i in 0..self.pieces {
                    let w = a.at(base + i as i32).load_with(load);
                    statuses.push((w >> 32u64).cast::<u32>());
                    value.push(w.cast::<u32>());
                }
            }
            Words::U32(a) => {
                for i in 0..self.pieces {
                    let lo = a.at(base + 2 * i as i32).load_with(load);
                    let hi = a.at(base + 2 * i as i32 + 1).load_with(load);
                    statuses.push(lo >> 16u32);
                    statuses.push(hi >> 16u32);
                    value.push((lo & 0xFFFFu32) | (hi << 16u32));
                }
            }
        }
        let s0 = statuses[0];
        let agree = statuses[1..].iter().fold(Val::constant(true), |acc, &s| acc & s.eq(s0));
        (select(agree, s0, 0u32), value)
    }
}

#[track_caller]
fn put<W: crate::trace::Int>(a: Array<W>, i: Val<i32>, w: Val<W>, max: bool, store: StoreKind) {
    if max {
        atomic_max(a.at(i), w);
    } else {
        a.at(i).store_with(w, store);
    }
}

/// The look-back of one kernel: its parameters (`tile_state`, `ticket`, `epoch`, declared in that
/// order by [`LookBack::declare`]) and the path the target takes.
pub(crate) struct LookBack {
    states: TileStates,
    ticket: Array<u32>,
    order: TileOrder,
    /// Plain look-back (one subgroup, unbounded spin) rather than decoupled fallback.
    plain: bool,
}

/// Whether a kernel traced for `target` takes the plain look-back: started blocks keep running
/// (`Limits::block_forward_progress`), no loop is cut short (`Feature::SpinWait`), tiles are taken
/// in an order where predecessors have started, and the caller did not ask for the fallback.
pub(crate) fn plain_look_back(target: &Target, order: TileOrder, force_fallback: bool) -> bool {
    target.limits().block_forward_progress
        && target.has(Feature::SpinWait)
        && order != TileOrder::Reversed
        && !force_fallback
}

impl LookBack {
    /// Declares the look-back's parameters: `tile_state` (u64 or u32 words, as
    /// [`WordKind::for_target`] picks), `ticket` (u32, one element, zero before the first launch)
    /// and the scalar `epoch` (u32, larger than the previous launch's on the same array).
    pub(crate) fn declare(k: &mut KernelBuilder, pieces: usize, order: TileOrder, force_fallback: bool) -> LookBack {
        let t = target();
        let (words, access) = match WordKind::for_target(&t) {
            WordKind::U64 => (Words::U64(k.array::<u64>("tile_state")), word_access(&t, DType::U64)),
            WordKind::U32 => (Words::U32(k.array::<u32>("tile_state")), word_access(&t, DType::U32)),
        };
        let ticket = k.array::<u32>("ticket");
        let epoch = k.scalar::<u32>("epoch");
        LookBack {
            states: TileStates { words, pieces, epoch, access },
            ticket,
            order,
            plain: plain_look_back(&t, order, force_fallback),
        }
    }

    /// The tile this block works on (block-uniform), out of `tiles`.
    ///
    /// [`TileOrder::Ticket`] draws an atomic ticket (the block that draws the last one resets the
    /// counter for the next launch), so a block only waits on tiles of blocks that started before it.
    #[track_caller]
    pub(crate) fn take_tile(&self, tiles: Val<i32>) -> Val<i32> {
        match self.order {
            TileOrder::BlockIdx => block::block_idx(),
            TileOrder::Reversed => tiles - 1 - block::block_idx(),
            TileOrder::Ticket => {
                let slot = block::shared_array::<i32>(1);
                let ticket = self.ticket;
                if_(block::thread_idx().eq(0), || {
                    let taken = atomic_add(ticket.at(0), 1u32).cast::<i32>();
                    slot.set(0, taken);
                    if_(taken.eq(tiles - 1), || ticket.set(0, 0u32));
                });
                block::sync();
                slot.get(0)
            }
        }
    }

    /// The combined value of every tile before `tile` (`identity` for tile 0), in every thread.
    ///
    /// `aggregate` is the tile's own value (needed in thread 0); `overlap` runs in every thread
    /// while the look-back waits (no barriers in it); `aggregate_of(q)`, run by the whole block, is
    /// tile `q`'s aggregate in thread 0, computed exactly as the owner computes `aggregate` (the
    /// fallback path only). Ends with a block barrier; publishes the tile's inclusive prefix.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub(crate) fn exclusive_prefix(
        &self,
        tile: Val<i32>,
        aggregate: &[Val<u32>],
        identity: &[Val<u32>],
        combine: Combine,
        overlap: impl FnOnce(),
        aggregate_of: &dyn Fn(Val<i32>) -> Pieces,
    ) -> Pieces {
        let p = identity.len() as u32;
        let carry = block::shared_array::<u32>(p);
        let t = block::thread_idx();
        let states = self.states;
        let publish_own = || {
            if_(t.eq(0), || {
                if_else(
                    tile.eq(0),
                    || states.publish(tile, PREFIX, aggregate),
                    || states.publish(tile, AGGREGATE, aggregate),
                );
            });
        };
        let publish_prefix = |prefix: &[Val<u32>]| {
            if_(t.eq(0), || {
                if_(tile.gt(0), || states.publish(tile, PREFIX, &combine(prefix, aggregate)));
                for (i, &x) in prefix.iter().enumerate() {
                    carry.set(i as i32, x);
                }
            });
        };
        if self.plain {
            overlap();
            // Only the first subgroup looks back (a subgroup-uniform condition, so its ballots and
            // shuffles run on full subgroups).
            let first = subgroup::broadcast(t >> subgroup::log2_group_size() as i32, 0u32).eq(0);
            if_(first, || {
                publish_own();
                let prefix = vars(identity);
                if_(tile.gt(0), || set(&prefix, &look_back_subgroup(&states, tile, identity, combine)));
                publish_prefix(&get(&prefix));
            });
        } else {
            publish_own();
            overlap();
            let prefix = look_back_block(&states, tile, identity, combine, aggregate_of);
            publish_prefix(&prefix);
        }
        block::sync();
        (0..p as i32).map(|i| carry.get(i)).collect()
    }
}

/// Lane `l` reads tile `end - 1 - l`; tiles before 0 read as a prefix of `identity`.
#[track_caller]
fn read_window(states: &TileStates, end: Val<i32>, identity: &[Val<u32>]) -> (Val<u32>, Pieces) {
    let q = end - 1 - subgroup::invocation_id();
    let (status, value) = states.read(q.max(0));
    let before_first = q.lt(0);
    (select(before_first, states.status(PREFIX), status), select_pieces(before_first, identity, &value))
}

/// The window's values combined in tile order (lane 0 holds the latest tile, so the higher lane
/// goes on the left), counting only the lanes where `counts` holds; the result in every lane.
#[track_caller]
fn combine_window(value: &[Val<u32>], counts: Val<bool>, identity: &[Val<u32>], combine: Combine) -> Pieces {
    let mut v = select_pieces(counts, value, identity);
    let mut off = 1u32;
    while off < subgroup::group_size() {
        let earlier: Pieces = v.iter().map(|&x| subgroup::shuffle_down(x, off)).collect();
        v = combine(&earlier, &v);
        off *= 2;
    }
    v.iter().map(|&x| subgroup::broadcast(x, 0u32)).collect()
}

/// The lowest set bit of a ballot (0 when none).
#[track_caller]
fn lowest(mask: Val<u64>) -> Val<u64> {
    mask & (Val::constant(0u64) - mask)
}

/// Decoupled look-back by one whole subgroup: waits until every tile of the window has published,
/// adds the tiles up to the nearest prefix, and steps back a window at a time until it met one.
#[track_caller]
pub(crate) fn look_back_subgroup(
    states: &TileStates,
    tile: Val<i32>,
    identity: &[Val<u32>],
    combine: Combine,
) -> Pieces {
    let acc = vars(identity);
    let end = var(tile);
    let agg_status = states.status(AGGREGATE);
    let prefix_status = states.status(PREFIX);
    let lane_bit = Val::constant(1u64) << subgroup::invocation_id().cast::<u64>();
    loop_(|| {
        let status = var(0u32);
        let value = vars(identity);
        // Statuses of earlier launches, and words that disagree, are below this launch's aggregate.
        // (A ballot, not `any_true`: its result is subgroup-uniform on every target.)
        while_(
            || {
                let (s, v) = read_window(states, end.get(), identity);
                status.set(s);
                set(&value, &v);
                subgroup::ballot(s.lt(agg_status)).ne(0u64)
            },
            back_off,
        );
        let prefixes = subgroup::ballot(status.get().eq(prefix_status));
        let nearest = lowest(prefixes);
        let counts = nearest.eq(0u64) | lane_bit.le(nearest);
        let w = combine_window(&get(&value), counts, identity, combine);
        set(&acc, &combine(&w, &get(&acc)));
        if_(prefixes.ne(0u64), break_);
        end.set(end.get() - subgroup::group_size() as i32);
    });
    get(&acc)
}

/// Decoupled fallback: the whole block takes part. The first subgroup polls the window at most
/// [`SPIN_LIMIT`] times, adds the published tiles up to the nearest prefix or the first missing
/// one, and when one is missing the block computes that tile's aggregate itself (`aggregate_of`),
/// publishes it, and goes on before it. Returns the prefix in every thread.
#[track_caller]
pub(crate) fn look_back_block(
    states: &TileStates,
    tile: Val<i32>,
    identity: &[Val<u32>],
    combine: Combine,
    aggregate_of: &dyn Fn(Val<i32>) -> Pieces,
) -> Pieces {
    let p = identity.len() as u32;
    let acc = block::shared_array::<u32>(p);
    // ctl[0]: the tile the window ends before; ctl[1]: 0 done, 1 go on, 2 compute tile ctl[0] - 1.
    let ctl = block::shared_array::<i32>(2);
    let t = block::thread_idx();
    let load = |a: Array<u32>| -> Pieces { (0..p as i32).map(|i| a.get(i)).collect() };
    let store = |a: Array<u32>, v: &[Val<u32>]| {
        for (i, &x) in v.iter().enumerate() {
            a.set(i as i32, x);
        }
    };
    if_(t.eq(0), || {
        store(acc, identity);
        ctl.set(0, tile);
        ctl.set(1, select(tile.gt(0), 1i32, 0i32));
    });
    block::sync();
    let agg_status = states.status(AGGREGATE);
    let prefix_status = states.status(PREFIX);
    let sg = subgroup::group_size();
    let lane = subgroup::invocation_id();
    let lane_bit = Val::constant(1u64) << lane.cast::<u64>();
    let first = subgroup::broadcast(t >> subgroup::log2_group_size() as i32, 0u32).eq(0);
    // Tile 0 has no predecessors: ctl[1] starts at 0 and the loop ends at once.
    loop_(|| {
        // Only the first subgroup reads `ctl` here: lane 0 rewrites it below.
        if_(first, || {
            if_(ctl.get(1).ne(0), || {
                let end = ctl.get(0);
                let status = var(0u32);
                let value = vars(identity);
                let polls = var(0u32);
                while_(
                    || {
                        let (s, v) = read_window(states, end, identity);
                        status.set(s);
                        set(&value, &v);
                        polls.set(polls.get() + 1u32);
                        subgroup::ballot(s.lt(agg_status)).ne(0u64) & polls.get().lt(SPIN_LIMIT)
                    },
                    back_off,
                );
                let missing = lowest(subgroup::ballot(status.get().lt(agg_status)));
                let nearest = lowest(subgroup::ballot(status.get().eq(prefix_status)));
                // Done when a prefix comes before any missing tile.
                let done = nearest.ne(0u64) & (missing.eq(0u64) | nearest.lt(missing));
                let counts = select(done, lane_bit.le(nearest), missing.eq(0u64) | lane_bit.lt(missing));
                let w = combine_window(&get(&value), counts, identity, combine);
                // Tiles consumed when not done: those below the missing one, or the whole window.
                let consumed = select(missing.eq(0u64), sg, (missing - 1u64).popc()).cast::<i32>();
                if_(lane.eq(0), || {
                    store(acc, &combine(&w, &load(acc)));
                    ctl.set(0, end - consumed);
                    ctl.set(1, select(done, 0i32, select(missing.eq(0u64), 1i32, 2i32)));
                });
            });
        });
        block::sync();
        let mode = ctl.get(1);
        if_(mode.eq(0), break_);
        if_(mode.eq(2), || {
            let q = ctl.get(0) - 1;
            let agg = aggregate_of(q);
            if_(t.eq(0), || {
                store(acc, &combine(&agg, &load(acc)));
                states.publish_fallback(q, &agg);
                ctl.set(0, q);
                // Tile 0's aggregate is its prefix: nothing is left before it.
                ctl.set(1, select(q.gt(0), 1i32, 0i32));
            });
        });
        block::sync();
    });
    load(acc)
}
