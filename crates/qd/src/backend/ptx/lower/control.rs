//! Structured control flow: `if`, loops, `break`/`continue` and the grid-stride loop become labels
//! and branches, with `bra.uni` where the uniformity analysis (D3) proves an `if` does not diverge
//! within a warp.

use super::{Class, Lower};
use crate::ir::uniformity::Uniformity;
use crate::ir::*;
use crate::trace::TraceError;
use std::fmt::Write;

impl Lower<'_> {
    /// `if`/`else`: a branch to the else label, `bra.uni` where the condition joined with the
    /// enclosing control is uniform within a warp (D3).
    pub(super) fn if_else(
        &mut self,
        cond: ValueId,
        then_block: &Block,
        else_block: &Block,
        ctl: Uniformity,
    ) -> Result<(), TraceError> {
        let c = self.r(cond);
        let uni = if self.uni.values[cond.0 as usize].join(ctl) <= Uniformity::Subgroup { ".uni" } else { "" };
        let else_l = self.label("else");
        let end_l = self.label("endif");
        self.line(format!("@!{c} bra{uni} {else_l};"));
        self.block(&then_block.insts)?;
        if !else_block.insts.is_empty() {
            self.line(format!("bra.uni {end_l};"));
        }
        let _ = writeln!(self.body, "{else_l}:");
        self.block(&else_block.insts)?;
        let _ = writeln!(self.body, "{end_l}:");
        Ok(())
    }

    /// A loop: a head label, the body, the back-edge; `break` leaves to the exit label.
    pub(super) fn loop_block(&mut self, body: &Block) -> Result<(), TraceError> {
        let head = self.label("loop");
        let exit = self.label("exit");
        let _ = writeln!(self.body, "{head}:");
        self.loops.push((head.clone(), exit.clone()));
        self.block(&body.insts)?;
        self.loops.pop();
        self.line(format!("bra {head};"));
        let _ = writeln!(self.body, "{exit}:");
        Ok(())
    }

    /// `break`: to the exit of the innermost loop.
    pub(super) fn break_loop(&mut self) {
        let exit = self.loops.last().map(|l| l.1.clone()).unwrap_or_default();
        self.line(format!("bra {exit};"));
    }

    /// `continue`: to the head of the innermost loop (the stride step of a grid-stride loop).
    pub(super) fn continue_loop(&mut self) {
        let head = self.loops.last().map(|l| l.0.clone()).unwrap_or_default();
        self.line(format!("bra {head};"));
    }

    /// The grid-stride loop: `index` starts at the thread's global id plus `begin` and steps by the
    /// grid's thread count while it is below `end`.
    pub(super) fn grid_stride(
        &mut self,
        inst: &Inst,
        begin: ValueId,
        end: ValueId,
        index: ValueId,
        body: &Block,
    ) -> Result<(), TraceError> {
        let (b, e, i) = (self.r(begin), self.r(end), self.r(index));
        let (tid, ntid, ctaid, nctaid) =
            (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
        for (r, sreg) in
            [(&tid, NvSreg::Tid(0)), (&ntid, NvSreg::Ntid(0)), (&ctaid, NvSreg::Ctaid(0)), (&nctaid, NvSreg::Nctaid(0))]
        {
            self.print(inst, |p| p.sreg_read(r, sreg))?;
        }
        // The index runs in 64 bits, so an `end` near i32::MAX cannot wrap it back into the range;
        // the body sees it narrowed, where it is always below `end`.
        let [wide, wend, wgid, stride] = [(); 4].map(|_| self.fresh(Class::B64));
        let gid = self.fresh(Class::B32);
        self.line(format!("mad.lo.u32 {gid}, {ctaid}, {ntid}, {tid};"));
        self.line(format!("cvt.s64.s32 {wide}, {b};"));
        self.line(format!("cvt.s64.s32 {wend}, {e};"));
        self.line(format!("cvt.u64.u32 {wgid}, {gid};"));
        self.line(format!("add.s64 {wide}, {wide}, {wgid};"));
        self.line(format!("mul.wide.u32 {stride}, {ntid}, {nctaid};"));
        let head = self.label("grid");
        let exit = self.label("grid_exit");
        let _ = writeln!(self.body, "{head}:");
        let p = self.fresh(Class::Pred);
        self.line(format!("setp.ge.s64 {p}, {wide}, {wend};"));
        self.line(format!("@{p} bra {exit};"));
        self.line(format!("cvt.u32.u64 {i}, {wide};"));
        // `continue` inside the body goes to the stride step.
        let step = self.label("grid_step");
        self.loops.push((step.clone(), exit.clone()));
        self.block(&body.insts)?;
        self.loops.pop();
        let _ = writeln!(self.body, "{step}:");
        self.line(format!("add.s64 {wide}, {wide}, {stride};"));
        self.line(format!("bra {head};"));
        let _ = writeln!(self.body, "{exit}:");
        Ok(())
    }
}
