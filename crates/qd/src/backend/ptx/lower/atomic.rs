//! Read-modify-writes and compare-and-swap (D6, D7): native `atom`/`red` through the printer,
//! word-sized loops for 8- and 16-bit elements, and plain read-modify-writes on per-thread memory.
//! Element-wide CAS loops are not written here: `target::legalize_atomics` rewrites them into the
//! IR before lowering.

use super::{bits, class, Class, Lower};
use crate::backend::ptx::errors::PtxError;
use crate::backend::ptx::modifier::{AtomicModifier, AtomicOrder};
use crate::ir::*;
use crate::trace::TraceError;
use std::fmt::Write;

impl Lower<'_> {
    /// 128-bit atomics would need `.b128` registers, which this lowering does not allocate.
    fn refuse_b128(&self, inst: &Inst, t: DType) -> Result<(), TraceError> {
        if t == DType::B128 {
            return Err(self.err(inst, "128-bit atomics are not lowered to PTX yet (no .b128 registers)"));
        }
        Ok(())
    }

    /// A read-modify-write (D6, D7): `AtomicModifier::from_ir` builds the record; where the
    /// target has the native form, the printer's `atomic_rmw` prints it (`red` when the result is
    /// unused and `red` takes it, `fence.sc` + `.acquire` for seq_cst). An 8- or 16-bit element
    /// with no `atom.cas` that narrow is a loop on its 32-bit word. Every other form `atom` lacks
    /// was rewritten into an element-wide CAS loop before lowering (`target::legalize_atomics`,
    /// driven by `ptx::caps::support`); one that still reaches here lacks this ordering or scope,
    /// and the printer says why.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        op: AtomicOp,
        value: ValueId,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let t = self.k.array_dtype(place.array);
        self.refuse_b128(inst, t)?;
        let space = self.k.array_space(place.array);
        let dst = dst.filter(|d| self.used.contains(d));
        let rmw = Rmw::Op(op, self.r(value));
        if space == AddressSpace::Local {
            return self.local_rmw(inst, dst, place, t, &rmw);
        }
        match AtomicModifier::from_ir(op, t, ordering, scope, space) {
            Ok(m) if self.p.atom_supported(&m) => {
                let (addr, _) = self.address(place);
                let (d, v) = (dst.map(|d| self.r(d)), self.r(value));
                self.print(inst, |p| p.atomic_rmw(&m, d.as_deref(), &format!("[{addr}]"), &[&v]))
            }
            Ok(_) | Err(PtxError::NeedsCasLoop { .. }) if self.needs_word_loop(t, ordering, scope, space) => {
                self.subword_loop(inst, dst, place, t, &rmw, ordering, scope)
            }
            Ok(m) => {
                let (addr, _) = self.address(place);
                let (d, v) = (dst.map(|d| self.r(d)), self.r(value));
                self.print(inst, |p| p.atomic_rmw(&m, d.as_deref(), &format!("[{addr}]"), &[&v]))
            }
            Err(e) => Err(self.ptx_err(inst, e)),
        }
    }

    /// An element below 32 bits that this target cannot compare-and-swap at its own width.
    fn needs_word_loop(&self, t: DType, ordering: Ordering, scope: Scope, space: AddressSpace) -> bool {
        t.bits() < 32
            && !AtomicModifier::cas_from_ir(t, ordering, scope, space).is_ok_and(|m| self.p.atom_supported(&m))
    }

    /// Compare and swap: one `atom.cas` (`cas_from_ir`; seq_cst as `fence.sc` + `.acquire`), or a
    /// loop on the enclosing 32-bit word for 8-bit types (and 16-bit ones below sm_70).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cas(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        place: &Place,
        expected: ValueId,
        desired: ValueId,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let t = self.k.array_dtype(place.array);
        self.refuse_b128(inst, t)?;
        let space = self.k.array_space(place.array);
        let rmw = Rmw::Cas { expected: self.r(expected), desired: self.r(desired) };
        if space == AddressSpace::Local {
            return self.local_rmw(inst, Some(dst), place, t, &rmw);
        }
        match AtomicModifier::cas_from_ir(t, ordering, scope, space) {
            Ok(m) if self.p.atom_supported(&m) || t.bits() >= 32 => {
                // Unsupported at 32/64 bits (e.g. cluster scope before sm_90): the printer says why.
                let (addr, _) = self.address(place);
                let (d, e, n) = (self.r(dst), self.r(expected), self.r(desired));
                self.print(inst, |p| p.atomic_rmw(&m, Some(&d), &format!("[{addr}]"), &[&e, &n]))
            }
            _ if t.bits() < 32 => self.subword_loop(inst, Some(dst), place, t, &rmw, ordering, scope),
            Ok(_) => unreachable!("handled above"),
            Err(e) => Err(self.ptx_err(inst, e)),
        }
    }

    /// Per-thread memory is private: a plain load, the operation, a plain store.
    fn local_rmw(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        t: DType,
        rmw: &Rmw,
    ) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(class(t)),
        };
        let new = self.fresh(class(t));
        self.ld_plain(false, space, t, &old, &addr);
        self.rmw_compute(inst, rmw, t, &new, &old)?;
        self.st_plain(false, space, t, &addr, &new);
        Ok(())
    }

    /// D6's seq_cst read-modify-write is `fence.sc` and then an acquire `atom`; in a CAS loop the
    /// fence is printed once, before the loop, and each `atom.cas` acquires.
    fn seq_cst_fence_first(&mut self, inst: &Inst, m: AtomicModifier) -> Result<AtomicModifier, TraceError> {
        if m.order != Some(AtomicOrder::SeqCst) {
            return Ok(m);
        }
        let scope = m.scope;
        self.print(inst, |p| p.fence(AtomicOrder::SeqCst, scope))?;
        Ok(AtomicModifier { order: Some(AtomicOrder::Acquire), ..m })
    }

    /// An 8- or 16-bit read-modify-write with no CAS that narrow: `atom.cas.b32` on the aligned
    /// word holding the element, the element shifted out of and back into it.
    #[allow(clippy::too_many_arguments)]
    fn subword_loop(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        t: DType,
        rmw: &Rmw,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let space = self.k.array_space(place.array);
        let m = AtomicModifier::cas_from_ir(DType::U32, ordering, scope, space).map_err(|e| self.ptx_err(inst, e))?;
        let (addr, space) = self.address(place);
        let m = self.seq_cst_fence_first(inst, m)?;
        let width_mask = if t.bits() == 8 { "0xFF" } else { "0xFFFF" };
        let (word, sh, mask) = (self.fresh(Class::B64), self.fresh(Class::B32), self.fresh(Class::B32));
        self.line(format!("and.b64 {word}, {addr}, 0xFFFFFFFFFFFFFFFC;"));
        self.line(format!("cvt.u32.u64 {sh}, {addr};"));
        self.line(format!("and.b32 {sh}, {sh}, 3;"));
        self.line(format!("shl.b32 {sh}, {sh}, 3;"));
        self.line(format!("shl.b32 {mask}, {width_mask}, {sh};"));
        self.line(format!("not.b32 {mask}, {mask};"));
        let c = class(t);
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(c),
        };
        let new = self.fresh(c);
        let (w, tmp, nw, seen) =
            (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
        let word_addr = format!("[{word}]");
        self.line(format!("ld.{}.b32 {w}, {word_addr};", space.name()));
        let head = self.label("cas");
        let _ = writeln!(self.body, "{head}:");
        self.line(format!("shr.b32 {tmp}, {w}, {sh};"));
        if t == DType::Bool {
            self.line(format!("and.b32 {tmp}, {tmp}, 0xFF;"));
            self.line(format!("setp.ne.u32 {old}, {tmp}, 0;"));
        } else {
            self.line(format!("cvt.u16.u32 {old}, {tmp};"));
            self.wrap_narrow(t, &old);
        }
        self.rmw_compute(inst, rmw, t, &new, &old)?;
        if t == DType::Bool {
            self.line(format!("selp.u32 {nw}, 1, 0, {new};"));
        } else {
            self.line(format!("cvt.u32.u16 {nw}, {new};"));
            self.line(format!("and.b32 {nw}, {nw}, {width_mask};"));
        }
        self.line(format!("shl.b32 {nw}, {nw}, {sh};"));
        self.line(format!("and.b32 {tmp}, {w}, {mask};"));
        self.line(format!("or.b32 {nw}, {nw}, {tmp};"));
        self.print(inst, |p| p.atom(&m, &seen, &word_addr, &[&w, &nw]))?;
        let p = self.fresh(Class::Pred);
        self.line(format!("setp.ne.b32 {p}, {seen}, {w};"));
        self.line(format!("mov.b32 {w}, {seen};"));
        self.line(format!("@{p} bra {head};"));
        Ok(())
    }

    /// `new = old <op> value` (or the CAS choice) on registers of type `t`.
    fn rmw_compute(&mut self, inst: &Inst, rmw: &Rmw, t: DType, new: &str, old: &str) -> Result<(), TraceError> {
        let op = match rmw {
            Rmw::Op(AtomicOp::Exchange, v) => {
                self.line(format!("mov.{} {new}, {v};", bits(class(t))));
                return Ok(());
            }
            Rmw::Cas { expected, desired } => {
                let p = self.fresh(Class::Pred);
                let b = bits(class(t));
                self.line(format!("setp.eq.{b} {p}, {old}, {expected};"));
                self.line(format!("selp.{b} {new}, {desired}, {old}, {p};"));
                return Ok(());
            }
            Rmw::Op(op, _) => op.binop().expect("exchange is handled above"),
        };
        let Rmw::Op(_, v) = rmw else { unreachable!("handled above") };
        self.binary_regs(inst, op, t, new, old, v)
    }
}

/// The operation of a CAS loop or a per-thread read-modify-write.
enum Rmw {
    /// `old <op> value`, the value's register.
    Op(AtomicOp, String),
    /// `old == expected ? desired : old`.
    Cas { expected: String, desired: String },
}
