//! Lowering a verified kernel to one SPIR-V 1.3 `GLCompute` module (Vulkan 1.1 environment).
//!
//! * **ABI** ([`ParamAbi`]): descriptor set 0; binding 0 is the parameter block, a storage buffer
//!   of u64 slots (read as pairs of u32 words), one per parameter: an array's element count, a
//!   scalar's bits zero-extended. Array parameter `j` (counting arrays only) is the storage buffer at
//!   binding `1 + j`, a runtime array of its element type with its natural stride. The grid is 1-D;
//!   a block is a workgroup of `block_dim` invocations.
//! * **Control flow** is structured: `If` is an `OpSelectionMerge`, `Loop` and `GridStride` an
//!   `OpLoopMerge` with a continue block; `Break`/`Continue` branch to the innermost loop's merge or
//!   continue target, `Return` is `OpReturn`. Code after one of those is dead: it is not emitted,
//!   and a merge block no path reaches holds `OpUnreachable`.
//! * **Locals** (`let mut`, D2) are `Function` variables; shared arrays are `Workgroup` arrays and
//!   per-thread arrays `Function` arrays, both of 32-bit cells for elements of 32 bits or less
//!   (64-bit cells for 64-bit elements), so no 8/16-bit arithmetic capability is needed.
//! * Arithmetic (`arith.rs`), memory and atomics (`memory.rs`) follow the emulator's
//!   D5/D6 semantics; shuffles and broadcasts are in `subgroup.rs`; ballots, votes, barriers,
//!   fences and special registers are here.
//! * **Memory model**: `Vulkan` where the device has it ([`SpirvCaps::vulkan_memory_model`](super::SpirvCaps)):
//!   block barriers and fences are acquire-release on uniform and workgroup memory with
//!   `MakeAvailable|MakeVisible` (D6: a block barrier and a block fence order device memory too),
//!   at workgroup scope for `block.sync`/`block.mem_fence`, device scope for `grid.mem_fence`,
//!   subgroup scope for `subgroup.mem_fence`. Otherwise `GLSL450`, where the same barriers carry no
//!   availability flags and cross-thread ordering is not guaranteed.

use super::caps::SpirvTarget;
use super::types::{reg_ty, ModuleBuilder, Ty};
use crate::ir::*;
use crate::trace::TraceError;
use rspirv::dr::{self, Instruction, Operand};
use rspirv::spirv::{self, BuiltIn, Capability, Decoration, Op, StorageClass, Word};
use std::collections::HashMap;

/// How one kernel parameter is bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamAbi {
    /// A device array: a storage buffer at `binding` (a runtime array of `dtype`, natural stride;
    /// bool as one byte); its element count is in the parameter block's slot.
    Array {
        /// Element type.
        dtype: DType,
        /// Binding in descriptor set 0 (`1 +` its index among the array parameters).
        binding: u32,
    },
    /// A scalar: its bits, zero-extended, in the parameter block's slot (bool as 0/1).
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// A lowered kernel.
#[derive(Clone, Debug)]
pub struct SpirvModule {
    /// SPIR-V 1.3 binary (Vulkan 1.1 environment).
    pub words: Vec<u32>,
    /// The `OpEntryPoint GLCompute` name.
    pub entry: String,
    /// `LocalSize` x (= the kernel's `block_dim`).
    pub workgroup_size: u32,
    /// One per kernel parameter, in order.
    pub params: Vec<ParamAbi>,
    /// Bytes of workgroup memory the module declares.
    pub shared_bytes: u32,
}

/// Scope ids of SPIR-V (`Scope` enumerants).
pub(super) const SCOPE_DEVICE: u32 = 1;
pub(super) const SCOPE_WORKGROUP: u32 = 2;
pub(super) const SCOPE_SUBGROUP: u32 = 3;

/// A storage buffer view of an array parameter (several views alias one binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum View {
    /// Elements of their natural width (u8, u16, u32, u64 bit patterns).
    Natural,
    /// The same bytes as u32 words (atomics and ordered access on 8/16-bit elements).
    Word32,
    /// The same bytes as f32 (native `OpAtomicFAddEXT`).
    F32,
    /// The same bytes as f64 (native `OpAtomicFAddEXT`).
    F64,
    /// The same bytes as f16 (native `OpAtomicFAddEXT`).
    F16,
}

pub(super) struct LoopCtx {
    pub(super) merge: Word,
    pub(super) cont: Word,
    pub(super) merge_reached: bool,
    pub(super) cont_reached: bool,
}

pub(super) struct Lower<'k> {
    pub(super) k: &'k Kernel,
    pub(super) target: &'k SpirvTarget,
    pub(super) m: ModuleBuilder,
    pub(super) blocks: Vec<dr::Block>,
    pub(super) cur: Option<dr::Block>,
    pub(super) fn_vars: Vec<Instruction>,
    pub(super) vals: Vec<Word>,
    pub(super) consts: HashMap<ValueId, u64>,
    locals: Vec<Option<Word>>,
    pub(super) loops: Vec<LoopCtx>,
    /// Per parameter: its binding (arrays) and the views declared so far.
    pub(super) bindings: Vec<Option<u32>>,
    pub(super) views: HashMap<(u32, View), Word>,
    pub(super) shared_vars: Vec<Word>,
    pub(super) local_vars: Vec<Option<Word>>,
    builtins: HashMap<BuiltIn, Word>,
    interface: Vec<Word>,
    param_block: Word,
}

/// The cell type of an element of `d` in shared or per-thread memory (32 bits at least).
pub(super) fn cell_ty(space: AddressSpace, d: DType) -> Ty {
    match (space, d.bits()) {
        (_, 64) => Ty::U64,
        (AddressSpace::Global, 1 | 8) => Ty::U8,
        (AddressSpace::Global, 16) => Ty::U16,
        _ => Ty::U32,
    }
}

/// Lowers `kernel` (traced with `Target::vulkan(target.subgroup_size, ..)`) to a SPIR-V module.
///
/// Everything this backend cannot express — the NVIDIA-only families, a block barrier with a fused
/// reduction, b128 and packed values, types and atomics the device's caps lack, more shared memory
/// than it has — is a [`TraceError`] naming the op, the user's line and "vulkan".
#[track_caller]
pub fn lower_kernel(kernel: &Kernel, target: &SpirvTarget) -> Result<SpirvModule, TraceError> {
    let caller = SrcLoc::caller();
    if kernel.subgroup_size != target.subgroup_size {
        return Err(TraceError {
            kernel: kernel.name.clone(),
            op: "spirv.module".into(),
            loc: caller,
            message: format!(
                "the kernel was traced for {}-lane subgroups but the vulkan target has {}",
                kernel.subgroup_size, target.subgroup_size
            ),
            unsupported: None,
        });
    }
    crate::target::check(kernel, &target.trace_target(), caller)?;
    let mut optimized = kernel.clone();
    // The atomics SPIR-V lacks become CAS loops in the IR first (one rewrite for every backend).
    crate::target::legalize_atomics(&mut optimized, &target.trace_target());
    crate::ir::passes::optimize(&mut optimized);
    let k = &optimized;
    let mut l = Lower {
        k,
        target,
        m: ModuleBuilder::new(target.caps.vulkan_memory_model),
        blocks: Vec::new(),
        cur: None,
        fn_vars: Vec::new(),
        vals: vec![0; k.values.len()],
        consts: HashMap::new(),
        locals: vec![None; k.locals.len()],
        loops: Vec::new(),
        bindings: Vec::new(),
        views: HashMap::new(),
        shared_vars: Vec::new(),
        local_vars: vec![None; k.local_arrays.len()],
        builtins: HashMap::new(),
        interface: Vec::new(),
        param_block: 0,
    };
    // Shared memory: one Workgroup array per shared array (the check counted its 32-bit cells).
    let mut shared_bytes = 0u32;
    for s in &k.shared {
        let cell = cell_ty(AddressSpace::Shared, s.dtype);
        shared_bytes += cell.size() * s.len;
        let c = l.m.ty(cell);
        let arr = l.m.array(c, s.len);
        let ptr = l.m.pointer(StorageClass::Workgroup, arr);
        let var = l.m.global_var(ptr, StorageClass::Workgroup);
        l.shared_vars.push(var);
    }
    // The parameter block (binding 0).
    let pb_struct = l.m.buffer_struct(Ty::U32);
    l.m.member_decorate(pb_struct, 0, Decoration::NonWritable, &[]);
    let pb_ptr = l.m.pointer(StorageClass::StorageBuffer, pb_struct);
    l.param_block = l.m.global_var(pb_ptr, StorageClass::StorageBuffer);
    l.m.decorate(l.param_block, Decoration::DescriptorSet, &[0]);
    l.m.decorate(l.param_block, Decoration::Binding, &[0]);
    let mut params = Vec::new();
    let mut next_binding = 1;
    for p in &k.params {
        match p {
            Param::Array { dtype, .. } => {
                params.push(ParamAbi::Array { dtype: *dtype, binding: next_binding });
                l.bindings.push(Some(next_binding));
                next_binding += 1;
            }
            Param::Scalar { dtype, .. } => {
                params.push(ParamAbi::Scalar { dtype: *dtype });
                l.bindings.push(None);
            }
        }
    }

    let void = l.m.ty(Ty::Void);
    let fn_ty = l.m.void_fn();
    let fn_id = l.m.id();
    let entry_label = l.m.id();
    l.begin(entry_label);
    // Scalar parameters are read once, in the entry block (which dominates every use).
    for (i, p) in k.params.iter().enumerate() {
        if let Param::Scalar { dtype, value, .. } = p {
            let v = l.read_scalar_param(i as u32, *dtype);
            l.vals[value.0 as usize] = v;
        }
    }
    l.block(&k.body.insts)?;
    if l.cur.is_some() {
        l.term(Op::Return, vec![]);
    }
    let mut blocks = std::mem::take(&mut l.blocks);
    let vars = std::mem::take(&mut l.fn_vars);
    blocks[0].instructions.splice(0..0, vars);
    let function = dr::Function {
        def: Some(Instruction::new(
            Op::Function,
            Some(void),
            Some(fn_id),
            vec![Operand::FunctionControl(spirv::FunctionControl::NONE), Operand::IdRef(fn_ty)],
        )),
        end: Some(Instruction::new(Op::FunctionEnd, None, None, vec![])),
        parameters: vec![],
        blocks,
    };
    let entry = k.name.clone();
    let mut ep = vec![
        Operand::ExecutionModel(spirv::ExecutionModel::GLCompute),
        Operand::IdRef(fn_id),
        Operand::LiteralString(entry.clone()),
    ];
    ep.extend(l.interface.iter().map(|v| Operand::IdRef(*v)));
    l.m.entry_points.push(Instruction::new(Op::EntryPoint, None, None, ep));
    l.m.execution_modes.push(Instruction::new(
        Op::ExecutionMode,
        None,
        None,
        vec![
            Operand::IdRef(fn_id),
            Operand::ExecutionMode(spirv::ExecutionMode::LocalSize),
            Operand::LiteralBit32(k.block_dim),
            Operand::LiteralBit32(1),
            Operand::LiteralBit32(1),
        ],
    ));
    for width in signed_zero_widths(k, &l.target.caps) {
        l.m.capability(spirv::Capability::SignedZeroInfNanPreserve);
        l.m.extension("SPV_KHR_float_controls");
        l.m.execution_modes.push(Instruction::new(
            Op::ExecutionMode,
            None,
            None,
            vec![
                Operand::IdRef(fn_id),
                Operand::ExecutionMode(spirv::ExecutionMode::SignedZeroInfNanPreserve),
                Operand::LiteralBit32(width),
            ],
        ));
    }
    let words = l.m.assemble(function);
    Ok(SpirvModule { words, entry, workgroup_size: k.block_dim, params, shared_bytes })
}

/// The float widths (32: f32, f16 and bf16, computed in f32; 64: f64) whose signed zeros the
/// module asks the driver to keep: those a float negation computes in (seed 003's float
/// `atomic_sub` is `add(x, -y)`, whose `-0.0` a driver may otherwise drop), where the device
/// offers the mode. Other kernels leave the driver its float freedom; the check refuses a kernel
/// that declares [`Feature::SignedZeros`](crate::target::Feature::SignedZeros) on a device without it.
fn signed_zero_widths(k: &Kernel, caps: &super::SpirvCaps) -> Vec<u32> {
    let mut widths = Vec::new();
    k.body.walk(&mut |inst| {
        if let InstKind::Unary { dst, op: UnOp::Neg, .. } = inst.kind {
            let d = k.values[dst.0 as usize];
            let w = if d == DType::F64 { 64 } else { 32 };
            let has = if w == 64 { caps.signed_zeros64 } else { caps.signed_zeros32 };
            if d.is_float() && has && !widths.contains(&w) {
                widths.push(w);
            }
        }
    });
    widths.sort_unstable();
    widths
}

impl Lower<'_> {
    // ----- emission primitives -----

    /// Appends an instruction to the current block; returns its result id (0 when it has none).
    pub(super) fn op(&mut self, op: Op, ty: Option<Word>, operands: Vec<Operand>) -> Word {
        if self.cur.is_none() {
            // Unreachable code: it goes into a fresh block no branch targets.
            let label = self.m.id();
            self.begin(label);
        }
        let id = ty.map(|_| self.m.id());
        self.cur.as_mut().expect("a current block").instructions.push(Instruction::new(op, ty, id, operands));
        id.unwrap_or(0)
    }

    /// An instruction with a result of scalar type `t` and id operands.
    pub(super) fn op_t(&mut self, op: Op, t: Ty, args: &[Word]) -> Word {
        let ty = self.m.ty(t);
        self.op(op, Some(ty), args.iter().map(|a| Operand::IdRef(*a)).collect())
    }

    /// A `GLSL.std.450` instruction of result type `t`.
    pub(super) fn glsl(&mut self, t: Ty, inst: u32, args: &[Word]) -> Word {
        let set = self.m.glsl();
        let ty = self.m.ty(t);
        let mut ops = vec![Operand::IdRef(set), Operand::LiteralExtInstInteger(inst)];
        ops.extend(args.iter().map(|a| Operand::IdRef(*a)));
        self.op(Op::ExtInst, Some(ty), ops)
    }

    /// Ends the current block with a terminator.
    pub(super) fn term(&mut self, op: Op, operands: Vec<Operand>) {
        if self.cur.is_none() {
            let label = self.m.id();
            self.begin(label);
        }
        let mut b = self.cur.take().expect("a current block");
        b.instructions.push(Instruction::new(op, None, None, operands));
        self.blocks.push(b);
    }

    /// Starts the block labelled `label` (the previous one must be terminated).
    pub(super) fn begin(&mut self, label: Word) {
        assert!(self.cur.is_none(), "a block begins while another is open");
        self.cur = Some(dr::Block {
            label: Some(Instruction::new(Op::Label, None, Some(label), vec![])),
            instructions: Vec::new(),
        });
    }

    pub(super) fn branch(&mut self, target: Word) {
        self.term(Op::Branch, vec![Operand::IdRef(target)]);
    }

    pub(super) fn branch_cond(&mut self, cond: Word, t: Word, f: Word) {
        self.term(Op::BranchConditional, vec![Operand::IdRef(cond), Operand::IdRef(t), Operand::IdRef(f)]);
    }

    /// A `Function` variable of type `pointee` (declared at the top of the entry block).
    pub(super) fn fn_var(&mut self, pointee: Word) -> Word {
        let ptr = self.m.pointer(StorageClass::Function, pointee);
        let id = self.m.id();
        self.fn_vars.push(Instruction::new(
            Op::Variable,
            Some(ptr),
            Some(id),
            vec![Operand::StorageClass(StorageClass::Function)],
        ));
        id
    }

    pub(super) fn load(&mut self, t: Ty, ptr: Word) -> Word {
        self.op_t(Op::Load, t, &[ptr])
    }

    pub(super) fn store(&mut self, ptr: Word, v: Word) {
        self.op(Op::Store, None, vec![Operand::IdRef(ptr), Operand::IdRef(v)]);
    }

    pub(super) fn c32(&mut self, v: u32) -> Word {
        self.m.const_u32(v)
    }

    pub(super) fn cst(&mut self, t: Ty, bits: u64) -> Word {
        self.m.constant(t, bits)
    }

    /// The id of an IR value.
    pub(super) fn v(&self, v: ValueId) -> Word {
        let id = self.vals[v.0 as usize];
        assert!(id != 0, "value %{} used before it was lowered", v.0);
        id
    }

    pub(super) fn d(&self, v: ValueId) -> DType {
        self.k.dtype(v)
    }

    pub(super) fn set(&mut self, v: ValueId, id: Word) {
        self.vals[v.0 as usize] = id;
    }

    pub(super) fn err(&self, inst: &Inst, message: impl Into<String>) -> TraceError {
        TraceError {
            kernel: self.k.name.clone(),
            op: inst.op_name(),
            loc: inst.loc,
            message: message.into(),
            unsupported: None,
        }
    }

    pub(super) fn scope(&mut self, s: u32) -> Word {
        self.c32(s)
    }

    /// Whether the module uses the Vulkan memory model (else GLSL450).
    pub(super) fn vulkan_memory_model(&self) -> bool {
        self.target.caps.vulkan_memory_model
    }

    /// The semantics of every fence and block barrier: acquire-release on device (uniform) and
    /// shared (workgroup) memory, D6; under the Vulkan memory model also an availability operation
    /// before and a visibility operation after, so plain (non-private) accesses on either side of
    /// it are ordered and see each other's writes within the barrier's scope.
    pub(super) fn fence_semantics(&self) -> spirv::MemorySemantics {
        use spirv::MemorySemantics as S;
        let sem = S::ACQUIRE_RELEASE | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY;
        if self.vulkan_memory_model() {
            sem | S::MAKE_AVAILABLE | S::MAKE_VISIBLE
        } else {
            sem
        }
    }

    // ----- parameters and built-ins -----

    /// The u32 word `w` of the parameter block.
    fn param_word(&mut self, w: u32) -> Word {
        let u32t = self.m.ty(Ty::U32);
        let ptr = self.m.pointer(StorageClass::StorageBuffer, u32t);
        let zero = self.c32(0);
        let idx = self.c32(w);
        let pb = self.param_block;
        let p =
            self.op(Op::AccessChain, Some(ptr), vec![Operand::IdRef(pb), Operand::IdRef(zero), Operand::IdRef(idx)]);
        self.load(Ty::U32, p)
    }

    fn read_scalar_param(&mut self, i: u32, d: DType) -> Word {
        let lo = self.param_word(2 * i);
        match reg_ty(d) {
            Ty::Bool => {
                let z = self.c32(0);
                self.op_t(Op::INotEqual, Ty::Bool, &[lo, z])
            }
            Ty::U64 | Ty::F64 => {
                let hi = self.param_word(2 * i + 1);
                let v2 = self.m.vector(Ty::U32, 2);
                let pair = self.op(Op::CompositeConstruct, Some(v2), vec![Operand::IdRef(lo), Operand::IdRef(hi)]);
                self.op_t(Op::Bitcast, reg_ty(d), &[pair])
            }
            Ty::F32 => self.op_t(Op::Bitcast, Ty::F32, &[lo]),
            _ => self.canonical(d, lo),
        }
    }

    /// An array parameter's element count (the parameter block's slot).
    pub(super) fn array_len(&mut self, param: u32) -> Word {
        self.param_word(2 * param)
    }

    /// The `Input` variable of a built-in (declared once, listed on the entry point).
    fn builtin_var(&mut self, b: BuiltIn) -> (Word, bool) {
        let vector = !matches!(b, BuiltIn::SubgroupLocalInvocationId);
        if let Some(v) = self.builtins.get(&b) {
            return (*v, vector);
        }
        let ty = if vector { self.m.vector(Ty::U32, 3) } else { self.m.ty(Ty::U32) };
        let ptr = self.m.pointer(StorageClass::Input, ty);
        let var = self.m.global_var(ptr, StorageClass::Input);
        self.m.decorate_builtin(var, b);
        self.builtins.insert(b, var);
        self.interface.push(var);
        (var, vector)
    }

    /// The x component (or the scalar) of a built-in.
    pub(super) fn builtin(&mut self, b: BuiltIn) -> Word {
        if b == BuiltIn::SubgroupLocalInvocationId {
            self.m.capability(Capability::GroupNonUniform);
        }
        let (var, vector) = self.builtin_var(b);
        if vector {
            let v3 = self.m.vector(Ty::U32, 3);
            let all = self.op(Op::Load, Some(v3), vec![Operand::IdRef(var)]);
            let u32t = self.m.ty(Ty::U32);
            self.op(Op::CompositeExtract, Some(u32t), vec![Operand::IdRef(all), Operand::LiteralBit32(0)])
        } else {
            self.load(Ty::U32, var)
        }
    }

    pub(super) fn lane_id(&mut self) -> Word {
        self.builtin(BuiltIn::SubgroupLocalInvocationId)
    }

    fn special(&mut self, reg: Special) -> Word {
        match reg {
            Special::LaneId => self.lane_id(),
            Special::SubgroupSize => self.c32(self.target.subgroup_size),
            Special::ThreadIdx => self.builtin(BuiltIn::LocalInvocationId),
            Special::BlockIdx => self.builtin(BuiltIn::WorkgroupId),
            Special::BlockDim => self.c32(self.k.block_dim),
            Special::GridDim => self.builtin(BuiltIn::NumWorkgroups),
            Special::GlobalThreadIdx => self.builtin(BuiltIn::GlobalInvocationId),
            Special::Nv(_) => unreachable!("rejected by caps::check"),
        }
    }

    // ----- locals -----

    fn local_var(&mut self, l: LocalId) -> (Word, Ty) {
        let t = reg_ty(self.k.locals[l.0 as usize].dtype);
        if let Some(v) = self.locals[l.0 as usize] {
            return (v, t);
        }
        let ty = self.m.ty(t);
        let var = self.fn_var(ty);
        self.locals[l.0 as usize] = Some(var);
        (var, t)
    }

    // ----- instructions -----

    pub(super) fn block(&mut self, insts: &[Inst]) -> Result<(), TraceError> {
        for inst in insts {
            if self.cur.is_none() {
                // Everything after a break, continue or return in this block is dead.
                break;
            }
            self.inst(inst)?;
        }
        Ok(())
    }

    fn inst(&mut self, inst: &Inst) -> Result<(), TraceError> {
        use InstKind::*;
        match &inst.kind {
            Const { dst, value } => {
                let t = reg_ty(value.dtype);
                let bits = match value.dtype {
                    DType::I8 => value.bits as u8 as i8 as i32 as u32 as u64,
                    DType::I16 => value.bits as u16 as i16 as i32 as u32 as u64,
                    _ => value.bits,
                };
                self.consts.insert(*dst, bits);
                let c = self.cst(t, bits);
                self.set(*dst, c);
            }
            Unary { dst, op, a } => self.unary(inst, *dst, *op, *a)?,
            Binary { dst, op, a, b } => {
                let (x, y, t) = (self.v(*a), self.v(*b), self.d(*a));
                let r = self.binary_ids(inst, t, *op, x, y)?;
                self.set(*dst, r);
            }
            Cmp { dst, op, a, b } => {
                let r = self.compare(self.d(*a), *op, self.v(*a), self.v(*b));
                self.set(*dst, r);
            }
            Select { dst, cond, a, b } => {
                let t = reg_ty(self.d(*dst));
                let r = self.op_t(Op::Select, t, &[self.v(*cond), self.v(*a), self.v(*b)]);
                self.set(*dst, r);
            }
            Cast { dst, a } => {
                let r = self.cast_ids(self.d(*a), self.d(*dst), self.v(*a));
                self.set(*dst, r);
            }
            BitCast { dst, a } => {
                let r = self.bitcast(self.d(*a), self.d(*dst), self.v(*a));
                self.set(*dst, r);
            }
            Fma { dst, a, b, c } => {
                let r = self.fma(self.d(*a), self.v(*a), self.v(*b), self.v(*c));
                self.set(*dst, r);
            }
            Special { dst, reg } => {
                let r = self.special(*reg);
                self.set(*dst, r);
            }
            ArrayLen { dst, array } => {
                let r = match array {
                    ArrayRef::Param(i) => self.array_len(*i),
                    ArrayRef::Shared(i) => self.c32(self.k.shared[*i as usize].len),
                    ArrayRef::Local(i) => self.c32(self.k.local_arrays[*i as usize].len),
                };
                self.set(*dst, r);
            }
            LocalGet { dst, local } => {
                let (var, t) = self.local_var(*local);
                let r = self.load(t, var);
                self.set(*dst, r);
            }
            LocalSet { local, value } => {
                let (var, _) = self.local_var(*local);
                let v = self.v(*value);
                self.store(var, v);
            }
            Load { dst, place, kind } => self.load_inst(inst, *dst, place, *kind)?,
            Store { place, value, kind } => self.store_inst(inst, place, *value, *kind)?,
            Atomic { dst, place, op, value, ordering, scope } => {
                self.atomic(inst, *dst, place, *op, *value, *ordering, *scope)?
            }
            WordShift { dst, place } => self.word_shift(inst, *dst, place)?,
            WordCas { dst, place, expected, desired, ordering, scope } => {
                self.word_cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            Cas { dst, place, expected, desired, ordering, scope } => {
                self.cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            Shuffle { dst, valid, kind, value, lane } => self.shuffle(*dst, *valid, *kind, *value, *lane),
            Broadcast { dst, value, lane } => self.broadcast(*dst, *value, *lane),
            Ballot { dst, pred } => {
                self.m.capability(Capability::GroupNonUniformBallot);
                let v4 = self.m.vector(Ty::U32, 4);
                let sg = self.scope(SCOPE_SUBGROUP);
                let p = self.v(*pred);
                let b = self.op(Op::GroupNonUniformBallot, Some(v4), vec![Operand::IdScope(sg), Operand::IdRef(p)]);
                let v2 = self.m.vector(Ty::U32, 2);
                let lo_hi = self.op(
                    Op::VectorShuffle,
                    Some(v2),
                    vec![Operand::IdRef(b), Operand::IdRef(b), Operand::LiteralBit32(0), Operand::LiteralBit32(1)],
                );
                let r = self.op_t(Op::Bitcast, Ty::U64, &[lo_hi]);
                self.set(*dst, r);
            }
            Vote { dst, kind, pred } => {
                self.m.capability(Capability::GroupNonUniformVote);
                let op = match kind {
                    VoteKind::All => Op::GroupNonUniformAll,
                    VoteKind::Any => Op::GroupNonUniformAny,
                    VoteKind::Uni => Op::GroupNonUniformAllEqual,
                };
                let sg = self.scope(SCOPE_SUBGROUP);
                let p = self.v(*pred);
                let bt = self.m.ty(Ty::Bool);
                let r = self.op(op, Some(bt), vec![Operand::IdScope(sg), Operand::IdRef(p)]);
                self.set(*dst, r);
            }
            BlockBarrier { reduce: None } => {
                // D6: block.sync orders global memory too (UniformMemory).
                let (wg, sem) = (self.scope(SCOPE_WORKGROUP), self.c32(self.fence_semantics().bits()));
                self.op(
                    Op::ControlBarrier,
                    None,
                    vec![Operand::IdScope(wg), Operand::IdScope(wg), Operand::IdMemorySemantics(sem)],
                );
            }
            BlockBarrier { reduce: Some(_) } => unreachable!("rejected by caps::check"),
            SubgroupBarrier => {
                let (sg, none) = (self.scope(SCOPE_SUBGROUP), self.c32(0));
                self.op(
                    Op::ControlBarrier,
                    None,
                    vec![Operand::IdScope(sg), Operand::IdScope(sg), Operand::IdMemorySemantics(none)],
                );
            }
            Fence { scope, .. } => {
                // Every fence is at least acquire-release on all memory (the emulator's are SC); a
                // thread-scope fence orders nothing another thread sees.
                if *scope != crate::ir::Scope::Thread {
                    let s = match scope {
                        crate::ir::Scope::Subgroup => SCOPE_SUBGROUP,
                        crate::ir::Scope::Block => SCOPE_WORKGROUP,
                        _ => SCOPE_DEVICE,
                    };
                    let (s, sem) = (self.scope(s), self.c32(self.fence_semantics().bits()));
                    self.op(Op::MemoryBarrier, None, vec![Operand::IdScope(s), Operand::IdMemorySemantics(sem)]);
                }
            }
            Nv { .. } | SubgroupReduce { .. } => unreachable!("rejected by caps::check"),
            If { cond, then_block, else_block } => {
                let c = self.v(*cond);
                let (then_l, merge) = (self.m.id(), self.m.id());
                let else_l = if else_block.insts.is_empty() { merge } else { self.m.id() };
                self.op(
                    Op::SelectionMerge,
                    None,
                    vec![Operand::IdRef(merge), Operand::SelectionControl(spirv::SelectionControl::NONE)],
                );
                self.branch_cond(c, then_l, else_l);
                let mut reached = else_l == merge;
                self.begin(then_l);
                self.block(&then_block.insts)?;
                if self.cur.is_some() {
                    self.branch(merge);
                    reached = true;
                }
                if else_l != merge {
                    self.begin(else_l);
                    self.block(&else_block.insts)?;
                    if self.cur.is_some() {
                        self.branch(merge);
                        reached = true;
                    }
                }
                self.begin(merge);
                if !reached {
                    self.term(Op::Unreachable, vec![]);
                }
            }
            Loop { body } => {
                let (header, body_l, cont, merge) = (self.m.id(), self.m.id(), self.m.id(), self.m.id());
                self.branch(header);
                self.begin(header);
                self.loop_merge(merge, cont);
                self.branch(body_l);
                self.begin(body_l);
                self.loops.push(LoopCtx { merge, cont, merge_reached: false, cont_reached: false });
                self.block(&body.insts)?;
                if self.cur.is_some() {
                    self.branch(cont);
                }
                let ctx = self.loops.pop().expect("loop context");
                self.begin(cont);
                self.branch(header);
                self.begin(merge);
                if !ctx.merge_reached {
                    self.term(Op::Unreachable, vec![]);
                }
            }
            Break => {
                let ctx = self.loops.last_mut().expect("verified: break inside a loop");
                ctx.merge_reached = true;
                let merge = ctx.merge;
                self.branch(merge);
            }
            Continue => {
                let ctx = self.loops.last_mut().expect("verified: continue inside a loop");
                ctx.cont_reached = true;
                let cont = ctx.cont;
                self.branch(cont);
            }
            Return => self.term(Op::Return, vec![]),
            GridStride { begin, end, index, body } => {
                // Counted in 32 bits without wrapping: `n` iterations (`end - begin` when positive,
                // exact as u32), the offset `k` starts at the global id and steps by the grid's
                // thread count, stopping at `n` instead of stepping past it; `index = begin + k`.
                let u32t = self.m.ty(Ty::U32);
                let var = self.fn_var(u32t);
                let (b, e) = (self.v(*begin), self.v(*end));
                let zero = self.c32(0);
                let nonempty = self.op_t(Op::SLessThan, Ty::Bool, &[b, e]);
                let span = self.op_t(Op::ISub, Ty::U32, &[e, b]);
                let n = self.op_t(Op::Select, Ty::U32, &[nonempty, span, zero]);
                let gid = self.builtin(BuiltIn::GlobalInvocationId);
                self.store(var, gid);
                let (header, body_l, cont, merge) = (self.m.id(), self.m.id(), self.m.id(), self.m.id());
                self.branch(header);
                self.begin(header);
                let k = self.load(Ty::U32, var);
                let more = self.op_t(Op::ULessThan, Ty::Bool, &[k, n]);
                self.loop_merge(merge, cont);
                self.branch_cond(more, body_l, merge);
                self.begin(body_l);
                let i = self.op_t(Op::IAdd, Ty::U32, &[b, k]);
                self.set(*index, i);
                self.loops.push(LoopCtx { merge, cont, merge_reached: true, cont_reached: false });
                self.block(&body.insts)?;
                if self.cur.is_some() {
                    self.branch(cont);
                }
                self.loops.pop();
                self.begin(cont);
                let groups = self.builtin(BuiltIn::NumWorkgroups);
                let bd = self.c32(self.k.block_dim);
                let stride = self.op_t(Op::IMul, Ty::U32, &[groups, bd]);
                let k = self.load(Ty::U32, var);
                let left = self.op_t(Op::ISub, Ty::U32, &[n, k]);
                let room = self.op_t(Op::UGreaterThan, Ty::Bool, &[left, stride]);
                let stepped = self.op_t(Op::IAdd, Ty::U32, &[k, stride]);
                let next = self.op_t(Op::Select, Ty::U32, &[room, stepped, n]);
                self.store(var, next);
                self.branch(header);
                self.begin(merge);
            }
        }
        Ok(())
    }

    pub(super) fn loop_merge(&mut self, merge: Word, cont: Word) {
        self.op(
            Op::LoopMerge,
            None,
            vec![Operand::IdRef(merge), Operand::IdRef(cont), Operand::LoopControl(spirv::LoopControl::NONE)],
        );
    }
}
