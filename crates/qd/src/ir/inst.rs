//! Instructions, blocks and kernels.
//!
//! The IR is typed SSA with structured control flow: an [`Inst`] either defines values or holds nested
//! [`Block`]s (`If`, `Loop`, `GridStride`). Mutable Rust values are [`LocalId`] variables (D2).

use super::types::{AddressSpace, Const, DType, Ordering, Scope};

/// An SSA value: index into [`Kernel::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// A local (mutable) variable: index into [`Kernel::locals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalId(pub u32);

/// Where the user wrote the call that produced an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SrcLoc {
    /// Source file.
    pub file: &'static str,
    /// Line (1-based).
    pub line: u32,
    /// Column (1-based).
    pub column: u32,
}

impl SrcLoc {
    /// The caller's location (through `#[track_caller]` chains).
    #[track_caller]
    pub fn caller() -> SrcLoc {
        let l = std::panic::Location::caller();
        SrcLoc { file: l.file(), line: l.line(), column: l.column() }
    }
}

impl std::fmt::Display for SrcLoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// An array an instruction addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrayRef {
    /// Kernel parameter `n` (a global device array).
    Param(u32),
    /// Shared array `n` of [`Kernel::shared`].
    Shared(u32),
    /// Per-thread array `n` of [`Kernel::local_arrays`].
    Local(u32),
}

/// One element of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The array.
    pub array: ArrayRef,
    /// The element index (an integer value).
    pub index: ValueId,
}

/// One-operand arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum UnOp {
    /// Arithmetic negation (wrapping for integers).
    Neg,
    /// Bitwise not (logical not on bool).
    Not,
    /// Absolute value (wrapping for the minimum integer).
    Abs,
    /// Population count (32- or 64-bit operand, u32 result).
    Popc,
    /// Count leading zeros (32- or 64-bit operand, u32 result).
    Clz,
    /// Square root (floats).
    Sqrt,
}

/// Two-operand arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BinOp {
    /// Wrapping add.
    Add,
    /// Wrapping subtract.
    Sub,
    /// Wrapping multiply.
    Mul,
    /// Division (integer division by zero is an emulator error).
    Div,
    /// Remainder (sign of the dividend).
    Rem,
    /// Minimum (floats: minNum, NaN-suppressing).
    Min,
    /// Maximum (floats: maxNum).
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Shift left, amount modulo the bit width.
    Shl,
    /// Shift right (arithmetic for signed), amount modulo the bit width.
    Shr,
}

/// Comparisons (result bool; floats compare as IEEE, NaN unordered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CmpOp {
    /// ==
    Eq,
    /// !=
    Ne,
    /// <
    Lt,
    /// <=
    Le,
    /// >
    Gt,
    /// >=
    Ge,
}

/// Read-only hardware registers and launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// Lane within the subgroup (i32).
    LaneId,
    /// Subgroup width (u32; a trace-time constant, kept for the NVIDIA `%warpsize` read).
    SubgroupSize,
    /// Thread index within the block (u32).
    ThreadIdx,
    /// Block index within the grid (u32).
    BlockIdx,
    /// Threads per block (u32).
    BlockDim,
    /// Blocks in the grid (u32).
    GridDim,
    /// `block_idx * block_dim + thread_idx` (u32).
    GlobalThreadIdx,
    /// An NVIDIA special register read by name (`nv` capability; see `crate::nv`).
    Nv(NvSreg),
}

/// NVIDIA special registers beyond the portable set (seed 004's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NvSreg {
    /// `%tid.{x,y,z}` (axis 0..3).
    Tid(u8),
    /// `%ntid.{x,y,z}`.
    Ntid(u8),
    /// `%ctaid.{x,y,z}`.
    Ctaid(u8),
    /// `%nctaid.{x,y,z}`.
    Nctaid(u8),
    /// `%clusterid.{x,y,z}`.
    ClusterId(u8),
    /// `%nclusterid.{x,y,z}`.
    NClusterId(u8),
    /// `%cluster_ctaid.{x,y,z}`.
    ClusterCtaid(u8),
    /// `%cluster_nctaid.{x,y,z}`.
    ClusterNctaid(u8),
    /// `%cluster_ctarank`.
    ClusterCtarank,
    /// `%cluster_nctarank`.
    ClusterNctarank,
    /// `%smid`.
    Smid,
    /// `%nsmid`.
    Nsmid,
    /// `%warpid`.
    Warpid,
    /// `%nwarpid`.
    Nwarpid,
    /// `%laneid`.
    Laneid,
    /// `%warpsize`.
    Warpsize,
    /// `%gridid` (u64).
    Gridid,
    /// `%lanemask_eq`.
    LanemaskEq,
    /// `%lanemask_le`.
    LanemaskLe,
    /// `%lanemask_lt`.
    LanemaskLt,
    /// `%lanemask_ge`.
    LanemaskGe,
    /// `%lanemask_gt`.
    LanemaskGt,
    /// `%clock` (u32).
    Clock,
    /// `%clock64` (u64).
    Clock64,
    /// `%globaltimer` (u64).
    GlobalTimer,
    /// `%envreg0..31`.
    EnvReg(u8),
    /// `%dynamic_smem_size`.
    DynamicSmemSize,
}

/// How a load treats memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoadKind {
    /// Ordinary load; may be merged or hoisted.
    Plain,
    /// Volatile: never cached, hoisted, merged or deleted (D6).
    Volatile,
    /// Atomic load with an ordering (relaxed or acquire) and scope.
    Ordered(Ordering, Scope),
}

/// How a store treats memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// Ordinary store.
    Plain,
    /// Volatile store.
    Volatile,
    /// Atomic store with an ordering (relaxed or release) and scope.
    Ordered(Ordering, Scope),
}

/// The read-modify-write operation of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum AtomicOp {
    /// x + y
    Add,
    /// x * y (a CAS loop on every backend)
    Mul,
    /// min(x, y) (floats: minNum)
    Min,
    /// max(x, y)
    Max,
    /// x & y
    And,
    /// x | y
    Or,
    /// x ^ y
    Xor,
    /// y (exchange)
    Exchange,
}

impl AtomicOp {
    /// Name used in dumps and messages (`add`, `exch`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Mul => "mul",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Exchange => "exch",
        }
    }

    /// The arithmetic the operation applies to the old value and the operand (`None` for
    /// exchange, which stores the operand): the one mapping every backend and rewrite uses.
    pub fn binop(self) -> Option<BinOp> {
        Some(match self {
            AtomicOp::Add => BinOp::Add,
            AtomicOp::Mul => BinOp::Mul,
            AtomicOp::Min => BinOp::Min,
            AtomicOp::Max => BinOp::Max,
            AtomicOp::And => BinOp::And,
            AtomicOp::Or => BinOp::Or,
            AtomicOp::Xor => BinOp::Xor,
            AtomicOp::Exchange => return None,
        })
    }
}

/// Shuffle source addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleKind {
    /// Read lane `index`.
    Idx,
    /// Read lane `lane - delta`.
    Up,
    /// Read lane `lane + delta`.
    Down,
    /// Read lane `lane ^ mask`.
    Xor,
}

/// Subgroup vote kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteKind {
    /// True when the predicate holds on every lane.
    All,
    /// True when it holds on some lane.
    Any,
    /// True when all lanes agree.
    Uni,
}

/// Predicate reduction carried by a block barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierReduce {
    /// Logical and (i32 0/1 result).
    And,
    /// Logical or (i32 0/1 result).
    Or,
    /// Count of true predicates (i32 result).
    Popc,
}

/// NVIDIA-only warp and memory families (seed 004), carried here and gated by the `nv` capability.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum NvOp {
    /// `match.sync.any`: mask of lanes holding the same value.
    MatchAny,
    /// `match.sync.all`: (mask, all-equal predicate).
    MatchAll,
    /// `redux.sync.<op>` over the full warp.
    Redux(ReduxOp),
    /// `elect.sync`: (leader lane, is-leader predicate).
    Elect,
    /// `mbarrier.init` on a shared u64 with an expected arrival count.
    MbarrierInit,
    /// `mbarrier.arrive` (returns a state token).
    MbarrierArrive,
    /// `mbarrier.arrive.noComplete` with a count.
    MbarrierArriveNoComplete,
    /// `mbarrier.arrive.expect_tx` with a transaction count.
    MbarrierArriveExpectTx,
    /// `mbarrier.expect_tx`.
    MbarrierExpectTx,
    /// `mbarrier.complete_tx`.
    MbarrierCompleteTx,
    /// `mbarrier.test_wait` on a token.
    MbarrierTestWait,
    /// `mbarrier.try_wait.parity` with a phase parity.
    MbarrierTryWaitParity,
    /// `mbarrier.inval`.
    MbarrierInval,
    /// A proxy fence, spelled as its PTX operation suffix (`async.shared::cta`, ...).
    ProxyFence(String),
    /// `redux.sync` of an f32 over the full warp (sm_100a-class targets).
    ReduxF32(ReduxFloatOp),
    /// A load with `.L2::cache_hint`, its policy made by `createpolicy` (dsts: the value).
    LoadL2Hint(L2Policy),
    /// A system-scope atomic with `.L2::cache_hint` on global memory (args: the operand; dsts: the
    /// old value, or none when unused, printed as `red`).
    AtomicL2Hint(AtomicOp, L2Policy),
    /// `atom.exch.b128` on the 16-byte pair at `place` (the low u64; args: new low, high; dsts:
    /// old low, high).
    Exch128,
    /// `atom.cas.b128` (args: expected low, high, desired low, high; dsts: old low, high).
    Cas128,
    /// `atom.add.noftz` (or `red`, no dsts) of two packed halves in the u32 word at `place`.
    PackedAdd(PackedHalf),
    /// `fence.{acquire,release}.sync_restrict::shared::{cluster,cta}.cluster`.
    FenceSyncRestrict(Ordering),
    /// `fence.proxy.async::generic.{acquire,release}.sync_restrict::shared::{cluster,cta}.cluster`.
    ProxyAsyncFence(Ordering),
    /// `fence.proxy.tensormap::generic.release.<scope>`.
    TensormapRelease(Scope),
    /// `fence.proxy.tensormap::generic.acquire.<scope> [place], 128` (a global address).
    TensormapAcquire(Scope),
    /// `tensormap.cp_fenceproxy` of 128 bytes from shared array `src` (args: the element index)
    /// to the global `place`, with a release at `scope`.
    TensormapCopy {
        /// The release's scope.
        scope: Scope,
        /// The shared array the bytes come from.
        src: ArrayRef,
    },
    /// `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire` (every thread of the
    /// cluster).
    ClusterSync,
    /// `mbarrier.arrive.release.cluster.shared::cluster` on the barrier at `place` of the CTA whose
    /// cluster rank is `args[0]` (`mapa`).
    MbarrierArriveCluster,
    /// `mbarrier.try_wait.parity.acquire.cluster` (args: parity; dsts: done).
    MbarrierTryWaitParityCluster,
    /// `mbarrier.try_wait.parity` with a suspend-time hint (args: parity, nanoseconds; dsts: done).
    MbarrierTryWaitParityHint,
    /// `nvvm.breakpoint`: a short `%globaltimer` busy-wait, then `trap` (ends the launch with an
    /// error and poisons the CUDA context).
    Breakpoint,
    /// `nanosleep.u32`: the thread may be suspended for up to about `args[0]` nanoseconds (u32; a
    /// hint the hardware may shorten). A spinning thread's back-off; it orders no memory.
    Nanosleep,
    /// `ld.global.v2` / `.v4`: the `dsts.len()` consecutive elements of global memory starting at
    /// `place`, in one 8- or 16-byte access (plain, as `dsts.len()` plain loads); the index is a
    /// multiple of the count, so the access is aligned to its size.
    LoadVector,
}

/// Float `redux.sync` operations (sm_100a-class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduxFloatOp {
    /// `.min.f32`.
    Min,
    /// `.max.f32`.
    Max,
    /// `.min.abs.NaN.f32`: the minimum magnitude, NaN if any lane holds NaN.
    MinAbsNan,
    /// `.max.abs.NaN.f32`.
    MaxAbsNan,
}

/// The L2 eviction priority of a `createpolicy.fractional` cache policy (fraction 1.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L2Policy {
    /// `L2::evict_first`: streamed data.
    EvictFirst,
    /// `L2::evict_last`: data reused soon.
    EvictLast,
    /// `L2::evict_normal`.
    EvictNormal,
    /// `L2::evict_unchanged`.
    EvictUnchanged,
}

impl L2Policy {
    /// The PTX qualifier (`evict_last`, ...).
    pub fn name(self) -> &'static str {
        match self {
            L2Policy::EvictFirst => "evict_first",
            L2Policy::EvictLast => "evict_last",
            L2Policy::EvictNormal => "evict_normal",
            L2Policy::EvictUnchanged => "evict_unchanged",
        }
    }
}

/// The packed 16-bit float pair of a packed atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackedHalf {
    /// `.f16x2`.
    F16x2,
    /// `.bf16x2`.
    BF16x2,
}

/// The folds of a full-subgroup integer reduction: `redux.sync`'s operations, and those of
/// [`InstKind::SubgroupReduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduxOp {
    /// Sum.
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

/// A sequence of instructions.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct Block {
    /// The instructions, in order.
    pub insts: Vec<Inst>,
}

/// One instruction and where it came from.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Inst {
    /// What it does.
    pub kind: InstKind,
    /// The user's source line.
    pub loc: SrcLoc,
    /// The library operation the user called that produced it (`subgroup.reduce_add` for the
    /// `nv.redux(add)` it emits on CUDA), when it came from one: errors name what the user wrote (D30).
    pub op: Option<&'static str>,
}

impl Inst {
    /// The op an error about this instruction names: the library operation the user called, else
    /// the instruction's own mnemonic.
    pub fn op_name(&self) -> String {
        self.op.map_or_else(|| self.kind.mnemonic(), str::to_string)
    }
}

/// The instruction set (operand fields are named by role; see each variant).
#[derive(Clone, Debug, PartialEq, Hash)]
#[allow(missing_docs)]
pub enum InstKind {
    /// `dst = constant`.
    Const { dst: ValueId, value: Const },
    /// `dst = op a`.
    Unary { dst: ValueId, op: UnOp, a: ValueId },
    /// `dst = a op b` (both operands of one type).
    Binary { dst: ValueId, op: BinOp, a: ValueId, b: ValueId },
    /// `dst = a cmp b` (bool).
    Cmp { dst: ValueId, op: CmpOp, a: ValueId, b: ValueId },
    /// `dst = cond ? a : b`.
    Select { dst: ValueId, cond: ValueId, a: ValueId, b: ValueId },
    /// Numeric conversion with D5 semantics (float to int saturates, NaN to 0).
    Cast { dst: ValueId, a: ValueId },
    /// Reinterpret the bits (same width).
    BitCast { dst: ValueId, a: ValueId },
    /// `dst = a * b + c`, fused.
    Fma { dst: ValueId, a: ValueId, b: ValueId, c: ValueId },
    /// Read a special register.
    Special { dst: ValueId, reg: Special },
    /// Length of an array, as u32.
    ArrayLen { dst: ValueId, array: ArrayRef },
    /// Read a local variable.
    LocalGet { dst: ValueId, local: LocalId },
    /// Write a local variable.
    LocalSet { local: LocalId, value: ValueId },
    /// Load one element.
    Load { dst: ValueId, place: Place, kind: LoadKind },
    /// Store one element.
    Store { place: Place, value: ValueId, kind: StoreKind },
    /// Atomic read-modify-write; `dst` is `None` when the old value is unused (may print as `red`).
    Atomic { dst: Option<ValueId>, place: Place, op: AtomicOp, value: ValueId, ordering: Ordering, scope: Scope },
    /// Compare and swap: `dst` = old value.
    Cas { dst: ValueId, place: Place, expected: ValueId, desired: ValueId, ordering: Ordering, scope: Scope },
    /// The bit offset (u32) of `place`'s 8- or 16-bit element within the aligned 32-bit word
    /// holding it. Written by the sub-word CAS-loop rewrite (`target::legalize_atomics`) only.
    WordShift { dst: ValueId, place: Place },
    /// Compare and swap of the aligned 32-bit word holding `place`'s 8- or 16-bit element: `dst`
    /// = the word's old value (u32). Written by the sub-word CAS-loop rewrite only.
    WordCas { dst: ValueId, place: Place, expected: ValueId, desired: ValueId, ordering: Ordering, scope: Scope },
    /// Shuffle across the subgroup; `valid` receives whether the source lane was in range.
    Shuffle { dst: ValueId, valid: Option<ValueId>, kind: ShuffleKind, value: ValueId, lane: ValueId },
    /// Every lane reads `value` from lane `lane` (which some targets require to be subgroup-uniform).
    Broadcast { dst: ValueId, value: ValueId, lane: ValueId },
    /// u64 mask of lanes whose bool predicate is true.
    Ballot { dst: ValueId, pred: ValueId },
    /// Subgroup vote on a bool predicate.
    Vote { dst: ValueId, kind: VoteKind, pred: ValueId },
    /// Integer reduction (`scan: None`, the same result in every lane) or scan (each lane's
    /// prefix) of `value` over the full subgroup; exclusive scans are sums only.
    SubgroupReduce { dst: ValueId, op: ReduxOp, scan: Option<super::ScanKind>, value: ValueId },
    /// Block barrier; with `reduce`, also reduces a bool predicate across the block into `dst` (i32).
    BlockBarrier { reduce: Option<(BarrierReduce, ValueId, ValueId)> },
    /// Subgroup barrier.
    SubgroupBarrier,
    /// Memory fence.
    Fence { scope: Scope, ordering: Ordering },
    /// NVIDIA-only operation: `dsts` results, `args` operands, optional memory place (mbarriers).
    Nv { op: NvOp, dsts: Vec<ValueId>, args: Vec<ValueId>, place: Option<Place> },
    /// Structured conditional on a bool.
    If { cond: ValueId, then_block: Block, else_block: Block },
    /// Loop until `Break` (or `Return`).
    Loop { body: Block },
    /// Leave the innermost loop.
    Break,
    /// Next iteration of the innermost loop.
    Continue,
    /// The calling thread stops.
    Return,
    /// The one parallel loop of a range kernel (D1): `index` takes every value of `begin..end`
    /// (signed i32; empty when `begin >= end`) exactly once, grid-stride. The index never wraps:
    /// backends count in 64 bits, or stop before a step would pass `end`, so ranges ending near
    /// `i32::MAX` are exact. `Return` is not allowed in the body (it would also skip the thread's
    /// later iterations, D2).
    GridStride { begin: ValueId, end: ValueId, index: ValueId, body: Block },
}

/// A kernel parameter.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Param {
    /// A global device array of `dtype`.
    Array { name: String, dtype: DType },
    /// A scalar passed by value; `value` is the SSA value that reads it.
    Scalar { name: String, dtype: DType, value: ValueId },
}

impl Param {
    /// The parameter's name.
    pub fn name(&self) -> &str {
        match self {
            Param::Array { name, .. } | Param::Scalar { name, .. } => name,
        }
    }

    /// The element or scalar type.
    pub fn dtype(&self) -> DType {
        match self {
            Param::Array { dtype, .. } | Param::Scalar { dtype, .. } => *dtype,
        }
    }
}

/// A statically sized array in shared or local memory.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ArrayDecl {
    /// Name for dumps.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Element count.
    pub len: u32,
    /// The user's line that declared it.
    pub loc: SrcLoc,
}

/// A local variable declaration.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct LocalDecl {
    /// Its type.
    pub dtype: DType,
}

/// How a kernel is launched (D1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaunchKind {
    /// One `GridStride` loop; the grid comes from the range.
    Range,
    /// An explicit 1-D grid chosen at launch.
    Explicit,
}

/// A traced kernel: the unit every backend compiles.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Kernel {
    /// Kernel name.
    pub name: String,
    /// Range or explicit launch.
    pub launch: LaunchKind,
    /// Threads per block (a trace-time constant).
    pub block_dim: u32,
    /// Subgroup width the kernel was traced for.
    pub subgroup_size: u32,
    /// Blocks per multiprocessor the code generator should leave room for (registers), where it
    /// can: a performance hint ([`crate::trace::Kernel::min_blocks_per_sm`]), never a semantic.
    pub min_blocks_per_sm: Option<u32>,
    /// Parameters in call order.
    pub params: Vec<Param>,
    /// Type of every SSA value.
    pub values: Vec<DType>,
    /// Local variables.
    pub locals: Vec<LocalDecl>,
    /// Shared arrays (one allocation per block).
    pub shared: Vec<ArrayDecl>,
    /// Per-thread arrays.
    pub local_arrays: Vec<ArrayDecl>,
    /// The body.
    pub body: Block,
}

impl Kernel {
    /// Type of a value.
    pub fn dtype(&self, v: ValueId) -> DType {
        self.values[v.0 as usize]
    }

    /// Element type of an array reference.
    pub fn array_dtype(&self, a: ArrayRef) -> DType {
        match a {
            ArrayRef::Param(i) => self.params[i as usize].dtype(),
            ArrayRef::Shared(i) => self.shared[i as usize].dtype,
            ArrayRef::Local(i) => self.local_arrays[i as usize].dtype,
        }
    }

    /// Address space of an array reference.
    pub fn array_space(&self, a: ArrayRef) -> AddressSpace {
        match a {
            ArrayRef::Param(_) => AddressSpace::Global,
            ArrayRef::Shared(_) => AddressSpace::Shared,
            ArrayRef::Local(_) => AddressSpace::Local,
        }
    }

    /// Name of an array reference for messages.
    pub fn array_name(&self, a: ArrayRef) -> &str {
        match a {
            ArrayRef::Param(i) => self.params[i as usize].name(),
            ArrayRef::Shared(i) => &self.shared[i as usize].name,
            ArrayRef::Local(i) => &self.local_arrays[i as usize].name,
        }
    }

    /// Bytes of static shared memory per block.
    pub fn shared_bytes(&self) -> usize {
        self.shared.iter().map(|s| s.dtype.size_bytes() * s.len as usize).sum()
    }
}

impl Block {
    /// Visits every instruction, depth first, including nested blocks.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Inst)) {
        for inst in &self.insts {
            f(inst);
            for b in inst.kind.blocks() {
                b.walk(f);
            }
        }
    }
}

impl InstKind {
    /// The nested blocks of a control-flow instruction.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            InstKind::If { then_block, else_block, .. } => vec![then_block, else_block],
            InstKind::Loop { body } | InstKind::GridStride { body, .. } => vec![body],
            _ => Vec::new(),
        }
    }

    /// Values this instruction defines.
    pub fn defs(&self) -> Vec<ValueId> {
        use InstKind::*;
        match self {
            Const { dst, .. }
            | Unary { dst, .. }
            | Binary { dst, .. }
            | Cmp { dst, .. }
            | Select { dst, .. }
            | Cast { dst, .. }
            | BitCast { dst, .. }
            | Fma { dst, .. }
            | Special { dst, .. }
            | ArrayLen { dst, .. }
            | LocalGet { dst, .. }
            | Load { dst, .. }
            | Cas { dst, .. }
            | WordShift { dst, .. }
            | WordCas { dst, .. }
            | Broadcast { dst, .. }
            | Ballot { dst, .. }
            | Vote { dst, .. }
            | SubgroupReduce { dst, .. } => vec![*dst],
            Atomic { dst, .. } => dst.iter().copied().collect(),
            Shuffle { dst, valid, .. } => std::iter::once(*dst).chain(*valid).collect(),
            BlockBarrier { reduce } => reduce.iter().map(|r| r.2).collect(),
            Nv { dsts, .. } => dsts.clone(),
            GridStride { index, .. } => vec![*index],
            _ => Vec::new(),
        }
    }

    /// Values this instruction reads (not those of nested blocks).
    pub fn uses(&self) -> Vec<ValueId> {
        use InstKind::*;
        match self {
            Unary { a, .. } | Cast { a, .. } | BitCast { a, .. } => vec![*a],
            Binary { a, b, .. } | Cmp { a, b, .. } => vec![*a, *b],
            Select { cond, a, b, .. } => vec![*cond, *a, *b],
            Fma { a, b, c, .. } => vec![*a, *b, *c],
            LocalSet { value, .. } => vec![*value],
            Load { place, .. } => vec![place.index],
            Store { place, value, .. } => vec![place.index, *value],
            Atomic { place, value, .. } => vec![place.index, *value],
            Cas { place, expected, desired, .. } | WordCas { place, expected, desired, .. } => {
                vec![place.index, *expected, *desired]
            }
            WordShift { place, .. } => vec![place.index],
            Shuffle { value, lane, .. } | Broadcast { value, lane, .. } => vec![*value, *lane],
            Ballot { pred, .. } | Vote { pred, .. } => vec![*pred],
            SubgroupReduce { value, .. } => vec![*value],
            BlockBarrier { reduce } => reduce.iter().map(|r| r.1).collect(),
            Nv { args, place, .. } => args.iter().copied().chain(place.map(|p| p.index)).collect(),
            If { cond, .. } => vec![*cond],
            GridStride { begin, end, .. } => vec![*begin, *end],
            _ => Vec::new(),
        }
    }

    /// Short mnemonic for messages ("block.sync", "subgroup.shuffle", ...).
    pub fn mnemonic(&self) -> String {
        use InstKind::*;
        match self {
            Const { .. } => "const".into(),
            Unary { op, .. } => format!("{op:?}").to_lowercase(),
            Binary { op, .. } => format!("{op:?}").to_lowercase(),
            Cmp { op, .. } => format!("cmp.{}", format!("{op:?}").to_lowercase()),
            Select { .. } => "select".into(),
            Cast { .. } => "cast".into(),
            BitCast { .. } => "bit_cast".into(),
            Fma { .. } => "fma".into(),
            Special { reg, .. } => format!("special.{reg:?}").to_lowercase(),
            ArrayLen { .. } => "len".into(),
            LocalGet { .. } => "local.get".into(),
            LocalSet { .. } => "local.set".into(),
            Load { kind: LoadKind::Volatile, .. } => "volatile_load".into(),
            Load { .. } => "load".into(),
            Store { .. } => "store".into(),
            Atomic { op, .. } => format!("atomic_{}", op.name()),
            Cas { .. } => "atomic_cas".into(),
            WordShift { .. } => "word_shift".into(),
            WordCas { .. } => "atomic_cas_word".into(),
            Shuffle { kind, .. } => match kind {
                ShuffleKind::Idx => "subgroup.shuffle".into(),
                ShuffleKind::Up => "subgroup.shuffle_up".into(),
                ShuffleKind::Down => "subgroup.shuffle_down".into(),
                ShuffleKind::Xor => "subgroup.shuffle_xor".into(),
            },
            Broadcast { .. } => "subgroup.broadcast".into(),
            Ballot { .. } => "subgroup.ballot".into(),
            Vote { kind, .. } => format!("subgroup.vote_{}", format!("{kind:?}").to_lowercase()),
            SubgroupReduce { op, scan, .. } => format!("subgroup.{}", super::reduce_name(*op, *scan)),
            BlockBarrier { reduce: None } => "block.sync".into(),
            BlockBarrier { reduce: Some((r, _, _)) } => match r {
                BarrierReduce::And => "block.sync_all_nonzero".into(),
                BarrierReduce::Or => "block.sync_any_nonzero".into(),
                BarrierReduce::Popc => "block.sync_count_nonzero".into(),
            },
            SubgroupBarrier => "subgroup.sync".into(),
            Fence { scope, .. } => format!("fence.{}", scope.name()),
            Nv { op, .. } => format!("nv.{op:?}").to_lowercase(),
            If { .. } => "if".into(),
            Loop { .. } => "loop".into(),
            Break => "break".into(),
            Continue => "continue".into(),
            Return => "return".into(),
            GridStride { .. } => "range".into(),
        }
    }

    /// True for operations every lane of a subgroup must execute together.
    pub fn is_subgroup_collective(&self) -> bool {
        use InstKind::*;
        match self {
            Shuffle { .. } | Broadcast { .. } | Ballot { .. } | Vote { .. } | SubgroupReduce { .. } => true,
            SubgroupBarrier => true,
            Nv { op, .. } => {
                matches!(op, NvOp::MatchAny | NvOp::MatchAll | NvOp::Redux(_) | NvOp::ReduxF32(_) | NvOp::Elect)
            }
            _ => false,
        }
    }

    /// True for a block-wide barrier.
    pub fn is_block_barrier(&self) -> bool {
        matches!(self, InstKind::BlockBarrier { .. })
    }
}
