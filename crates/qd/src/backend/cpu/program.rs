//! Lowering for the emulator: structured IR to a flat program with explicit join points.

use crate::ir::{Inst, InstKind, Kernel, SrcLoc, ValueId};
use crate::trace::TraceError;

/// One step of a flat program (fields are pcs and value ids).
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum Step {
    /// A straight-line instruction (index into [`Program::insts`]).
    Inst(usize),
    /// Split on `cond`: the then-branch starts at the next step, the else-branch at `else_pc`;
    /// both meet at the `EndIf` at `join_pc`.
    If { cond: ValueId, else_pc: usize, join_pc: usize },
    /// End of a then-branch.
    Jump(usize),
    /// Join point of an `If`.
    EndIf,
    /// Loop entry: the body starts at the next step, the loop is left to `exit_pc`.
    LoopBegin { exit_pc: usize },
    /// Loop latch (back-edge to the step after `LoopBegin` at `begin_pc`).
    LoopEnd { begin_pc: usize },
    /// Leave the innermost loop.
    Break,
    /// Next iteration of the innermost loop.
    Continue,
    /// The thread ends.
    Return,
    /// Grid-stride loop start: `index = min(begin + global_thread_idx, end)`, summed in 64 bits.
    GridInit { begin: ValueId, end: ValueId, index: ValueId },
    /// Lanes with `index >= end` leave the enclosing (grid-stride) loop.
    GridCheck { end: ValueId, index: ValueId },
    /// `index = min(index + block_dim * grid_dim, end)`, summed in 64 bits: the clamp keeps the
    /// 32-bit index from wrapping past `i32::MAX` back into the range.
    GridStep { end: ValueId, index: ValueId },
    /// End of the kernel.
    End,
}

/// A kernel lowered for the emulator.
#[derive(Clone, Debug)]
pub struct Program {
    /// The kernel.
    pub kernel: Kernel,
    /// Straight-line instructions referenced by [`Step::Inst`].
    pub insts: Vec<Inst>,
    /// The steps.
    pub steps: Vec<Step>,
    /// Source location of each step (for messages).
    pub locs: Vec<SrcLoc>,
}

/// Lowers a verified kernel; rejects what the emulator cannot run, naming the op.
pub fn compile(kernel: &Kernel) -> Result<Program, TraceError> {
    let mut kernel = kernel.clone();
    crate::ir::passes::optimize(&mut kernel);
    let kernel = &kernel;
    let mut p = Program { kernel: kernel.clone(), insts: Vec::new(), steps: Vec::new(), locs: Vec::new() };
    let end_loc = kernel.body.insts.last().map(|i| i.loc).unwrap_or(SrcLoc { file: "<kernel>", line: 0, column: 0 });
    lower_block(&mut p, &kernel.body.insts)?;
    p.push(Step::End, end_loc);
    Ok(p)
}

impl Program {
    fn push(&mut self, s: Step, loc: SrcLoc) -> usize {
        self.steps.push(s);
        self.locs.push(loc);
        self.steps.len() - 1
    }
}

fn unsupported(k: &Kernel, op: String, loc: SrcLoc, why: &str) -> TraceError {
    TraceError {
        kernel: k.name.clone(),
        op,
        loc,
        message: format!("not supported on the cpu backend: {why}"),
        unsupported: None,
    }
}

fn lower_block(p: &mut Program, insts: &[crate::ir::Inst]) -> Result<(), TraceError> {
    for inst in insts {
        let loc = inst.loc;
        match &inst.kind {
            InstKind::If { cond, then_block, else_block } => {
                let if_pc = p.push(Step::If { cond: *cond, else_pc: 0, join_pc: 0 }, loc);
                lower_block(p, &then_block.insts)?;
                let jump_pc = p.push(Step::Jump(0), loc);
                let else_pc = p.steps.len();
                lower_block(p, &else_block.insts)?;
                let join_pc = p.push(Step::EndIf, loc);
                p.steps[if_pc] = Step::If { cond: *cond, else_pc, join_pc };
                p.steps[jump_pc] = Step::Jump(join_pc);
            }
            InstKind::Loop { body } => {
                let begin = p.push(Step::LoopBegin { exit_pc: 0 }, loc);
                lower_block(p, &body.insts)?;
                p.push(Step::LoopEnd { begin_pc: begin }, loc);
                let exit_pc = p.steps.len();
                p.steps[begin] = Step::LoopBegin { exit_pc };
            }
            InstKind::GridStride { begin, end, index, body } => {
                p.push(Step::GridInit { begin: *begin, end: *end, index: *index }, loc);
                let lb = p.push(Step::LoopBegin { exit_pc: 0 }, loc);
                p.push(Step::GridCheck { end: *end, index: *index }, loc);
                lower_block(p, &body.insts)?;
                p.push(Step::GridStep { end: *end, index: *index }, loc);
                p.push(Step::LoopEnd { begin_pc: lb }, loc);
                let exit_pc = p.steps.len();
                p.steps[lb] = Step::LoopBegin { exit_pc };
            }
            InstKind::Break => {
                p.push(Step::Break, loc);
            }
            InstKind::Continue => {
                p.push(Step::Continue, loc);
            }
            InstKind::Return => {
                p.push(Step::Return, loc);
            }
            other => {
                check_supported(&p.kernel, inst)?;
                p.insts.push(Inst { kind: other.clone(), loc, op: inst.op });
                let i = p.insts.len() - 1;
                p.push(Step::Inst(i), loc);
            }
        }
    }
    Ok(())
}

fn check_supported(k: &Kernel, inst: &Inst) -> Result<(), TraceError> {
    let (kind, loc) = (&inst.kind, inst.loc);
    let wide = kind.defs().into_iter().chain(kind.uses()).any(|v| k.dtype(v).is_packed() || k.dtype(v).bits() > 64);
    if wide {
        return Err(unsupported(k, inst.op_name(), loc, "packed f16x2/bf16x2 and b128 values"));
    }
    // Wearing a CUDA target (`cpu@cuda:sm_90`) admits the NVIDIA families the emulator leaves to CUDA.
    if let InstKind::Nv { op, .. } = kind {
        if let Some(why) = super::caps::cuda_only(crate::ir::nv_feature(op)) {
            return Err(unsupported(k, inst.op_name(), loc, why));
        }
    }
    Ok(())
}
