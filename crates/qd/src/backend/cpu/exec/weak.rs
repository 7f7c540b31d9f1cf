//! The weak-memory mode of the emulator (D26): global memory as a GPU may show it to other blocks,
//! so a kernel that leaves out a fence can fail here instead of only on hardware.
//!
//! * A plain store to a global array waits in its block's store buffer (one entry per element; a
//!   later store replaces it) and becomes visible at a random later step, entries in random order,
//!   or all at once at a device-scope release: a release fence, a release store or atomic, and the
//!   block's end. A block's own loads see its buffer; other blocks do not.
//! * Every visible write gets a time stamp from one launch-wide clock, and each element keeps its
//!   last [`HISTORY`] values. A load (plain, volatile or relaxed atomic) returns one of them at
//!   random: never older than the newest one written before the reading block's last device-scope
//!   acquire (an acquire fence, load or atomic), nor older than one the block has already read or
//!   written there (per-location coherence).
//! * Atomic read-modify-writes act on the latest value. Volatile and atomic stores skip the buffer.
//! * Block barriers and block- or subgroup-scope fences order the block's own threads, which share
//!   one buffer and one view already, so they publish nothing to other blocks (seed 000: a block
//!   barrier implies a fence at block scope only).
//! * Shared and per-thread arrays are the block's own: unchanged.
//!
//! Blocks run interleaved on one thread, [`RESIDENT`] at a time, a random one stepping each time
//! (a step runs one path until it yields), so a launch is a function of its seed.

use super::{BlockExec, EmuError, Shared, Watch};
use crate::ir::{LoadKind, Ordering, Scope, StoreKind};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering as MemOrd};
use std::sync::{Mutex, MutexGuard};

/// Values each global element remembers for stale loads.
pub(super) const HISTORY: usize = 8;

/// Blocks running at once in weak mode (interleaved on one thread). As many as the most worker
/// threads the default emulator uses, so a kernel whose blocks wait on each other progresses here
/// whenever it does there.
pub(crate) const RESIDENT: usize = 8;

/// Pending plain stores a block holds before one is made visible to make room.
const BUFFER_CAP: usize = 64;

/// An element of a global array, by the address of its cell (arrays passed twice alias).
type Loc = usize;

fn loc(cell: &AtomicU64) -> Loc {
    cell as *const AtomicU64 as usize
}

/// The launch-wide state: the clock, each written element's recent values, the random stream.
pub(super) struct WeakMemory {
    clock: u64,
    history: HashMap<Loc, VecDeque<(u64, u64)>>,
    rng: fastrand::Rng,
}

impl WeakMemory {
    pub(super) fn new(seed: u64) -> Mutex<WeakMemory> {
        Mutex::new(WeakMemory { clock: 0, history: HashMap::new(), rng: fastrand::Rng::with_seed(seed) })
    }

    /// Writes `bits` to `cell` with the next time stamp; returns the stamp. The value it replaces
    /// stays readable (stamped 0 if it predates the launch's first write there).
    fn publish(&mut self, cell: &AtomicU64, bits: u64, progress: &AtomicU64) -> u64 {
        self.clock += 1;
        let old = cell.swap(bits, MemOrd::SeqCst);
        if old != bits {
            progress.fetch_add(1, MemOrd::Relaxed);
        }
        let h = self.history.entry(loc(cell)).or_insert_with(|| VecDeque::from([(0, old)]));
        if h.len() == HISTORY {
            h.pop_front();
        }
        h.push_back((self.clock, bits));
        self.clock
    }

    /// The stamp of `cell`'s latest value (0: unwritten in this launch).
    fn latest(&self, cell: &AtomicU64) -> u64 {
        self.history.get(&loc(cell)).and_then(|h| h.back()).map_or(0, |e| e.0)
    }
}

/// One block's view of global memory: its store buffer, the clock at its last device-scope acquire,
/// and the newest stamp it has read or written per element.
#[derive(Default)]
pub(super) struct View<'a> {
    buffer: Vec<(&'a AtomicU64, u64)>,
    slot: HashMap<Loc, usize>,
    acquired: u64,
    seen: HashMap<Loc, u64>,
}

impl<'a> View<'a> {
    fn take(&mut self, k: usize) -> (&'a AtomicU64, u64) {
        let entry = self.buffer.swap_remove(k);
        self.slot.remove(&loc(entry.0));
        if let Some(moved) = self.buffer.get(k) {
            self.slot.insert(loc(moved.0), k);
        }
        entry
    }

    fn saw(&mut self, cell: &AtomicU64, stamp: u64) {
        let s = self.seen.entry(loc(cell)).or_insert(0);
        *s = (*s).max(stamp);
    }
}

/// Whether a scope reaches other blocks: from the cluster up (the emulator has no smaller group of
/// blocks).
fn device_wide(scope: Scope) -> bool {
    matches!(scope, Scope::Cluster | Scope::Device | Scope::System)
}

fn releases(o: Ordering) -> bool {
    matches!(o, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst)
}

fn acquires(o: Ordering) -> bool {
    matches!(o, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst)
}

impl<'a, 'b> BlockExec<'a, 'b> {
    /// The launch-wide state, locked; the guard borrows the launch, not the block, so the block's
    /// view can change while it is held (one thread runs weak mode: the lock is never contended).
    fn weak_state(&self) -> MutexGuard<'b, WeakMemory> {
        let sh: &'b Shared<'a> = self.sh;
        sh.weak.as_ref().expect("weak mode").lock().unwrap_or_else(|p| p.into_inner())
    }

    fn view(&mut self) -> &mut View<'a> {
        self.weak.as_mut().expect("weak mode")
    }

    /// Makes buffered entry `k` visible.
    fn drain_at(&mut self, m: &mut WeakMemory, k: usize) {
        let (cell, bits) = self.view().take(k);
        let stamp = m.publish(cell, bits, &self.sh.progress);
        self.view().saw(cell, stamp);
    }

    /// Makes every buffered store visible, in random order (a release, or the block's end).
    pub(super) fn drain_all(&mut self) {
        let mut m = self.weak_state();
        while !self.view().buffer.is_empty() {
            let k = m.rng.usize(..self.view().buffer.len());
            self.drain_at(&mut m, k);
        }
    }

    /// Makes one random buffered store visible, if any.
    fn drain_one(&mut self) {
        let mut m = self.weak_state();
        let n = self.view().buffer.len();
        if n > 0 {
            let k = m.rng.usize(..n);
            self.drain_at(&mut m, k);
        }
    }

    /// Drops `cell`'s buffered store (a newer direct store replaces it) or makes it visible first
    /// (an atomic must act on it).
    fn unbuffer(&mut self, m: &mut WeakMemory, cell: &AtomicU64, publish: bool) {
        if let Some(&k) = self.view().slot.get(&loc(cell)) {
            if publish {
                self.drain_at(m, k);
            } else {
                self.view().take(k);
            }
        }
    }

    /// A load from a global element.
    pub(super) fn weak_load(&mut self, cell: &'a AtomicU64, kind: LoadKind) -> u64 {
        if let Some(&k) = self.view().slot.get(&loc(cell)) {
            return self.view().buffer[k].1;
        }
        let mut m = self.weak_state();
        let view = self.weak.as_mut().expect("weak mode");
        let Some(h) = m.history.get(&loc(cell)) else {
            return cell.load(MemOrd::SeqCst);
        };
        let seen = view.seen.get(&loc(cell)).copied().unwrap_or(0);
        // The oldest allowed value: the newest one stamped at or before the last acquire, or the
        // one last seen, whichever is newer (the history is in stamp order).
        let floor = view.acquired.max(seen);
        let (first, newest) = (h.iter().rposition(|e| e.0 <= floor).unwrap_or(0), h.len() - 1);
        // The latest half the time, so a spin-wait ends soon after the value it waits for lands.
        let pick = if m.rng.bool() { newest } else { m.rng.usize(first..=newest) };
        let (stamp, bits) = m.history[&loc(cell)][pick];
        view.saw(cell, stamp);
        if let LoadKind::Ordered(o, scope) = kind {
            if acquires(o) && device_wide(scope) {
                // Everything the write it read had released is stamped before it.
                view.acquired = view.acquired.max(stamp);
            }
        }
        bits
    }

    /// A store to a global element.
    pub(super) fn weak_store(&mut self, cell: &'a AtomicU64, bits: u64, kind: StoreKind) {
        let ordered = match kind {
            StoreKind::Plain => {
                let view = self.view();
                match view.slot.get(&loc(cell)) {
                    Some(&k) => view.buffer[k].1 = bits,
                    None => {
                        view.slot.insert(loc(cell), view.buffer.len());
                        view.buffer.push((cell, bits));
                    }
                }
                if self.view().buffer.len() > BUFFER_CAP {
                    self.drain_one();
                }
                return;
            }
            StoreKind::Volatile => None,
            StoreKind::Ordered(o, scope) => Some((o, scope)),
        };
        if let Some((o, scope)) = ordered {
            if releases(o) && device_wide(scope) {
                self.drain_all();
            }
        }
        let mut m = self.weak_state();
        self.unbuffer(&mut m, cell, false);
        let stamp = m.publish(cell, bits, &self.sh.progress);
        self.view().saw(cell, stamp);
    }

    /// An atomic read-modify-write of a global element with `ordering` at `scope`: on the latest
    /// value, after the block's own buffered store there. Returns the old value.
    pub(super) fn weak_rmw(
        &mut self,
        cell: &'a AtomicU64,
        ordering: Ordering,
        scope: Scope,
        f: impl FnOnce(u64) -> u64,
    ) -> u64 {
        if releases(ordering) && device_wide(scope) {
            self.drain_all();
        }
        let mut m = self.weak_state();
        self.unbuffer(&mut m, cell, true);
        let old = cell.load(MemOrd::SeqCst);
        let new = f(old);
        let stamp = if new != old { m.publish(cell, new, &self.sh.progress) } else { m.latest(cell) };
        let clock = m.clock;
        let view = self.view();
        view.saw(cell, stamp);
        if acquires(ordering) && device_wide(scope) {
            view.acquired = view.acquired.max(clock);
        }
        old
    }

    /// A fence: at device scope a release makes the buffer visible and an acquire lets every value
    /// visible now be the oldest a later load returns.
    pub(super) fn weak_fence(&mut self, scope: Scope, ordering: Ordering) {
        if !device_wide(scope) {
            return;
        }
        // A relaxed fence orders as acquire-release, as the backends print it.
        let ordering = if ordering == Ordering::Relaxed { Ordering::AcqRel } else { ordering };
        if releases(ordering) {
            self.drain_all();
        }
        if acquires(ordering) {
            let clock = self.weak_state().clock;
            self.view().acquired = clock;
        }
    }
}

/// The weak-mode worker: [`RESIDENT`] blocks at a time, in id order, a random one stepping each
/// time; after each step, one random block may make one buffered store visible.
pub(super) fn worker(sh: &Shared) -> Result<(), EmuError> {
    let mut watch = Watch { seen: sh.progress.load(MemOrd::Relaxed), since: std::time::Instant::now() };
    let mut resident: Vec<BlockExec> = Vec::new();
    let mut next = 0u32;
    let draw = |f: fn(&mut fastrand::Rng, usize) -> usize, n: usize| {
        let mut m = sh.weak.as_ref().expect("weak mode").lock().unwrap_or_else(|p| p.into_inner());
        f(&mut m.rng, n)
    };
    loop {
        while resident.len() < RESIDENT && next < sh.geo.grid {
            if sh.start.elapsed() > sh.opts.time_limit {
                let running = format!("block {next} of {}, not yet started", sh.geo.grid);
                let kind = super::EmuErrorKind::TimeLimit { seconds: sh.opts.time_limit.as_secs_f64(), running };
                return Err(EmuError { kernel: sh.prog.kernel.name.clone(), loc: None, kind });
            }
            resident.push(BlockExec::new(sh, next));
            next += 1;
        }
        if resident.is_empty() {
            return Ok(());
        }
        let b = draw(|r, n| r.usize(..n), resident.len());
        if resident[b].step(&mut watch)? {
            resident.swap_remove(b).drain_all();
        }
        // Half the time, one random resident block publishes one random pending store.
        let pick = draw(|r, n| if r.bool() { r.usize(..n.max(1)) } else { n }, resident.len());
        if let Some(block) = resident.get_mut(pick) {
            block.drain_one();
        }
    }
}
