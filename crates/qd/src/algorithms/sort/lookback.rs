//! The onesweep look-back, per digit (D13): each tile publishes its count of every digit, then
//! sums its predecessors' counts of that digit, nearest first, until one that published an
//! inclusive count (its own plus all before it); then it publishes its own inclusive count.
//!
//! A word is `flag << 30 | count`: 0 (nothing yet), [`PARTIAL`] (the tile's own count) or
//! [`INCLUSIVE`] (the count of that digit in this tile and every tile before it, plus the keys of
//! smaller digits: the position of the tile's first key of that digit). Counts have 30 bits, so a
//! sort takes fewer than 2^30 keys. Only the words carry data between blocks, so relaxed atomic
//! loads and stores suffice: no fence orders anything else.
//!
//! Where the target says a started block keeps making progress ([`Limits::block_forward_progress`],
//! CUDA), each digit's owner spins on a word until it is set: plain look-back. Elsewhere (Vulkan,
//! Metal) a tile may wait on one that is never scheduled, so the block walks back in step: after
//! [`SortTuning::fallback_spins`] reads of a word that is still unset, the block counts that
//! predecessor's keys itself (decoupled fallback) and goes on.
//!
//! [`Limits::block_forward_progress`]: crate::target::Limits::block_forward_progress

use super::kernels::{load_relaxed, store_relaxed};
use super::tuning::{SortTuning, DIGITS};
use crate::simt::atomic::atomic_add;
use crate::simt::block;
use crate::simt::block_radix::OwnedDigits;
use crate::trace::{break_, if_, loop_, select, target, var, while_, Array, Val, Var};

/// Flag of a tile's own count.
pub(crate) const PARTIAL: u32 = 1 << 30;
/// Flag of an inclusive count.
pub(crate) const INCLUSIVE: u32 = 2 << 30;
/// The count's bits.
pub(crate) const COUNT_MASK: u32 = PARTIAL - 1;

/// Where one tile's look-back reads and writes.
pub(crate) struct Lookback {
    /// The sort's state words.
    pub state: Array<u32>,
    /// This pass's first look-back word.
    pub lookback_at: Val<i32>,
    /// This pass's digit starts (each digit's first output position).
    pub gstart_at: Val<i32>,
    /// This block's tile.
    pub tile: Val<i32>,
}

impl Lookback {
    fn word(&self, tile: Val<i32>, digit: Val<i32>) -> Val<i32> {
        self.lookback_at + tile * DIGITS as i32 + digit
    }

    /// Publishes the tile's count of each owned digit: tile 0's is already inclusive (its digit
    /// start plus its count).
    #[track_caller]
    pub fn publish(&self, owned: &OwnedDigits, counts: &[Val<i32>]) {
        let first = self.tile.eq(0);
        if_(owned.active, || {
            for (i, c) in counts.iter().enumerate() {
                let d = owned.first + i as i32;
                let start = var(0i32);
                if_(first, || start.set(self.state.get(self.gstart_at + d).bit_cast::<i32>()));
                let inclusive = Val::constant(INCLUSIVE) | (start.get() + *c).bit_cast::<u32>();
                let partial = Val::constant(PARTIAL) | c.bit_cast::<u32>();
                store_relaxed(self.state, self.word(self.tile, d), select(first, inclusive, partial));
            }
        });
    }

    /// Publishes the inclusive count of each owned digit of a tile after the first.
    #[track_caller]
    fn publish_inclusive(&self, owned: &OwnedDigits, counts: &[Val<i32>], prefixes: &[Var<i32>]) {
        if_(owned.active & self.tile.gt(0), || {
            for (i, (c, p)) in counts.iter().zip(prefixes).enumerate() {
                let d = owned.first + i as i32;
                let v = Val::constant(INCLUSIVE) | (p.get() + *c).bit_cast::<u32>();
                store_relaxed(self.state, self.word(self.tile, d), v);
            }
        });
    }

    /// The first output position of each owned digit in this tile (valid where `owned.active`).
    #[track_caller]
    fn starts(&self, owned: &OwnedDigits, prefixes: &[Var<i32>]) -> Vec<Val<i32>> {
        prefixes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = var(p.get());
                if_(owned.active & self.tile.eq(0), || {
                    s.set(self.state.get(self.gstart_at + owned.first + i as i32).bit_cast::<i32>());
                });
                s.get()
            })
            .collect()
    }
}

/// Counts one predecessor tile's keys: calls the closure's `add(digit)` for each of this thread's
/// keys of tile `p`.
pub(crate) type CountTile<'a> = dyn Fn(Val<i32>, &dyn Fn(Val<i32>)) + 'a;

/// Looks back for each owned digit (after [`Lookback::publish`]), publishes the tile's inclusive
/// counts and returns each owned digit's first output position. Every thread of the block calls
/// it (the fallback walk has barriers).
#[track_caller]
pub(crate) fn look_back(
    lb: &Lookback,
    owned: &OwnedDigits,
    counts: &[Val<i32>],
    tuning: SortTuning,
    count_tile: &CountTile<'_>,
) -> Vec<Val<i32>> {
    let prefixes: Vec<Var<i32>> = counts.iter().map(|_| var(0i32)).collect();
    if target().limits().block_forward_progress {
        plain(lb, owned, &prefixes);
    } else {
        fallback(lb, owned, &prefixes, tuning, count_tile);
    }
    lb.publish_inclusive(owned, counts, &prefixes);
    lb.starts(owned, &prefixes)
}

/// Plain look-back: each owner walks back alone, spinning on each word until it is set.
#[track_caller]
fn plain(lb: &Lookback, owned: &OwnedDigits, prefixes: &[Var<i32>]) {
    if_(owned.active & lb.tile.gt(0), || {
        for (i, prefix) in prefixes.iter().enumerate() {
            let d = owned.first + i as i32;
            let p = var(lb.tile - 1);
            loop_(|| {
                let w = var(0u32);
                while_(
                    || {
                        w.set(load_relaxed(lb.state, lb.word(p.get(), d)));
                        w.get().lt(PARTIAL)
                    },
                    || {},
                );
                prefix.set(prefix.get() + (w.get() & COUNT_MASK).bit_cast::<i32>());
                if_(w.get().ge(INCLUSIVE), break_);
                p.set(p.get() - 1);
            });
        }
    });
}

/// Decoupled fallback: the block walks back one predecessor at a time; an owner reads its word up
/// to `fallback_spins` times (none at all with 0: every predecessor is counted, for tests); if any word is still unset, the block counts that predecessor's keys
/// (a shared histogram) and uses those counts for the unset words (inclusive ones for tile 0,
/// with the digit starts). The walk ends when every owned digit met an inclusive count.
#[track_caller]
fn fallback(lb: &Lookback, owned: &OwnedDigits, prefixes: &[Var<i32>], tuning: SortTuning, count_tile: &CountTile<'_>) {
    let t = block::thread_idx();
    let hist = block::shared_array::<i32>(DIGITS);
    let done: Vec<Var<bool>> = prefixes.iter().map(|_| var(lb.tile.eq(0) | !owned.active)).collect();
    let p = var(lb.tile - 1);
    let spins = tuning.fallback_spins as i32;
    loop_(|| {
        let finished = done.iter().map(|d| d.get()).reduce(|a, b| a & b).expect("one owned digit at least");
        if_(block::sync_all_nonzero(finished.to_i32()).ne(0), break_);
        let words: Vec<Var<u32>> = done.iter().map(|_| var(0u32)).collect();
        for (i, (w, dn)) in words.iter().zip(&done).enumerate() {
            let d = owned.first + i as i32;
            // With no reads at all (`fallback_spins == 0`) every predecessor is counted here.
            if spins > 0 {
                if_(!dn.get(), || {
                    let tries = var(0i32);
                    while_(
                        || {
                            w.set(load_relaxed(lb.state, lb.word(p.get(), d)));
                            tries.set(tries.get() + 1);
                            w.get().lt(PARTIAL) & tries.get().lt(spins)
                        },
                        || {},
                    );
                });
            }
        }
        let unset = |w: &Var<u32>, dn: &Var<bool>| !dn.get() & w.get().lt(PARTIAL);
        let stalled =
            words.iter().zip(&done).map(|(w, dn)| unset(w, dn)).reduce(|a, b| a | b).expect("one owned digit at least");
        if_(block::sync_any_nonzero(stalled.to_i32()).ne(0), || {
            for c in (0..DIGITS).step_by(block::static_block_dim() as usize) {
                if_((t + c as i32).lt(DIGITS as i32), || hist.set(t + c as i32, 0));
            }
            block::sync();
            count_tile(p.get(), &|digit| {
                atomic_add(hist.at(digit), 1);
            });
            block::sync();
            for (i, (w, dn)) in words.iter().zip(&done).enumerate() {
                let d = owned.first + i as i32;
                if_(unset(w, dn), || {
                    let c = hist.get(d);
                    let start = lb.state.get(lb.gstart_at + d).bit_cast::<i32>();
                    let inclusive = Val::constant(INCLUSIVE) | (start + c).bit_cast::<u32>();
                    let partial = Val::constant(PARTIAL) | c.bit_cast::<u32>();
                    w.set(select(p.get().eq(0), inclusive, partial));
                });
            }
        });
        for ((w, dn), prefix) in words.iter().zip(&done).zip(prefixes) {
            if_(!dn.get(), || {
                prefix.set(prefix.get() + (w.get() & COUNT_MASK).bit_cast::<i32>());
                if_(w.get().ge(INCLUSIVE), || dn.set(true));
            });
        }
        p.set(p.get() - 1);
    });
}
