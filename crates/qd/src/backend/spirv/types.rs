//! The module under construction: ids, capabilities and extensions, annotations, deduplicated
//! types and constants, and the final assembly into SPIR-V 1.3 words.
//!
//! The memory model is `Vulkan` (capabilities `VulkanMemoryModel` and
//! `VulkanMemoryModelDeviceScope`, extension `SPV_KHR_vulkan_memory_model`, which SPIR-V 1.3 needs
//! and Vulkan 1.2 or `VK_KHR_vulkan_memory_model` accepts) when the device has it, else `GLSL450`.
//!
//! Register representation of IR values (one job of this file: which SPIR-V type holds what):
//!
//! | IR dtype | SPIR-V register | note |
//! |---|---|---|
//! | bool | `OpTypeBool` | stored as a byte (device arrays) or a u32 cell (shared/local) |
//! | i8 … u32 | u32 | narrow signed values sign-extended, narrow unsigned zero-extended |
//! | i64, u64 | u64 | `Int64` |
//! | f16, bf16 | u32 holding the 16 bits | computed in f32 with exact integer conversions |
//! | f32, f64 | f32, f64 | `Float64` for f64 |

use crate::ir::DType;
use rspirv::dr::{self, Instruction, Operand};
use rspirv::spirv::{self, Capability, Decoration, Op, StorageClass, Word};
use std::collections::HashMap;

/// The scalar SPIR-V types this lowering uses (all integers unsigned: signedness is in the opcodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Ty {
    Void,
    Bool,
    U8,
    U16,
    U32,
    U64,
    /// Only as the element of a native f16 atomic add's view (f16 registers are u32 bits).
    F16,
    F32,
    F64,
}

impl Ty {
    /// Bytes in memory (bool has no memory form).
    pub(super) fn size(self) -> u32 {
        match self {
            Ty::Void | Ty::Bool => 0,
            Ty::U8 => 1,
            Ty::U16 | Ty::F16 => 2,
            Ty::U32 | Ty::F32 => 4,
            Ty::U64 | Ty::F64 => 8,
        }
    }
}

/// The register type of an IR value.
pub(super) fn reg_ty(d: DType) -> Ty {
    match d {
        DType::Bool => Ty::Bool,
        DType::I64 | DType::U64 => Ty::U64,
        DType::F32 => Ty::F32,
        DType::F64 => Ty::F64,
        _ => Ty::U32,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TypeKey {
    Scalar(Ty),
    Vector(Ty, u32),
    Pointer(StorageClass, Word),
    Array(Word, u32),
    RuntimeArray(Word),
    Function(Word),
}

/// Sections of the module being built, with id allocation and deduplication.
pub(super) struct ModuleBuilder {
    next_id: Word,
    capabilities: Vec<Capability>,
    extensions: Vec<&'static str>,
    glsl: Option<Word>,
    /// `OpMemoryModel Logical Vulkan` rather than `GLSL450`.
    vulkan_memory_model: bool,
    /// OpEntryPoint / OpExecutionMode are added at the end by the lowering.
    pub(super) entry_points: Vec<Instruction>,
    pub(super) execution_modes: Vec<Instruction>,
    annotations: Vec<Instruction>,
    globals: Vec<Instruction>,
    types: HashMap<TypeKey, Word>,
    constants: HashMap<(Word, u64), Word>,
    bools: [Option<Word>; 2],
}

impl ModuleBuilder {
    /// An empty module; `vulkan_memory_model` selects the Vulkan memory model (else GLSL450).
    pub(super) fn new(vulkan_memory_model: bool) -> ModuleBuilder {
        let mut m = ModuleBuilder {
            next_id: 1,
            capabilities: Vec::new(),
            extensions: Vec::new(),
            glsl: None,
            vulkan_memory_model,
            entry_points: Vec::new(),
            execution_modes: Vec::new(),
            annotations: Vec::new(),
            globals: Vec::new(),
            types: HashMap::new(),
            constants: HashMap::new(),
            bools: [None; 2],
        };
        m.capability(Capability::Shader);
        if vulkan_memory_model {
            // Device scope appears in fences, atomics and volatile accesses on device arrays.
            m.capability(Capability::VulkanMemoryModel);
            m.capability(Capability::VulkanMemoryModelDeviceScope);
            m.extension("SPV_KHR_vulkan_memory_model");
        }
        m
    }

    /// A fresh result id.
    pub(super) fn id(&mut self) -> Word {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Declares a capability once.
    pub(super) fn capability(&mut self, c: Capability) {
        if !self.capabilities.contains(&c) {
            self.capabilities.push(c);
        }
    }

    /// Declares an extension once.
    pub(super) fn extension(&mut self, e: &'static str) {
        if !self.extensions.contains(&e) {
            self.extensions.push(e);
        }
    }

    /// The `GLSL.std.450` extended instruction set.
    pub(super) fn glsl(&mut self) -> Word {
        match self.glsl {
            Some(id) => id,
            None => {
                let id = self.id();
                self.glsl = Some(id);
                id
            }
        }
    }

    /// `OpDecorate target decoration literals...`.
    pub(super) fn decorate(&mut self, target: Word, d: Decoration, literals: &[u32]) {
        let mut ops = vec![Operand::IdRef(target), Operand::Decoration(d)];
        ops.extend(literals.iter().map(|l| Operand::LiteralBit32(*l)));
        self.annotations.push(Instruction::new(Op::Decorate, None, None, ops));
    }

    /// `OpDecorate target BuiltIn b`.
    pub(super) fn decorate_builtin(&mut self, target: Word, b: spirv::BuiltIn) {
        let ops = vec![Operand::IdRef(target), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)];
        self.annotations.push(Instruction::new(Op::Decorate, None, None, ops));
    }

    /// `OpMemberDecorate`.
    pub(super) fn member_decorate(&mut self, target: Word, member: u32, d: Decoration, literals: &[u32]) {
        let mut ops = vec![Operand::IdRef(target), Operand::LiteralBit32(member), Operand::Decoration(d)];
        ops.extend(literals.iter().map(|l| Operand::LiteralBit32(*l)));
        self.annotations.push(Instruction::new(Op::MemberDecorate, None, None, ops));
    }

    fn global(&mut self, op: Op, ty: Option<Word>, ops: Vec<Operand>) -> Word {
        let id = self.id();
        self.globals.push(Instruction::new(op, ty, Some(id), ops));
        id
    }

    fn cached(&mut self, key: TypeKey, op: Op, ops: Vec<Operand>) -> Word {
        if let Some(id) = self.types.get(&key) {
            return *id;
        }
        let id = self.global(op, None, ops);
        self.types.insert(key, id);
        id
    }

    /// A scalar type (declaring the capability it needs).
    pub(super) fn ty(&mut self, t: Ty) -> Word {
        match t {
            Ty::U8 => {
                self.capability(Capability::StorageBuffer8BitAccess);
                self.extension("SPV_KHR_8bit_storage");
            }
            Ty::U16 => self.capability(Capability::StorageBuffer16BitAccess),
            Ty::U64 => self.capability(Capability::Int64),
            Ty::F64 => self.capability(Capability::Float64),
            // A native f16 atomic's result is 16-bit arithmetic: `Float16` (`shaderFloat16`).
            Ty::F16 => {
                self.capability(Capability::Float16);
                self.capability(Capability::StorageBuffer16BitAccess);
            }
            _ => {}
        }
        let (op, ops) = match t {
            Ty::Void => (Op::TypeVoid, vec![]),
            Ty::Bool => (Op::TypeBool, vec![]),
            Ty::U8 => (Op::TypeInt, vec![Operand::LiteralBit32(8), Operand::LiteralBit32(0)]),
            Ty::U16 => (Op::TypeInt, vec![Operand::LiteralBit32(16), Operand::LiteralBit32(0)]),
            Ty::U32 => (Op::TypeInt, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)]),
            Ty::U64 => (Op::TypeInt, vec![Operand::LiteralBit32(64), Operand::LiteralBit32(0)]),
            Ty::F16 => (Op::TypeFloat, vec![Operand::LiteralBit32(16)]),
            Ty::F32 => (Op::TypeFloat, vec![Operand::LiteralBit32(32)]),
            Ty::F64 => (Op::TypeFloat, vec![Operand::LiteralBit32(64)]),
        };
        self.cached(TypeKey::Scalar(t), op, ops)
    }

    /// A vector of `n` scalars.
    pub(super) fn vector(&mut self, t: Ty, n: u32) -> Word {
        let e = self.ty(t);
        self.cached(TypeKey::Vector(t, n), Op::TypeVector, vec![Operand::IdRef(e), Operand::LiteralBit32(n)])
    }

    /// A pointer type.
    pub(super) fn pointer(&mut self, sc: StorageClass, pointee: Word) -> Word {
        self.cached(
            TypeKey::Pointer(sc, pointee),
            Op::TypePointer,
            vec![Operand::StorageClass(sc), Operand::IdRef(pointee)],
        )
    }

    /// A fixed-size array (Workgroup and Function storage: no explicit layout).
    pub(super) fn array(&mut self, elem: Word, len: u32) -> Word {
        if let Some(id) = self.types.get(&TypeKey::Array(elem, len)) {
            return *id;
        }
        let n = self.const_u32(len);
        self.cached(TypeKey::Array(elem, len), Op::TypeArray, vec![Operand::IdRef(elem), Operand::IdRef(n)])
    }

    /// A runtime array of `t` with its natural `ArrayStride` (storage buffers).
    pub(super) fn runtime_array(&mut self, t: Ty) -> Word {
        let e = self.ty(t);
        if let Some(id) = self.types.get(&TypeKey::RuntimeArray(e)) {
            return *id;
        }
        let id = self.cached(TypeKey::RuntimeArray(e), Op::TypeRuntimeArray, vec![Operand::IdRef(e)]);
        self.decorate(id, Decoration::ArrayStride, &[t.size()]);
        id
    }

    /// A fresh `Block` struct holding one runtime array of `t` at offset 0.
    pub(super) fn buffer_struct(&mut self, t: Ty) -> Word {
        let rta = self.runtime_array(t);
        let s = self.global(Op::TypeStruct, None, vec![Operand::IdRef(rta)]);
        self.decorate(s, Decoration::Block, &[]);
        self.member_decorate(s, 0, Decoration::Offset, &[0]);
        s
    }

    /// `void fn()`.
    pub(super) fn void_fn(&mut self) -> Word {
        let v = self.ty(Ty::Void);
        self.cached(TypeKey::Function(v), Op::TypeFunction, vec![Operand::IdRef(v)])
    }

    /// A module-scope variable.
    pub(super) fn global_var(&mut self, ptr_ty: Word, sc: StorageClass) -> Word {
        self.global(Op::Variable, Some(ptr_ty), vec![Operand::StorageClass(sc)])
    }

    /// A constant of scalar type `t` from its bits (bool: nonzero is true).
    pub(super) fn constant(&mut self, t: Ty, bits: u64) -> Word {
        if t == Ty::Bool {
            let b = (bits != 0) as usize;
            if let Some(id) = self.bools[b] {
                return id;
            }
            let ty = self.ty(Ty::Bool);
            let id = self.global(if b == 1 { Op::ConstantTrue } else { Op::ConstantFalse }, Some(ty), vec![]);
            self.bools[b] = Some(id);
            return id;
        }
        let ty = self.ty(t);
        let bits = match t.size() {
            8 => bits,
            4 => bits & 0xFFFF_FFFF,
            2 => bits & 0xFFFF,
            _ => bits & 0xFF,
        };
        if let Some(id) = self.constants.get(&(ty, bits)) {
            return *id;
        }
        let value = if t.size() == 8 { Operand::LiteralBit64(bits) } else { Operand::LiteralBit32(bits as u32) };
        let id = self.global(Op::Constant, Some(ty), vec![value]);
        self.constants.insert((ty, bits), id);
        id
    }

    /// A u32 constant.
    pub(super) fn const_u32(&mut self, v: u32) -> Word {
        self.constant(Ty::U32, v as u64)
    }

    /// Assembles the module around one function.
    pub(super) fn assemble(mut self, function: dr::Function) -> Vec<u32> {
        use rspirv::binary::Assemble;
        let mut module = dr::Module::new();
        let mut header = dr::ModuleHeader::new(0);
        header.set_version(1, 3);
        module.capabilities = self
            .capabilities
            .iter()
            .map(|c| Instruction::new(Op::Capability, None, None, vec![Operand::Capability(*c)]))
            .collect();
        module.extensions = self
            .extensions
            .iter()
            .map(|e| Instruction::new(Op::Extension, None, None, vec![Operand::LiteralString(e.to_string())]))
            .collect();
        if let Some(g) = self.glsl {
            module.ext_inst_imports = vec![Instruction::new(
                Op::ExtInstImport,
                None,
                Some(g),
                vec![Operand::LiteralString("GLSL.std.450".into())],
            )];
        }
        module.memory_model = Some(Instruction::new(
            Op::MemoryModel,
            None,
            None,
            vec![
                Operand::AddressingModel(spirv::AddressingModel::Logical),
                Operand::MemoryModel(if self.vulkan_memory_model {
                    spirv::MemoryModel::Vulkan
                } else {
                    spirv::MemoryModel::GLSL450
                }),
            ],
        ));
        module.entry_points = std::mem::take(&mut self.entry_points);
        module.execution_modes = std::mem::take(&mut self.execution_modes);
        module.annotations = self.annotations;
        module.types_global_values = self.globals;
        module.functions = vec![function];
        header.bound = self.next_id;
        module.header = Some(header);
        module.assemble()
    }
}
