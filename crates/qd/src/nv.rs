//! NVIDIA-only families (seed 004): `match`, `redux`, `elect`, special registers, mbarriers and
//! proxy fences; float `redux`, shuffles with their validity predicate and `vote.uni`
//! (`nv/warp.rs`); cache-hinted loads and atomics, 128-bit and packed-half atomics, sync_restrict
//! and tensormap fences (`nv/memory.rs`); cluster mbarriers, the cluster barrier and the
//! `try_wait` suspend hint (`nv/cluster.rs`); and [`breakpoint`]. Each family is a capability of
//! its own (`NvFeature`), at its PTX floor on CUDA.
//!
//! The first families, the shuffle validity predicate, `vote.uni` and the suspend hint run on
//! CUDA and on the CPU emulator with 32-lane subgroups, which implements the same semantics so
//! these kernels are tested without a GPU. The others are CUDA-only: the emulator has no L2
//! cache, no 128-bit memory cells, no proxies and no clusters, and float `redux.sync` exists only
//! on sm_100a-class GPUs; their examples trace for a CUDA target and print PTX. On any target
//! lacking a family each call is a trace-time error naming the op, the target and why.
//!
//! ```
//! use qd::prelude::*;
//! let k = Kernel::range("leader", 32, |k| {
//!     let out = k.array::<u32>("out");
//!     k.parallel_for(0, 32, |i| {
//!         let (leader, _is_leader) = qd::nv::elect();
//!         out.set(i, leader + qd::nv::redux_add(1u32));
//!     });
//! });
//! let d = Device::cpu(); // 32-lane subgroups: the `nv` capability
//! let out = d.zeros::<u32>(32).unwrap();
//! d.launch(&k, &[out.arg()]).unwrap();
//! assert_eq!(out.to_vec().unwrap(), vec![32; 32]);
//! ```

mod cluster;
mod memory;
mod warp;

pub use cluster::*;
pub use memory::*;
pub use warp::*;

use crate::ir::{DType, InstKind, NvOp, NvSreg, Ordering, ReduxOp, Scope, Special};
use crate::target::{Feature, NvFeature};
use crate::trace::{current_loc, emit_at, new_value, op_scope, require, trace_error, Elem, Int, IntoVal, Val};

/// Asks the target for the NVIDIA family `family` (the op's own floor included, e.g. `elect.sync`
/// needs sm_90); records an error naming the op, target and reason when it lacks it.
#[track_caller]
fn require_nv(op: &str, family: NvFeature) -> bool {
    require(op, Feature::Nv(family))
}

#[track_caller]
fn nv_op(
    op: NvOp,
    dsts: &[DType],
    args: Vec<crate::ir::ValueId>,
    place: Option<crate::ir::Place>,
) -> Vec<crate::ir::ValueId> {
    let loc = current_loc();
    let dsts: Vec<_> = dsts.iter().map(|d| new_value(*d)).collect();
    emit_at(InstKind::Nv { op, dsts: dsts.clone(), args, place }, loc);
    dsts
}

/// Values `match.sync` compares: 32- and 64-bit integers.
pub trait MatchValue: Int {}
impl MatchValue for i32 {}
impl MatchValue for u32 {}
impl MatchValue for i64 {}
impl MatchValue for u64 {}

/// `match.sync.any`: the mask of lanes holding the same value as this lane.
#[track_caller]
pub fn match_any<T: MatchValue>(value: impl IntoVal<T>) -> Val<u32> {
    let _op = op_scope("nv.match_any");
    let v = value.into_val();
    require_nv("nv.match_any", NvFeature::Match);
    Val::from_id(nv_op(NvOp::MatchAny, &[DType::U32], vec![v.id()], None)[0])
}

/// `match.sync.all`: (the full mask when every lane holds the same value, else 0; whether they do).
#[track_caller]
pub fn match_all<T: MatchValue>(value: impl IntoVal<T>) -> (Val<u32>, Val<bool>) {
    let _op = op_scope("nv.match_all");
    let v = value.into_val();
    require_nv("nv.match_all", NvFeature::Match);
    let d = nv_op(NvOp::MatchAll, &[DType::U32, DType::Bool], vec![v.id()], None);
    (Val::from_id(d[0]), Val::from_id(d[1]))
}

/// 32-bit integers `redux.sync` reduces.
pub trait ReduxValue: Int {}
impl ReduxValue for i32 {}
impl ReduxValue for u32 {}

#[track_caller]
fn redux<T: ReduxValue>(name: &'static str, op: ReduxOp, value: Val<T>) -> Val<T> {
    let _op = op_scope(name);
    require_nv(name, NvFeature::Redux);
    Val::from_id(nv_op(NvOp::Redux(op), &[T::DTYPE], vec![value.id()], None)[0])
}

/// `redux.sync.add` over the full warp (every lane gets the sum).
#[track_caller]
pub fn redux_add<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_add", ReduxOp::Add, value.into_val())
}
/// `redux.sync.min` over the full warp.
#[track_caller]
pub fn redux_min<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_min", ReduxOp::Min, value.into_val())
}
/// `redux.sync.max` over the full warp.
#[track_caller]
pub fn redux_max<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_max", ReduxOp::Max, value.into_val())
}
/// `redux.sync.and` over the full warp.
#[track_caller]
pub fn redux_and<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_and", ReduxOp::And, value.into_val())
}
/// `redux.sync.or` over the full warp.
#[track_caller]
pub fn redux_or<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_or", ReduxOp::Or, value.into_val())
}
/// `redux.sync.xor` over the full warp.
#[track_caller]
pub fn redux_xor<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_xor", ReduxOp::Xor, value.into_val())
}

/// `elect.sync`: (the elected leader lane, whether this lane is it). The leader is the lowest
/// active lane (sm_90).
#[track_caller]
pub fn elect() -> (Val<u32>, Val<bool>) {
    let _op = op_scope("nv.elect");
    require_nv("nv.elect", NvFeature::Elect);
    let d = nv_op(NvOp::Elect, &[DType::U32, DType::Bool], Vec::new(), None);
    (Val::from_id(d[0]), Val::from_id(d[1]))
}

/// Reads an NVIDIA special register (seed 004's table): u32, or u64 for `%clock64`, `%globaltimer`
/// and `%gridid`.
#[track_caller]
pub fn sreg(reg: NvSreg) -> Val<u64> {
    let _op = op_scope("nv.sreg");
    require_nv("nv.sreg", NvFeature::Sregs);
    let loc = current_loc();
    let wide = matches!(reg, NvSreg::Clock64 | NvSreg::GlobalTimer | NvSreg::Gridid);
    let dst = new_value(if wide { DType::U64 } else { DType::U32 });
    emit_at(InstKind::Special { dst, reg: Special::Nv(reg) }, loc);
    if wide {
        Val::from_id(dst)
    } else {
        Val::<u32>::from_id(dst).cast()
    }
}

/// `%laneid`.
#[track_caller]
pub fn laneid() -> Val<u32> {
    sreg(NvSreg::Laneid).cast()
}

/// `%warpid` (the warp's slot on its SM; not the warp index within the block).
#[track_caller]
pub fn warpid() -> Val<u32> {
    sreg(NvSreg::Warpid).cast()
}

/// `%lanemask_lt`: bits of the lanes below this one.
#[track_caller]
pub fn lanemask_lt() -> Val<u32> {
    sreg(NvSreg::LanemaskLt).cast()
}

/// `%clock64`: the SM's cycle counter.
#[track_caller]
pub fn clock64() -> Val<u64> {
    sreg(NvSreg::Clock64)
}

/// `%dynamic_smem_size`.
#[track_caller]
pub fn dynamic_smem_size() -> Val<u32> {
    sreg(NvSreg::DynamicSmemSize).cast()
}

#[track_caller]
fn mbarrier(
    name: &'static str,
    op: NvOp,
    bar: Elem<u64>,
    args: Vec<crate::ir::ValueId>,
    dsts: &[DType],
) -> Vec<crate::ir::ValueId> {
    let _op = op_scope(name);
    require_nv(name, crate::ir::nv_feature(&op));
    if !matches!(bar.place().array, crate::ir::ArrayRef::Shared(_)) {
        trace_error(
            name,
            format!("`{name}` needs an mbarrier in shared memory (a u64 element of block::shared_array)"),
        );
    }
    nv_op(op, dsts, args, Some(bar.place()))
}

/// `mbarrier.init`: a barrier in shared memory expecting `count` arrivals per phase.
#[track_caller]
pub fn mbarrier_init(bar: Elem<u64>, count: impl IntoVal<u32>) {
    let c = count.into_val();
    mbarrier("nv.mbarrier_init", NvOp::MbarrierInit, bar, vec![c.id()], &[]);
}

/// `mbarrier.arrive`: one arrival; returns the state token of the phase arrived at.
#[track_caller]
pub fn mbarrier_arrive(bar: Elem<u64>) -> Val<u64> {
    Val::from_id(mbarrier("nv.mbarrier_arrive", NvOp::MbarrierArrive, bar, vec![], &[DType::U64])[0])
}

/// `mbarrier.arrive.noComplete`: `count` arrivals that must not complete the phase.
#[track_caller]
pub fn mbarrier_arrive_no_complete(bar: Elem<u64>, count: impl IntoVal<u32>) -> Val<u64> {
    let c = count.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_arrive_no_complete", NvOp::MbarrierArriveNoComplete, bar, vec![c.id()], &[DType::U64])[0],
    )
}

/// `mbarrier.arrive.expect_tx`: expect `tx` more transaction bytes, then arrive.
#[track_caller]
pub fn mbarrier_arrive_expect_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) -> Val<u64> {
    let t = tx.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_arrive_expect_tx", NvOp::MbarrierArriveExpectTx, bar, vec![t.id()], &[DType::U64])[0],
    )
}

/// `mbarrier.expect_tx`: the current phase waits for `tx` more transaction bytes.
#[track_caller]
pub fn mbarrier_expect_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) {
    let t = tx.into_val();
    mbarrier("nv.mbarrier_expect_tx", NvOp::MbarrierExpectTx, bar, vec![t.id()], &[]);
}

/// `mbarrier.complete_tx`: `tx` transaction bytes arrived.
#[track_caller]
pub fn mbarrier_complete_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) {
    let t = tx.into_val();
    mbarrier("nv.mbarrier_complete_tx", NvOp::MbarrierCompleteTx, bar, vec![t.id()], &[]);
}

/// `mbarrier.test_wait`: whether the phase of `token` has completed (does not block).
#[track_caller]
pub fn mbarrier_test_wait(bar: Elem<u64>, token: Val<u64>) -> Val<bool> {
    Val::from_id(mbarrier("nv.mbarrier_test_wait", NvOp::MbarrierTestWait, bar, vec![token.id()], &[DType::Bool])[0])
}

/// `mbarrier.try_wait.parity`: whether the phase with parity `parity` (0 or 1) has completed.
#[track_caller]
pub fn mbarrier_try_wait_parity(bar: Elem<u64>, parity: impl IntoVal<u32>) -> Val<bool> {
    let p = parity.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_try_wait_parity", NvOp::MbarrierTryWaitParity, bar, vec![p.id()], &[DType::Bool])[0],
    )
}

/// Waits until the phase with parity `parity` completes: a `try_wait.parity` loop (seed 004's `wait`).
#[track_caller]
pub fn mbarrier_wait_parity(bar: Elem<u64>, parity: impl IntoVal<u32>) {
    // The loop's body is a closure, which `#[track_caller]` does not reach: the scope keeps the
    // instructions and errors at the user's call.
    let _op = op_scope("nv.mbarrier_wait_parity");
    let p = parity.into_val();
    crate::trace::while_(|| !mbarrier_try_wait_parity(bar, p), || {});
}

/// `mbarrier.inval`: the barrier's memory may be reused.
#[track_caller]
pub fn mbarrier_inval(bar: Elem<u64>) {
    mbarrier("nv.mbarrier_inval", NvOp::MbarrierInval, bar, vec![], &[]);
}

/// A fence with any ordering (acquire/release split fences fall back to `fence.acq_rel` before
/// sm_90, ptx.md §6).
#[track_caller]
pub fn fence(ordering: Ordering, scope: Scope) {
    let _op = op_scope("nv.fence");
    if ordering == Ordering::Relaxed {
        trace_error("nv.fence", "fence ordering must be acquire, release, acq_rel, or seq_cst");
        return;
    }
    emit_at(InstKind::Fence { scope, ordering }, current_loc());
}

/// A proxy fence, named by its PTX suffix: `alias`, `async`, `async.global`, `async.shared::cta`,
/// `async.shared::cluster`, or `mbarrier_init` (`fence.mbarrier_init.release.cluster`).
#[track_caller]
pub fn proxy_fence(kind: &str) {
    let _op = op_scope("nv.proxy_fence");
    const KINDS: [&str; 6] =
        ["alias", "async", "async.global", "async.shared::cta", "async.shared::cluster", "mbarrier_init"];
    if !KINDS.contains(&kind) {
        trace_error("nv.proxy_fence", format!("unknown proxy fence `{kind}`; expected one of {KINDS:?}"));
        return;
    }
    if require_nv("nv.proxy_fence", NvFeature::ProxyFence) {
        nv_op(NvOp::ProxyFence(kind.to_string()), &[], vec![], None);
    }
}

/// Seed 004's `nvvm.breakpoint`: a short busy-wait on `%globaltimer` (about a microsecond, so
/// stores already issued drain and a debugger can attach), then `trap`.
///
/// The trap ends the launch with an error and leaves the CUDA context unusable for the rest of
/// the process: no test or conformance case launches it; the tests print it and assemble it with
/// ptxas. CUDA-only (the capability check refuses it on the emulator and elsewhere).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel]
/// fn stop(a: &[u32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(a.len()) {
///         if a[i] == 0 {
///             qd::nv::breakpoint();
///         }
///     }
/// }
/// let k = stop().into_kernel();
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text;
/// assert!(ptx.contains("%globaltimer") && ptx.contains("trap;"));
/// assert!(Device::cpu().trace(&k).is_err());
/// ```
#[track_caller]
pub fn breakpoint() {
    let _op = op_scope("nv.breakpoint");
    if require_nv("nv.breakpoint", NvFeature::Breakpoint) {
        nv_op(NvOp::Breakpoint, &[], vec![], None);
    }
}
