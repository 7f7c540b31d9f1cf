//! The lockstep interpreter of a path's control steps: a divergent `if` splits a path and its join
//! frame merges the halves; a loop frame gathers the lanes at the latch and those that left
//! (break/return); the grid-stride steps; `return` retires lanes from every enclosing frame.

use super::{lanes, BlockExec, EmuError, Event, Frame, Path};
use crate::backend::cpu::program::Step;

impl<'a, 'b> BlockExec<'a, 'b> {
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

    pub(super) fn run_path(&mut self, mut path: Path) -> Result<Event, EmuError> {
        let prog = self.sh.prog;
        loop {
            match &prog.steps[path.pc] {
                Step::Inst(i) => {
                    let crate::ir::Inst { kind, loc, op } = &prog.insts[*i];
                    self.current_op = *op;
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
                Step::GridInit { begin, end, index } => {
                    let w = self.width;
                    let bd = self.sh.geo.block_dim as i64;
                    let sg = &mut self.sgs[path.sg];
                    for l in lanes(path.mask) {
                        let gid = self.block as i64 * bd + (path.sg * w + l) as i64;
                        let b = sg.regs[begin.0 as usize * w + l] as u32 as i32 as i64;
                        let e = sg.regs[end.0 as usize * w + l] as u32 as i32 as i64;
                        sg.regs[index.0 as usize * w + l] = clamp_index(b + gid, e);
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
                Step::GridStep { end, index } => {
                    let w = self.width;
                    let stride = self.sh.geo.block_dim as i64 * self.sh.geo.grid as i64;
                    let sg = &mut self.sgs[path.sg];
                    for l in lanes(path.mask) {
                        let i = sg.regs[index.0 as usize * w + l] as u32 as i32 as i64;
                        let e = sg.regs[end.0 as usize * w + l] as u32 as i32 as i64;
                        sg.regs[index.0 as usize * w + l] = clamp_index(i + stride, e);
                    }
                    path.pc += 1;
                }
            }
        }
    }
}

/// The register bits of a grid-stride index `i` (summed in 64 bits) clamped to `end`: any `i` at or
/// past `end` fails the loop check, and the clamp keeps it an exact `i32` that never wraps.
fn clamp_index(i: i64, end: i64) -> u64 {
    i.min(end) as i32 as u32 as u64
}
