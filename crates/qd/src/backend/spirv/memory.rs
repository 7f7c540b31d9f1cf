//! Loads, stores and atomics (D6) on device, shared and per-thread arrays.
//!
//! * Device arrays are storage buffers read through aliasing views of one binding
//!   ([`View`]): natural-width unsigned elements for loads and stores, u32 words for atomics and
//!   ordered accesses on 8/16-bit elements, f32 for a native `OpAtomicFAddEXT`.
//! * Plain accesses are `OpLoad`/`OpStore`; ordered ones are `OpAtomicLoad`/`OpAtomicStore` with
//!   the IR's scope and acquire/release semantics on uniform and workgroup memory (seq_cst is
//!   acquire-release in Vulkan).
//! * Under the Vulkan memory model ([`SpirvCaps::vulkan_memory_model`](super::SpirvCaps)) plain
//!   accesses to device and shared arrays are `NonPrivatePointer` (fences and barriers order them
//!   and make them available/visible), acquire semantics add `MakeVisible` and release semantics
//!   `MakeAvailable`, and a volatile access is what `ld.volatile` is in PTX: a relaxed atomic at the
//!   array's scope (workgroup for shared, device for device arrays) with the `Volatile` semantics
//!   bit, so it is never cached, hoisted, merged or deleted and a fence after a spin-wait on it
//!   synchronizes with the fence before the write it saw (D6); a volatile load of a shared element
//!   is moreover an acquire (see `volatile_load_semantics`: NVIDIA's driver hoists relaxed
//!   shared-memory loads out of spin loops). Elements without a native atomic
//!   (8/16-bit device elements, 64-bit ones without `int64_atomics`) take
//!   `Volatile|MakePointerVisible|NonPrivatePointer` (`MakePointerAvailable` for stores) at the
//!   same scope instead.
//! * Under GLSL450, device arrays are `Coherent` and volatile accesses carry the `Volatile`
//!   memory-access mask; the cross-thread patterns of D6 are not guaranteed there.
//! * Atomics are native where SPIR-V has the operation for the element (integer
//!   add/min/max/and/or/xor/exchange on 32/64-bit elements, and/or/xor/exchange on narrow elements
//!   held in 32-bit cells, f32 add with `float32_atomic_add`, exchange on floats through their
//!   bits). Everything else (mul, float min/max, f64 add; narrow device elements, whose ordered
//!   stores too) arrives as the IR's CAS loop (`target::legalize_atomics`, run by `lower_kernel`);
//!   for narrow device elements this file provides the word view the loop uses (`word_shift`,
//!   `word_cas` on the array's u32 view).
//! * Per-thread arrays are private: an atomic is a load, the operation and a store.

use super::lower::{cell_ty, Lower, View, SCOPE_DEVICE, SCOPE_SUBGROUP, SCOPE_WORKGROUP};
use super::types::{reg_ty, Ty};
use crate::ir::*;
use crate::trace::TraceError;
use rspirv::dr::Operand;
use rspirv::spirv::{Capability, Decoration, MemoryAccess, MemorySemantics, Op, StorageClass, Word};

/// The scope of an array's memory: the workgroup for shared arrays, the device for device arrays
/// (per-thread arrays are private and take no scope).
fn space_scope(space: AddressSpace) -> u32 {
    match space {
        AddressSpace::Shared => SCOPE_WORKGROUP,
        _ => SCOPE_DEVICE,
    }
}

/// The operation of a CAS loop or a per-thread read-modify-write.
#[derive(Clone, Copy)]
enum Rmw {
    /// `old <op> value`.
    Op(AtomicOp, Word),
    /// `old == expected ? desired : old`.
    Cas { expected: Word, desired: Word },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Load,
    Store,
    Rmw,
}

fn scope_of(s: Scope) -> u32 {
    match s {
        Scope::Subgroup => SCOPE_SUBGROUP,
        Scope::Thread | Scope::Block => SCOPE_WORKGROUP,
        Scope::Cluster | Scope::Device | Scope::System => SCOPE_DEVICE,
    }
}

/// The semantics of an atomic of ordering `o` in `role`: acquire and/or release on uniform and
/// workgroup memory; under the Vulkan memory model (`vmm`) an acquire also makes those storage
/// classes visible and a release makes them available, so plain accesses before a release are
/// seen by plain accesses after the acquire that reads from it.
fn semantics(o: Ordering, role: Role, vmm: bool) -> MemorySemantics {
    use MemorySemantics as S;
    use Ordering::*;
    let base = match (o, role) {
        (Relaxed, _) | (Acquire, Role::Store) | (Release, Role::Load) => S::empty(),
        (Acquire, _) | (AcqRel | SeqCst, Role::Load) => S::ACQUIRE,
        (Release, _) | (AcqRel | SeqCst, Role::Store) => S::RELEASE,
        (AcqRel | SeqCst, Role::Rmw) => S::ACQUIRE_RELEASE,
    };
    if base.is_empty() {
        return base;
    }
    let mut sem = base | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY;
    if vmm {
        if base.intersects(S::ACQUIRE | S::ACQUIRE_RELEASE) {
            sem |= S::MAKE_VISIBLE;
        }
        if base.intersects(S::RELEASE | S::ACQUIRE_RELEASE) {
            sem |= S::MAKE_AVAILABLE;
        }
    }
    sem
}

impl Lower<'_> {
    /// The storage buffer of array parameter `i` seen as `view` (declared on first use).
    fn view_var(&mut self, i: u32, view: View) -> Word {
        if let Some(v) = self.views.get(&(i, view)) {
            return *v;
        }
        let d = self.k.params[i as usize].dtype();
        let elem = match view {
            View::Natural => cell_ty(AddressSpace::Global, d),
            View::Word32 => Ty::U32,
            View::F32 => Ty::F32,
            View::F64 => Ty::F64,
            View::F16 => Ty::F16,
        };
        let s = self.m.buffer_struct(elem);
        let ptr = self.m.pointer(StorageClass::StorageBuffer, s);
        let var = self.m.global_var(ptr, StorageClass::StorageBuffer);
        let binding = self.bindings[i as usize].expect("an array parameter");
        self.m.decorate(var, Decoration::DescriptorSet, &[0]);
        self.m.decorate(var, Decoration::Binding, &[binding]);
        // Plain accesses must observe other workgroups' writes after a fence or an acquire (D6).
        // The Vulkan memory model forbids the decoration: its fences and acquires make memory
        // visible themselves.
        if !self.vulkan_memory_model() {
            self.m.decorate(var, Decoration::Coherent, &[]);
        }
        self.views.insert((i, view), var);
        var
    }

    /// A pointer to element `index` of `array` (through `view` for device arrays), and its type.
    fn elem_ptr(&mut self, array: ArrayRef, index: Word, view: View) -> (Word, Ty) {
        let d = self.k.array_dtype(array);
        match array {
            ArrayRef::Param(i) => {
                let var = self.view_var(i, view);
                let cell = match view {
                    View::Natural => cell_ty(AddressSpace::Global, d),
                    View::Word32 => Ty::U32,
                    View::F32 => Ty::F32,
                    View::F64 => Ty::F64,
                    View::F16 => Ty::F16,
                };
                let ct = self.m.ty(cell);
                let ptr = self.m.pointer(StorageClass::StorageBuffer, ct);
                let zero = self.c32(0);
                let p = self.op(
                    Op::AccessChain,
                    Some(ptr),
                    vec![Operand::IdRef(var), Operand::IdRef(zero), Operand::IdRef(index)],
                );
                (p, cell)
            }
            ArrayRef::Shared(i) => {
                let cell = cell_ty(AddressSpace::Shared, d);
                let ct = self.m.ty(cell);
                let ptr = self.m.pointer(StorageClass::Workgroup, ct);
                let var = self.shared_vars[i as usize];
                let p = self.op(Op::AccessChain, Some(ptr), vec![Operand::IdRef(var), Operand::IdRef(index)]);
                (p, cell)
            }
            ArrayRef::Local(i) => {
                let cell = cell_ty(AddressSpace::Local, d);
                let ct = self.m.ty(cell);
                let var = match self.local_vars[i as usize] {
                    Some(v) => v,
                    None => {
                        let arr = self.m.array(ct, self.k.local_arrays[i as usize].len);
                        let v = self.fn_var(arr);
                        self.local_vars[i as usize] = Some(v);
                        v
                    }
                };
                let ptr = self.m.pointer(StorageClass::Function, ct);
                let p = self.op(Op::AccessChain, Some(ptr), vec![Operand::IdRef(var), Operand::IdRef(index)]);
                (p, cell)
            }
        }
    }

    /// The register of dtype `d` from a memory cell value.
    fn cell_to_reg(&mut self, d: DType, cell: Ty, v: Word) -> Word {
        match cell {
            Ty::U8 | Ty::U16 => {
                let x = self.op_t(Op::UConvert, Ty::U32, &[v]);
                self.canonical(d, x)
            }
            Ty::U32 => match d {
                DType::F32 => self.op_t(Op::Bitcast, Ty::F32, &[v]),
                DType::I32 | DType::U32 => v,
                _ => self.canonical(d, v),
            },
            Ty::U64 if d == DType::F64 => self.op_t(Op::Bitcast, Ty::F64, &[v]),
            _ => v,
        }
    }

    /// The bits of a register of dtype `d` (32 bits or less), zero-extended into a u32 (narrow
    /// signed values keep their sign extension, which a cell or a word mask drops).
    fn bits32(&mut self, d: DType, r: Word) -> Word {
        match d {
            DType::Bool => {
                let (one, zero) = (self.c32(1), self.c32(0));
                self.op_t(Op::Select, Ty::U32, &[r, one, zero])
            }
            DType::F32 => self.op_t(Op::Bitcast, Ty::U32, &[r]),
            _ => r,
        }
    }

    /// A memory cell value from a register of dtype `d`.
    fn reg_to_cell(&mut self, d: DType, cell: Ty, r: Word) -> Word {
        match cell {
            Ty::U8 | Ty::U16 => {
                let b = self.bits32(d, r);
                self.op_t(Op::UConvert, cell, &[b])
            }
            Ty::U32 => self.bits32(d, r),
            Ty::U64 if d == DType::F64 => self.op_t(Op::Bitcast, Ty::U64, &[r]),
            _ => r,
        }
    }

    fn note_atomic(&mut self, cell: Ty) {
        if cell == Ty::U64 {
            self.m.capability(Capability::Int64Atomics);
        }
    }

    /// The semantics of an atomic of ordering `o` in `role` on this module's memory model.
    fn sem(&self, o: Ordering, role: Role) -> MemorySemantics {
        semantics(o, role, self.vulkan_memory_model())
    }

    /// Whether a volatile access to an element of `d` in `space` is a relaxed atomic: under the
    /// Vulkan memory model, on shared and device arrays, for 32-bit cells and for 64-bit cells
    /// where the device has 64-bit atomics.
    fn volatile_is_atomic(&self, space: AddressSpace, d: DType) -> bool {
        self.vulkan_memory_model()
            && space != AddressSpace::Local
            && match cell_ty(space, d) {
                Ty::U32 => true,
                Ty::U64 => self.target.caps.int64_atomics,
                _ => false,
            }
    }

    /// The semantics of a volatile load done as an atomic: `Volatile`, and on shared arrays also
    /// acquire (with `MakeVisible`) at workgroup scope. The acquire is stronger than D6 asks (a
    /// relaxed atomic followed by a fence is enough under the Vulkan memory model) and costs little
    /// at workgroup scope, but NVIDIA's driver (580, H200) hoists relaxed workgroup-scope loads of
    /// shared memory out of a spin loop even with the `Volatile` bit, so the block page's
    /// spin-wait ends at once and the data read after it is stale; acquire loads it keeps in the
    /// loop. Device arrays keep relaxed loads (the grid look-back's spin-waits run correctly there).
    fn volatile_load_semantics(&self, space: AddressSpace) -> MemorySemantics {
        if space == AddressSpace::Shared {
            self.sem(Ordering::Acquire, Role::Load) | MemorySemantics::VOLATILE
        } else {
            MemorySemantics::VOLATILE
        }
    }

    /// The memory operands of a plain or volatile `OpLoad`/`OpStore` of an element in `space` (a
    /// scope id follows the mask where the mask asks for one).
    fn access_operands(&mut self, space: AddressSpace, volatile: bool, store: bool) -> Vec<Operand> {
        if space == AddressSpace::Local {
            return vec![];
        }
        if !self.vulkan_memory_model() {
            return if volatile { vec![Operand::MemoryAccess(MemoryAccess::VOLATILE)] } else { vec![] };
        }
        if !volatile {
            return vec![Operand::MemoryAccess(MemoryAccess::NON_PRIVATE_POINTER)];
        }
        let av = if store { MemoryAccess::MAKE_POINTER_AVAILABLE } else { MemoryAccess::MAKE_POINTER_VISIBLE };
        let s = self.scope(space_scope(space));
        vec![
            Operand::MemoryAccess(MemoryAccess::VOLATILE | av | MemoryAccess::NON_PRIVATE_POINTER),
            Operand::IdScope(s),
        ]
    }

    fn atomic_load(&mut self, cell: Ty, ptr: Word, scope: u32, sem: MemorySemantics) -> Word {
        self.note_atomic(cell);
        let (s, m) = (self.scope(scope), self.c32(sem.bits()));
        let ty = self.m.ty(cell);
        self.op(Op::AtomicLoad, Some(ty), vec![Operand::IdRef(ptr), Operand::IdScope(s), Operand::IdMemorySemantics(m)])
    }

    fn atomic_store(&mut self, cell: Ty, ptr: Word, scope: u32, sem: MemorySemantics, value: Word) {
        self.note_atomic(cell);
        let (s, m) = (self.scope(scope), self.c32(sem.bits()));
        self.op(
            Op::AtomicStore,
            None,
            vec![Operand::IdRef(ptr), Operand::IdScope(s), Operand::IdMemorySemantics(m), Operand::IdRef(value)],
        );
    }

    /// The u32 word holding a narrow element of device array `array`, and the element's bit offset.
    fn word_of(&mut self, array: ArrayRef, index: ValueId) -> (Word, Word) {
        let d = self.k.array_dtype(array);
        let (idx, it) = (self.v(index), reg_ty(self.d(index)));
        let per_word_log2 = if d.bits() == 16 { 1 } else { 2 };
        let k = self.cst(it, per_word_log2);
        let w = self.op_t(Op::ShiftRightLogical, it, &[idx, k]);
        let (ptr, _) = self.elem_ptr(array, w, View::Word32);
        let low = self.cst(it, (1 << per_word_log2) - 1);
        let sub = self.op_t(Op::BitwiseAnd, it, &[idx, low]);
        let sub = if it == Ty::U64 { self.op_t(Op::UConvert, Ty::U32, &[sub]) } else { sub };
        let bits_log2 = self.c32(if d.bits() == 16 { 4 } else { 3 });
        let shift = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[sub, bits_log2]);
        (ptr, shift)
    }

    /// The element of dtype `d` at bit offset `shift` of word `w`.
    fn extract(&mut self, d: DType, w: Word, shift: Word) -> Word {
        let x = self.op_t(Op::ShiftRightLogical, Ty::U32, &[w, shift]);
        let m = self.c32(if d.bits() == 16 { 0xFFFF } else { 0xFF });
        let x = self.op_t(Op::BitwiseAnd, Ty::U32, &[x, m]);
        self.canonical(d, x)
    }

    pub(super) fn load_inst(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        place: &Place,
        kind: LoadKind,
    ) -> Result<(), TraceError> {
        let _ = inst;
        let d = self.d(dst);
        let space = self.k.array_space(place.array);
        let r = match kind {
            LoadKind::Ordered(o, s) if space != AddressSpace::Local => {
                let cell = cell_ty(space, d);
                let sem = self.sem(o, Role::Load);
                if matches!(cell, Ty::U8 | Ty::U16) {
                    let (ptr, shift) = self.word_of(place.array, place.index);
                    let w = self.atomic_load(Ty::U32, ptr, scope_of(s), sem);
                    self.extract(d, w, shift)
                } else {
                    let idx = self.v(place.index);
                    let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                    let c = self.atomic_load(cell, ptr, scope_of(s), sem);
                    self.cell_to_reg(d, cell, c)
                }
            }
            LoadKind::Volatile if self.volatile_is_atomic(space, d) => {
                let idx = self.v(place.index);
                let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                let sem = self.volatile_load_semantics(space);
                let c = self.atomic_load(cell, ptr, space_scope(space), sem);
                self.cell_to_reg(d, cell, c)
            }
            _ => {
                let idx = self.v(place.index);
                let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                let ty = self.m.ty(cell);
                let mut ops = vec![Operand::IdRef(ptr)];
                ops.extend(self.access_operands(space, kind == LoadKind::Volatile, false));
                let c = self.op(Op::Load, Some(ty), ops);
                self.cell_to_reg(d, cell, c)
            }
        };
        self.set(dst, r);
        Ok(())
    }

    pub(super) fn store_inst(
        &mut self,
        inst: &Inst,
        place: &Place,
        value: ValueId,
        kind: StoreKind,
    ) -> Result<(), TraceError> {
        let d = self.d(value);
        let space = self.k.array_space(place.array);
        let v = self.v(value);
        match kind {
            StoreKind::Ordered(o, s) if space != AddressSpace::Local => {
                let cell = cell_ty(space, d);
                if matches!(cell, Ty::U8 | Ty::U16) {
                    // No atomic store narrower than 32 bits: `spirv::caps` answers it
                    // `SubwordCasLoop`, and the IR rewrite made it an exchange loop on the word.
                    return Err(self.not_legalized(inst, d));
                } else {
                    let idx = self.v(place.index);
                    let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                    let c = self.reg_to_cell(d, cell, v);
                    let sem = self.sem(o, Role::Store);
                    self.atomic_store(cell, ptr, scope_of(s), sem, c);
                }
            }
            StoreKind::Volatile if self.volatile_is_atomic(space, d) => {
                let idx = self.v(place.index);
                let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                let c = self.reg_to_cell(d, cell, v);
                self.atomic_store(cell, ptr, space_scope(space), MemorySemantics::VOLATILE, c);
            }
            _ => {
                let idx = self.v(place.index);
                let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                let c = self.reg_to_cell(d, cell, v);
                let mut ops = vec![Operand::IdRef(ptr), Operand::IdRef(c)];
                ops.extend(self.access_operands(space, kind == StoreKind::Volatile, true));
                self.op(Op::Store, None, ops);
            }
        }
        Ok(())
    }

    /// `new` from `old` (registers of dtype `t`).
    fn rmw_compute(&mut self, inst: &Inst, t: DType, rmw: Rmw, old: Word) -> Result<Word, TraceError> {
        match rmw {
            Rmw::Op(AtomicOp::Exchange, v) => Ok(v),
            Rmw::Op(op, v) => {
                let b = op.binop().expect("exchange is handled above");
                self.binary_ids(inst, t, b, old, v)
            }
            Rmw::Cas { expected, desired } => {
                let eq = self.compare(t, CmpOp::Eq, old, expected);
                Ok(self.op_t(Op::Select, reg_ty(t), &[eq, desired, old]))
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
        let t = self.k.array_dtype(place.array);
        let space = self.k.array_space(place.array);
        let v = self.v(value);
        let rmw = Rmw::Op(op, v);
        let old = if space == AddressSpace::Local {
            self.private_rmw(inst, place, t, rmw)?
        } else {
            let cell = cell_ty(space, t);
            let sem = self.sem(ordering, Role::Rmw);
            let native_int = match (t, op) {
                (DType::I32 | DType::U32 | DType::I64 | DType::U64, AtomicOp::Mul) => None,
                (DType::I32 | DType::U32 | DType::I64 | DType::U64, _) => Some(op),
                (_, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Exchange)
                    if t.is_int() && cell == Ty::U32 =>
                {
                    Some(op)
                }
                (_, AtomicOp::Exchange) if t.is_float() && cell != Ty::U16 => Some(op),
                _ => None,
            };
            let caps = &self.target.caps;
            let native_float = match t {
                DType::F32 if caps.float32_atomic_add => Some((Capability::AtomicFloat32AddEXT, View::F32, Ty::F32)),
                DType::F64 if caps.float64_atomic_add => Some((Capability::AtomicFloat64AddEXT, View::F64, Ty::F64)),
                DType::F16 if caps.float16_atomic_add && caps.float16 && caps.int16_storage => {
                    Some((Capability::AtomicFloat16AddEXT, View::F16, Ty::F16))
                }
                _ => None,
            }
            .filter(|_| op == AtomicOp::Add && space == AddressSpace::Global);
            if let Some((capability, view, ty)) = native_float {
                self.m.capability(capability);
                self.m.extension(if ty == Ty::F16 {
                    "SPV_EXT_shader_atomic_float16_add"
                } else {
                    "SPV_EXT_shader_atomic_float_add"
                });
                let idx = self.v(place.index);
                let (ptr, _) = self.elem_ptr(place.array, idx, view);
                let (s, m) = (self.scope(scope_of(scope)), self.c32(sem.bits()));
                let ft = self.m.ty(ty);
                // An f16 register is its 16 bits in a u32 (`types.rs`): widened to f32 (exact) and
                // narrowed by `OpFConvert`, the one 16-bit conversion 16-bit storage allows; back
                // the same way.
                let x = if ty == Ty::F16 {
                    let f = self.half_to_f32(t, v);
                    self.op_t(Op::FConvert, Ty::F16, &[f])
                } else {
                    v
                };
                let r = self.op(
                    Op::AtomicFAddEXT,
                    Some(ft),
                    vec![Operand::IdRef(ptr), Operand::IdScope(s), Operand::IdMemorySemantics(m), Operand::IdRef(x)],
                );
                if ty == Ty::F16 {
                    let f = self.op_t(Op::FConvert, Ty::F32, &[r]);
                    self.f32_to_half(t, f)
                } else {
                    r
                }
            } else if let Some(op) = native_int {
                let idx = self.v(place.index);
                let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
                let signed = t.is_signed_int();
                let o = match op {
                    AtomicOp::Add => Op::AtomicIAdd,
                    AtomicOp::Min if signed => Op::AtomicSMin,
                    AtomicOp::Min => Op::AtomicUMin,
                    AtomicOp::Max if signed => Op::AtomicSMax,
                    AtomicOp::Max => Op::AtomicUMax,
                    AtomicOp::And => Op::AtomicAnd,
                    AtomicOp::Or => Op::AtomicOr,
                    AtomicOp::Xor => Op::AtomicXor,
                    AtomicOp::Exchange => Op::AtomicExchange,
                    AtomicOp::Mul => unreachable!("a CAS loop"),
                };
                self.note_atomic(cell);
                let c = self.reg_to_cell(t, cell, v);
                let (s, m) = (self.scope(scope_of(scope)), self.c32(sem.bits()));
                let ty = self.m.ty(cell);
                let r = self.op(
                    o,
                    Some(ty),
                    vec![Operand::IdRef(ptr), Operand::IdScope(s), Operand::IdMemorySemantics(m), Operand::IdRef(c)],
                );
                self.cell_to_reg(t, cell, r)
            } else {
                // `spirv::caps::support` answers these `Polyfill { CasLoop }` (or `SubwordCasLoop`
                // for narrow device elements), and `lower_kernel` rewrote them into the IR.
                return Err(self.not_legalized(inst, t));
            }
        };
        if let Some(d) = dst {
            self.set(d, old);
        }
        Ok(())
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
        let t = self.k.array_dtype(place.array);
        let space = self.k.array_space(place.array);
        let rmw = Rmw::Cas { expected: self.v(expected), desired: self.v(desired) };
        let old = if space == AddressSpace::Local {
            self.private_rmw(inst, place, t, rmw)?
        } else if matches!(cell_ty(space, t), Ty::U8 | Ty::U16) {
            return Err(self.not_legalized(inst, t));
        } else {
            let idx = self.v(place.index);
            let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
            let (e, n) = (self.v(expected), self.v(desired));
            let (e, n) = (self.reg_to_cell(t, cell, e), self.reg_to_cell(t, cell, n));
            let r = self.compare_exchange(cell, ptr, scope_of(scope), ordering, n, e);
            self.cell_to_reg(t, cell, r)
        };
        self.set(dst, old);
        Ok(())
    }

    /// `OpAtomicCompareExchange`: stores `new` if the cell holds `cmp`; returns what it held.
    fn compare_exchange(&mut self, cell: Ty, ptr: Word, scope: u32, o: Ordering, new: Word, cmp: Word) -> Word {
        self.note_atomic(cell);
        let s = self.scope(scope);
        let eq = self.c32(self.sem(o, Role::Rmw).bits());
        // What a compare-exchange does when it fails: at most the acquire half.
        let ne = self.c32(self.sem(o, Role::Load).bits());
        let ty = self.m.ty(cell);
        self.op(
            Op::AtomicCompareExchange,
            Some(ty),
            vec![
                Operand::IdRef(ptr),
                Operand::IdScope(s),
                Operand::IdMemorySemantics(eq),
                Operand::IdMemorySemantics(ne),
                Operand::IdRef(new),
                Operand::IdRef(cmp),
            ],
        )
    }

    /// A private read-modify-write: load, compute, store.
    fn private_rmw(&mut self, inst: &Inst, place: &Place, t: DType, rmw: Rmw) -> Result<Word, TraceError> {
        let idx = self.v(place.index);
        let (ptr, cell) = self.elem_ptr(place.array, idx, View::Natural);
        let c = self.load(cell, ptr);
        let old = self.cell_to_reg(t, cell, c);
        let new = self.rmw_compute(inst, t, rmw, old)?;
        let nc = self.reg_to_cell(t, cell, new);
        self.store(ptr, nc);
        Ok(old)
    }

    /// An atomic SPIR-V lacks reached the lowering: `lower_kernel` rewrites those into CAS loops
    /// first (`target::legalize_atomics`), so only IR that skipped the rewrite gets here.
    fn not_legalized(&self, inst: &Inst, t: DType) -> TraceError {
        self.err(
            inst,
            format!(
                "`{}` on {t} has no native SPIR-V form and was not rewritten into a CAS loop \
                 (lower kernels with spirv::lower_kernel or Spirv::lower, which run the rewrite)",
                inst.kind.mnemonic()
            ),
        )
    }

    /// `word_shift`: the bit offset of a narrow device element within its u32 word.
    pub(super) fn word_shift(&mut self, inst: &Inst, dst: ValueId, place: &Place) -> Result<(), TraceError> {
        self.require_word_view(inst, place)?;
        let (_, shift) = self.word_of(place.array, place.index);
        self.set(dst, shift);
        Ok(())
    }

    /// `atomic_cas_word`: `OpAtomicCompareExchange` on the u32 word holding a narrow device element.
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
        self.require_word_view(inst, place)?;
        let (ptr, _) = self.word_of(place.array, place.index);
        let (e, n) = (self.v(expected), self.v(desired));
        let seen = self.compare_exchange(Ty::U32, ptr, scope_of(scope), ordering, n, e);
        self.set(dst, seen);
        Ok(())
    }

    /// Only device arrays of narrow elements have a u32 word view (shared ones use 32-bit cells).
    fn require_word_view(&self, inst: &Inst, place: &Place) -> Result<(), TraceError> {
        let t = self.k.array_dtype(place.array);
        match self.k.array_space(place.array) {
            AddressSpace::Global if matches!(cell_ty(AddressSpace::Global, t), Ty::U8 | Ty::U16) => Ok(()),
            _ => {
                Err(self.err(inst, format!("`{}` needs a device array of 8- or 16-bit elements", inst.kind.mnemonic())))
            }
        }
    }
}
