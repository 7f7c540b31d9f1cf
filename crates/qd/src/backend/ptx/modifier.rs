//! The atomic/reduction modifier record and its vocabulary (seed 004, D7).
//!
//! Lowering builds an [`AtomicModifier`] (ordering, scope, operation, address space, cache hint,
//! vector width, type, cluster-tail bit), validates it, then the printer reads tokens off it in
//! D7's fixed order: stem, ordering, scope, operation, `.noftz`, vector width, type, address
//! space, cache hint, operands. An absent value (default ordering, implicit scope, generic space)
//! prints nothing.

use std::fmt;

use super::caps::Feature;
use super::errors::PtxError;
use crate::ir::{AddressSpace, AtomicOp, DType, Ordering, Scope};

/// The NVPTX scope vocabulary (seed 004's `NvptxScope`, plus an explicit [`NvptxScope::Gpu`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NvptxScope {
    /// LLVM `singlethread`: no token on atom/red; a fence at this scope prints nothing.
    Thread,
    /// LLVM `block`: `.cta`.
    Cta,
    /// LLVM `cluster`: `.cluster` (sm_90).
    Cluster,
    /// LLVM `device`: the *implicit* GPU scope. No token on atom/red (PTX's default is `.gpu`);
    /// fences print `.gpu`.
    Device,
    /// An explicit GPU scope: `.gpu` everywhere (D7). Packs like [`NvptxScope::Device`].
    Gpu,
    /// LLVM's empty (system) scope: `.sys`.
    System,
}

impl NvptxScope {
    /// The token atom/red print (`None` for thread and the implicit device scope).
    pub fn atom_token(self) -> Option<&'static str> {
        match self {
            NvptxScope::Thread | NvptxScope::Device => None,
            NvptxScope::Cta => Some(".cta"),
            NvptxScope::Cluster => Some(".cluster"),
            NvptxScope::Gpu => Some(".gpu"),
            NvptxScope::System => Some(".sys"),
        }
    }

    /// The token fences and ordered loads/stores print (always one; `None` only for thread scope,
    /// where the fence itself is omitted).
    pub fn fence_token(self) -> Option<&'static str> {
        match self {
            NvptxScope::Thread => None,
            NvptxScope::Cta => Some(".cta"),
            NvptxScope::Cluster => Some(".cluster"),
            NvptxScope::Device | NvptxScope::Gpu => Some(".gpu"),
            NvptxScope::System => Some(".sys"),
        }
    }

    /// Name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            NvptxScope::Thread => "thread",
            NvptxScope::Cta => "cta",
            NvptxScope::Cluster => "cluster",
            NvptxScope::Device => "device",
            NvptxScope::Gpu => "gpu",
            NvptxScope::System => "sys",
        }
    }
}

impl fmt::Display for NvptxScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Scope> for NvptxScope {
    /// IR scopes: a subgroup-scope fence or atomic is block-scoped on CUDA (D6); `Device` is the
    /// implicit device scope.
    fn from(s: Scope) -> NvptxScope {
        match s {
            Scope::Thread => NvptxScope::Thread,
            Scope::Subgroup | Scope::Block => NvptxScope::Cta,
            Scope::Cluster => NvptxScope::Cluster,
            Scope::Device => NvptxScope::Device,
            Scope::System => NvptxScope::System,
        }
    }
}

/// Maps an LLVM syncscope name to the NVPTX scope (seed 004's `map_sync_scope`).
///
/// `""` → system, `singlethread` → thread, `block` → cta, `cluster` → cluster, `device` → the
/// implicit device scope; anything else is "unsupported NVPTX synchronization scope".
pub fn syncscope_from_llvm(name: &str) -> Result<NvptxScope, PtxError> {
    match name {
        "" => Ok(NvptxScope::System),
        "singlethread" => Ok(NvptxScope::Thread),
        "block" => Ok(NvptxScope::Cta),
        "cluster" => Ok(NvptxScope::Cluster),
        "device" => Ok(NvptxScope::Device),
        other => Err(PtxError::UnsupportedSyncScope { name: other.to_string() }),
    }
}

/// Memory ordering, numbered as the seed's `AtomicOrder` (0 in a packed word means "default").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AtomicOrder {
    /// `.relaxed`.
    Relaxed = 1,
    /// `.acquire`.
    Acquire = 2,
    /// `.release`.
    Release = 3,
    /// `.acq_rel`.
    AcqRel = 4,
    /// Sequentially consistent: `.sc` on fences; read-modify-writes print `fence.sc` + `.acquire`.
    SeqCst = 5,
}

impl AtomicOrder {
    /// The `.sem` token (`.sc` for seq_cst, which only fences accept).
    pub fn token(self) -> &'static str {
        match self {
            AtomicOrder::Relaxed => ".relaxed",
            AtomicOrder::Acquire => ".acquire",
            AtomicOrder::Release => ".release",
            AtomicOrder::AcqRel => ".acq_rel",
            AtomicOrder::SeqCst => ".sc",
        }
    }

    /// Name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOrder::Relaxed => "relaxed",
            AtomicOrder::Acquire => "acquire",
            AtomicOrder::Release => "release",
            AtomicOrder::AcqRel => "acq_rel",
            AtomicOrder::SeqCst => "seq_cst",
        }
    }

    /// Parses an LLVM/MLIR atomic ordering name for a read-modify-write (`monotonic`, `acquire`,
    /// `release`, `acq_rel`, `seq_cst`; `relaxed` is accepted as a synonym of `monotonic`).
    /// `unordered`, `not_atomic` and anything else are "unsupported ordering for nvvm.atomic.rmw".
    pub fn from_llvm_rmw(name: &str) -> Result<AtomicOrder, PtxError> {
        match name {
            "monotonic" | "relaxed" => Ok(AtomicOrder::Relaxed),
            "acquire" => Ok(AtomicOrder::Acquire),
            "release" => Ok(AtomicOrder::Release),
            "acq_rel" => Ok(AtomicOrder::AcqRel),
            "seq_cst" => Ok(AtomicOrder::SeqCst),
            other => Err(PtxError::UnsupportedRmwOrdering { ordering: other.to_string() }),
        }
    }
}

impl fmt::Display for AtomicOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Ordering> for AtomicOrder {
    fn from(o: Ordering) -> AtomicOrder {
        match o {
            Ordering::Relaxed => AtomicOrder::Relaxed,
            Ordering::Acquire => AtomicOrder::Acquire,
            Ordering::Release => AtomicOrder::Release,
            Ordering::AcqRel => AtomicOrder::AcqRel,
            Ordering::SeqCst => AtomicOrder::SeqCst,
        }
    }
}

/// Packs ordering, scope and the cluster-tail bit into the modifier word, exactly as the seed's
/// `pack_atomic_modifier`: bits 0..4 the ordering, bits 4..6 the scope (cta 1, system 2,
/// cluster 3; thread, device and gpu 0), bit 9 the cluster tail.
pub fn pack_atomic_modifier(order: AtomicOrder, scope: NvptxScope, cta_cluster_tail: bool) -> u32 {
    pack(order as u32, scope, cta_cluster_tail)
}

fn pack(order_bits: u32, scope: NvptxScope, cta_cluster_tail: bool) -> u32 {
    let mut modifier = order_bits;
    match scope {
        NvptxScope::Cta => modifier |= 1 << 4,
        NvptxScope::System => modifier |= 2 << 4,
        NvptxScope::Cluster => modifier |= 3 << 4,
        NvptxScope::Thread | NvptxScope::Device | NvptxScope::Gpu => {}
    }
    if cta_cluster_tail {
        modifier |= 1 << 9;
    }
    modifier
}

/// Reads ordering, scope and cluster-tail bit back off a packed word. The word does not keep
/// thread, device and gpu apart (all pack as 0); they read back as [`NvptxScope::Device`].
pub fn unpack_atomic_modifier(word: u32) -> (Option<AtomicOrder>, NvptxScope, bool) {
    let order = match word & 0xF {
        1 => Some(AtomicOrder::Relaxed),
        2 => Some(AtomicOrder::Acquire),
        3 => Some(AtomicOrder::Release),
        4 => Some(AtomicOrder::AcqRel),
        5 => Some(AtomicOrder::SeqCst),
        _ => None,
    };
    let scope = match (word >> 4) & 0x3 {
        1 => NvptxScope::Cta,
        2 => NvptxScope::System,
        3 => NvptxScope::Cluster,
        _ => NvptxScope::Device,
    };
    (order, scope, word & (1 << 9) != 0)
}

/// The PTX `atom`/`red` operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomOp {
    /// `.and` (`.b32`/`.b64`).
    And,
    /// `.or`.
    Or,
    /// `.xor`.
    Xor,
    /// `.cas` (atom only; `.b16`..`.b128`).
    Cas,
    /// `.exch` (atom only; `.b32`/`.b64`/`.b128`).
    Exch,
    /// `.add`.
    Add,
    /// `.inc` (`.u32`).
    Inc,
    /// `.dec` (`.u32`).
    Dec,
    /// `.min`.
    Min,
    /// `.max`.
    Max,
}

impl AtomOp {
    /// The operation's name without the dot.
    pub fn name(self) -> &'static str {
        match self {
            AtomOp::And => "and",
            AtomOp::Or => "or",
            AtomOp::Xor => "xor",
            AtomOp::Cas => "cas",
            AtomOp::Exch => "exch",
            AtomOp::Add => "add",
            AtomOp::Inc => "inc",
            AtomOp::Dec => "dec",
            AtomOp::Min => "min",
            AtomOp::Max => "max",
        }
    }

    /// True for the operations `red` has (everything but cas and exch).
    pub fn red_has(self) -> bool {
        !matches!(self, AtomOp::Cas | AtomOp::Exch)
    }
}

/// The type suffix of `atom`/`red`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomType {
    /// `.b16` (cas only).
    B16,
    /// `.b32`.
    B32,
    /// `.b64`.
    B64,
    /// `.b128` (cas/exch, sm_90).
    B128,
    /// `.u32`.
    U32,
    /// `.u64`.
    U64,
    /// `.s32`.
    S32,
    /// `.s64`.
    S64,
    /// `.f32`.
    F32,
    /// `.f64`.
    F64,
    /// `.f16` (with `.noftz`).
    F16,
    /// `.bf16` (with `.noftz`).
    BF16,
    /// `.f16x2` (with `.noftz`).
    F16x2,
    /// `.bf16x2` (with `.noftz`).
    BF16x2,
}

impl AtomType {
    /// The type's name without the dot.
    pub fn name(self) -> &'static str {
        match self {
            AtomType::B16 => "b16",
            AtomType::B32 => "b32",
            AtomType::B64 => "b64",
            AtomType::B128 => "b128",
            AtomType::U32 => "u32",
            AtomType::U64 => "u64",
            AtomType::S32 => "s32",
            AtomType::S64 => "s64",
            AtomType::F32 => "f32",
            AtomType::F64 => "f64",
            AtomType::F16 => "f16",
            AtomType::BF16 => "bf16",
            AtomType::F16x2 => "f16x2",
            AtomType::BF16x2 => "bf16x2",
        }
    }

    /// The 16-bit float and packed types that require `.noftz`.
    pub fn is_half(self) -> bool {
        matches!(self, AtomType::F16 | AtomType::BF16 | AtomType::F16x2 | AtomType::BF16x2)
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            AtomType::B16 | AtomType::F16 | AtomType::BF16 => 16,
            AtomType::B32 | AtomType::U32 | AtomType::S32 | AtomType::F32 | AtomType::F16x2 | AtomType::BF16x2 => 32,
            AtomType::B64 | AtomType::U64 | AtomType::S64 | AtomType::F64 => 64,
            AtomType::B128 => 128,
        }
    }
}

/// The address-space suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomSpace {
    /// Generic addressing: no token.
    Generic,
    /// `.global`.
    Global,
    /// `.shared` (means `.shared::cta`).
    Shared,
    /// `.shared::cta` (PTX 7.8 spelling).
    SharedCta,
    /// `.shared::cluster` (sm_90).
    SharedCluster,
    /// `.local`: never legal for atomics; kept so lowering can name it in the error.
    Local,
}

impl AtomSpace {
    /// The token (`None` for generic).
    pub fn token(self) -> Option<&'static str> {
        match self {
            AtomSpace::Generic => None,
            AtomSpace::Global => Some(".global"),
            AtomSpace::Shared => Some(".shared"),
            AtomSpace::SharedCta => Some(".shared::cta"),
            AtomSpace::SharedCluster => Some(".shared::cluster"),
            AtomSpace::Local => Some(".local"),
        }
    }

    /// Any of the shared spellings.
    pub fn is_shared(self) -> bool {
        matches!(self, AtomSpace::Shared | AtomSpace::SharedCta | AtomSpace::SharedCluster)
    }

    /// Name used in messages.
    pub fn name(self) -> &'static str {
        self.token().unwrap_or("generic")
    }
}

impl From<AddressSpace> for AtomSpace {
    fn from(s: AddressSpace) -> AtomSpace {
        match s {
            AddressSpace::Global => AtomSpace::Global,
            AddressSpace::Shared => AtomSpace::Shared,
            AddressSpace::SharedCluster => AtomSpace::SharedCluster,
            AddressSpace::Local => AtomSpace::Local,
            AddressSpace::Generic => AtomSpace::Generic,
        }
    }
}

/// Vector width of a vector atom/red (sm_90, PTX 8.1; global or generic only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VectorWidth {
    /// `.v2`.
    V2,
    /// `.v4`.
    V4,
    /// `.v8` (16-bit element types only).
    V8,
}

impl VectorWidth {
    /// The token.
    pub fn token(self) -> &'static str {
        match self {
            VectorWidth::V2 => ".v2",
            VectorWidth::V4 => ".v4",
            VectorWidth::V8 => ".v8",
        }
    }
}

/// `.L2::cache_hint` and its 64-bit cache-policy operand (printed after the other operands).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct L2CacheHint {
    /// The `.b64` cache-policy register (e.g. `%rd5`).
    pub policy: String,
}

/// The modifier record of one `atom` or `red`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtomicModifier {
    /// Memory ordering; `None` prints nothing (PTX's default, relaxed).
    pub order: Option<AtomicOrder>,
    /// Scope; [`NvptxScope::Device`] and [`NvptxScope::Thread`] print nothing.
    pub scope: NvptxScope,
    /// The operation.
    pub op: AtomOp,
    /// Address space.
    pub space: AtomSpace,
    /// Optional `.L2::cache_hint` with its policy operand.
    pub cache_hint: Option<L2CacheHint>,
    /// Optional vector width.
    pub vector: Option<VectorWidth>,
    /// Type suffix.
    pub ty: AtomType,
    /// The cluster-tail bit (`.cta::cluster`): packed, but rejected while lowering (D7).
    pub cta_cluster_tail: bool,
}

impl AtomicModifier {
    /// `op` on `ty`, default ordering, implicit device scope, generic address, no hint.
    pub fn new(op: AtomOp, ty: AtomType) -> AtomicModifier {
        AtomicModifier {
            order: None,
            scope: NvptxScope::Device,
            op,
            space: AtomSpace::Generic,
            cache_hint: None,
            vector: None,
            ty,
            cta_cluster_tail: false,
        }
    }

    /// Sets the ordering.
    pub fn order(mut self, order: AtomicOrder) -> AtomicModifier {
        self.order = Some(order);
        self
    }

    /// Sets the scope.
    pub fn scope(mut self, scope: NvptxScope) -> AtomicModifier {
        self.scope = scope;
        self
    }

    /// Sets the address space.
    pub fn space(mut self, space: AtomSpace) -> AtomicModifier {
        self.space = space;
        self
    }

    /// Adds `.L2::cache_hint` with the given cache-policy register.
    pub fn cache_hint(mut self, policy: &str) -> AtomicModifier {
        self.cache_hint = Some(L2CacheHint { policy: policy.to_string() });
        self
    }

    /// Makes it a vector atomic.
    pub fn vector(mut self, width: VectorWidth) -> AtomicModifier {
        self.vector = Some(width);
        self
    }

    /// Sets the cluster-tail bit.
    pub fn cluster_tail(mut self, tail: bool) -> AtomicModifier {
        self.cta_cluster_tail = tail;
        self
    }

    /// The packed modifier word (ordering 0 when it is the default).
    pub fn packed(&self) -> u32 {
        pack(self.order.map_or(0, |o| o as u32), self.scope, self.cta_cluster_tail)
    }

    /// Whether `.noftz` is printed (16-bit and packed float forms; mandatory there).
    pub fn noftz(&self) -> bool {
        self.ty.is_half()
    }

    /// Builds the record for an IR atomic. Relaxed ordering at the implicit device scope prints no
    /// ordering token (what CUDA's `atomicAdd` prints); other orderings are explicit. IR `i32`/`u32`
    /// add prints `.u32`, `i64` add `.u64` (D7), min/max keep their signedness, bitwise ops and
    /// exchange print `.bN`. Operations PTX lacks for the type (mul, float min/max, 8/16-bit
    /// integers, ...) are [`PtxError::NeedsCasLoop`].
    pub fn from_ir(
        op: AtomicOp,
        dtype: DType,
        ordering: Ordering,
        scope: Scope,
        space: AddressSpace,
    ) -> Result<AtomicModifier, PtxError> {
        let cas_loop = || PtxError::NeedsCasLoop { op: op.name().to_string(), ty: dtype.name().to_string() };
        let (aop, ty) = match (op, dtype) {
            (AtomicOp::Add, DType::I32 | DType::U32) => (AtomOp::Add, AtomType::U32),
            (AtomicOp::Add, DType::I64 | DType::U64) => (AtomOp::Add, AtomType::U64),
            (AtomicOp::Add, DType::F32) => (AtomOp::Add, AtomType::F32),
            (AtomicOp::Add, DType::F64) => (AtomOp::Add, AtomType::F64),
            (AtomicOp::Add, DType::F16) => (AtomOp::Add, AtomType::F16),
            (AtomicOp::Add, DType::BF16) => (AtomOp::Add, AtomType::BF16),
            (AtomicOp::Add, DType::F16x2) => (AtomOp::Add, AtomType::F16x2),
            (AtomicOp::Add, DType::BF16x2) => (AtomOp::Add, AtomType::BF16x2),
            (AtomicOp::Min | AtomicOp::Max, d) => {
                let ty = match d {
                    DType::I32 => AtomType::S32,
                    DType::U32 => AtomType::U32,
                    DType::I64 => AtomType::S64,
                    DType::U64 => AtomType::U64,
                    _ => return Err(cas_loop()),
                };
                (if op == AtomicOp::Min { AtomOp::Min } else { AtomOp::Max }, ty)
            }
            (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, d) => {
                let ty = match d {
                    DType::I32 | DType::U32 => AtomType::B32,
                    DType::I64 | DType::U64 => AtomType::B64,
                    _ => return Err(cas_loop()),
                };
                let aop = match op {
                    AtomicOp::And => AtomOp::And,
                    AtomicOp::Or => AtomOp::Or,
                    _ => AtomOp::Xor,
                };
                (aop, ty)
            }
            (AtomicOp::Exchange, d) => {
                let ty = match d {
                    DType::I32 | DType::U32 | DType::F32 => AtomType::B32,
                    DType::I64 | DType::U64 | DType::F64 => AtomType::B64,
                    DType::B128 => AtomType::B128,
                    _ => return Err(cas_loop()),
                };
                (AtomOp::Exch, ty)
            }
            _ => return Err(cas_loop()),
        };
        let scope = NvptxScope::from(scope);
        let order = AtomicOrder::from(ordering);
        let mut m = AtomicModifier::new(aop, ty).scope(scope).space(AtomSpace::from(space));
        if !(order == AtomicOrder::Relaxed && scope == NvptxScope::Device) {
            m = m.order(order);
        }
        Ok(m)
    }

    /// The CAS record for an IR compare-and-swap of `dtype` (`.b16`..`.b128`).
    pub fn cas_from_ir(
        dtype: DType,
        ordering: Ordering,
        scope: Scope,
        space: AddressSpace,
    ) -> Result<AtomicModifier, PtxError> {
        let ty = match dtype.bits() {
            16 => AtomType::B16,
            32 => AtomType::B32,
            64 => AtomType::B64,
            128 => AtomType::B128,
            _ => return Err(PtxError::NeedsCasLoop { op: "cas".into(), ty: dtype.name().into() }),
        };
        let scope = NvptxScope::from(scope);
        let order = AtomicOrder::from(ordering);
        let mut m = AtomicModifier::new(AtomOp::Cas, ty).scope(scope).space(AtomSpace::from(space));
        if !(order == AtomicOrder::Relaxed && scope == NvptxScope::Device) {
            m = m.order(order);
        }
        Ok(m)
    }

    /// Validates the record for `atom` (`red == false`) or `red`, independent of the target, and
    /// returns the features it uses. Called by the printer before any token is written.
    pub fn validate(&self, red: bool) -> Result<Vec<Feature>, PtxError> {
        let stem = if red { "red" } else { "atom" };
        if self.cta_cluster_tail {
            return Err(PtxError::ClusterTailScope);
        }
        // Ordering.
        if red {
            if let Some(o) = self.order
                && !matches!(o, AtomicOrder::Relaxed | AtomicOrder::Release)
            {
                return Err(PtxError::InvalidRedOrdering { ordering: o.name().to_string() });
            }
            if !self.op.red_has() {
                return Err(PtxError::InvalidRedOp { op: self.op.name().to_string() });
            }
        } else if self.order == Some(AtomicOrder::SeqCst) {
            return Err(PtxError::UnsupportedRmwOrdering {
                ordering: "seq_cst (atom has no .sc; lower it with atomic_rmw as fence.sc + atom.acquire)".to_string(),
            });
        }
        // Operation × type (ptx.md §2.2, §2.4).
        self.check_type(red)?;
        // Address space.
        if self.space == AtomSpace::Local {
            return Err(PtxError::InvalidSpace { inst: stem.to_string(), space: ".local".to_string() });
        }
        if self.vector.is_some() && !matches!(self.space, AtomSpace::Global | AtomSpace::Generic) {
            return Err(PtxError::InvalidSpace {
                inst: format!("vector {stem}"),
                space: self.space.name().to_string(),
            });
        }
        // Cache hint (seed: only cta and sys scope; ptxas: not on cas, not on shared).
        if self.cache_hint.is_some() {
            if self.op == AtomOp::Cas {
                return Err(PtxError::CacheHintForm { form: format!("{stem}.cas") });
            }
            if self.space.is_shared() {
                return Err(PtxError::CacheHintForm { form: format!("{stem} on {}", self.space.name()) });
            }
            if !matches!(self.scope, NvptxScope::Cta | NvptxScope::System) {
                return Err(PtxError::CacheHintScope { scope: self.scope.name().to_string() });
            }
        }
        Ok(self.features())
    }

    fn check_type(&self, red: bool) -> Result<(), PtxError> {
        use AtomType::*;
        let ty = self.ty;
        let legal = match (self.vector, self.op) {
            (None, AtomOp::And | AtomOp::Or | AtomOp::Xor) => matches!(ty, B32 | B64),
            (None, AtomOp::Exch) => matches!(ty, B32 | B64 | B128),
            (None, AtomOp::Cas) => matches!(ty, B16 | B32 | B64 | B128),
            (None, AtomOp::Add) => matches!(ty, U32 | S32 | U64 | F32 | F64 | F16 | BF16 | F16x2 | BF16x2),
            (None, AtomOp::Inc | AtomOp::Dec) => ty == U32,
            (None, AtomOp::Min | AtomOp::Max) => matches!(ty, U32 | S32 | U64 | S64),
            (Some(v), AtomOp::Add) => match ty {
                F32 | F16x2 | BF16x2 => v != VectorWidth::V8,
                F16 | BF16 => true,
                _ => false,
            },
            (Some(v), AtomOp::Min | AtomOp::Max) => match ty {
                F16x2 | BF16x2 => v != VectorWidth::V8,
                F16 | BF16 => true,
                _ => false,
            },
            (Some(_), _) => false,
        };
        if legal {
            return Ok(());
        }
        let detail = match (self.vector, self.op) {
            (None, AtomOp::Min | AtomOp::Max) if ty.is_half() => {
                " (scalar 16-bit float min/max needs a vector width)".to_string()
            }
            (Some(_), _) => format!(" as a {} vector", self.vector.map_or("", |v| v.token())),
            _ => String::new(),
        };
        if red {
            Err(PtxError::InvalidRedType { op: self.op.name().to_string(), ty: format!("{}{detail}", ty.name()) })
        } else {
            Err(PtxError::InvalidAtomType { op: self.op.name().to_string(), ty: ty.name().to_string(), detail })
        }
    }

    /// The features this record needs (assumes it validated).
    fn features(&self) -> Vec<Feature> {
        let mut f = Vec::new();
        match self.scope {
            NvptxScope::Cta | NvptxScope::Gpu | NvptxScope::System => f.push(Feature::AtomScope),
            NvptxScope::Cluster => f.push(Feature::ClusterScope),
            NvptxScope::Thread | NvptxScope::Device => {}
        }
        if self.order.is_some() {
            f.push(Feature::AtomSem);
        }
        match self.space {
            AtomSpace::SharedCta => f.push(Feature::SharedCtaSpelling),
            AtomSpace::SharedCluster => f.push(Feature::SharedCluster),
            _ => {}
        }
        match (self.op, self.ty) {
            (AtomOp::Add, AtomType::F64) => f.push(Feature::AtomF64Add),
            (_, AtomType::F16x2) => f.push(Feature::AtomF16x2Add),
            (_, AtomType::F16) => f.push(Feature::AtomF16Add),
            (_, AtomType::BF16 | AtomType::BF16x2) => f.push(Feature::AtomBf16Add),
            (AtomOp::Cas, AtomType::B16) => f.push(Feature::AtomCasB16),
            (_, AtomType::B128) => f.push(Feature::AtomB128),
            (
                AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Min | AtomOp::Max,
                AtomType::B64 | AtomType::U64 | AtomType::S64,
            ) => f.push(Feature::Atom64BitLogic),
            _ => {}
        }
        if self.ty == AtomType::B128 && self.scope == NvptxScope::System {
            f.push(Feature::AtomB128Sys);
        }
        if self.cache_hint.is_some() {
            f.push(Feature::AtomCacheHint);
        }
        if self.vector.is_some() {
            f.push(Feature::AtomVector);
        }
        f
    }

    /// The instruction text up to (not including) the operands, in D7's order: stem, ordering,
    /// scope, operation, `.noftz`, vector width, type, address space, cache hint.
    /// Assumes the record validated.
    pub(crate) fn mnemonic(&self, stem: &str) -> String {
        let mut s = String::from(stem);
        if let Some(o) = self.order {
            s.push_str(o.token());
        }
        if let Some(t) = self.scope.atom_token() {
            s.push_str(t);
        }
        s.push('.');
        s.push_str(self.op.name());
        if self.noftz() {
            s.push_str(".noftz");
        }
        if let Some(v) = self.vector {
            s.push_str(v.token());
        }
        s.push('.');
        s.push_str(self.ty.name());
        if let Some(t) = self.space.token() {
            s.push_str(t);
        }
        if self.cache_hint.is_some() {
            s.push_str(".L2::cache_hint");
        }
        s
    }
}
