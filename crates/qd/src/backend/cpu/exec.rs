//! The emulator's executor: paths, join frames, the block scheduler and the worker pool (D8).
//!
//! A *path* is a set of lanes of one subgroup (its active mask) at one program step. A divergent
//! `if` splits a path in two; both halves are scheduled independently and merge at the `if`'s join
//! frame, so a spin-wait on one side makes progress while the other side runs. A loop frame collects
//! the lanes that reach the latch (one iteration in lockstep) and those that left (break/return).
//! Paths yield at loop back-edges and barriers; a block's paths run round-robin on one OS thread.

use super::memory::Buffer;
use super::program::{Program, Step};
use crate::ir::eval::{self, EvalError};
use crate::ir::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering as MemOrd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Emulator settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads running blocks (blocks start in id order).
    pub workers: usize,
    /// No value-changing store or atomic anywhere for this long is reported as a hang.
    pub hang_timeout: Duration,
    /// Hard wall-clock cap for one launch.
    pub time_limit: Duration,
    /// Poison implementation-defined results and report any that reaches memory.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8),
            hang_timeout: Duration::from_secs(2),
            time_limit: Duration::from_secs(120),
            strict: false,
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

/// A run-time error found by the emulator.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("kernel `{kernel}`{}: {kind}", loc.map(|l| format!(" at {l}")).unwrap_or_default())]
pub struct EmuError {
    /// Kernel name.
    pub kernel: String,
    /// The user's line of the failing op, when known.
    pub loc: Option<SrcLoc>,
    /// What happened.
    pub kind: EmuErrorKind,
}

/// The kinds of run-time error.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmuErrorKind {
    /// A collective or barrier ran with some lanes missing.
    #[error("`{op}` ran under a partial mask in block {block}, subgroup {subgroup}: active lanes {active:#x}, expected {expected:#x} (every lane must execute it together)")]
    PartialMask {
        /// The op.
        op: String,
        /// Block id.
        block: u32,
        /// Subgroup within the block.
        subgroup: u32,
        /// Lanes present.
        active: u64,
        /// Lanes required.
        expected: u64,
    },
    /// Subgroups of one block waited at different barriers.
    #[error("subgroups of block {block} wait at different barriers ({first} and {second})")]
    BarrierMismatch {
        /// Block id.
        block: u32,
        /// One barrier.
        first: SrcLoc,
        /// Another.
        second: SrcLoc,
    },
    /// An index outside the array.
    #[error("index {index} is out of bounds for `{array}` of length {len} (`{op}`)")]
    OutOfBounds {
        /// The op.
        op: String,
        /// Array name.
        array: String,
        /// The index.
        index: i64,
        /// Its length.
        len: usize,
    },
    /// Integer division or remainder by zero.
    #[error("integer division by zero (`{op}`)")]
    DivisionByZero {
        /// The op.
        op: String,
    },
    /// No progress anywhere for too long.
    #[error("no thread made progress for {seconds:.1} s: a spin-wait that never ends, last spinning on `{op}`")]
    Hang {
        /// The op spun on.
        op: String,
        /// Seconds without progress.
        seconds: f64,
    },
    /// The launch ran past the wall-clock cap.
    #[error("the launch ran past its {seconds:.0} s limit")]
    TimeLimit {
        /// The cap.
        seconds: f64,
    },
    /// Strict mode: an implementation-defined value reached memory.
    #[error("strict mode: an implementation-defined value (e.g. an out-of-range shuffle source) reached memory through `{op}`")]
    Poison {
        /// The op.
        op: String,
    },
    /// Blocked lanes that can never continue (an emulator invariant broke or lanes wait forever).
    #[error("deadlock in block {block}: {detail}")]
    Deadlock {
        /// Block id.
        block: u32,
        /// What is waiting.
        detail: String,
    },
    /// The arguments do not match the kernel.
    #[error("{0}")]
    BadArguments(String),
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
    };
    let workers = opts.workers.clamp(1, geo.grid as usize);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| worker(&shared));
        }
    });
    match shared.error.into_inner() {
        Ok(Some(e)) => Err(e),
        Ok(None) => Ok(()),
        Err(p) => p.into_inner().map_or(Ok(()), Err),
    }
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
        if let Err(e) = BlockExec::new(sh, b).run(&mut watch) {
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
    last_spin_op: Option<(String, SrcLoc)>,
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
    fn new(sh: &'b Shared<'a>, block: u32) -> Self {
        let k = &sh.prog.kernel;
        let width = sh.geo.subgroup_size as usize;
        let bd = sh.geo.block_dim as usize;
        let nsg = bd.div_ceil(width);
        let nv = k.values.len();
        let sgs = (0..nsg)
            .map(|s| {
                let count = (bd - s * width).min(width);
                let mut regs = vec![0u64; nv * width];
                for (p, arg) in k.params.iter().zip(sh.args) {
                    if let (Param::Scalar { value, dtype, .. }, CpuArg::Scalar(bits)) = (p, arg) {
                        for l in 0..width {
                            regs[value.0 as usize * width + l] = bits & width_mask(*dtype);
                        }
                    }
                }
                Subgroup {
                    regs,
                    poison: vec![0; nv],
                    locals: vec![0; k.locals.len() * width],
                    local_poison: vec![0; k.locals.len()],
                    local_arrays: k.local_arrays.iter().map(|a| vec![0; a.len as usize * width]).collect(),
                    launched: full(count),
                    exited: 0,
                }
            })
            .collect::<Vec<_>>();
        let queue =
            sgs.iter().enumerate().map(|(i, s)| Path { sg: i, pc: 0, mask: s.launched, frames: Vec::new() }).collect();
        BlockExec {
            sh,
            block,
            width,
            sgs,
            shared_mem: k.shared.iter().map(|a| Buffer::zeroed(a.dtype, a.len as usize)).collect(),
            frames: Vec::new(),
            free_frames: Vec::new(),
            queue,
            last_spin_op: None,
        }
    }

    fn err(&self, loc: Option<SrcLoc>, kind: EmuErrorKind) -> EmuError {
        EmuError { kernel: self.sh.prog.kernel.name.clone(), loc, kind }
    }

    fn run(mut self, watch: &mut Watch) -> Result<(), EmuError> {
        let mut at_barrier: Vec<Path> = Vec::new();
        let mut tick = 0u32;
        loop {
            while let Some(path) = self.queue.pop_front() {
                match self.run_path(path)? {
                    Event::Yield(p) => self.queue.push_back(p),
                    Event::Gone => {}
                    Event::Barrier(p) => at_barrier.push(p),
                }
                tick = tick.wrapping_add(1);
                if tick.is_multiple_of(64) {
                    self.check_progress(watch)?;
                }
            }
            if at_barrier.is_empty() {
                break;
            }
            self.release_barrier(&mut at_barrier)?;
        }
        let waiting: Vec<_> = self.frames.iter().filter(|f| !matches!(f, Frame::Free)).collect();
        if !waiting.is_empty() {
            return Err(self.err(
                None,
                EmuErrorKind::Deadlock {
                    block: self.block,
                    detail: format!("{} join points never completed", waiting.len()),
                },
            ));
        }
        Ok(())
    }

    fn check_progress(&mut self, watch: &mut Watch) -> Result<(), EmuError> {
        if self.sh.abort.load(MemOrd::Relaxed) {
            // Another block failed; its error is the one reported.
            return Err(self.err(None, EmuErrorKind::TimeLimit { seconds: 0.0 }));
        }
        let now = Instant::now();
        let p = self.sh.progress.load(MemOrd::Relaxed);
        if p != watch.seen {
            watch.seen = p;
            watch.since = now;
        } else if now - watch.since > self.sh.opts.hang_timeout {
            let (op, loc) = self.last_spin_op.clone().map(|(o, l)| (o, Some(l))).unwrap_or(("loop".into(), None));
            return Err(self.err(loc, EmuErrorKind::Hang { op, seconds: (now - watch.since).as_secs_f64() }));
        }
        if now - self.sh.start > self.sh.opts.time_limit {
            return Err(self.err(None, EmuErrorKind::TimeLimit { seconds: self.sh.opts.time_limit.as_secs_f64() }));
        }
        Ok(())
    }

    fn release_barrier(&mut self, at: &mut Vec<Path>) -> Result<(), EmuError> {
        let prog = self.sh.prog;
        // Every subgroup with live lanes must be here.
        for (i, sg) in self.sgs.iter().enumerate() {
            let live = sg.launched & !sg.exited;
            if live != 0 && !at.iter().any(|p| p.sg == i) {
                let loc = prog.locs[at[0].pc];
                return Err(self.err(
                    Some(loc),
                    EmuErrorKind::Deadlock {
                        block: self.block,
                        detail: format!("subgroup {i} never reaches the block barrier the others wait at"),
                    },
                ));
            }
        }
        let first = at[0].pc;
        if let Some(other) = at.iter().find(|p| p.pc != first) {
            return Err(self.err(
                Some(prog.locs[first]),
                EmuErrorKind::BarrierMismatch {
                    block: self.block,
                    first: prog.locs[first],
                    second: prog.locs[other.pc],
                },
            ));
        }
        std::sync::atomic::fence(MemOrd::SeqCst);
        let Step::Inst(i) = prog.steps[first] else { unreachable!("barrier step") };
        if let InstKind::BlockBarrier { reduce: Some((red, pred, dst)) } = &prog.insts[i].0 {
            let w = self.width;
            let (mut count, mut total) = (0u64, 0u64);
            for p in at.iter() {
                for l in lanes(p.mask) {
                    total += 1;
                    count += self.sgs[p.sg].regs[pred.0 as usize * w + l] & 1;
                }
            }
            let r = match red {
                BarrierReduce::And => (count == total) as u64,
                BarrierReduce::Or => (count > 0) as u64,
                BarrierReduce::Popc => count,
            };
            for p in at.iter() {
                for l in lanes(p.mask) {
                    self.sgs[p.sg].regs[dst.0 as usize * w + l] = r;
                }
            }
        }
        for mut p in at.drain(..) {
            p.pc += 1;
            self.queue.push_back(p);
        }
        Ok(())
    }

    fn new_frame(&mut self, f: Frame) -> usize {
        if let Some(i) = self.free_frames.pop() {
            self.frames[i] = f;
            i
        } else {
            self.frames.push(f);
            self.frames.len() - 1
        }
    }

    fn free(&mut self, id: usize) {
        self.frames[id] = Frame::Free;
        self.free_frames.push(id);
    }

    /// Resumes lanes of a frame that has everything it waits for.
    fn settle(&mut self, id: usize) -> Option<Path> {
        match self.frames[id].clone() {
            Frame::If { join_pc, expected, arrived, parent, sg } => {
                if expected == 0 {
                    self.free(id);
                    None
                } else if arrived == expected {
                    self.free(id);
                    Some(Path { sg, pc: join_pc + 1, mask: arrived, frames: parent })
                } else {
                    None
                }
            }
            Frame::Loop { begin_pc, exit_pc, active, at_latch, exited, parent, sg } => {
                if active == 0 {
                    self.free(id);
                    (exited != 0).then_some(Path { sg, pc: exit_pc, mask: exited, frames: parent })
                } else if at_latch == active {
                    if let Frame::Loop { at_latch, .. } = &mut self.frames[id] {
                        *at_latch = 0;
                    }
                    let mut frames = parent;
                    frames.push(id);
                    Some(Path { sg, pc: begin_pc + 1, mask: active, frames })
                } else {
                    None
                }
            }
            Frame::Free => None,
        }
    }

    /// Lanes `m` leave the if-frames above the innermost loop (for break/continue); returns that loop.
    fn leave_ifs(&mut self, path: &Path, m: u64) -> Option<usize> {
        for &f in path.frames.iter().rev() {
            match &mut self.frames[f] {
                Frame::If { expected, .. } => {
                    *expected &= !m;
                    if let Some(p) = self.settle(f) {
                        self.queue.push_back(p);
                    }
                }
                Frame::Loop { .. } => return Some(f),
                Frame::Free => {}
            }
        }
        None
    }

    fn break_lanes(&mut self, path: &Path, m: u64) {
        if let Some(l) = self.leave_ifs(path, m) {
            if let Frame::Loop { active, exited, .. } = &mut self.frames[l] {
                *active &= !m;
                *exited |= m;
            }
            if let Some(p) = self.settle(l) {
                self.queue.push_back(p);
            }
        }
    }

    fn run_path(&mut self, mut path: Path) -> Result<Event, EmuError> {
        let prog = self.sh.prog;
        loop {
            match &prog.steps[path.pc] {
                Step::Inst(i) => {
                    let (kind, loc) = &prog.insts[*i];
                    if kind.is_block_barrier() {
                        let sg = &self.sgs[path.sg];
                        let live = sg.launched & !sg.exited;
                        if path.mask != live {
                            return Err(self.partial(kind, *loc, &path, live));
                        }
                        return Ok(Event::Barrier(path));
                    }
                    self.exec(kind, *loc, &path)?;
                    path.pc += 1;
                }
                Step::If { cond, else_pc, join_pc } => {
                    let sg = &self.sgs[path.sg];
                    let mut t = 0;
                    for l in lanes(path.mask) {
                        t |= (sg.regs[cond.0 as usize * self.width + l] & 1) << l;
                    }
                    let e = path.mask & !t;
                    if t != 0 && e != 0 {
                        let f = self.new_frame(Frame::If {
                            join_pc: *join_pc,
                            expected: path.mask,
                            arrived: 0,
                            parent: path.frames.clone(),
                            sg: path.sg,
                        });
                        let mut frames = path.frames.clone();
                        frames.push(f);
                        self.queue.push_back(Path { sg: path.sg, pc: *else_pc, mask: e, frames: frames.clone() });
                        path = Path { sg: path.sg, pc: path.pc + 1, mask: t, frames };
                    } else if t != 0 {
                        path.pc += 1;
                    } else {
                        path.pc = *else_pc;
                    }
                }
                Step::Jump(to) => path.pc = *to,
                Step::EndIf => {
                    let top = path.frames.last().copied();
                    match top.map(|f| &mut self.frames[f]) {
                        Some(Frame::If { join_pc, arrived, .. }) if *join_pc == path.pc => {
                            *arrived |= path.mask;
                            let f = top.unwrap_or_default();
                            return Ok(match self.settle(f) {
                                // The last arrival continues as the merged path.
                                Some(p) => Event::Yield(p),
                                None => Event::Gone,
                            });
                        }
                        _ => path.pc += 1,
                    }
                }
                Step::LoopBegin { .. } => {
                    let f = self.new_frame(Frame::Loop {
                        begin_pc: path.pc,
                        exit_pc: match prog.steps[path.pc] {
                            Step::LoopBegin { exit_pc } => exit_pc,
                            _ => unreachable!(),
                        },
                        active: path.mask,
                        at_latch: 0,
                        exited: 0,
                        parent: path.frames.clone(),
                        sg: path.sg,
                    });
                    path.frames.push(f);
                    path.pc += 1;
                }
                Step::LoopEnd { .. } | Step::Continue => {
                    let Some(l) = self.leave_ifs(&path, path.mask) else { unreachable!("latch outside a loop") };
                    if let Frame::Loop { at_latch, .. } = &mut self.frames[l] {
                        *at_latch |= path.mask;
                    }
                    return Ok(match self.settle(l) {
                        Some(p) => Event::Yield(p),
                        None => Event::Gone,
                    });
                }
                Step::Break => {
                    self.break_lanes(&path, path.mask);
                    return Ok(Event::Gone);
                }
                Step::Return | Step::End => {
                    let m = path.mask;
                    self.sgs[path.sg].exited |= m;
                    for &f in path.frames.iter().rev() {
                        match &mut self.frames[f] {
                            Frame::If { expected, .. } => *expected &= !m,
                            Frame::Loop { active, .. } => *active &= !m,
                            Frame::Free => {}
                        }
                        if let Some(p) = self.settle(f) {
                            self.queue.push_back(p);
                        }
                    }
                    return Ok(Event::Gone);
                }
                Step::GridInit { begin, index } => {
                    let w = self.width;
                    let bd = self.sh.geo.block_dim as u64;
                    let sg = &mut self.sgs[path.sg];
                    for l in lanes(path.mask) {
                        let tid = (path.sg * w + l) as u64;
                        let gid = self.block as u64 * bd + tid;
                        let b = sg.regs[begin.0 as usize * w + l];
                        sg.regs[index.0 as usize * w + l] = (b as u32).wrapping_add(gid as u32) as u64;
                    }
                    path.pc += 1;
                }
                Step::GridCheck { end, index } => {
                    let w = self.width;
                    let sg = &self.sgs[path.sg];
                    let mut out = 0u64;
                    for l in lanes(path.mask) {
                        let i = sg.regs[index.0 as usize * w + l] as u32 as i32 as i64;
                        let e = sg.regs[end.0 as usize * w + l] as u32 as i32 as i64;
                        if i >= e {
                            out |= 1 << l;
                        }
                    }
                    if out != 0 {
                        self.break_lanes(&path, out);
                        path.mask &= !out;
                        if path.mask == 0 {
                            return Ok(Event::Gone);
                        }
                    }
                    path.pc += 1;
                }
                Step::GridStep { index } => {
                    let w = self.width;
                    let stride = self.sh.geo.block_dim.wrapping_mul(self.sh.geo.grid);
                    let sg = &mut self.sgs[path.sg];
                    for l in lanes(path.mask) {
                        let r = &mut sg.regs[index.0 as usize * w + l];
                        *r = (*r as u32).wrapping_add(stride) as u64;
                    }
                    path.pc += 1;
                }
            }
        }
    }

    fn partial(&self, kind: &InstKind, loc: SrcLoc, path: &Path, expected: u64) -> EmuError {
        self.err(
            Some(loc),
            EmuErrorKind::PartialMask {
                op: kind.mnemonic(),
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

    /// Index of lane `l` into `array`, bounds-checked.
    fn index(&self, kind: &InstKind, loc: SrcLoc, sg: usize, place: &Place, l: usize) -> Result<usize, EmuError> {
        let k = &self.sh.prog.kernel;
        let d = k.dtype(place.index);
        let raw = self.reg(sg, place.index, l);
        let i = if d.is_signed_int() { eval::sext(d, raw) } else { raw as i64 };
        let len = self.array_len(place.array);
        if i < 0 || i as usize >= len {
            return Err(self.err(
                Some(loc),
                EmuErrorKind::OutOfBounds {
                    op: kind.mnemonic(),
                    array: k.array_name(place.array).to_string(),
                    index: i,
                    len,
                },
            ));
        }
        Ok(i as usize)
    }

    fn array_len(&self, a: ArrayRef) -> usize {
        match a {
            ArrayRef::Param(i) => match &self.sh.args[i as usize] {
                CpuArg::Array(b) => b.len(),
                CpuArg::Scalar(_) => 0,
            },
            ArrayRef::Shared(i) => self.shared_mem[i as usize].len(),
            ArrayRef::Local(i) => self.sh.prog.kernel.local_arrays[i as usize].len as usize,
        }
    }

    fn cell(&self, a: ArrayRef, i: usize) -> &AtomicU64 {
        match a {
            ArrayRef::Param(p) => match &self.sh.args[p as usize] {
                CpuArg::Array(b) => b.cell(i),
                CpuArg::Scalar(_) => unreachable!("scalar argument used as an array"),
            },
            ArrayRef::Shared(s) => self.shared_mem[s as usize].cell(i),
            ArrayRef::Local(_) => unreachable!("local arrays are not atomic cells"),
        }
    }

    fn mem_read(&self, sg: usize, a: ArrayRef, i: usize, l: usize, order: MemOrd) -> u64 {
        match a {
            ArrayRef::Local(j) => {
                let len = self.sh.prog.kernel.local_arrays[j as usize].len as usize;
                self.sgs[sg].local_arrays[j as usize][l * len + i]
            }
            _ => self.cell(a, i).load(order),
        }
    }

    fn mem_write(&mut self, sg: usize, a: ArrayRef, i: usize, l: usize, bits: u64) {
        match a {
            ArrayRef::Local(j) => {
                let len = self.sh.prog.kernel.local_arrays[j as usize].len as usize;
                self.sgs[sg].local_arrays[j as usize][l * len + i] = bits;
            }
            _ => {
                if self.cell(a, i).swap(bits, MemOrd::SeqCst) != bits {
                    self.sh.progress.fetch_add(1, MemOrd::Relaxed);
                }
            }
        }
    }

    fn eval_err(&self, kind: &InstKind, loc: SrcLoc, e: EvalError) -> EmuError {
        match e {
            EvalError::DivisionByZero => self.err(Some(loc), EmuErrorKind::DivisionByZero { op: kind.mnemonic() }),
            EvalError::Unsupported => self.err(
                Some(loc),
                EmuErrorKind::BadArguments(format!("`{}` is not defined on these operand types", kind.mnemonic())),
            ),
        }
    }

    /// Executes one straight-line instruction for the lanes of `path`.
    fn exec(&mut self, kind: &InstKind, loc: SrcLoc, path: &Path) -> Result<(), EmuError> {
        use InstKind::*;
        let k = &self.sh.prog.kernel;
        let w = self.width;
        let sgi = path.sg;
        let mask = path.mask;
        // Poison propagation for lane-local ops: a lane's result is poisoned when any operand is.
        if self.sh.opts.strict {
            let uses = kind.uses();
            let mut p = 0u64;
            for u in &uses {
                p |= self.sgs[sgi].poison[u.0 as usize];
            }
            if let LocalGet { local, .. } = kind {
                p |= self.sgs[sgi].local_poison[local.0 as usize];
            }
            match kind {
                Store { value, .. } | Atomic { value, .. } if self.sgs[sgi].poison[value.0 as usize] & mask != 0 => {
                    return Err(self.err(Some(loc), EmuErrorKind::Poison { op: kind.mnemonic() }));
                }
                LocalSet { local, value } => {
                    let pv = self.sgs[sgi].poison[value.0 as usize] & mask;
                    let lp = &mut self.sgs[sgi].local_poison[local.0 as usize];
                    *lp = (*lp & !mask) | pv;
                }
                _ => {}
            }
            // A select's lane takes poison only from its condition and the operand it picks.
            if let Select { cond, a, b, .. } = kind {
                let sg = &self.sgs[sgi];
                let (pc, pa, pb) = (sg.poison[cond.0 as usize], sg.poison[a.0 as usize], sg.poison[b.0 as usize]);
                let mut chosen = 0u64;
                for l in lanes(mask) {
                    let picks_a = sg.regs[cond.0 as usize * w + l] & 1 != 0;
                    chosen |= (if picks_a { pa } else { pb }) & (1 << l);
                }
                p = pc | chosen;
            }
            if !kind.is_subgroup_collective() {
                for d in kind.defs() {
                    let slot = &mut self.sgs[sgi].poison[d.0 as usize];
                    *slot = (*slot & !mask) | (p & mask);
                }
            }
        }
        macro_rules! per_lane {
            ($dst:expr, |$l:ident| $body:expr) => {{
                let dst = $dst.0 as usize;
                for $l in lanes(mask) {
                    let r: u64 = $body;
                    self.sgs[sgi].regs[dst * w + $l] = r;
                }
            }};
        }
        match kind {
            Const { dst, value } => per_lane!(dst, |_l| value.bits),
            Unary { dst, op, a } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::unary(d, *op, self.reg(sgi, *a, l)).map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Binary { dst, op, a, b } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::binary(d, *op, self.reg(sgi, *a, l), self.reg(sgi, *b, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Cmp { dst, op, a, b } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::compare(d, *op, self.reg(sgi, *a, l), self.reg(sgi, *b, l)))
            }
            Select { dst, cond, a, b } => per_lane!(dst, |l| if self.reg(sgi, *cond, l) & 1 != 0 {
                self.reg(sgi, *a, l)
            } else {
                self.reg(sgi, *b, l)
            }),
            Cast { dst, a } => {
                let (from, to) = (k.dtype(*a), k.dtype(*dst));
                per_lane!(dst, |l| eval::cast(from, to, self.reg(sgi, *a, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            BitCast { dst, a } => per_lane!(dst, |l| self.reg(sgi, *a, l)),
            Fma { dst, a, b, c } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::fma(d, self.reg(sgi, *a, l), self.reg(sgi, *b, l), self.reg(sgi, *c, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Special { dst, reg } => {
                let geo = self.sh.geo;
                let block = self.block as u64;
                let (nsg, start) = (self.sgs.len() as u64, self.sh.start);
                per_lane!(dst, |l| special_value(*reg, l, sgi, w, block, geo, nsg, start))
            }
            ArrayLen { dst, array } => {
                let n = self.array_len(*array) as u64;
                per_lane!(dst, |_l| n)
            }
            LocalGet { dst, local } => {
                per_lane!(dst, |l| self.sgs[sgi].locals[local.0 as usize * w + l])
            }
            LocalSet { local, value } => {
                for l in lanes(mask) {
                    let v = self.reg(sgi, *value, l);
                    self.sgs[sgi].locals[local.0 as usize * w + l] = v;
                }
            }
            Load { dst, place, kind: lk } => {
                if *lk != LoadKind::Plain {
                    self.last_spin_op = Some((kind.mnemonic(), loc));
                }
                let order = match lk {
                    LoadKind::Plain | LoadKind::Volatile => MemOrd::Relaxed,
                    LoadKind::Ordered(Ordering::Relaxed, _) => MemOrd::Relaxed,
                    LoadKind::Ordered(..) => MemOrd::Acquire,
                };
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let v = self.mem_read(sgi, place.array, i, l, order);
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = v;
                }
            }
            Store { place, value, kind: sk } => {
                if matches!(sk, StoreKind::Ordered(o, _) if *o != Ordering::Relaxed) {
                    std::sync::atomic::fence(MemOrd::Release);
                }
                let m = width_mask(k.dtype(*value));
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let v = self.reg(sgi, *value, l) & m;
                    self.mem_write(sgi, place.array, i, l, v);
                }
            }
            Atomic { dst, place, op, value, .. } => {
                self.last_spin_op = Some((kind.mnemonic(), loc));
                let d = k.array_dtype(place.array);
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let y = self.reg(sgi, *value, l);
                    let old = self.rmw(sgi, place.array, i, l, |old| atomic_apply(d, *op, old, y));
                    if let Some(dst) = dst {
                        self.sgs[sgi].regs[dst.0 as usize * w + l] = old;
                    }
                }
            }
            Cas { dst, place, expected, desired, .. } => {
                self.last_spin_op = Some((kind.mnemonic(), loc));
                let m = width_mask(k.array_dtype(place.array));
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let (e, n) = (self.reg(sgi, *expected, l) & m, self.reg(sgi, *desired, l) & m);
                    let old = self.rmw(sgi, place.array, i, l, |old| if old == e { n } else { old });
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = old;
                }
            }
            Shuffle { .. } | Broadcast { .. } | Ballot { .. } | Vote { .. } | SubgroupBarrier => {
                let expected = full(w);
                if mask != expected || self.sgs[sgi].launched != expected {
                    return Err(self.partial(kind, loc, path, expected));
                }
                self.collective(kind, sgi);
            }
            Fence { .. } => std::sync::atomic::fence(MemOrd::SeqCst),
            Nv { op, dsts, args, place } => self.nv(kind, loc, path, op, dsts, args, place.as_ref())?,
            BlockBarrier { .. } | If { .. } | Loop { .. } | Break | Continue | Return | GridStride { .. } => {
                unreachable!("handled by the scheduler or rejected by program::compile")
            }
        }
        Ok(())
    }

    /// The NVIDIA families (D8): warp collectives need the whole subgroup; mbarrier ops are atomic
    /// updates of the barrier word, one lane after another.
    #[allow(clippy::too_many_arguments)]
    fn nv(
        &mut self,
        kind: &InstKind,
        loc: SrcLoc,
        path: &Path,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), EmuError> {
        let w = self.width;
        let sgi = path.sg;
        let k = &self.sh.prog.kernel;
        let set = |this: &mut Self, v: ValueId, l: usize, x: u64| this.sgs[sgi].regs[v.0 as usize * w + l] = x;
        if kind.is_subgroup_collective() {
            let expected = full(w);
            if path.mask != expected || self.sgs[sgi].launched != expected {
                return Err(self.partial(kind, loc, path, expected));
            }
            let vals: Vec<u64> = (0..w).map(|l| args.first().map(|a| self.reg(sgi, *a, l)).unwrap_or(0)).collect();
            match op {
                NvOp::MatchAny => {
                    for l in 0..w {
                        let m = (0..w).filter(|&j| vals[j] == vals[l]).fold(0u64, |m, j| m | 1 << j);
                        set(self, dsts[0], l, m);
                    }
                }
                NvOp::MatchAll => {
                    let all = vals.iter().all(|v| *v == vals[0]);
                    for l in 0..w {
                        set(self, dsts[0], l, if all { expected } else { 0 });
                        set(self, dsts[1], l, all as u64);
                    }
                }
                NvOp::Redux(r) => {
                    let d = k.dtype(args[0]);
                    let bin = match r {
                        ReduxOp::Add => BinOp::Add,
                        ReduxOp::Min => BinOp::Min,
                        ReduxOp::Max => BinOp::Max,
                        ReduxOp::And => BinOp::And,
                        ReduxOp::Or => BinOp::Or,
                        ReduxOp::Xor => BinOp::Xor,
                    };
                    let mut acc = vals[0];
                    for v in &vals[1..] {
                        acc = eval::binary(d, bin, acc, *v).map_err(|e| self.eval_err(kind, loc, e))?;
                    }
                    for l in 0..w {
                        set(self, dsts[0], l, acc);
                    }
                }
                NvOp::Elect => {
                    let leader = path.mask.trailing_zeros() as u64;
                    for l in 0..w {
                        set(self, dsts[0], l, leader);
                        set(self, dsts[1], l, (l as u64 == leader) as u64);
                    }
                }
                _ => unreachable!("only warp collectives are subgroup collectives"),
            }
            for d in dsts {
                self.sgs[sgi].poison[d.0 as usize] = 0;
            }
            return Ok(());
        }
        if let NvOp::ProxyFence(_) = op {
            std::sync::atomic::fence(MemOrd::SeqCst);
            return Ok(());
        }
        let place = place.expect("mbarrier ops carry their barrier");
        for l in lanes(path.mask) {
            let i = self.index(kind, loc, sgi, place, l)?;
            let arg = args.first().map(|a| self.reg(sgi, *a, l)).unwrap_or(0);
            let result = match op {
                NvOp::MbarrierInit => {
                    self.mem_write(sgi, place.array, i, l, mbar::init(arg));
                    None
                }
                NvOp::MbarrierInval => {
                    self.mem_write(sgi, place.array, i, l, 0);
                    None
                }
                NvOp::MbarrierArrive => Some(self.rmw(sgi, place.array, i, l, |s| mbar::arrive(s, 1, true))),
                NvOp::MbarrierArriveNoComplete => {
                    Some(self.rmw(sgi, place.array, i, l, |s| mbar::arrive(s, arg, false)))
                }
                NvOp::MbarrierArriveExpectTx => {
                    Some(self.rmw(sgi, place.array, i, l, |s| mbar::arrive(mbar::add_tx(s, arg as i64), 1, true)))
                }
                NvOp::MbarrierExpectTx => {
                    self.rmw(sgi, place.array, i, l, |s| mbar::add_tx(s, arg as i64));
                    None
                }
                NvOp::MbarrierCompleteTx => {
                    self.rmw(sgi, place.array, i, l, |s| mbar::complete(mbar::add_tx(s, -(arg as i64))));
                    None
                }
                NvOp::MbarrierTestWait | NvOp::MbarrierTryWaitParity => {
                    self.last_spin_op = Some((kind.mnemonic(), loc));
                    let state = self.mem_read(sgi, place.array, i, l, MemOrd::Acquire);
                    let waited_phase = if *op == NvOp::MbarrierTestWait { mbar::phase(arg) } else { arg & 1 };
                    Some((mbar::phase(state) != waited_phase) as u64)
                }
                _ => unreachable!("collectives handled above"),
            };
            if let (Some(r), Some(d)) = (result, dsts.first()) {
                set(self, *d, l, r);
            }
        }
        Ok(())
    }

    /// Atomic read-modify-write of one element; returns the old value.
    fn rmw(&mut self, sg: usize, a: ArrayRef, i: usize, l: usize, f: impl Fn(u64) -> u64) -> u64 {
        if let ArrayRef::Local(_) = a {
            let old = self.mem_read(sg, a, i, l, MemOrd::Relaxed);
            self.mem_write(sg, a, i, l, f(old));
            return old;
        }
        let cell = self.cell(a, i);
        let mut old = cell.load(MemOrd::SeqCst);
        loop {
            let new = f(old);
            match cell.compare_exchange_weak(old, new, MemOrd::SeqCst, MemOrd::SeqCst) {
                Ok(_) => {
                    if new != old {
                        self.sh.progress.fetch_add(1, MemOrd::Relaxed);
                    }
                    return old;
                }
                Err(cur) => old = cur,
            }
        }
    }

    /// Cross-lane ops; the whole subgroup is active (checked by the caller).
    fn collective(&mut self, kind: &InstKind, sgi: usize) {
        use InstKind::*;
        let w = self.width;
        let strict = self.sh.opts.strict;
        let sg = &mut self.sgs[sgi];
        let read = |sg: &Subgroup, v: ValueId, l: usize| sg.regs[v.0 as usize * w + l];
        match kind {
            Shuffle { dst, valid, kind: sk, value, lane } => {
                let mut out = vec![0u64; w];
                let mut ok = vec![true; w];
                let mut poison = 0u64;
                let vp = sg.poison[value.0 as usize];
                for l in 0..w {
                    let arg = read(sg, *lane, l) as u32 as i64;
                    let src = match sk {
                        ShuffleKind::Idx => arg,
                        ShuffleKind::Up => l as i64 - arg,
                        ShuffleKind::Down => l as i64 + arg,
                        ShuffleKind::Xor => (l as i64) ^ arg,
                    };
                    if (0..w as i64).contains(&src) {
                        out[l] = read(sg, *value, src as usize);
                        poison |= ((vp >> src) & 1) << l;
                    } else {
                        // Implementation-defined: CUDA gives the lane's own value (D8).
                        out[l] = read(sg, *value, l);
                        ok[l] = false;
                        if strict {
                            poison |= 1 << l;
                        }
                    }
                }
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = out[l];
                    if let Some(p) = valid {
                        sg.regs[p.0 as usize * w + l] = ok[l] as u64;
                    }
                }
                sg.poison[dst.0 as usize] = poison;
            }
            Broadcast { dst, value, lane } => {
                let out: Vec<u64> = (0..w)
                    .map(|l| {
                        let src = read(sg, *lane, l) as u32 as usize;
                        read(sg, *value, if src < w { src } else { l })
                    })
                    .collect();
                for (l, v) in out.into_iter().enumerate() {
                    sg.regs[dst.0 as usize * w + l] = v;
                }
                sg.poison[dst.0 as usize] = 0;
            }
            Ballot { dst, pred } => {
                let mut m = 0u64;
                for l in 0..w {
                    m |= (read(sg, *pred, l) & 1) << l;
                }
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = m;
                }
                sg.poison[dst.0 as usize] = 0;
            }
            Vote { dst, kind: vk, pred } => {
                let count = (0..w).filter(|&l| read(sg, *pred, l) & 1 != 0).count();
                let r = match vk {
                    VoteKind::All => count == w,
                    VoteKind::Any => count > 0,
                    VoteKind::Uni => count == 0 || count == w,
                } as u64;
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = r;
                }
                sg.poison[dst.0 as usize] = 0;
            }
            SubgroupBarrier => {}
            _ => unreachable!(),
        }
    }
}

/// The new value of an atomic `op` (D5 arithmetic; float min/max are minNum/maxNum).
fn atomic_apply(d: DType, op: AtomicOp, old: u64, y: u64) -> u64 {
    let bin = |b: BinOp| eval::binary(d, b, old, y).unwrap_or(old);
    match op {
        AtomicOp::Add => bin(BinOp::Add),
        AtomicOp::Mul => bin(BinOp::Mul),
        AtomicOp::Min => bin(BinOp::Min),
        AtomicOp::Max => bin(BinOp::Max),
        AtomicOp::And => bin(BinOp::And),
        AtomicOp::Or => bin(BinOp::Or),
        AtomicOp::Xor => bin(BinOp::Xor),
        AtomicOp::Exchange => y & width_mask(d),
    }
}

/// Value of a special register for lane `l` of subgroup `sg`.
#[allow(clippy::too_many_arguments)]
fn special_value(
    reg: Special,
    l: usize,
    sg: usize,
    w: usize,
    block: u64,
    geo: LaunchGeometry,
    nsg: u64,
    start: Instant,
) -> u64 {
    let tid = (sg * w + l) as u64;
    let lane_bit = 1u64 << l;
    let below = lane_bit - 1;
    let lanes = full(w);
    match reg {
        Special::LaneId => l as u64,
        Special::SubgroupSize => w as u64,
        Special::ThreadIdx => tid,
        Special::BlockIdx => block,
        Special::BlockDim => geo.block_dim as u64,
        Special::GridDim => geo.grid as u64,
        Special::GlobalThreadIdx => (block * geo.block_dim as u64 + tid) & 0xFFFF_FFFF,
        Special::Nv(s) => match s {
            NvSreg::Tid(0) => tid,
            NvSreg::Ntid(0) => geo.block_dim as u64,
            NvSreg::Ctaid(0) | NvSreg::ClusterId(0) => block,
            NvSreg::Nctaid(0) | NvSreg::NClusterId(0) => geo.grid as u64,
            NvSreg::Tid(_) | NvSreg::Ctaid(_) | NvSreg::ClusterId(_) | NvSreg::ClusterCtaid(_) => 0,
            NvSreg::Ntid(_) | NvSreg::Nctaid(_) | NvSreg::NClusterId(_) | NvSreg::ClusterNctaid(_) => 1,
            NvSreg::ClusterCtarank | NvSreg::Smid | NvSreg::Gridid | NvSreg::EnvReg(_) => 0,
            NvSreg::DynamicSmemSize => 0,
            NvSreg::ClusterNctarank | NvSreg::Nsmid => 1,
            NvSreg::Warpid => sg as u64,
            NvSreg::Nwarpid => nsg,
            NvSreg::Laneid => l as u64,
            NvSreg::Warpsize => w as u64,
            NvSreg::LanemaskEq => lane_bit,
            NvSreg::LanemaskLt => below,
            NvSreg::LanemaskLe => below | lane_bit,
            NvSreg::LanemaskGt => lanes & !(below | lane_bit),
            NvSreg::LanemaskGe => lanes & !below,
            NvSreg::Clock => start.elapsed().as_nanos() as u64 & 0xFFFF_FFFF,
            NvSreg::Clock64 | NvSreg::GlobalTimer => start.elapsed().as_nanos() as u64,
        },
    }
}

/// The emulator's mbarrier word: pending arrivals (bits 0..20), expected arrivals (20..40),
/// outstanding transaction bytes as a signed 22-bit field (40..62), phase parity (bit 63).
mod mbar {
    const FIELD: u64 = (1 << 20) - 1;
    const TX: u64 = (1 << 22) - 1;

    pub fn init(count: u64) -> u64 {
        (count & FIELD) | ((count & FIELD) << 20)
    }

    pub fn phase(state: u64) -> u64 {
        state >> 63
    }

    fn tx(state: u64) -> i64 {
        (((state >> 40) & TX) << 42) as i64 >> 42
    }

    pub fn add_tx(state: u64, delta: i64) -> u64 {
        let t = (tx(state) + delta) as u64 & TX;
        (state & !(TX << 40)) | (t << 40)
    }

    /// Completes the phase when nothing is pending: flip the parity, re-arm the arrivals.
    pub fn complete(state: u64) -> u64 {
        let pending = state & FIELD;
        if pending == 0 && tx(state) == 0 {
            let expected = (state >> 20) & FIELD;
            (state & !FIELD & !(1 << 63)) | expected | ((phase(state) ^ 1) << 63)
        } else {
            state
        }
    }

    pub fn arrive(state: u64, count: u64, may_complete: bool) -> u64 {
        let pending = (state & FIELD).wrapping_sub(count) & FIELD;
        let s = (state & !FIELD) | pending;
        if may_complete {
            complete(s)
        } else {
            s
        }
    }
}
