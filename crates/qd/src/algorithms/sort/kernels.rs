//! The sort's kernels: the upsweep histogram of every digit place, the onesweep pass (rank a tile,
//! look back for its digits' global offsets, scatter), and a copy for odd pass counts.

use super::keys::{RadixBits, SortKey, SortValue};
use super::lookback::{self, Lookback};
use super::tuning::{SortTuning, DIGITS, HIST_BLOCK, RADIX_BITS};
use crate::ir::{LoadKind, Ordering, Scope, StoreKind};
use crate::simt::atomic::atomic_add;
use crate::simt::block_radix::{count_and_scan, counter_len, match_and_rank, RankShape};
use crate::simt::{block, grid, subgroup};
use crate::trace::{for_range, if_, if_else, select, var, while_, Array, Int, Kernel, Num, Val, Var};

/// The state array of a sorter (u32 words), laid out for up to `tiles` tiles per pass:
///
/// * `acc`: `8 * 256` global digit counts (one row per digit place), accumulated by the histogram kernel; zero between
///   sorts (the histogram's last block clears them after reading);
/// * `gstart`: each digit's first output position, per place (written by the histogram's last block);
/// * the histogram's ticket (zero between sorts), then one tile ticket per pass;
/// * the look-back: two regions of `tiles * 256` words (a flag in the top two bits and a count
///   below). Pass `p` uses region `p % 2` and clears its tile's words of the other region for pass
///   `p + 1`, so only region 0 needs clearing before a sort, and only when the last sort ended in
///   it (an odd pass count): the sorter tracks that, and the histogram kernel clears it. Clearing
///   every pass's words in the histogram kernel took 15% of it (179 MB for 2^28 u32 keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub tiles: u32,
}

/// The most digit places of any key type (64-bit keys): one layout for every key type, so a
/// sorter's state stays valid when the key type changes between sorts.
const PLACES: u32 = 8;

impl Layout {
    pub fn acc(&self, place: u32) -> u32 {
        place * DIGITS
    }
    pub fn gstart(&self, place: u32) -> u32 {
        (PLACES + place) * DIGITS
    }
    pub fn hist_ticket(&self) -> u32 {
        2 * PLACES * DIGITS
    }
    pub fn pass_ticket(&self, pass: u32) -> u32 {
        self.hist_ticket() + 1 + pass
    }
    /// The first word of look-back region `slot` (0 or 1).
    pub fn lookback(&self, slot: u32) -> u64 {
        let base = (self.pass_ticket(PLACES) as u64).next_multiple_of(32);
        base + slot as u64 * self.tiles as u64 * DIGITS as u64
    }
    /// The words of the whole state.
    pub fn len(&self) -> u64 {
        self.lookback(2)
    }
}

/// A relaxed device-scope load: the look-back words are written by other blocks while this one reads.
#[track_caller]
pub(crate) fn load_relaxed(a: Array<u32>, i: Val<i32>) -> Val<u32> {
    a.at(i).load_with(LoadKind::Ordered(Ordering::Relaxed, Scope::Device))
}

/// A relaxed device-scope store (see [`load_relaxed`]).
#[track_caller]
pub(crate) fn store_relaxed(a: Array<u32>, i: Val<i32>, v: Val<u32>) {
    a.at(i).store_with(v, StoreKind::Ordered(Ordering::Relaxed, Scope::Device))
}

/// The digit places of a key type: 4 for 32-bit keys, 8 for 64-bit ones.
pub(crate) fn places<K: SortKey>() -> u32 {
    <K::Bits as RadixBits>::BITS / RADIX_BITS
}

/// The histogram kernel (one launch per sort, [`HIST_BLOCK`] threads per block, any grid): counts
/// every digit place of every key in shared memory and adds the counts to `acc`; clears the tile
/// tickets and the look-back words `[clear_from, clear_to)` for the passes to come; the block that
/// finishes last turns the counts into each digit's first position (`gstart`) and clears `acc` and
/// its ticket for the next sort.
///
/// Scalars: `n`, the number of passes, the first digit's bit, the last pass's digit mask (narrower
/// when the bit range is not a multiple of 8), the key's twiddle (`flip`: all ones for descending
/// order), and the cleared range.
///
/// `fences: false` leaves out the two fences around the ticket, which only the test that shows
/// they matter in the emulator's weak-memory mode (D26) asks for.
pub(crate) fn histogram_kernel<K: SortKey>(items: u32, fences: bool) -> Kernel {
    let unfenced = if fences { "" } else { "_unfenced" };
    let name = format!("sort_histogram_{}_i{items}{unfenced}", K::DTYPE);
    Kernel::explicit(&name, HIST_BLOCK, move |k| {
        let keys = k.array::<K>("keys");
        let state = k.array::<u32>("state");
        let n = k.scalar::<i32>("n");
        let passes = k.scalar::<i32>("passes");
        let shift0 = k.scalar::<u32>("shift");
        let last_mask = k.scalar::<u32>("last_mask");
        let flip = k.scalar::<K::Bits>("flip");
        let clear_from = k.scalar::<i32>("clear_from");
        let clear_to = k.scalar::<i32>("clear_to");
        let places = places::<K>();
        let layout = Layout { tiles: 0 };
        let d = DIGITS as i32;
        let t = block::thread_idx();
        let b = block::block_idx();
        let g = block::grid_dim();
        let hist = block::shared_array::<i32>(places * DIGITS);
        for p in 0..places as i32 {
            hist.set(t + p * d, 0);
        }
        let i = var(clear_from + b * HIST_BLOCK as i32 + t);
        while_(
            || i.get().lt(clear_to),
            || {
                state.set(i.get(), 0u32);
                i.set(i.get() + g * HIST_BLOCK as i32);
            },
        );
        block::sync();
        // A loop over the passes (not unrolled: the kernel stays small for 8 places), for sorts of
        // a bit range; a sort of every bit (the usual call) takes the unrolled copy below.
        let count_range = |key: Val<K>| {
            let ord = K::ordered(key) ^ flip;
            for_range(0i32, passes, |p| {
                let mask = select(p.eq(passes - 1), last_mask, Val::constant(DIGITS - 1));
                let digit = K::Bits::digit(ord, shift0 + p.cast::<u32>() * RADIX_BITS, mask);
                atomic_add(hist.at(digit.cast::<i32>() + p * d), 1);
            });
        };
        // Every digit place with constant shifts and mask: no loop counter, select or shift
        // arithmetic per key and place. The loop above made the histogram 0.7 ms of a 7.6 ms sort
        // of 2^28 u32 keys on an H200 (docs/gpu-records/2026-11-28-h200-sort/), where reading the
        // keys takes about 0.25 ms.
        let count_all = |key: Val<K>| {
            let ord = K::ordered(key) ^ flip;
            for p in 0..places {
                let digit = K::Bits::digit(ord, Val::constant(p * RADIX_BITS), Val::constant(DIGITS - 1));
                atomic_add(hist.at(digit.cast::<i32>() + (p * DIGITS) as i32), 1);
            }
        };
        let every_bit = passes.eq(places as i32) & shift0.eq(0u32) & last_mask.eq(DIGITS - 1);
        // Full chunks of `items` keys per thread, all loads before the counting; then the rest.
        let count_keys = |count: &dyn Fn(Val<K>)| {
            let chunk = (HIST_BLOCK * items) as i32;
            let full = n / chunk;
            let next = var(b);
            while_(
                || next.get().lt(full),
                || {
                    let first = next.get() * chunk + t;
                    let loaded: Vec<Val<K>> =
                        (0..items as i32).map(|j| keys.get(first + j * HIST_BLOCK as i32)).collect();
                    for key in loaded {
                        count(key);
                    }
                    next.set(next.get() + g);
                },
            );
            let rest = var(full * chunk + b * HIST_BLOCK as i32 + t);
            while_(
                || rest.get().lt(n),
                || {
                    count(keys.get(rest.get()));
                    rest.set(rest.get() + g * HIST_BLOCK as i32);
                },
            );
        };
        if_else(every_bit, || count_keys(&count_all), || count_keys(&count_range));
        block::sync();
        for_range(0i32, passes, |p| {
            let c = hist.get(t + p * d);
            if_(c.ne(0), || {
                atomic_add(state.at(t + p * d), c.bit_cast::<u32>());
            });
        });
        // The last block to finish (a ticket after a fence) sees every block's counts.
        let last = block::shared_array::<i32>(1);
        block::sync();
        if_(t.eq(0), || {
            if fences {
                grid::mem_fence();
            }
            let ticket = atomic_add(state.at(layout.hist_ticket() as i32), 1u32);
            if fences {
                grid::mem_fence();
            }
            last.set(0, ticket.eq((g - 1).cast::<u32>()).to_i32());
        });
        block::sync();
        if_(last.get(0).ne(0), || {
            for_range(0i32, passes, |p| {
                let at = layout.acc(0) as i32 + p * d + t;
                let c = load_relaxed(state, at);
                store_relaxed(state, at, Val::constant(0u32));
                let start = block::exclusive_add(c, HIST_BLOCK);
                state.set(layout.gstart(0) as i32 + p * d + t, start);
            });
            if_(t.eq(0), || state.set(layout.hist_ticket() as i32, 0u32));
        });
    })
}

/// Blocks of the pass kernel that should fit a multiprocessor at once (an occupancy hint: the
/// code generator caps registers for it). Left alone, ptxas gave the 384-thread pass 136 registers
/// for 20 pairs per thread (one block per multiprocessor) where 80 fit without spilling.
const PASS_BLOCKS_PER_SM: u32 = 2;

/// The pass kernel's name for a shape.
fn pass_name<K: SortKey, V: SortValue>(tuning: &SortTuning, pairs: bool) -> String {
    let values = if pairs { format!("_{}", V::DTYPE) } else { String::new() };
    let (b, k, s) = (tuning.block, tuning.keys_per_thread, tuning.fallback_spins);
    format!("sort_pass_{}{values}_b{b}_k{k}_s{s}", K::DTYPE)
}

/// One onesweep pass (launch one block per tile): takes a tile by ticket, loads its keys
/// warp-striped (past `n`, padding that ranks last), ranks them by the digit `(ordered >> shift) &
/// mask` (`block_radix`), publishes the tile's digit counts, looks back for each digit's offset
/// ([`lookback`]: plain where blocks progress, with fallback elsewhere), then moves the keys
/// through shared memory into digit order and writes each to its digit's offset plus its place in
/// the tile; with values, the same for the values. Keys and values move as their bits.
///
/// Scalars: `n`, the digit's bit and mask, the twiddle `flip`, where this pass's ticket, digit
/// starts and look-back words are in the state array, and the look-back region to clear for the
/// next pass.
pub(crate) fn pass_kernel<K: SortKey, V: SortValue>(tuning: SortTuning, pairs: bool) -> Kernel {
    let name = pass_name::<K, V>(&tuning, pairs);
    Kernel::explicit(&name, tuning.block, move |k| {
        let keys_in = k.array::<K>("keys_in");
        let keys_out = k.array::<K>("keys_out");
        let values = pairs.then(|| (k.array::<V>("values_in"), k.array::<V>("values_out")));
        let state = k.array::<u32>("state");
        let n = k.scalar::<i32>("n");
        let shift = k.scalar::<u32>("shift");
        let mask = k.scalar::<u32>("mask");
        let flip = k.scalar::<K::Bits>("flip");
        let ticket_at = k.scalar::<i32>("ticket_at");
        let gstart_at = k.scalar::<i32>("gstart_at");
        let lookback_at = k.scalar::<i32>("lookback_at");
        let clear_at = k.scalar::<i32>("clear_at");

        let shape =
            RankShape { block_dim: tuning.block, radix_bits: RADIX_BITS, keys_per_thread: tuning.keys_per_thread };
        if !shape.check("sort.pass") {
            return;
        }
        let (bd, kp) = (tuning.block as i32, tuning.keys_per_thread as i32);
        let tile_len = bd * kp;
        let sgs = subgroup::group_size() as i32;
        let t = block::thread_idx();
        let lane = subgroup::invocation_id();
        let warp = t >> subgroup::log2_group_size() as i32;
        let buf = block::shared_array::<i32>(tuning.tile().max(counter_len(shape)));
        let goff = block::shared_array::<i32>(DIGITS);

        // 1. The tile, in the order blocks start: every tile a block waits on has started.
        let slot = block::shared_array::<i32>(1);
        if_(t.eq(0), || slot.set(0, atomic_add(state.at(ticket_at), 1u32).cast::<i32>()));
        block::sync();
        let tile = slot.get(0);
        // This tile's words of the other look-back region back to zero for the next pass (the
        // previous pass, which used them, has finished).
        for c in (0..DIGITS).step_by(tuning.block as usize) {
            let d = t + c as i32;
            let clear = || state.set(clear_at + tile * DIGITS as i32 + d, 0u32);
            if c + tuning.block <= DIGITS {
                clear();
            } else {
                if_(d.lt(DIGITS as i32), clear);
            }
        }
        let base = tile * tile_len;
        let valid = (n - base).min(tile_len);
        let full = valid.eq(tile_len);

        // 2. Keys, warp-striped; positions past `n` are padding with the largest ordered bits.
        //    Each position is one register plus a constant, so the value loads of step 5 reuse
        //    the keys' first address instead of keeping `kp` positions live through the kernel.
        let stripe = Stripe { first: warp * (kp * sgs) + lane, step: sgs };
        let pos: Vec<Val<i32>> = (0..kp).map(|j| stripe.at(j)).collect();
        let raw = load_tile(keys_in, base, stripe, kp, full, valid);
        let all_ones = Val::constant(<K::Bits as Int>::ALL_ONES);
        let digits: Vec<Val<u32>> = raw
            .iter()
            .zip(&pos)
            .map(|(key, p)| {
                let ord = select(p.lt(valid), K::ordered(key.get()) ^ flip, all_ones);
                K::Bits::digit(ord, shift, mask)
            })
            .collect();

        // 3. Count and scan the tile's digits; publish the counts (the padding taken off the
        //    largest digit); rank; look back for the digits' global offsets.
        let (counters, owned) = count_and_scan(shape, &digits, buf);
        let pads = tile_len - valid;
        let counts: Vec<Val<i32>> = owned
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| *c - select((owned.first + i as i32).eq(mask.cast::<i32>()), pads, 0i32))
            .collect();
        let lb = Lookback { state, lookback_at, gstart_at, tile };
        lb.publish(&owned, &counts);
        let ranks = match_and_rank(counters, &digits, RADIX_BITS);
        let fallback_keys = FallbackKeys { keys: keys_in, tile_len, stripe, kp, shift, mask, flip };
        let starts = lookback::look_back(&lb, &owned, &counts, tuning, &|p, add| fallback_keys.count(p, add));
        if_(owned.active, || {
            for (i, (s, e)) in starts.iter().zip(&owned.excl).enumerate() {
                goff.set(owned.first + i as i32, *s - *e);
            }
        });
        block::sync();

        // 4. Keys into digit order through shared memory, then out to their digits' offsets.
        let idx: Vec<Val<i32>> = (0..kp).map(|j| t + j * bd).collect();
        let key_bits: Vec<Val<K::Bits>> = raw.iter().map(|r| r.get().bit_cast::<K::Bits>()).collect();
        let sorted = exchange::<K::Bits>(buf, &key_bits, &ranks, &idx);
        let dest: Vec<Val<i32>> = sorted
            .iter()
            .zip(&idx)
            .map(|(bits, i)| {
                let ord = K::ordered(bits.bit_cast::<K>()) ^ flip;
                goff.get(K::Bits::digit(ord, shift, mask).cast::<i32>()) + *i
            })
            .collect();
        store_tile(keys_out, &dest, &idx, full, valid, |j| sorted[j].bit_cast::<K>());

        // 5. Values: loaded only now (fewer live registers above), moved the same way.
        if let Some((values_in, values_out)) = values {
            let vals = load_tile(values_in, base, stripe, kp, full, valid);
            let bits: Vec<Val<V::Bits>> = vals.iter().map(|v| V::to_radix_bits(v.get())).collect();
            let moved = exchange::<V::Bits>(buf, &bits, &ranks, &idx);
            store_tile(values_out, &dest, &idx, full, valid, |j| V::from_radix_bits(moved[j]));
        }
    })
    .min_blocks_per_sm(PASS_BLOCKS_PER_SM)
}

/// A thread's warp-striped tile positions: `first + j * step` for its `j`-th key.
#[derive(Clone, Copy)]
struct Stripe {
    first: Val<i32>,
    step: i32,
}

impl Stripe {
    #[track_caller]
    fn at(self, j: i32) -> Val<i32> {
        self.first + j * self.step
    }
}

/// `a[base + stripe.at(j)]` for `j < kp` into fresh variables: unguarded in a full tile, else only
/// positions below `valid` (the others stay zero). The addresses are one register (`base +
/// stripe.first`) plus constants.
#[track_caller]
fn load_tile<T: Num>(
    a: Array<T>,
    base: Val<i32>,
    stripe: Stripe,
    kp: i32,
    full: Val<bool>,
    valid: Val<i32>,
) -> Vec<Var<T>> {
    let vars: Vec<Var<T>> = (0..kp).map(|_| var(T::ZERO)).collect();
    let first = base + stripe.first;
    if_else(
        full,
        || {
            let loaded: Vec<Val<T>> = (0..kp).map(|j| a.get(first + j * stripe.step)).collect();
            for (v, x) in vars.iter().zip(loaded) {
                v.set(x);
            }
        },
        || {
            for (j, v) in vars.iter().enumerate() {
                let j = j as i32;
                if_(stripe.at(j).lt(valid), || v.set(a.get(first + j * stripe.step)));
            }
        },
    );
    vars
}

/// `a[dest[j]] = value(j)` for each `j` whose tile slot `idx[j]` holds a key (all in a full tile).
#[track_caller]
fn store_tile<T: Num>(
    a: Array<T>,
    dest: &[Val<i32>],
    idx: &[Val<i32>],
    full: Val<bool>,
    valid: Val<i32>,
    value: impl Fn(usize) -> Val<T>,
) {
    if_else(
        full,
        || {
            for (j, d) in dest.iter().enumerate() {
                a.set(*d, value(j));
            }
        },
        || {
            for (j, (d, i)) in dest.iter().zip(idx).enumerate() {
                if_(i.lt(valid), || a.set(*d, value(j)));
            }
        },
    );
}

/// Moves each thread's words to tile slot `ranks[j]` and returns the words at slots `idx[j]`,
/// 32 bits at a time through the shared buffer, with a barrier after each write and each read.
#[track_caller]
fn exchange<B: RadixBits>(buf: Array<i32>, bits: &[Val<B>], ranks: &[Val<i32>], idx: &[Val<i32>]) -> Vec<Val<B>> {
    let words: Vec<Vec<Val<u32>>> = bits.iter().map(|b| B::to_words(*b)).collect();
    let rounds = words[0].len();
    let mut got: Vec<Vec<Val<u32>>> = vec![Vec::with_capacity(rounds); bits.len()];
    for r in 0..rounds {
        for (w, rank) in words.iter().zip(ranks) {
            buf.set(*rank, w[r].bit_cast::<i32>());
        }
        block::sync();
        for (g, i) in got.iter_mut().zip(idx) {
            g.push(buf.get(*i).bit_cast::<u32>());
        }
        block::sync();
    }
    got.iter().map(|w| B::from_words(w)).collect()
}

/// What the fallback needs to count a predecessor tile's digits itself: the keys and this
/// thread's positions in a tile (the predecessors are full tiles).
struct FallbackKeys<K: SortKey> {
    keys: Array<K>,
    tile_len: i32,
    stripe: Stripe,
    kp: i32,
    shift: Val<u32>,
    mask: Val<u32>,
    flip: Val<K::Bits>,
}

impl<K: SortKey> FallbackKeys<K> {
    /// Calls `add(digit)` for each of this thread's keys of tile `p`.
    #[track_caller]
    fn count(&self, p: Val<i32>, add: &dyn Fn(Val<i32>)) {
        let first = p * self.tile_len + self.stripe.first;
        let loaded: Vec<Val<K>> = (0..self.kp).map(|j| self.keys.get(first + j * self.stripe.step)).collect();
        for key in loaded {
            let ord = K::ordered(key) ^ self.flip;
            add(K::Bits::digit(ord, self.shift, self.mask).cast::<i32>());
        }
    }
}

/// `output[i] = input[i]` for `i < n` (the last pass of an odd pass count wrote the scratch array).
pub(crate) fn copy_kernel<T: Num>() -> Kernel {
    Kernel::range(&format!("sort_copy_{}", T::DTYPE), 256, |k| {
        let input = k.array::<T>("input");
        let output = k.array::<T>("output");
        let n = k.scalar::<i32>("n");
        k.parallel_for(0, n, |i| output.set(i, input.get(i)));
    })
}
