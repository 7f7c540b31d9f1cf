//! Loads, stores and atomics (D6) in MSL.
//!
//! MSL atomics are relaxed only (`memory_order_relaxed`), on `atomic_int`, `atomic_uint` and, in
//! device memory, `atomic_float`; the element is reached through a pointer to that atomic type.
//! An ordering stronger than relaxed is the relaxed operation with `atomic_thread_fence` (MSL 3.2)
//! before it (release) and/or after it (acquire). A volatile access of a 32-bit element is a
//! relaxed atomic load or store, of other elements a `volatile` pointer access; either way the
//! kernel's device buffers are `coherent(device)`, so the value is the one in device memory.

use super::expr::{bits_ty, mem_ty, ty};
use super::printer::Printer;
use crate::ir::*;
use crate::trace::TraceError;

/// The MSL atomic type of a 32-bit element, and whether values cross it as bits (`as_type`).
fn atomic_view(d: DType, float_native: bool) -> Option<(&'static str, bool)> {
    match d {
        DType::I32 => Some(("atomic_int", false)),
        DType::U32 => Some(("atomic_uint", false)),
        DType::F32 if float_native => Some(("atomic_float", false)),
        DType::F32 => Some(("atomic_uint", true)),
        _ => None,
    }
}

/// A value read from memory as its register type (bool from its byte).
fn loaded(d: DType, e: String) -> String {
    if d == DType::Bool {
        format!("{e} != 0")
    } else {
        e
    }
}

fn releases(o: Ordering) -> bool {
    matches!(o, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst)
}

fn acquires(o: Ordering) -> bool {
    matches!(o, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst)
}

impl Printer<'_> {
    /// `name[index]`.
    fn elem(&self, place: &Place) -> String {
        format!("{}[{}]", self.array(place.array), self.v(place.index))
    }

    /// A pointer to the element as `atomic`.
    fn atomic_ptr(&self, place: &Place, atomic: &str) -> String {
        format!("({} {atomic}*)&{}", self.space(place.array), self.elem(place))
    }

    /// A `volatile` pointer to the element.
    fn volatile_ptr(&self, place: &Place) -> String {
        let t = mem_ty(self.k.array_dtype(place.array));
        format!("(volatile {} {t}*)&{}", self.space(place.array), self.elem(place))
    }

    /// A register value as memory holds it (bool as its byte).
    fn stored(&self, d: DType, v: ValueId) -> String {
        if d == DType::Bool {
            format!("uchar({})", self.v(v))
        } else {
            self.v(v)
        }
    }

    pub(super) fn load(&mut self, dst: ValueId, place: &Place, kind: LoadKind) {
        let d = self.k.array_dtype(place.array);
        let atomic = !matches!(place.array, ArrayRef::Local(_));
        if let LoadKind::Ordered(Ordering::SeqCst, scope) = kind {
            self.fence(scope);
        }
        match kind {
            LoadKind::Plain => self.def(dst, loaded(d, self.elem(place))),
            LoadKind::Volatile | LoadKind::Ordered(..) => {
                let e = match atomic_view(d, false).filter(|_| atomic) {
                    Some((view, bits)) => {
                        let e = format!("atomic_load_explicit({}, memory_order_relaxed)", self.atomic_ptr(place, view));
                        if bits {
                            format!("as_type<{}>({e})", ty(d))
                        } else {
                            e
                        }
                    }
                    None => format!("*{}", self.volatile_ptr(place)),
                };
                self.def(dst, loaded(d, e));
                if let LoadKind::Ordered(o, scope) = kind
                    && acquires(o)
                {
                    self.fence(scope);
                }
            }
        }
    }

    pub(super) fn store(&mut self, place: &Place, value: ValueId, kind: StoreKind) {
        let d = self.k.array_dtype(place.array);
        let v = self.stored(d, value);
        let atomic = !matches!(place.array, ArrayRef::Local(_));
        match kind {
            StoreKind::Plain => self.line(format!("{} = {v};", self.elem(place))),
            StoreKind::Volatile | StoreKind::Ordered(..) => {
                if let StoreKind::Ordered(o, scope) = kind
                    && releases(o)
                {
                    self.fence(scope);
                }
                match atomic_view(d, false).filter(|_| atomic) {
                    Some((view, bits)) => {
                        let v = if bits { format!("as_type<uint>({v})") } else { v };
                        let p = self.atomic_ptr(place, view);
                        self.line(format!("atomic_store_explicit({p}, {v}, memory_order_relaxed);"));
                    }
                    None => self.line(format!("*{} = {v};", self.volatile_ptr(place))),
                }
                if let StoreKind::Ordered(o, scope) = kind
                    && o == Ordering::SeqCst
                {
                    self.fence(scope);
                }
            }
        }
    }

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
        let d = self.k.array_dtype(place.array);
        let device = matches!(place.array, ArrayRef::Param(_));
        let float_native = op == AtomicOp::Add && device;
        let refused = || self.refuse(inst, format!("atomic_{} on {d} is not native on metal", op.name()));
        if matches!(place.array, ArrayRef::Local(_)) {
            return Err(self.refuse(inst, "atomics on per-thread arrays have no MSL form"));
        }
        let (view, bits) = atomic_view(d, float_native).ok_or_else(refused)?;
        let f = match op {
            AtomicOp::Add => "atomic_fetch_add_explicit",
            AtomicOp::Min => "atomic_fetch_min_explicit",
            AtomicOp::Max => "atomic_fetch_max_explicit",
            AtomicOp::And => "atomic_fetch_and_explicit",
            AtomicOp::Or => "atomic_fetch_or_explicit",
            AtomicOp::Xor => "atomic_fetch_xor_explicit",
            AtomicOp::Exchange => "atomic_exchange_explicit",
            AtomicOp::Mul => return Err(refused()),
        };
        if bits && op != AtomicOp::Exchange {
            return Err(refused());
        }
        if releases(ordering) {
            self.fence(scope);
        }
        let v = if bits { format!("as_type<uint>({})", self.v(value)) } else { self.v(value) };
        let e = format!("{f}({}, {v}, memory_order_relaxed)", self.atomic_ptr(place, view));
        match dst {
            Some(dst) if bits => self.def(dst, format!("as_type<{}>({e})", ty(d))),
            Some(dst) => self.def(dst, e),
            None => self.line(format!("{e};")),
        }
        if acquires(ordering) {
            self.fence(scope);
        }
        Ok(())
    }

    /// A strong compare-and-swap from the weak one: retry while the CAS failed but saw `expected`
    /// (a spurious failure); stop on success or on a value other than `expected`.
    fn cas_loop(&mut self, dst: ValueId, ptr: String, expected: String, desired: String, bits_ty: &str) {
        let seen = format!("{}_seen", self.v(dst));
        self.line(format!("{bits_ty} {seen} = {expected};"));
        self.line(format!(
            "while (!atomic_compare_exchange_weak_explicit({ptr}, &{seen}, {desired}, memory_order_relaxed, \
             memory_order_relaxed) && {seen} == {expected}) {{}}"
        ));
    }

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
        let d = self.k.array_dtype(place.array);
        if matches!(place.array, ArrayRef::Local(_)) {
            return Err(self.refuse(inst, "atomics on per-thread arrays have no MSL form"));
        }
        let (view, bits) = atomic_view(d, false)
            .ok_or_else(|| self.refuse(inst, format!("atomic_cas on {d} is not native on metal")))?;
        let (e, n) = if bits {
            (format!("as_type<uint>({})", self.v(expected)), format!("as_type<uint>({})", self.v(desired)))
        } else {
            (self.v(expected), self.v(desired))
        };
        if releases(ordering) {
            self.fence(scope);
        }
        let ptr = self.atomic_ptr(place, view);
        let t = if bits { "uint" } else { ty(d) };
        self.cas_loop(dst, ptr, e, n, t);
        let seen = format!("{}_seen", self.v(dst));
        self.def(dst, if bits { format!("as_type<float>({seen})") } else { seen });
        if acquires(ordering) {
            self.fence(scope);
        }
        Ok(())
    }

    /// The CAS of the aligned 32-bit word holding a narrow element (the sub-word rewrite's view).
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
        let d = self.k.array_dtype(place.array);
        if matches!(place.array, ArrayRef::Local(_)) {
            return Err(self.refuse(inst, "atomics on per-thread arrays have no MSL form"));
        }
        let space = self.space(place.array);
        let ptr = format!(
            "({space} atomic_uint*)(({space} uchar*){} + (ulong({}) * {}ul & ~3ul))",
            self.array(place.array),
            self.v(place.index),
            d.size_bytes()
        );
        if releases(ordering) {
            self.fence(scope);
        }
        self.cas_loop(dst, ptr, self.v(expected), self.v(desired), bits_ty(DType::U32));
        let seen = format!("{}_seen", self.v(dst));
        self.def(dst, seen);
        if acquires(ordering) {
            self.fence(scope);
        }
        Ok(())
    }
}
