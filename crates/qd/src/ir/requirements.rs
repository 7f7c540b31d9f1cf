//! What each instruction needs from its target, stated once here and checked once by
//! [`crate::target::check`].

use super::{ArrayRef, Inst, InstKind, Kernel, LoadKind, NvOp, StoreKind};
use crate::ir::{DType, NvSreg, PackedHalf, Scope};
use crate::target::{Feature, MemSpace, NvFeature};

/// The capability space of an array (`None`: per-thread memory, which is private).
fn mem_space(k: &Kernel, a: ArrayRef) -> Option<MemSpace> {
    MemSpace::of(k.array_space(a))
}

/// The NVIDIA family of an `Nv` operation.
pub(crate) fn nv_feature(op: &NvOp) -> NvFeature {
    match op {
        NvOp::MatchAny | NvOp::MatchAll => NvFeature::Match,
        NvOp::Redux(_) => NvFeature::Redux,
        NvOp::Elect => NvFeature::Elect,
        NvOp::MbarrierInit
        | NvOp::MbarrierArrive
        | NvOp::MbarrierArriveNoComplete
        | NvOp::MbarrierTestWait
        | NvOp::MbarrierInval => NvFeature::Mbarrier,
        NvOp::MbarrierTryWaitParity => NvFeature::MbarrierTryWait,
        NvOp::MbarrierArriveExpectTx | NvOp::MbarrierExpectTx | NvOp::MbarrierCompleteTx => NvFeature::MbarrierTx,
        NvOp::ProxyFence(_) => NvFeature::ProxyFence,
        NvOp::ReduxF32(_) => NvFeature::ReduxFloat,
        NvOp::LoadL2Hint(_) | NvOp::AtomicL2Hint(..) => NvFeature::L2CacheHint,
        NvOp::Exch128 | NvOp::Cas128 => NvFeature::Atomic128,
        NvOp::PackedAdd(PackedHalf::F16x2) => NvFeature::PackedF16x2,
        NvOp::PackedAdd(PackedHalf::BF16x2) => NvFeature::PackedBf16x2,
        NvOp::FenceSyncRestrict(_) | NvOp::ProxyAsyncFence(_) => NvFeature::SyncRestrict,
        NvOp::TensormapRelease(_) | NvOp::TensormapAcquire(_) | NvOp::TensormapCopy { .. } => NvFeature::TensormapProxy,
        NvOp::ClusterSync | NvOp::MbarrierArriveCluster | NvOp::MbarrierTryWaitParityCluster => {
            NvFeature::ClusterMbarrier
        }
        NvOp::MbarrierTryWaitParityHint => NvFeature::MbarrierTryWait,
        NvOp::Breakpoint => NvFeature::Breakpoint,
        NvOp::Nanosleep => NvFeature::Nanosleep,
        NvOp::LoadVector => NvFeature::VectorLoad,
    }
}

fn sreg_feature(reg: NvSreg) -> NvFeature {
    match reg {
        NvSreg::ClusterId(_)
        | NvSreg::NClusterId(_)
        | NvSreg::ClusterCtaid(_)
        | NvSreg::ClusterNctaid(_)
        | NvSreg::ClusterCtarank
        | NvSreg::ClusterNctarank => NvFeature::ClusterSregs,
        _ => NvFeature::Sregs,
    }
}

impl Inst {
    /// The features this instruction needs (not those of nested blocks): the types of its values,
    /// the array it touches and how, and the operation's own family. `k` is the kernel it is in.
    pub fn requirements(&self, k: &Kernel) -> Vec<Feature> {
        use InstKind::*;
        let kind = &self.kind;
        let mut needs: Vec<Feature> =
            kind.defs().into_iter().chain(kind.uses()).map(|v| Feature::Values(k.dtype(v))).collect();
        match kind {
            Nv { op, place, .. } => {
                needs.push(Feature::Nv(nv_feature(op)));
                if let Some(p) = place {
                    needs.push(Feature::Values(k.array_dtype(p.array)));
                }
                return dedup(needs);
            }
            Special { reg: super::Special::Nv(reg), .. } => needs.push(Feature::Nv(sreg_feature(*reg))),
            BlockBarrier { reduce: Some(_) } => needs.push(Feature::BarrierReduce),
            SubgroupReduce { op, scan, value, .. } => {
                needs.push(Feature::SubgroupArith { op: *op, scan: *scan, dtype: k.dtype(*value) })
            }
            Fence { scope: Scope::Subgroup, .. } => needs.push(Feature::SubgroupFence),
            _ => {}
        }
        let (place, access) = match kind {
            Load { place, kind, .. } => (place, matches!(kind, LoadKind::Ordered(..)).then_some(Access::Ordered)),
            Store { place, kind, .. } => (place, matches!(kind, StoreKind::Ordered(..)).then_some(Access::Ordered)),
            Atomic { place, op, .. } => (place, Some(Access::Rmw(*op))),
            Cas { place, .. } => (place, Some(Access::Cas)),
            WordCas { place, .. } => (place, Some(Access::WordCas)),
            _ => return dedup(needs),
        };
        let t = k.array_dtype(place.array);
        needs.push(Feature::Values(t));
        if let Some(space) = mem_space(k, place.array) {
            needs.push(Feature::Storage(t, space));
            needs.extend(access.map(|a| match a {
                Access::Ordered => Feature::OrderedAccess(t, space),
                Access::Rmw(op) => Feature::AtomicRmw(op, t, space),
                Access::Cas => Feature::AtomicCas(t, space),
                Access::WordCas => Feature::AtomicCas(DType::U32, space),
            }));
        }
        dedup(needs)
    }
}

/// How an instruction accesses its array, when the access is atomic.
#[derive(Clone, Copy)]
enum Access {
    Ordered,
    Rmw(crate::ir::AtomicOp),
    Cas,
    WordCas,
}

fn dedup(mut needs: Vec<Feature>) -> Vec<Feature> {
    needs.sort();
    needs.dedup();
    needs
}
