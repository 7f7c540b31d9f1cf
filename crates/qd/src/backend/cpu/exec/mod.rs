//! The emulator's executor: paths, join frames, the block scheduler and the worker pool (D8).
//!
//! A *path* is a set of lanes of one subgroup (its active mask) at one program step. A divergent
//! `if` splits a path in two; both halves are scheduled independently and merge at the `if`'s join
//! frame, so a spin-wait on one side makes progress while the other side runs. A loop frame collects
//! the lanes that reach the latch (one iteration in lockstep) and those that left (break/return).
//! Paths yield at loop back-edges and barriers; a block's paths run round-robin on one OS thread.
//!
//! This file holds the launch settings and arguments, the worker pool, and the per-block state
//! (paths, frames, subgroups); the rest is split by concern: `error.rs` (the run-time errors),
//! `block.rs` (a block's scheduler: round-robin paths, progress watch, block barriers),
//! `paths.rs` (the lockstep interpreter of control steps: join frames, divergence, reconvergence),
//! `inst.rs` (straight-line instructions, D5 arithmetic, poison), `access.rs` (bounds-checked
//! memory access and atomics), `collective.rs` (subgroup collectives, the NVIDIA families) and
//! `weak.rs` (the weak-memory mode, D26: store buffers, stale loads, its interleaving scheduler).

mod access;
mod block;
mod collective;
mod error;
mod inst;
mod paths;
mod weak;

pub use error::{EmuError, EmuErrorKind};

use super::memory::Buffer;
use super::program::Program;
use crate::ir::eval::EvalError;
use crate::ir::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering as MemOrd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Emulator settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads running blocks (blocks start in id order); not used in weak mode.
    pub workers: usize,
    /// No value-changing store or atomic anywhere for this long is reported as a hang.
    pub hang_timeout: Duration,
    /// Hard wall-clock cap for one launch.
    pub time_limit: Duration,
    /// Poison implementation-defined results and report any that reaches memory.
    pub strict: bool,
    /// How global memory behaves between blocks (D26).
    pub memory: Memory,
}

/// How the emulator shows one block's global-memory writes to the others (D26).
///
/// ```
/// use qd::backend::cpu::{Memory, Options};
/// use qd::prelude::*;
///
/// // The same device by its builder and by its name (`+weak=SEED`, or `+weak` for seed 0).
/// let weak = Options { memory: Memory::Weak { seed: 7 }, ..Options::default() };
/// let d = Device::cpu_with(32, weak)?;
/// assert_eq!(d.name(), "cpu+weak=7");
/// assert_eq!(Device::from_name("cpu+weak=7")?.name(), d.name());
///
/// // A kernel whose blocks share nothing runs as it does on the default emulator.
/// let twice = Kernel::range("twice", 64, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2));
/// });
/// let a = d.array_from(&[1, 2, 3, 4])?;
/// d.launch(&twice, &[a.arg()])?;
/// assert_eq!(a.to_vec()?, [2, 4, 6, 8]);
/// # Ok::<(), QdError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Memory {
    /// Every access is sequentially consistent: a write is visible to every block at once. Kernels
    /// missing a fence still pass.
    #[default]
    Sequential,
    /// As weak as a GPU may be: plain stores wait in a per-block buffer and become visible in
    /// random order, at random times or at a device-scope release; loads may return older values,
    /// down to what the block last acquired (per-location coherence kept). Blocks run interleaved
    /// on one thread, a few at a time, chosen at random: a launch is a function of `seed`
    /// (`Options::workers` is not used). A kernel that leaves out a fence fails for some seeds.
    Weak {
        /// Seeds every random choice (which block steps, which store lands, which value a load
        /// returns).
        seed: u64,
    },
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8),
            hang_timeout: Duration::from_secs(2),
            time_limit: Duration::from_secs(120),
            strict: false,
            memory: Memory::Sequential,
        }
    }
}

/// Launch shape.
#[derive(Clone, Copy, Debug)]
pub struct LaunchGeometry {
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block_dim: u32,
    /// Lanes per subgroup (4 to 64).
    pub subgroup_size: u32,
}

/// A bound kernel argument.
#[derive(Clone, Debug)]
pub enum CpuArg {
    /// A global array.
    Array(Arc<Buffer>),
    /// A scalar's bits.
    Scalar(u64),
}

struct Shared<'a> {
    prog: &'a Program,
    geo: LaunchGeometry,
    args: &'a [CpuArg],
    opts: &'a Options,
    progress: AtomicU64,
    next_block: AtomicU32,
    abort: AtomicBool,
    error: Mutex<Option<EmuError>>,
    start: Instant,
    /// The launch's weak memory (`Memory::Weak`), else `None`.
    weak: Option<Mutex<weak::WeakMemory>>,
}

/// Runs `prog` over the grid; returns the first error any block hit.
pub fn launch(prog: &Program, geo: LaunchGeometry, args: &[CpuArg], opts: &Options) -> Result<(), EmuError> {
    let k = &prog.kernel;
    if args.len() != k.params.len() {
        return Err(EmuError {
            kernel: k.name.clone(),
            loc: None,
            kind: EmuErrorKind::BadArguments(format!("expected {} arguments, got {}", k.params.len(), args.len())),
        });
    }
    if !(4..=64).contains(&geo.subgroup_size) || !geo.subgroup_size.is_power_of_two() {
        return Err(EmuError {
            kernel: k.name.clone(),
            loc: None,
            kind: EmuErrorKind::BadArguments(format!(
                "subgroup size {} is not a power of two in 4..=64",
                geo.subgroup_size
            )),
        });
    }
    if geo.grid == 0 {
        return Ok(());
    }
    let shared = Shared {
        prog,
        geo,
        args,
        opts,
        progress: AtomicU64::new(0),
        next_block: AtomicU32::new(0),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        start: Instant::now(),
        weak: match opts.memory {
            Memory::Sequential => None,
            Memory::Weak { seed } => Some(weak::WeakMemory::new(seed)),
        },
    };
    if shared.weak.is_some() {
        check_array_budget(k, geo, weak::RESIDENT.min(geo.grid as usize))?;
        return weak::worker(&shared);
    }
    let workers = opts.workers.clamp(1, geo.grid as usize);
    check_array_budget(k, geo, workers)?;
    if workers == 1 {
        // One block (or one worker): on the calling thread, saving a thread start per launch.
        worker(&shared);
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| worker(&shared));
            }
        });
    }
    match shared.error.into_inner() {
        Ok(Some(e)) => Err(e),
        Ok(None) => Ok(()),
        Err(p) => p.into_inner().map_or(Ok(()), Err),
    }
}

/// Emulator bytes of the shared and per-thread arrays one block of `geo` allocates (8 bytes per
/// element; a per-thread array once per lane of every subgroup): each array, whether it is shared,
/// and its bytes (`None` on overflow).
fn block_array_bytes(k: &Kernel, geo: LaunchGeometry) -> Vec<(&ArrayDecl, bool, Option<u64>)> {
    let width = u64::from(geo.subgroup_size);
    let lanes = u64::from(geo.block_dim).div_ceil(width) * width;
    let shared = k.shared.iter().map(|a| (a, true, u64::from(a.len).checked_mul(8)));
    let local = k.local_arrays.iter().map(|a| (a, false, u64::from(a.len).checked_mul(8 * lanes)));
    shared.chain(local).collect()
}

/// Refuses a launch whose blocks running at once (one per worker) would allocate more shared and
/// per-thread array memory than the budget, naming the largest array and its line (D18).
fn check_array_budget(k: &Kernel, geo: LaunchGeometry, workers: usize) -> Result<(), EmuError> {
    let arrays = block_array_bytes(k, geo);
    if arrays.is_empty() {
        return Ok(());
    }
    let Some(budget) = super::memory::memory_budget() else { return Ok(()) };
    let per_block = arrays.iter().try_fold(0u64, |sum, (_, _, b)| b.and_then(|b| sum.checked_add(b)));
    let total = per_block.and_then(|b| b.checked_mul(workers as u64));
    if total.is_some_and(|t| t <= budget) {
        return Ok(());
    }
    let (array, shared, bytes) = arrays
        .iter()
        .max_by_key(|(_, _, b)| b.unwrap_or(u64::MAX))
        .map(|(a, shared, b)| (*a, *shared, b.unwrap_or(u64::MAX)))
        .expect("arrays is not empty");
    Err(EmuError {
        kernel: k.name.clone(),
        loc: Some(array.loc),
        kind: EmuErrorKind::ArrayOverBudget {
            array: array.name.clone(),
            shared,
            bytes,
            blocks: u32::try_from(workers).unwrap_or(u32::MAX),
            budget,
        },
    })
}

fn worker(sh: &Shared) {
    let mut watch = Watch { seen: sh.progress.load(MemOrd::Relaxed), since: Instant::now() };
    loop {
        if sh.abort.load(MemOrd::Relaxed) {
            return;
        }
        let b = sh.next_block.fetch_add(1, MemOrd::Relaxed);
        if b >= sh.geo.grid {
            return;
        }
        // Checked between blocks too: inside a block it is checked every few scheduling steps, which
        // a grid of millions of short blocks would never reach.
        let run = if sh.start.elapsed() > sh.opts.time_limit {
            let running = format!("block {b} of {}, not yet started", sh.geo.grid);
            let kind = EmuErrorKind::TimeLimit { seconds: sh.opts.time_limit.as_secs_f64(), running };
            Err(EmuError { kernel: sh.prog.kernel.name.clone(), loc: None, kind })
        } else {
            BlockExec::new(sh, b).run(&mut watch)
        };
        if let Err(e) = run {
            let mut slot = sh.error.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(e);
            }
            sh.abort.store(true, MemOrd::Relaxed);
            return;
        }
    }
}

/// Per-worker view of global progress.
struct Watch {
    seen: u64,
    since: Instant,
}

#[derive(Clone, Debug)]
struct Path {
    sg: usize,
    pc: usize,
    mask: u64,
    frames: Vec<usize>,
}

#[derive(Clone, Debug)]
enum Frame {
    If { join_pc: usize, expected: u64, arrived: u64, parent: Vec<usize>, sg: usize },
    Loop { begin_pc: usize, exit_pc: usize, active: u64, at_latch: u64, exited: u64, parent: Vec<usize>, sg: usize },
    Free,
}

struct Subgroup {
    regs: Vec<u64>,
    poison: Vec<u64>,
    locals: Vec<u64>,
    local_poison: Vec<u64>,
    local_arrays: Vec<Vec<u64>>,
    launched: u64,
    exited: u64,
}

enum Event {
    /// Keep running this path later (a back-edge).
    Yield(Path),
    /// The path is gone (parked at a join, finished, or split into others).
    Gone,
    /// Waiting at a block barrier.
    Barrier(Path),
}

struct BlockExec<'a, 'b> {
    sh: &'b Shared<'a>,
    block: u32,
    width: usize,
    sgs: Vec<Subgroup>,
    shared_mem: Vec<Buffer>,
    frames: Vec<Frame>,
    free_frames: Vec<usize>,
    queue: VecDeque<Path>,
    at_barrier: Vec<Path>,
    ticks: u32,
    last_spin_op: Option<(String, SrcLoc)>,
    /// The library op of the instruction being run (`Inst::op`), which its errors name.
    current_op: Option<&'static str>,
    /// The `LoopBegin` step of the innermost loop of the last path to yield at a back-edge: the
    /// loop the time-limit error names.
    last_loop: Option<usize>,
    /// The block's view of global memory in weak mode.
    weak: Option<weak::View<'a>>,
}

fn lanes(mask: u64) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        Some(l)
    })
}

fn full(width: usize) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn width_mask(d: DType) -> u64 {
    if d.bits() >= 64 {
        u64::MAX
    } else {
        (1u64 << d.bits()) - 1
    }
}

impl<'a, 'b> BlockExec<'a, 'b> {
    fn err(&self, loc: Option<SrcLoc>, kind: EmuErrorKind) -> EmuError {
        EmuError { kernel: self.sh.prog.kernel.name.clone(), loc, kind }
    }

    /// The op an error about `kind` names: the library op the user called, else its mnemonic.
    fn op_name(&self, kind: &InstKind) -> String {
        self.current_op.map_or_else(|| kind.mnemonic(), str::to_string)
    }

    fn partial(&self, kind: &InstKind, loc: SrcLoc, path: &Path, expected: u64) -> EmuError {
        self.err(
            Some(loc),
            EmuErrorKind::PartialMask {
                op: self.op_name(kind),
                block: self.block,
                subgroup: path.sg as u32,
                active: path.mask,
                expected,
            },
        )
    }

    fn reg(&self, sg: usize, v: ValueId, lane: usize) -> u64 {
        self.sgs[sg].regs[v.0 as usize * self.width + lane]
    }

    fn eval_err(&self, kind: &InstKind, loc: SrcLoc, e: EvalError) -> EmuError {
        match e {
            EvalError::DivisionByZero => self.err(Some(loc), EmuErrorKind::DivisionByZero { op: self.op_name(kind) }),
            EvalError::Unsupported => self.err(
                Some(loc),
                EmuErrorKind::BadArguments(format!("`{}` is not defined on these operand types", self.op_name(kind))),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_bytes_count_every_lane_of_partial_subgroups_and_refuse_overflow() {
        let decl =
            |name: &str, len: u32| ArrayDecl { name: name.into(), dtype: DType::F32, len, loc: SrcLoc::caller() };
        let k = Kernel {
            name: "k".into(),
            launch: LaunchKind::Explicit,
            block_dim: 40,
            subgroup_size: 32,
            min_blocks_per_sm: None,
            params: Vec::new(),
            values: Vec::new(),
            locals: Vec::new(),
            shared: vec![decl("s", 10)],
            local_arrays: vec![decl("l", 3), decl("huge", u32::MAX)],
            body: Block::default(),
        };
        let geo = LaunchGeometry { grid: 1, block_dim: 40, subgroup_size: 32 };
        let bytes: Vec<_> =
            block_array_bytes(&k, geo).into_iter().map(|(a, shared, b)| (a.name.clone(), shared, b)).collect();
        // 40 threads are two 32-lane subgroups: 64 copies of a per-thread array, 8 bytes each.
        let want = [
            ("s".into(), true, Some(80)),
            ("l".into(), false, Some(3 * 8 * 64)),
            ("huge".into(), false, Some(u64::from(u32::MAX) * 8 * 64)),
        ];
        assert_eq!(bytes, want);
        let e = check_array_budget(&k, geo, 4).unwrap_err();
        assert_eq!(e.loc.map(|l| l.file), Some(file!()));
        match e.kind {
            EmuErrorKind::ArrayOverBudget { array, shared: false, blocks: 4, .. } => assert_eq!(array, "huge"),
            other => panic!("expected ArrayOverBudget, got {other}"),
        }
        let k = Kernel { local_arrays: vec![decl("l", 3)], ..k };
        assert!(check_array_budget(&k, geo, 4).is_ok());
    }
}
