//! Addresses of array elements and the loads and stores: plain and volatile ones printed here,
//! ordered ones through the printer.

use super::{class, mem_ty, sanitize, ty, Class, Lower};
use crate::backend::ptx::modifier::{AtomSpace, AtomicOrder, NvptxScope};
use crate::ir::*;
use crate::trace::TraceError;

impl Lower<'_> {
    /// The address of `place` in a fresh register, and its state space (global, shared or local).
    ///
    /// An i32 index `x + c` with a small non-negative constant `c` is addressed as `x`'s address
    /// plus `c` elements in a 64-bit add, which ptxas folds into the access's immediate offset;
    /// the 32-bit `x + c` might wrap, so ptxas could not fold it, and every element of an unrolled
    /// tile cost an add and a wide multiply of its own. The two differ only where `x + c`
    /// overflows, and then the wrapped index is negative: out of bounds either way.
    pub(super) fn address(&mut self, place: &Place) -> (String, AddressSpace) {
        let k = self.k;
        let size = k.array_dtype(place.array).size_bytes();
        let (index, folded) = self.offsets.get(&place.index).copied().unwrap_or((place.index, 0));
        let (a, space) = self.element_address(place.array, index, size);
        if folded == 0 {
            return (a, space);
        }
        let b = self.fresh(Class::B64);
        self.line(format!("add.s64 {b}, {a}, {};", folded * size as i64));
        (b, space)
    }

    /// The address of element `index` (of `size` bytes) of `array`.
    fn element_address(&mut self, array: ArrayRef, index: ValueId, size: usize) -> (String, AddressSpace) {
        let k = self.k;
        let idx = self.r(index);
        let it = self.d(index);
        let off = self.fresh(Class::B64);
        match class(it) {
            Class::B64 => self.line(format!("mul.lo.s64 {off}, {idx}, {size};")),
            Class::B16 => {
                let w = self.fresh(Class::B32);
                self.line(format!("cvt.{}32.{} {w}, {idx};", if it.is_signed_int() { "s" } else { "u" }, ty(it)));
                self.line(format!("mul.wide.{}32 {off}, {w}, {size};", if it.is_signed_int() { "s" } else { "u" }));
            }
            _ => self.line(format!("mul.wide.{}32 {off}, {idx}, {size};", if it.is_signed_int() { "s" } else { "u" })),
        }
        let entry = sanitize(&k.name);
        match array {
            ArrayRef::Param(i) => {
                let base = self.param_regs[i as usize].0.clone();
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {off};"));
                (a, AddressSpace::Global)
            }
            ArrayRef::Shared(i) => {
                let sym = if self.dynamic_shared { format!("{entry}_dyn_smem") } else { format!("{entry}_smem") };
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {sym};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {};", self.shared_offsets[i as usize]));
                self.line(format!("add.s64 {a}, {a}, {off};"));
                (a, AddressSpace::Shared)
            }
            ArrayRef::Local(i) => {
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {entry}_l{i};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {off};"));
                (a, AddressSpace::Local)
            }
        }
    }

    /// `ld{.volatile}.<space>` of one element into `d` (bool travels as a u8).
    pub(super) fn ld_plain(&mut self, volatile: bool, space: AddressSpace, t: DType, d: &str, addr: &str) {
        let v = if volatile { ".volatile" } else { "" };
        let sp = space.name();
        if t == DType::Bool {
            let b = self.fresh(Class::B16);
            self.line(format!("ld{v}.{sp}.u8 {b}, {addr};"));
            self.line(format!("setp.ne.u16 {d}, {b}, 0;"));
        } else {
            self.line(format!("ld{v}.{sp}.{} {d}, {addr};", mem_ty(t)));
        }
    }

    /// `st{.volatile}.<space>` of one element from `v` (bool travels as a u8).
    pub(super) fn st_plain(&mut self, volatile: bool, space: AddressSpace, t: DType, addr: &str, v: &str) {
        let vol = if volatile { ".volatile" } else { "" };
        let sp = space.name();
        if t == DType::Bool {
            let b = self.fresh(Class::B16);
            self.line(format!("selp.u16 {b}, 1, 0, {v};"));
            self.line(format!("st{vol}.{sp}.u8 {addr}, {b};"));
        } else {
            self.line(format!("st{vol}.{sp}.{} {addr}, {v};", mem_ty(t)));
        }
    }

    pub(super) fn load(&mut self, inst: &Inst, dst: ValueId, place: &Place, kind: LoadKind) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let (t, d) = (self.d(dst), self.r(dst));
        match kind {
            // Per-thread memory: no other thread observes it, so volatile and ordered are plain.
            LoadKind::Plain => self.ld_plain(false, space, t, &d, &addr),
            _ if space == AddressSpace::Local => self.ld_plain(false, space, t, &d, &addr),
            LoadKind::Volatile => self.ld_plain(true, space, t, &d, &addr),
            LoadKind::Ordered(o, s) => {
                let (o, s, sp) = (AtomicOrder::from(o), NvptxScope::from(s), AtomSpace::from(space));
                if t == DType::Bool {
                    let b = self.fresh(Class::B16);
                    self.print(inst, |p| p.ld_ordered(o, s, sp, "u8", &b, &addr))?;
                    self.line(format!("setp.ne.u16 {d}, {b}, 0;"));
                } else {
                    self.print(inst, |p| p.ld_ordered(o, s, sp, mem_ty(t), &d, &addr))?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn store(
        &mut self,
        inst: &Inst,
        place: &Place,
        value: ValueId,
        kind: StoreKind,
    ) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let (t, v) = (self.d(value), self.r(value));
        match kind {
            StoreKind::Plain => self.st_plain(false, space, t, &addr, &v),
            _ if space == AddressSpace::Local => self.st_plain(false, space, t, &addr, &v),
            StoreKind::Volatile => self.st_plain(true, space, t, &addr, &v),
            StoreKind::Ordered(o, s) => {
                let (o, s, sp) = (AtomicOrder::from(o), NvptxScope::from(s), AtomSpace::from(space));
                if t == DType::Bool {
                    let b = self.fresh(Class::B16);
                    self.line(format!("selp.u16 {b}, 1, 0, {v};"));
                    self.print(inst, |p| p.st_ordered(o, s, sp, "u8", &addr, &b))?;
                } else {
                    self.print(inst, |p| p.st_ordered(o, s, sp, mem_ty(t), &addr, &v))?;
                }
            }
        }
        Ok(())
    }
}
