//! Read-modify-writes and compare-and-swap (D6, D7): native `atom`/`red` through the printer, the
//! word view the sub-word CAS loops use (`word_shift`, `atomic_cas_word`), and plain
//! read-modify-writes on per-thread memory. CAS loops are not written here:
//! `target::legalize_atomics` rewrites them into the IR before lowering.

use super::{bits, class, Class, Lower};
use crate::backend::ptx::errors::PtxError;
use crate::backend::ptx::modifier::AtomicModifier;
use crate::ir::*;
use crate::trace::TraceError;

impl Lower<'_> {
    /// The portable atomics have no 128-bit values; `qd::nv::atomic_cas_b128`/`atomic_exch_b128`
    /// (u64 pairs, `NvOp::Cas128`/`Exch128`) are the 128-bit forms.
    fn refuse_b128(&self, inst: &Inst, t: DType) -> Result<(), TraceError> {
        if t == DType::B128 {
            return Err(self.err(
                inst,
                "128-bit atomics on b128 elements are not lowered to PTX; use qd::nv::atomic_cas_b128 or \
                 atomic_exch_b128 on pairs of u64",
            ));
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
            Err(PtxError::NeedsCasLoop { .. }) => Err(self.not_legalized(inst, t)),
            Ok(m) => {
                let (addr, _) = self.address(place);
                let (d, v) = (dst.map(|d| self.r(d)), self.r(value));
                self.print(inst, |p| p.atomic_rmw(&m, d.as_deref(), &format!("[{addr}]"), &[&v]))
            }
            Err(e) => Err(self.ptx_err(inst, e)),
        }
    }

    /// An atomic `atom` lacks reached the lowering: `Ptx::lower` (and `lower_kernel`) rewrite
    /// those into CAS loops first, so only IR that skipped the rewrite gets here.
    fn not_legalized(&self, inst: &Inst, t: DType) -> TraceError {
        self.err(
            inst,
            format!(
                "`{}` on {t} has no native PTX form here and was not rewritten into a CAS loop \
                 (lower kernels with ptx::lower_kernel or Ptx::lower, which run target::legalize_atomics)",
                inst.kind.mnemonic()
            ),
        )
    }

    /// `word_shift`: the bit offset of the element within its aligned 32-bit word, from its address.
    pub(super) fn word_shift(&mut self, dst: ValueId, place: &Place) {
        let (addr, _) = self.address(place);
        let d = self.r(dst);
        self.line(format!("cvt.u32.u64 {d}, {addr};"));
        self.line(format!("and.b32 {d}, {d}, 3;"));
        self.line(format!("shl.b32 {d}, {d}, 3;"));
    }

    /// `atomic_cas_word`: `atom.cas.b32` on the aligned word holding the element.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn word_cas(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        place: &Place,
        expected: ValueId,
        desired: ValueId,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let space = self.k.array_space(place.array);
        let m = AtomicModifier::cas_from_ir(DType::U32, ordering, scope, space).map_err(|e| self.ptx_err(inst, e))?;
        let (addr, _) = self.address(place);
        let word = self.fresh(Class::B64);
        self.line(format!("and.b64 {word}, {addr}, 0xFFFFFFFFFFFFFFFC;"));
        let (d, e, n) = (self.r(dst), self.r(expected), self.r(desired));
        self.print(inst, |p| p.atomic_rmw(&m, Some(&d), &format!("[{word}]"), &[&e, &n]))
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
            Ok(_) => Err(self.not_legalized(inst, t)),
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
