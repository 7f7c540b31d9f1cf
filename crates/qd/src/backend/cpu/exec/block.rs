//! A block's scheduler: its subgroups' paths run round-robin on one OS thread, yielding at loop
//! back-edges and block barriers; the progress watch reports hangs and the time limit.

use super::weak::View;
use super::{
    full, lanes, width_mask, BlockExec, CpuArg, EmuError, EmuErrorKind, Event, Frame, Path, Shared, Subgroup, Watch,
};
use crate::backend::cpu::memory::Buffer;
use crate::backend::cpu::program::Step;
use crate::ir::*;
use std::sync::atomic::Ordering as MemOrd;
use std::time::Instant;

impl<'a, 'b> BlockExec<'a, 'b> {
    pub(super) fn new(sh: &'b Shared<'a>, block: u32) -> Self {
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
            at_barrier: Vec::new(),
            ticks: 0,
            last_spin_op: None,
            current_op: None,
            last_loop: None,
            weak: sh.weak.as_ref().map(|_| View::default()),
        }
    }

    /// Runs the block to its end.
    pub(super) fn run(mut self, watch: &mut Watch) -> Result<(), EmuError> {
        while !self.step(watch)? {}
        Ok(())
    }

    /// Runs one path until it yields (a loop back-edge, a barrier, its end), or releases the block
    /// barrier every live path waits at; returns `true` once the block has finished. The weak-memory
    /// scheduler interleaves several blocks on one thread one step at a time.
    pub(super) fn step(&mut self, watch: &mut Watch) -> Result<bool, EmuError> {
        if let Some(path) = self.queue.pop_front() {
            match self.run_path(path)? {
                Event::Yield(p) => {
                    self.last_loop = self.innermost_loop(&p);
                    self.queue.push_back(p)
                }
                Event::Gone => {}
                Event::Barrier(p) => self.at_barrier.push(p),
            }
            self.ticks = self.ticks.wrapping_add(1);
            if self.ticks.is_multiple_of(64) {
                self.check_progress(watch)?;
            }
            return Ok(false);
        }
        if !self.at_barrier.is_empty() {
            let mut at = std::mem::take(&mut self.at_barrier);
            self.release_barrier(&mut at)?;
            return Ok(false);
        }
        let waiting = self.frames.iter().filter(|f| !matches!(f, Frame::Free)).count();
        if waiting > 0 {
            return Err(self.err(
                None,
                EmuErrorKind::Deadlock { block: self.block, detail: format!("{waiting} join points never completed") },
            ));
        }
        Ok(true)
    }

    fn check_progress(&mut self, watch: &mut Watch) -> Result<(), EmuError> {
        if self.sh.abort.load(MemOrd::Relaxed) {
            // Another block failed; its error is the one reported.
            return Err(self.err(None, EmuErrorKind::TimeLimit { seconds: 0.0, running: String::new() }));
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
            let (running, loc) = self.running();
            let seconds = self.sh.opts.time_limit.as_secs_f64();
            return Err(self.err(loc, EmuErrorKind::TimeLimit { seconds, running }));
        }
        Ok(())
    }

    /// The `LoopBegin` step of `path`'s innermost loop.
    fn innermost_loop(&self, path: &Path) -> Option<usize> {
        path.frames.iter().rev().find_map(|&f| match self.frames[f] {
            Frame::Loop { begin_pc, .. } => Some(begin_pc),
            _ => None,
        })
    }

    /// What the block was running when the time limit passed, for the error: the loop that last
    /// went round (the library op it belongs to, the user's line) and the block.
    fn running(&self) -> (String, Option<SrcLoc>) {
        let prog = self.sh.prog;
        let Some(begin) = self.last_loop else {
            return (format!("block {}", self.block), None);
        };
        let loc = prog.locs[begin];
        let exit = match prog.steps[begin] {
            Step::LoopBegin { exit_pc } => exit_pc,
            _ => begin + 1,
        };
        // A loop a library op wrote carries that op on the instructions at its line.
        let op = prog.steps[begin..exit].iter().find_map(|s| match s {
            Step::Inst(i) if prog.insts[*i].loc == loc => prog.insts[*i].op,
            _ => None,
        });
        let what = match (op, prog.steps.get(begin + 1)) {
            (Some(op), _) => format!("the loop of `{op}`"),
            (None, Some(Step::GridCheck { .. })) => "the `parallel_for` loop".to_string(),
            (None, _) => "the loop".to_string(),
        };
        (format!("{what} at {loc} in block {}", self.block), Some(loc))
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
        if let InstKind::BlockBarrier { reduce: Some((red, pred, dst)) } = &prog.insts[i].kind {
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
}
