//! Targets, PTX ISA versions and feature floors (ptx.md §10, measured with ptxas 13.0).
//!
//! D7: `.version` is the highest floor of the target and of the features a module uses, capped by
//! what the consumer (driver JIT, validating ptxas) accepts.

use std::collections::BTreeSet;
use std::fmt;

use super::errors::PtxError;
use super::modifier::AtomicModifier;
use crate::ir::DType;

/// A PTX ISA version (`.version major.minor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PtxVersion {
    /// Major number.
    pub major: u8,
    /// Minor number.
    pub minor: u8,
}

impl PtxVersion {
    /// `major.minor`.
    pub const fn new(major: u8, minor: u8) -> PtxVersion {
        PtxVersion { major, minor }
    }

    /// The highest version ptxas 13.0 (the validating assembler of D9) accepts.
    pub const PTXAS_13_0_MAX: PtxVersion = PtxVersion::new(9, 0);
}

impl fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The `.target` a module is printed for: `sm_<sm>` or, when `arch_specific`, `sm_<sm>a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PtxTarget {
    /// Compute capability times ten (`90` for sm_90).
    pub sm: u32,
    /// The architecture-specific `a` variant (`sm_90a`, `sm_100a`).
    pub arch_specific: bool,
}

/// `(sm, minimum .version of sm_<sm>, minimum .version of sm_<sm>a if it exists)`, measured with
/// ptxas 13.0 (an empty kernel, lowest `.version` that assembles).
const TARGET_FLOORS: &[(u32, PtxVersion, Option<PtxVersion>)] = &[
    (50, PtxVersion::new(4, 0), None),
    (52, PtxVersion::new(4, 1), None),
    (53, PtxVersion::new(4, 2), None),
    (60, PtxVersion::new(5, 0), None),
    (61, PtxVersion::new(5, 0), None),
    (62, PtxVersion::new(5, 0), None),
    (70, PtxVersion::new(6, 0), None),
    (72, PtxVersion::new(6, 1), None),
    (75, PtxVersion::new(6, 3), None),
    (80, PtxVersion::new(7, 0), None),
    (86, PtxVersion::new(7, 1), None),
    (87, PtxVersion::new(7, 4), None),
    (89, PtxVersion::new(7, 8), None),
    (90, PtxVersion::new(7, 8), Some(PtxVersion::new(8, 0))),
    (100, PtxVersion::new(8, 6), Some(PtxVersion::new(8, 6))),
    (103, PtxVersion::new(8, 8), Some(PtxVersion::new(8, 8))),
    (110, PtxVersion::new(9, 0), Some(PtxVersion::new(9, 0))),
    (120, PtxVersion::new(8, 7), Some(PtxVersion::new(8, 7))),
    (121, PtxVersion::new(8, 8), Some(PtxVersion::new(8, 8))),
];

impl PtxTarget {
    /// `sm_<sm>` (not architecture-specific).
    pub const fn sm(sm: u32) -> PtxTarget {
        PtxTarget { sm, arch_specific: false }
    }

    /// `sm_<sm>a`.
    pub const fn arch_specific(sm: u32) -> PtxTarget {
        PtxTarget { sm, arch_specific: true }
    }

    /// Parses `sm_90`, `sm_100a`, `90` or `90a`.
    pub fn parse(name: &str) -> Result<PtxTarget, PtxError> {
        let unknown = || PtxError::UnknownTarget { target: name.to_string() };
        let body = name.strip_prefix("sm_").unwrap_or(name);
        let (digits, arch_specific) = match body.strip_suffix('a') {
            Some(d) => (d, true),
            None => (body, false),
        };
        let sm: u32 = digits.parse().map_err(|_| unknown())?;
        let target = PtxTarget { sm, arch_specific };
        target.floor()?;
        Ok(target)
    }

    /// The lowest `.version` that accepts this `.target` (ptx.md §10; ptxas 13.0).
    pub fn floor(self) -> Result<PtxVersion, PtxError> {
        TARGET_FLOORS
            .iter()
            .find(|(sm, _, _)| *sm == self.sm)
            .and_then(|(_, base, arch)| if self.arch_specific { *arch } else { Some(*base) })
            .ok_or_else(|| PtxError::UnknownTarget { target: self.to_string() })
    }

    /// Checks that this target has `feature`.
    pub fn check(self, feature: Feature) -> Result<(), PtxError> {
        let floor = feature.floor();
        if let Some((targets, allowed)) = floor.arch_only {
            if !(self.arch_specific && allowed.contains(&self.sm)) {
                return Err(PtxError::ArchSpecific { feature: feature.name(), targets, target: self.to_string() });
            }
        } else if self.sm < floor.sm {
            return Err(PtxError::TargetTooOld { feature: feature.name(), min_sm: floor.sm, target: self.to_string() });
        }
        Ok(())
    }
}

impl fmt::Display for PtxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.arch_specific { "a" } else { "" })
    }
}

/// Where a feature starts: minimum SM, minimum `.version`, and for architecture-specific features
/// the only targets that have it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureFloor {
    /// Lowest SM.
    pub sm: u32,
    /// Lowest `.version`.
    pub ptx: PtxVersion,
    /// `Some((description, sms))`: only the `a` targets of these SMs have it.
    pub arch_only: Option<(&'static str, &'static [u32])>,
}

/// Everything with a floor above "any target, any version" that the printer can emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// atom/red .scope (.cta/.gpu/.sys)
    AtomScope,
    /// atom/red .sem (memory ordering)
    AtomSem,
    /// .cluster scope
    ClusterScope,
    /// .shared::cta
    SharedCtaSpelling,
    /// .shared::cluster
    SharedCluster,
    /// 64-bit atom and/or/xor/min/max
    Atom64BitLogic,
    /// atom/red .add.f64
    AtomF64Add,
    /// atom/red .add.noftz.f16x2
    AtomF16x2Add,
    /// atom/red .add.noftz.f16
    AtomF16Add,
    /// atom.cas.b16
    AtomCasB16,
    /// atom/red .bf16/.bf16x2
    AtomBf16Add,
    /// .L2::cache_hint
    AtomCacheHint,
    /// vector atom/red
    AtomVector,
    /// atom .b128
    AtomB128,
    /// atom .b128 at .sys scope
    AtomB128Sys,
    /// shfl.sync
    ShflSync,
    /// vote.sync
    VoteSync,
    /// bar.warp.sync
    BarWarpSync,
    /// activemask
    Activemask,
    /// match.sync
    MatchSync,
    /// redux.sync
    ReduxSync,
    /// redux.sync .f32 min/max
    ReduxF32,
    /// elect.sync
    ElectSync,
    /// fence.sc/fence.acq_rel
    FenceScoped,
    /// fence.acquire/fence.release
    FenceSplit,
    /// fence .sync_restrict
    FenceSyncRestrict,
    /// fence.proxy.alias
    FenceProxyAlias,
    /// membar.proxy.alias
    MembarProxyAlias,
    /// fence.proxy.async
    FenceProxyAsync,
    /// fence.mbarrier_init
    FenceMbarrierInit,
    /// fence.proxy.tensormap::generic
    FenceProxyTensormap,
    /// tensormap.cp_fenceproxy
    TensormapCpFenceproxy,
    /// mbarrier
    MbarrierCore,
    /// mbarrier.test_wait.parity
    MbarrierTestWaitParity,
    /// mbarrier.arrive into the sink _
    MbarrierArriveSink,
    /// mbarrier.try_wait
    MbarrierTryWait,
    /// mbarrier.arrive with a count
    MbarrierArriveCount,
    /// mbarrier .release/.acquire
    MbarrierSemCta,
    /// mbarrier .cluster
    MbarrierCluster,
    /// mbarrier expect_tx/complete_tx
    MbarrierTx,
    /// mbarrier .relaxed
    MbarrierRelaxed,
    /// cluster special registers
    SregCluster,
    /// %dynamic_smem_size/%total_smem_size
    SregSmemSize,
    /// %globaltimer
    SregGlobaltimer,
    /// ld/st .relaxed/.acquire/.release with a scope
    MemorySem,
    /// createpolicy (an L2 cache policy for .L2::cache_hint)
    CreatePolicy,
    /// barrier.cluster.arrive.release / barrier.cluster.wait.acquire
    BarrierCluster,
    /// mapa (a shared address in another CTA of the cluster)
    Mapa,
    /// nanosleep.u32
    Nanosleep,
}

/// The set of features a module uses.
pub type FeatureSet = BTreeSet<Feature>;

const fn fl(sm: u32, major: u8, minor: u8) -> FeatureFloor {
    FeatureFloor { sm, ptx: PtxVersion::new(major, minor), arch_only: None }
}

impl Feature {
    /// Human-readable name, used in diagnostics.
    pub fn name(self) -> &'static str {
        use Feature::*;
        match self {
            AtomScope => "atom/red .scope (.cta/.gpu/.sys)",
            AtomSem => "atom/red .sem (memory ordering)",
            ClusterScope => ".cluster scope",
            SharedCtaSpelling => ".shared::cta",
            SharedCluster => ".shared::cluster",
            Atom64BitLogic => "64-bit atom and/or/xor/min/max",
            AtomF64Add => "atom/red .add.f64",
            AtomF16x2Add => "atom/red .add.noftz.f16x2",
            AtomF16Add => "atom/red .add.noftz.f16",
            AtomCasB16 => "atom.cas.b16",
            AtomBf16Add => "atom/red .bf16/.bf16x2",
            AtomCacheHint => ".L2::cache_hint",
            AtomVector => "vector atom/red",
            AtomB128 => "atom .b128",
            AtomB128Sys => "atom .b128 at .sys scope",
            ShflSync => "shfl.sync",
            VoteSync => "vote.sync",
            BarWarpSync => "bar.warp.sync",
            Activemask => "activemask",
            MatchSync => "match.sync",
            ReduxSync => "redux.sync",
            ReduxF32 => "redux.sync .f32 min/max",
            ElectSync => "elect.sync",
            FenceScoped => "fence.sc/fence.acq_rel",
            FenceSplit => "fence.acquire/fence.release",
            FenceSyncRestrict => "fence .sync_restrict",
            FenceProxyAlias => "fence.proxy.alias",
            MembarProxyAlias => "membar.proxy.alias",
            FenceProxyAsync => "fence.proxy.async",
            FenceMbarrierInit => "fence.mbarrier_init",
            FenceProxyTensormap => "fence.proxy.tensormap::generic",
            TensormapCpFenceproxy => "tensormap.cp_fenceproxy",
            MbarrierCore => "mbarrier",
            MbarrierTestWaitParity => "mbarrier.test_wait.parity",
            MbarrierArriveSink => "mbarrier.arrive into the sink _",
            MbarrierTryWait => "mbarrier.try_wait",
            MbarrierArriveCount => "mbarrier.arrive with a count",
            MbarrierSemCta => "mbarrier .release/.acquire",
            MbarrierCluster => "mbarrier .cluster",
            MbarrierTx => "mbarrier expect_tx/complete_tx",
            MbarrierRelaxed => "mbarrier .relaxed",
            SregCluster => "cluster special registers",
            SregSmemSize => "%dynamic_smem_size/%total_smem_size",
            SregGlobaltimer => "%globaltimer",
            MemorySem => "ld/st .relaxed/.acquire/.release",
            CreatePolicy => "createpolicy",
            BarrierCluster => "barrier.cluster with .release/.acquire",
            Mapa => "mapa",
            Nanosleep => "nanosleep",
        }
    }

    /// Minimum SM and `.version` (ptx.md §10; ptxas-measured unless the note there says otherwise).
    pub fn floor(self) -> FeatureFloor {
        use Feature::*;
        match self {
            AtomScope => fl(60, 5, 0),
            AtomSem => fl(70, 6, 0),
            ClusterScope | SharedCluster => fl(90, 7, 8),
            SharedCtaSpelling => fl(0, 7, 8),
            Atom64BitLogic => fl(32, 3, 1),
            AtomF64Add => fl(60, 5, 0),
            AtomF16x2Add => fl(60, 6, 2),
            AtomF16Add | AtomCasB16 => fl(70, 6, 3),
            AtomBf16Add => fl(90, 7, 8),
            AtomCacheHint => fl(80, 7, 4),
            AtomVector => fl(90, 8, 1),
            AtomB128 => fl(90, 8, 3),
            // ptxas: "Feature '.b128 with .sys' requires PTX ISA .version 8.4".
            AtomB128Sys => fl(90, 8, 4),
            ShflSync | VoteSync | BarWarpSync => fl(30, 6, 0),
            Activemask => fl(30, 6, 2),
            MatchSync => fl(70, 6, 0),
            ReduxSync => fl(80, 7, 0),
            ReduxF32 => FeatureFloor {
                sm: 100,
                ptx: PtxVersion::new(8, 6),
                arch_only: Some(("sm_100a and sm_103a", &[100, 103])),
            },
            ElectSync => fl(90, 8, 0),
            FenceScoped => fl(70, 6, 0),
            // ptxas does not enforce it; the spec, libcu++ and LLVM gate it at sm_90 / 8.6.
            FenceSplit | FenceSyncRestrict => fl(90, 8, 6),
            FenceProxyAlias => fl(70, 7, 5),
            MembarProxyAlias => fl(60, 7, 5),
            FenceProxyAsync | FenceMbarrierInit => fl(90, 8, 0),
            FenceProxyTensormap | TensormapCpFenceproxy => fl(90, 8, 3),
            MbarrierCore => fl(80, 7, 0),
            MbarrierTestWaitParity | MbarrierArriveSink => fl(80, 7, 1),
            MbarrierTryWait | MbarrierArriveCount => fl(90, 7, 8),
            MbarrierSemCta => fl(80, 8, 0),
            MbarrierCluster | MbarrierTx => fl(90, 8, 0),
            MbarrierRelaxed => fl(90, 8, 6),
            SregCluster => fl(90, 7, 8),
            SregSmemSize => fl(0, 4, 1),
            SregGlobaltimer => fl(30, 3, 1),
            MemorySem => fl(70, 6, 0),
            CreatePolicy => fl(80, 7, 4),
            BarrierCluster => fl(90, 8, 0),
            Mapa => fl(90, 7, 8),
            Nanosleep => fl(70, 6, 3),
        }
    }
}

/// The `.version` a module needs: the highest floor of the target and of every feature used (D7).
pub fn required_version<I>(target: PtxTarget, features: I) -> Result<PtxVersion, PtxError>
where
    I: IntoIterator<Item = Feature>,
{
    let mut version = target.floor()?;
    for f in features {
        target.check(f)?;
        version = version.max(f.floor().ptx);
    }
    Ok(version)
}

/// [`required_version`], refused when it exceeds what the consumer accepts (`cap`: the driver's or
/// the validating ptxas's maximum, e.g. [`PtxVersion::PTXAS_13_0_MAX`]).
pub fn capped_version<I>(target: PtxTarget, features: I, cap: PtxVersion) -> Result<PtxVersion, PtxError>
where
    I: IntoIterator<Item = Feature>,
{
    let required = required_version(target, features)?;
    if required > cap {
        return Err(PtxError::VersionCap { required: required.to_string(), cap: cap.to_string() });
    }
    Ok(required)
}

/// The module header: `.version`, `.target`, `.address_size 64`, one per line.
pub fn module_header(version: PtxVersion, target: PtxTarget) -> String {
    format!(".version {version}\n.target {target}\n.address_size 64\n")
}

// ---------------------------------------------------------------------------------------------------
// The capability model's answers for CUDA (crate::target)
// ---------------------------------------------------------------------------------------------------

/// The limits of an NVIDIA GPU of compute capability `sm`: 32-lane warps and the architecture's
/// opt-in shared memory per block (the CUDA runtime replaces it with the device's own value).
pub(crate) fn limits(sm: u32) -> crate::target::Limits {
    let max_shared_kib = match sm {
        70 | 72 => 96,
        75 => 64,
        80 | 87 => 163,
        86 | 89 | 120 | 121 => 99,
        90.. => 227,
        _ => 48,
    };
    crate::target::Limits {
        subgroup_size: 32,
        max_shared_bytes: max_shared_kib * 1024,
        shared_cell_bytes: 1,
        max_buffer_bytes: None,
        loop_iteration_cap: None,
        block_forward_progress: true,
        max_array_params: None,
    }
}

/// How `target` provides `f`: the NVIDIA families at their PTX floors, every portable feature
/// natively except the atomics `atom` lacks for a type, which are CAS loops (element-wide ones
/// rewritten into the IR by `target::legalize_atomics`, word-wide ones written by the lowering).
pub(crate) fn support(target: PtxTarget, f: crate::target::Feature) -> crate::target::Support {
    use crate::ir::{Ordering, Scope};
    use crate::target::{Feature as F, NvFeature, Polyfill, Support};
    let floor = |feature: Feature| match target.check(feature) {
        Ok(()) => Support::Native,
        Err(e) => Support::unsupported(e.to_string()),
    };
    let printer = super::PtxPrinter::new(target);
    match f {
        F::Nv(n) => match n {
            NvFeature::Match => floor(Feature::MatchSync),
            NvFeature::Redux => floor(Feature::ReduxSync),
            NvFeature::Elect => floor(Feature::ElectSync),
            NvFeature::Sregs => Support::Native,
            NvFeature::ClusterSregs => floor(Feature::SregCluster),
            NvFeature::Mbarrier => floor(Feature::MbarrierCore),
            NvFeature::MbarrierTryWait => floor(Feature::MbarrierTryWait),
            NvFeature::MbarrierTx => floor(Feature::MbarrierTx),
            NvFeature::ProxyFence => floor(Feature::FenceProxyAlias),
            NvFeature::ReduxFloat => floor(Feature::ReduxF32),
            NvFeature::L2CacheHint => floor(Feature::AtomCacheHint),
            NvFeature::Atomic128 => floor(Feature::AtomB128),
            NvFeature::PackedF16x2 => floor(Feature::AtomF16x2Add),
            NvFeature::PackedBf16x2 => floor(Feature::AtomBf16Add),
            NvFeature::ShuffleValid => floor(Feature::ShflSync),
            NvFeature::VoteUni => floor(Feature::VoteSync),
            NvFeature::SyncRestrict => floor(Feature::FenceSyncRestrict),
            NvFeature::TensormapProxy => floor(Feature::TensormapCpFenceproxy),
            NvFeature::ClusterMbarrier => floor(Feature::MbarrierCluster),
            NvFeature::Breakpoint => floor(Feature::SregGlobaltimer),
            NvFeature::Nanosleep => floor(Feature::Nanosleep),
            NvFeature::VectorLoad => Support::Native,
        },
        F::VoteShortcut | F::BarrierReduce | F::DynamicBroadcastLane => Support::Native,
        // Full-warp 32-bit add/min/max take `redux.sync` on sm_80+ (the library asks for
        // `nv.redux`); everything else the trees.
        F::SubgroupArith { .. } => Support::polyfill(Polyfill::SHUFFLE_TREES),
        F::SubgroupFence => Support::polyfill(Polyfill::Lowering("a block-scope fence (over-strict but correct, D6)")),
        F::SignedZeros(_) => Support::Native, // PTX float arithmetic is IEEE 754
        F::Tile { .. }
        | F::SharedMemory { .. }
        | F::SpinWait
        | F::Values(_)
        | F::Storage(..)
        | F::OrderedAccess(..) => Support::Native,
        F::AtomicRmw(_, DType::B128, _) | F::AtomicCas(DType::B128, _) => Support::unsupported(
            "128-bit atomics on b128 elements are not lowered to PTX (qd::nv has them on u64 pairs)",
        ),
        F::AtomicRmw(op, t, s) => {
            match AtomicModifier::from_ir(op, t, Ordering::Relaxed, Scope::Device, s.address_space()) {
                Ok(m) if printer.atom_supported(&m) => Support::Native,
                Ok(_) | Err(PtxError::NeedsCasLoop { .. }) => cas_loop(&printer, t, s),
                Err(e) => Support::unsupported(e.to_string()),
            }
        }
        F::AtomicCas(t, s) => {
            let m = AtomicModifier::cas_from_ir(t, Ordering::Relaxed, Scope::Device, s.address_space());
            if m.is_ok_and(|m| printer.atom_supported(&m)) {
                Support::Native
            } else {
                cas_loop(&printer, t, s)
            }
        }
    }
}

/// A CAS loop on the element where `atom.cas` is that wide here, else on its 32-bit word.
fn cas_loop(printer: &super::PtxPrinter, t: DType, s: crate::target::MemSpace) -> crate::target::Support {
    use crate::ir::{Ordering, Scope};
    use crate::target::{Polyfill, Support};
    let narrow_cas = AtomicModifier::cas_from_ir(t, Ordering::Relaxed, Scope::Device, s.address_space())
        .is_ok_and(|m| printer.atom_supported(&m));
    if t.bits() >= 32 || narrow_cas {
        Support::polyfill(Polyfill::CasLoop)
    } else {
        Support::polyfill(Polyfill::SubwordCasLoop)
    }
}
