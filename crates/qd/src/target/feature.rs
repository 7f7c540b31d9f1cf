//! The vocabulary of the capability model: every choice a backend or a library path makes is a
//! [`Feature`], and a target answers each with a [`Support`].

use std::fmt;

use crate::ir::{reduce_name, AddressSpace, AtomicOp, DType, ReduxOp, ScanKind};

/// Where an atomic or an array lives, as far as capabilities go (per-thread arrays are private
/// and need no feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemSpace {
    /// Device (global) memory: kernel array parameters.
    Device,
    /// Block-shared memory.
    Shared,
}

impl MemSpace {
    /// The capability space of an IR address space (`None`: per-thread memory, which is private).
    pub fn of(space: AddressSpace) -> Option<MemSpace> {
        match space {
            AddressSpace::Global | AddressSpace::Generic => Some(MemSpace::Device),
            AddressSpace::Shared | AddressSpace::SharedCluster => Some(MemSpace::Shared),
            AddressSpace::Local => None,
        }
    }

    /// The IR address space of arrays in this space.
    pub fn address_space(self) -> AddressSpace {
        match self {
            MemSpace::Device => AddressSpace::Global,
            MemSpace::Shared => AddressSpace::Shared,
        }
    }

    /// `device` or `shared`.
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Device => "device",
            MemSpace::Shared => "shared",
        }
    }
}

/// The NVIDIA-only families of seed 004, each with its own hardware floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NvFeature {
    /// `match.sync` (sm_70).
    Match,
    /// Integer `redux.sync` (sm_80).
    Redux,
    /// `elect.sync` (sm_90).
    Elect,
    /// Special registers by name (`%smid`, `%clock64`, ...).
    Sregs,
    /// Cluster special registers (sm_90).
    ClusterSregs,
    /// The core mbarrier operations (sm_80).
    Mbarrier,
    /// `mbarrier.try_wait` (sm_90).
    MbarrierTryWait,
    /// mbarrier transaction counts (`expect_tx`, `complete_tx`; sm_90).
    MbarrierTx,
    /// Proxy fences (`fence.proxy.*`, `fence.mbarrier_init`).
    ProxyFence,
    /// Float `redux.sync` min/max (sm_100a, sm_103a only).
    ReduxFloat,
    /// Loads and atomics with `.L2::cache_hint` and `createpolicy` (sm_80).
    L2CacheHint,
    /// 128-bit `atom.cas` / `atom.exch` (sm_90).
    Atomic128,
    /// Packed `f16x2` `atom.add` / `red.add` (sm_60).
    PackedF16x2,
    /// Packed `bf16x2` `atom.add` / `red.add` (sm_90).
    PackedBf16x2,
    /// `shfl.sync` with its validity predicate (whether the source lane was in range).
    ShuffleValid,
    /// `vote.sync.uni` (whether every lane holds the same predicate).
    VoteUni,
    /// `fence.*.sync_restrict` and the async-proxy acquire/release fences (sm_90, PTX 8.6).
    SyncRestrict,
    /// `fence.proxy.tensormap::generic` and `tensormap.cp_fenceproxy` (sm_90).
    TensormapProxy,
    /// The cluster forms of mbarrier (remote arrive through `mapa`, `.cluster` waits) and the
    /// cluster barrier (sm_90; launched with `Device::launch_cluster`).
    ClusterMbarrier,
    /// `nvvm.breakpoint`: a `%globaltimer` busy-wait, then `trap`.
    Breakpoint,
    /// `nanosleep.u32`: a spinning thread's back-off (sm_70).
    Nanosleep,
    /// `ld.global.v2` / `.v4`: 8- and 16-byte loads of consecutive elements.
    VectorLoad,
}

impl NvFeature {
    /// Every NVIDIA family, in order.
    pub const ALL: [NvFeature; 22] = [
        NvFeature::Match,
        NvFeature::Redux,
        NvFeature::Elect,
        NvFeature::Sregs,
        NvFeature::ClusterSregs,
        NvFeature::Mbarrier,
        NvFeature::MbarrierTryWait,
        NvFeature::MbarrierTx,
        NvFeature::ProxyFence,
        NvFeature::ReduxFloat,
        NvFeature::L2CacheHint,
        NvFeature::Atomic128,
        NvFeature::PackedF16x2,
        NvFeature::PackedBf16x2,
        NvFeature::ShuffleValid,
        NvFeature::VoteUni,
        NvFeature::SyncRestrict,
        NvFeature::TensormapProxy,
        NvFeature::ClusterMbarrier,
        NvFeature::Breakpoint,
        NvFeature::Nanosleep,
        NvFeature::VectorLoad,
    ];

    /// What the family is called in messages and tables.
    pub fn name(self) -> &'static str {
        match self {
            NvFeature::Match => "nv.match (match.sync)",
            NvFeature::Redux => "nv.redux (redux.sync)",
            NvFeature::Elect => "nv.elect (elect.sync)",
            NvFeature::Sregs => "nv special registers",
            NvFeature::ClusterSregs => "nv cluster special registers",
            NvFeature::Mbarrier => "nv.mbarrier",
            NvFeature::MbarrierTryWait => "nv.mbarrier_try_wait",
            NvFeature::MbarrierTx => "nv.mbarrier expect_tx/complete_tx",
            NvFeature::ProxyFence => "nv proxy fences",
            NvFeature::ReduxFloat => "nv.redux_f32 (float redux.sync)",
            NvFeature::L2CacheHint => "nv .L2::cache_hint loads and atomics",
            NvFeature::Atomic128 => "nv 128-bit atomic cas/exch",
            NvFeature::PackedF16x2 => "nv packed f16x2 atomic add",
            NvFeature::PackedBf16x2 => "nv packed bf16x2 atomic add",
            NvFeature::ShuffleValid => "nv shuffle with validity predicate",
            NvFeature::VoteUni => "nv.vote_uni (vote.sync.uni)",
            NvFeature::SyncRestrict => "nv sync_restrict fences",
            NvFeature::TensormapProxy => "nv tensormap proxy fences",
            NvFeature::ClusterMbarrier => "nv cluster mbarriers and cluster barrier",
            NvFeature::Breakpoint => "nv.breakpoint",
            NvFeature::Nanosleep => "nv.nanosleep",
            NvFeature::VectorLoad => "nv.load_vector (ld.global.v2/.v4)",
        }
    }
}

/// One choice a backend or a library path makes. Instructions require features
/// ([`Inst::requirements`](crate::ir::Inst::requirements)); library code asks for them while
/// tracing to pick a lowering; the support tables list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// An NVIDIA-only family (seed 004).
    Nv(NvFeature),
    /// A full-subgroup `all_true` / `any_true` is one vote instruction (else a shuffle butterfly).
    VoteShortcut,
    /// A block barrier with a fused predicate reduction (`bar.red`); else the library emulates
    /// `block.sync_*_nonzero` with a shared counter and two barriers.
    BarrierReduce,
    /// `subgroup.broadcast` from a lane that differs between lanes (SPIR-V needs a uniform lane).
    DynamicBroadcastLane,
    /// A full-subgroup integer reduction (`scan: None`) or scan of this type is one instruction
    /// (`InstKind::SubgroupReduce`); else the library's shuffle trees (seed 002).
    SubgroupArith {
        /// The fold.
        op: ReduxOp,
        /// `None`: a reduction; else which prefix each lane gets.
        scan: Option<ScanKind>,
        /// The integer type reduced.
        dtype: DType,
    },
    /// A memory fence at subgroup scope (else a block-scope fence: over-strict but correct, D6).
    SubgroupFence,
    /// Collective tiles of this many lanes (`log2_size` up to the subgroup width).
    Tile {
        /// Lanes in the tile (a power of two).
        lanes: u32,
    },
    /// A thread may spin on a value another block publishes for as long as it takes (what a
    /// look-back needs): not where the device ends loops after a fixed count (lavapipe).
    SpinWait,
    /// Static shared memory of this many bytes in one block.
    SharedMemory {
        /// Bytes per block.
        bytes: u32,
    },
    /// Values of this type in registers (arithmetic, conversions, parameters).
    Values(DType),
    /// Arrays of this element type in this space.
    Storage(DType, MemSpace),
    /// An atomic read-modify-write of this type in this space.
    AtomicRmw(AtomicOp, DType, MemSpace),
    /// An atomic compare-and-swap of this type in this space.
    AtomicCas(DType, MemSpace),
    /// An atomic (ordered) load or store, or a volatile access the target makes atomic.
    OrderedAccess(DType, MemSpace),
    /// Float arithmetic of this type keeps the sign of zeros, infinities and NaNs as IEEE 754
    /// does (`-0.0 + -0.0 == -0.0`; seed 003's float `atomic_sub`): a kernel that depends on it
    /// declares it ([`KernelBuilder::requires`](crate::trace::KernelBuilder::requires)). SPIR-V
    /// lets a driver ignore signed zeros unless the module asks for `SignedZeroInfNanPreserve`.
    SignedZeros(DType),
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Feature::Nv(n) => f.write_str(n.name()),
            Feature::VoteShortcut => f.write_str("one-instruction subgroup vote"),
            Feature::BarrierReduce => f.write_str("fused barrier reduction"),
            Feature::DynamicBroadcastLane => f.write_str("broadcast from a varying lane"),
            Feature::SubgroupArith { op, scan, dtype } => {
                write!(f, "one-instruction subgroup.{} on {dtype}", reduce_name(*op, *scan))
            }
            Feature::SubgroupFence => f.write_str("subgroup-scope fence"),
            Feature::Tile { lanes } => write!(f, "{lanes}-lane tiles"),
            Feature::SharedMemory { bytes } => write!(f, "{bytes} bytes of shared memory"),
            Feature::SpinWait => f.write_str("unbounded spin-waits"),
            Feature::Values(d) => write!(f, "{d} values"),
            Feature::Storage(d, s) => write!(f, "{} arrays of {d}", s.name()),
            Feature::AtomicRmw(op, d, s) => write!(f, "atomic_{} on {} {d}", op.name(), s.name()),
            Feature::AtomicCas(d, s) => write!(f, "atomic_cas on {} {d}", s.name()),
            Feature::OrderedAccess(d, s) => write!(f, "ordered load/store on {} {d}", s.name()),
            Feature::SignedZeros(d) => write!(f, "signed zeros in {d} arithmetic"),
        }
    }
}

/// How a target provides a feature it lacks natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Polyfill {
    /// A compare-and-swap loop on the element, written once as an IR rewrite
    /// ([`legalize_atomics`](crate::target::legalize_atomics)) that every backend (and the
    /// emulator wearing the target) runs.
    CasLoop,
    /// A compare-and-swap loop on the 32-bit word holding an 8- or 16-bit element, written once
    /// as the same IR rewrite (the backends only address the word: `word_shift`,
    /// `atomic_cas_word`).
    SubwordCasLoop,
    /// The library composes it from other operations while tracing (e.g. `sync_*_nonzero` as a
    /// shared counter and two barriers); an instruction needing it cannot be lowered.
    Library(&'static str),
    /// The backend expands the instruction itself (e.g. f16 computed in f32).
    Lowering(&'static str),
}

impl Polyfill {
    /// Where `subgroup.reduce_*` and the `inclusive_*`/`exclusive_add` scans are not one
    /// instruction: the library's shuffle trees (seed 002), the same on every target, so results
    /// match bit for bit.
    pub const SHUFFLE_TREES: Polyfill = Polyfill::Library("the shuffle trees (seed 002)");

    /// What it costs, for the support tables.
    pub fn cost(self) -> &'static str {
        match self {
            Polyfill::CasLoop => "CAS loop (one load, then a compare-and-swap per retry)",
            Polyfill::SubwordCasLoop => "CAS loop on the enclosing 32-bit word",
            Polyfill::Library(how) | Polyfill::Lowering(how) => how,
        }
    }
}

/// A target's answer for one feature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Support {
    /// One native instruction (or the natural form).
    Native,
    /// Provided another way, at a cost.
    Polyfill {
        /// How.
        how: Polyfill,
    },
    /// Not available; a kernel needing it is rejected while tracing.
    Unsupported {
        /// Why, naming the missing device feature where there is one.
        why: String,
    },
}

impl Support {
    /// An unsupported answer with its reason.
    pub fn unsupported(why: impl Into<String>) -> Support {
        Support::Unsupported { why: why.into() }
    }

    /// A polyfill answer.
    pub fn polyfill(how: Polyfill) -> Support {
        Support::Polyfill { how }
    }

    /// True for [`Support::Native`].
    pub fn is_native(&self) -> bool {
        matches!(self, Support::Native)
    }

    /// True unless [`Support::Unsupported`].
    pub fn is_available(&self) -> bool {
        !matches!(self, Support::Unsupported { .. })
    }

    /// True when an instruction needing the feature can be compiled: native, a CAS loop or a
    /// backend expansion (a library polyfill is a path the library takes instead of the instruction).
    pub fn is_lowerable(&self) -> bool {
        match self {
            Support::Native => true,
            Support::Polyfill { how } => !matches!(how, Polyfill::Library(_)),
            Support::Unsupported { .. } => false,
        }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Native => f.write_str("native"),
            Support::Polyfill { how } => write!(f, "polyfill: {}", how.cost()),
            Support::Unsupported { why } => write!(f, "unsupported: {why}"),
        }
    }
}
