//! Value types the IR carries (D4), memory spaces, scopes and orderings.

use std::fmt;

/// Element and value types of the IR.
///
/// Every backend gates these through its capability table; `bool` is stored as a `u8` in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum DType {
    /// Boolean (1 bit in registers, one byte in memory).
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Two packed f16 values in 32 bits (atomics with `.noftz`).
    F16x2,
    /// Two packed bf16 values in 32 bits.
    BF16x2,
    /// 128 opaque bits (CAS and exchange only).
    B128,
}

impl DType {
    /// Every type, in declaration order.
    pub const ALL: [DType; 16] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F16x2,
        DType::BF16x2,
        DType::B128,
    ];

    /// Width in bits of a register value of this type (bool counts as 1).
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 1,
            DType::I8 | DType::U8 => 8,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 16,
            DType::I32 | DType::U32 | DType::F32 | DType::F16x2 | DType::BF16x2 => 32,
            DType::I64 | DType::U64 | DType::F64 => 64,
            DType::B128 => 128,
        }
    }

    /// Size in bytes of one element in memory (bool is one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool => 1,
            other => (other.bits() / 8) as usize,
        }
    }

    /// Signed or unsigned integer (not bool).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// Signed integer.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Unsigned integer.
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// Scalar floating point (not the packed forms).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Packed pair of 16-bit floats.
    pub fn is_packed(self) -> bool {
        matches!(self, DType::F16x2 | DType::BF16x2)
    }

    /// A type that arithmetic is defined on (integers and scalar floats).
    pub fn is_numeric(self) -> bool {
        self.is_int() || self.is_float()
    }

    /// The short name used in IR dumps and case ids (`i32`, `f64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16x2 => "f16x2",
            DType::BF16x2 => "bf16x2",
            DType::B128 => "b128",
        }
    }

    /// Parses the short name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where an array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    /// Device memory, visible to every thread of the launch.
    Global,
    /// Block (CTA / workgroup) shared memory.
    Shared,
    /// Shared memory of another CTA in the cluster (sm_90).
    SharedCluster,
    /// Per-thread memory.
    Local,
    /// A generic address (any of the above).
    Generic,
}

impl AddressSpace {
    /// Name used in dumps.
    pub fn name(self) -> &'static str {
        match self {
            AddressSpace::Global => "global",
            AddressSpace::Shared => "shared",
            AddressSpace::SharedCluster => "shared::cluster",
            AddressSpace::Local => "local",
            AddressSpace::Generic => "generic",
        }
    }
}

/// The set of threads a fence or atomic orders with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Scope {
    /// The calling thread only (LLVM `singlethread`).
    Thread,
    /// The subgroup (warp / wave).
    Subgroup,
    /// The block (CTA / workgroup).
    Block,
    /// The thread-block cluster (sm_90).
    Cluster,
    /// Every thread on the device.
    Device,
    /// Device and host.
    System,
}

impl Scope {
    /// Name used in dumps.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Thread => "thread",
            Scope::Subgroup => "subgroup",
            Scope::Block => "block",
            Scope::Cluster => "cluster",
            Scope::Device => "device",
            Scope::System => "system",
        }
    }
}

/// Memory ordering of an atomic, ordered load/store or fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ordering {
    /// No ordering beyond atomicity.
    Relaxed,
    /// Acquire.
    Acquire,
    /// Release.
    Release,
    /// Acquire and release.
    AcqRel,
    /// Sequentially consistent.
    SeqCst,
}

impl Ordering {
    /// Name used in dumps.
    pub fn name(self) -> &'static str {
        match self {
            Ordering::Relaxed => "relaxed",
            Ordering::Acquire => "acquire",
            Ordering::Release => "release",
            Ordering::AcqRel => "acq_rel",
            Ordering::SeqCst => "seq_cst",
        }
    }
}

/// A constant: its type and its bit pattern (zero-extended to 64 bits; b128 constants do not exist).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Const {
    /// The type.
    pub dtype: DType,
    /// The raw bits, zero-extended.
    pub bits: u64,
}

impl Const {
    /// Renders the constant as its typed value (`-3`, `1.5`, `true`).
    pub fn render(&self) -> String {
        let b = self.bits;
        match self.dtype {
            DType::Bool => (b != 0).to_string(),
            DType::I8 => (b as u8 as i8).to_string(),
            DType::I16 => (b as u16 as i16).to_string(),
            DType::I32 => (b as u32 as i32).to_string(),
            DType::I64 => (b as i64).to_string(),
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => b.to_string(),
            DType::F32 => format!("{:?}", f32::from_bits(b as u32)),
            DType::F64 => format!("{:?}", f64::from_bits(b)),
            _ => format!("0x{b:X}"),
        }
    }
}
