//! Thread-block clusters (sm_90): the cluster barrier, the cluster forms of mbarrier (an arrive on
//! another CTA's barrier through `mapa`, a wait that acquires at cluster scope), and the
//! `try_wait` suspend-time hint.
//!
//! A kernel using the cluster forms is launched with `Device::launch_cluster` (CUDA's
//! `cuLaunchKernelEx` with a cluster dimension); they are CUDA-only (the emulator has no clusters).

use super::{mbarrier, require_nv, sreg};
use crate::ir::{DType, NvOp, NvSreg};
use crate::target::NvFeature;
use crate::trace::{op_scope, while_, Elem, IntoVal, Val};

/// `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire`: every thread of every CTA
/// of the cluster meets here; memory written before is visible cluster-wide after it. Use it after
/// initializing a barrier other CTAs arrive on, and before a CTA exits while others may still
/// touch its shared memory. CUDA-only (sm_90).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel(block_dim = 64)]
/// fn cluster_arrive(out: &mut [u32]) {
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if t == 0 {
///         qd::nv::mbarrier_init(&bar[0], 128u32);
///         qd::nv::proxy_fence("mbarrier_init");
///     }
///     qd::nv::cluster_sync();
///     qd::nv::mbarrier_arrive_cluster(&bar[0], 0u32); // everyone arrives on rank 0's barrier
///     if qd::nv::cluster_ctarank() == 0 {
///         qd::nv::mbarrier_wait_parity_cluster(&bar[0], 0u32);
///     }
///     qd::nv::cluster_sync();
///     out[block::block_idx() * 64 + t] = 1u32;
/// }
/// let k = cluster_arrive().into_kernel();
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text;
/// assert!(ptx.contains("mapa.shared::cluster.u64"));
/// assert!(ptx.contains("mbarrier.arrive.release.cluster.shared::cluster.b64 _,"));
/// assert!(ptx.contains("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64"));
/// // On a GPU: device.launch_cluster(&k, 4, 2, &[out.arg()]) (two CTAs per cluster).
/// ```
#[track_caller]
pub fn cluster_sync() {
    let _op = op_scope("nv.cluster_sync");
    if require_nv("nv.cluster_sync", NvFeature::ClusterMbarrier) {
        super::nv_op(NvOp::ClusterSync, &[], vec![], None);
    }
}

/// `%cluster_ctarank`: this CTA's rank within its cluster (sm_90).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("rank", 32, |k| {
///     let out = k.array::<u32>("out");
///     out.set(block::global_thread_idx(), qd::nv::cluster_ctarank());
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("%cluster_ctarank"));
/// ```
#[track_caller]
pub fn cluster_ctarank() -> Val<u32> {
    sreg(NvSreg::ClusterCtarank).cast()
}

/// One arrival (release, cluster scope) on the mbarrier `bar` of the CTA whose cluster rank is
/// `rank`: `mapa.shared::cluster` finds that CTA's copy of `bar`, then
/// `mbarrier.arrive.release.cluster.shared::cluster.b64 _` arrives on it (the state token of a
/// remote arrive is discarded, as PTX requires). CUDA-only (sm_90).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// // Arrive on the barrier of the cluster's block 0 (its shared memory, through `mapa`).
/// let k = Kernel::explicit("remote", 32, |_| {
///     let bar = block::shared_array::<u64>(1);
///     qd::nv::mbarrier_arrive_cluster(bar.at(0), 0u32);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text;
/// assert!(ptx.contains("mapa") && ptx.contains("mbarrier.arrive"));
/// ```
#[track_caller]
pub fn mbarrier_arrive_cluster(bar: Elem<u64>, rank: impl IntoVal<u32>) {
    let r = rank.into_val();
    mbarrier("nv.mbarrier_arrive_cluster", NvOp::MbarrierArriveCluster, bar, vec![r.id()], &[]);
}

/// `mbarrier.try_wait.parity.acquire.cluster`: whether the phase with parity `parity` of this
/// CTA's barrier `bar` has completed, acquiring what the (possibly remote) arrivals released.
/// CUDA-only (sm_90).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("poll", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     out.set(block::thread_idx(), qd::nv::mbarrier_try_wait_parity_cluster(bar.at(0), 0u32).cast::<u32>());
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("mbarrier.try_wait.parity"));
/// ```
#[track_caller]
pub fn mbarrier_try_wait_parity_cluster(bar: Elem<u64>, parity: impl IntoVal<u32>) -> Val<bool> {
    let p = parity.into_val();
    let op = NvOp::MbarrierTryWaitParityCluster;
    Val::from_id(mbarrier("nv.mbarrier_try_wait_parity_cluster", op, bar, vec![p.id()], &[DType::Bool])[0])
}

/// Waits until the phase with parity `parity` of `bar` completes, acquiring at cluster scope: a
/// [`mbarrier_try_wait_parity_cluster`] loop. CUDA-only (sm_90).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("wait", 32, |_| {
///     let bar = block::shared_array::<u64>(1);
///     qd::nv::mbarrier_wait_parity_cluster(bar.at(0), 0u32);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains(".cluster"));
/// assert!(k.trace(&Target::ptx(PtxTarget::sm(80))).is_err());
/// ```
#[track_caller]
pub fn mbarrier_wait_parity_cluster(bar: Elem<u64>, parity: impl IntoVal<u32>) {
    let _op = op_scope("nv.mbarrier_wait_parity_cluster");
    let p = parity.into_val();
    while_(|| !mbarrier_try_wait_parity_cluster(bar, p), || {});
}

/// `mbarrier.try_wait.parity` with a suspend-time hint: whether the phase with parity `parity`
/// has completed, the thread possibly sleeping up to about `suspend_ns` nanoseconds for it first
/// (a hint; the result means what [`mbarrier_try_wait_parity`](super::mbarrier_try_wait_parity)'s
/// does). sm_90 on CUDA; the emulator runs it as the plain `try_wait`.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel(block_dim = 32)]
/// fn hinted_wait(out: &mut [u32]) {
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if t == 0 {
///         qd::nv::mbarrier_init(&bar[0], 32u32);
///     }
///     block::sync();
///     qd::nv::mbarrier_arrive(&bar[0]);
///     while !qd::nv::mbarrier_try_wait_parity_hint(&bar[0], 0u32, 10_000u32) {}
///     out[t] = 1u32;
/// }
/// let d = Device::cpu();
/// let mut out = d.zeros::<u32>(32).unwrap();
/// hinted_wait().launch_grid(&d, 1, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap(), vec![1; 32]);
/// ```
#[track_caller]
pub fn mbarrier_try_wait_parity_hint(
    bar: Elem<u64>,
    parity: impl IntoVal<u32>,
    suspend_ns: impl IntoVal<u32>,
) -> Val<bool> {
    let (p, ns) = (parity.into_val(), suspend_ns.into_val());
    let op = NvOp::MbarrierTryWaitParityHint;
    Val::from_id(mbarrier("nv.mbarrier_try_wait_parity_hint", op, bar, vec![p.id(), ns.id()], &[DType::Bool])[0])
}
