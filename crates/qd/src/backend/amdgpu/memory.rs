//! Addresses, loads, stores, atomics, CAS and the 32-bit word view of narrow elements (D6).

use super::expr::{int_ty, mem_ty, ty};
use super::printer::Printer;
use crate::ir::{AtomicOp, DType, Inst, LoadKind, Ordering, Place, Scope, StoreKind, ValueId};
use crate::trace::TraceError;

/// The LLVM `syncscope` of a scope (system scope is LLVM's default, printed as nothing). A
/// subgroup-scope access orders at the wavefront; cluster scope does not exist on AMD GPUs and
/// widens to the agent.
pub(super) fn syncscope(scope: Scope) -> &'static str {
    match scope {
        Scope::Thread => " syncscope(\"singlethread\")",
        Scope::Subgroup => " syncscope(\"wavefront\")",
        Scope::Block => " syncscope(\"workgroup\")",
        Scope::Cluster | Scope::Device => " syncscope(\"agent\")",
        Scope::System => "",
    }
}

/// The LLVM ordering of an atomic operation.
pub(super) fn ordering(o: Ordering) -> &'static str {
    match o {
        Ordering::Relaxed => "monotonic",
        Ordering::Acquire => "acquire",
        Ordering::Release => "release",
        Ordering::AcqRel => "acq_rel",
        Ordering::SeqCst => "seq_cst",
    }
}

/// The failure ordering of a `cmpxchg` (no release part).
fn failure_ordering(o: Ordering) -> &'static str {
    match o {
        Ordering::Relaxed | Ordering::Release => "monotonic",
        Ordering::Acquire | Ordering::AcqRel => "acquire",
        Ordering::SeqCst => "seq_cst",
    }
}

impl Printer<'_> {
    /// The address of `place`'s element: `(pointer, address space)`.
    pub(super) fn address(&mut self, place: &Place) -> (String, u32) {
        let (base, space) = self.array_base(place.array);
        let d = self.d(place.index);
        let i = self.v(place.index);
        let index = match d.bits() {
            64 => i,
            _ if d.is_signed_int() => self.emit(format!("sext {} {i} to i64", ty(d))),
            _ => self.emit(format!("zext {} {i} to i64", ty(d))),
        };
        let elem = mem_ty(self.k.array_dtype(place.array));
        let p = self.emit(format!("getelementptr {elem}, ptr addrspace({space}) {base}, i64 {index}"));
        (p, space)
    }

    fn align(&self, place: &Place) -> usize {
        self.k.array_dtype(place.array).size_bytes()
    }

    pub(super) fn load(&mut self, dst: ValueId, place: &Place, kind: LoadKind) {
        let d = self.d(dst);
        let (p, space) = self.address(place);
        let align = self.align(place);
        let m = mem_ty(d);
        let e = match kind {
            LoadKind::Plain => format!("load {m}, ptr addrspace({space}) {p}, align {align}"),
            LoadKind::Volatile => format!("load volatile {m}, ptr addrspace({space}) {p}, align {align}"),
            LoadKind::Ordered(o, s) => {
                format!("load atomic {m}, ptr addrspace({space}) {p}{} {}, align {align}", syncscope(s), ordering(o))
            }
        };
        if d == DType::Bool {
            let byte = self.emit(e);
            self.def(dst, format!("icmp ne i8 {byte}, 0"));
        } else {
            self.def(dst, e);
        }
    }

    pub(super) fn store(&mut self, place: &Place, value: ValueId, kind: StoreKind) {
        let d = self.d(value);
        let (p, space) = self.address(place);
        let align = self.align(place);
        let m = mem_ty(d);
        let x = if d == DType::Bool { self.emit(format!("zext i1 {} to i8", self.v(value))) } else { self.v(value) };
        let line = match kind {
            StoreKind::Plain => format!("store {m} {x}, ptr addrspace({space}) {p}, align {align}"),
            StoreKind::Volatile => format!("store volatile {m} {x}, ptr addrspace({space}) {p}, align {align}"),
            StoreKind::Ordered(o, s) => format!(
                "store atomic {m} {x}, ptr addrspace({space}) {p}{} {}, align {align}",
                syncscope(s),
                ordering(o)
            ),
        };
        self.line(line);
    }

    /// A native read-modify-write (the others were rewritten into CAS loops by
    /// `target::legalize_atomics`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        op: AtomicOp,
        value: ValueId,
        order: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let d = self.d(value);
        let float = d.is_float();
        let name = match op {
            AtomicOp::Add if float => "fadd",
            AtomicOp::Add => "add",
            AtomicOp::Min if float => "fmin",
            AtomicOp::Max if float => "fmax",
            AtomicOp::Min if d.is_signed_int() => "min",
            AtomicOp::Max if d.is_signed_int() => "max",
            AtomicOp::Min => "umin",
            AtomicOp::Max => "umax",
            AtomicOp::And if !float => "and",
            AtomicOp::Or if !float => "or",
            AtomicOp::Xor if !float => "xor",
            AtomicOp::Exchange => "xchg",
            _ => return Err(self.refuse(inst, format!("atomic {} on {d} has no AMDGPU instruction", op.name()))),
        };
        let (p, space) = self.address(place);
        let e = format!(
            "atomicrmw {name} ptr addrspace({space}) {p}, {} {}{} {}, align {}",
            ty(d),
            self.v(value),
            syncscope(scope),
            ordering(order),
            d.size_bytes()
        );
        match dst {
            Some(dst) => self.def(dst, e),
            None => {
                self.emit(e);
            }
        }
        Ok(())
    }

    /// `cmpxchg` on integer bits (floats are compared bitwise, as CAS is).
    pub(super) fn cas(
        &mut self,
        dst: ValueId,
        place: &Place,
        expected: ValueId,
        desired: ValueId,
        order: Ordering,
        scope: Scope,
    ) {
        let d = self.d(dst);
        let bits = int_ty(d.bits());
        let as_bits = |p: &mut Self, v: ValueId| {
            if d.is_float() {
                p.emit(format!("bitcast {} {} to {bits}", ty(d), p.v(v)))
            } else {
                p.v(v)
            }
        };
        let (e, n) = (as_bits(self, expected), as_bits(self, desired));
        let (p, space) = self.address(place);
        let old = self.exchange(&p, space, bits, &e, &n, order, scope, d.size_bytes());
        if d.is_float() {
            self.def(dst, format!("bitcast {bits} {old} to {}", ty(d)));
        } else {
            self.copy(dst, &old);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &mut self,
        p: &str,
        space: u32,
        t: &str,
        expected: &str,
        desired: &str,
        order: Ordering,
        scope: Scope,
        align: usize,
    ) -> String {
        let pair = self.emit(format!(
            "cmpxchg ptr addrspace({space}) {p}, {t} {expected}, {t} {desired}{} {} {}, align {align}",
            syncscope(scope),
            ordering(order),
            failure_ordering(order)
        ));
        self.emit(format!("extractvalue {{ {t}, i1 }} {pair}, 0"))
    }

    /// The bit offset of a narrow element within its aligned 32-bit word: `(index * size & 3) * 8`.
    pub(super) fn word_shift(&mut self, dst: ValueId, place: &Place) {
        let d = self.d(place.index);
        let i = self.v(place.index);
        let i32v = match d.bits() {
            32 => i,
            b if b > 32 => self.emit(format!("trunc {} {i} to i32", ty(d))),
            _ => self.emit(format!("zext {} {i} to i32", ty(d))),
        };
        let size = self.k.array_dtype(place.array).size_bytes();
        let bytes = self.emit(format!("mul i32 {i32v}, {size}"));
        let low = self.emit(format!("and i32 {bytes}, 3"));
        self.def(dst, format!("shl i32 {low}, 3"));
    }

    /// CAS of the aligned 32-bit word holding a narrow element (the sub-word CAS loop's step).
    pub(super) fn word_cas(
        &mut self,
        dst: ValueId,
        place: &Place,
        expected: ValueId,
        desired: ValueId,
        order: Ordering,
        scope: Scope,
    ) {
        let (p, space) = self.address(place);
        // Pointers are 64-bit in the global space and 32-bit in LDS and private memory.
        let w = if space == 1 { "i64" } else { "i32" };
        let word = self.intrinsic(
            &format!("ptr addrspace({space})"),
            &format!("llvm.ptrmask.p{space}.{w}"),
            &[(&format!("ptr addrspace({space})"), p), (w, "-4".into())],
        );
        let word = self.emit(word);
        let (e, n) = (self.v(expected), self.v(desired));
        let old = self.exchange(&word, space, "i32", &e, &n, order, scope, 4);
        self.copy(dst, &old);
    }
}
