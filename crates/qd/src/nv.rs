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
///
/// ```
/// use qd::prelude::*;
/// // The lanes of each warp holding the same key as this lane.
/// let k = Kernel::range("peers", 32, |k| {
///     let key = k.array::<u32>("key");
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, key.len(), |i| out.set(i, qd::nv::match_any(key.get(i))));
/// });
/// let d = Device::cpu(); // 32-lane subgroups: the emulator runs the warp collectives
/// let key = d.array_from(&(0..32).map(|l| l % 2).collect::<Vec<u32>>()).unwrap();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch(&k, &[key.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[..2], [0x5555_5555, 0xAAAA_AAAA]);
/// ```
#[track_caller]
pub fn match_any<T: MatchValue>(value: impl IntoVal<T>) -> Val<u32> {
    let _op = op_scope("nv.match_any");
    let v = value.into_val();
    require_nv("nv.match_any", NvFeature::Match);
    Val::from_id(nv_op(NvOp::MatchAny, &[DType::U32], vec![v.id()], None)[0])
}

/// `match.sync.all`: (the full mask when every lane holds the same value, else 0; whether they do).
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("uniform", 32, |k| {
///     let key = k.array::<i64>("key");
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, key.len(), |i| {
///         let (mask, all_same) = qd::nv::match_all(key.get(i));
///         out.set(i, select(all_same, mask, 0u32));
///     });
/// });
/// let d = Device::cpu();
/// let key = d.array_from(&[[7i64; 32], [0; 32]].concat()).unwrap();
/// let out = d.zeros::<u32>(64).unwrap();
/// d.launch(&k, &[key.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[0], u32::MAX); // every lane of the warp agrees
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("count", 32, |k| {
///     let a = k.array::<u32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_add(a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).collect::<Vec<u32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [496; 32]); // the warp's sum, in every lane
/// ```
#[track_caller]
pub fn redux_add<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_add", ReduxOp::Add, value.into_val())
}
/// `redux.sync.min` over the full warp.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("lo", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_min(a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).map(|x| 10 - x).collect::<Vec<i32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[0], -21);
/// ```
#[track_caller]
pub fn redux_min<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_min", ReduxOp::Min, value.into_val())
}
/// `redux.sync.max` over the full warp.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("hi", 32, |k| {
///     let a = k.array::<u32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_max(a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).map(|x| x * 7 % 32).collect::<Vec<u32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[5], 31);
/// ```
#[track_caller]
pub fn redux_max<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_max", ReduxOp::Max, value.into_val())
}
/// `redux.sync.and` over the full warp.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("common_bits", 32, |k| {
///     let a = k.array::<u32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_and(a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).map(|x| 0xF0 | x).collect::<Vec<u32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[0], 0xF0); // the bits every lane has
/// ```
#[track_caller]
pub fn redux_and<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_and", ReduxOp::And, value.into_val())
}
/// `redux.sync.or` over the full warp.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("any_bits", 32, |k| {
///     let a = k.array::<u32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_or(Val::constant(1u32) << a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).collect::<Vec<u32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[0], u32::MAX);
/// ```
#[track_caller]
pub fn redux_or<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_or", ReduxOp::Or, value.into_val())
}
/// `redux.sync.xor` over the full warp.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("parity", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_xor(a.get(i))));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[[3i32; 31].as_slice(), &[5]].concat()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[0], 3 ^ 5); // 31 threes cancel to one
/// ```
#[track_caller]
pub fn redux_xor<T: ReduxValue>(value: impl IntoVal<T>) -> Val<T> {
    redux("nv.redux_xor", ReduxOp::Xor, value.into_val())
}

/// `elect.sync`: (the elected leader lane, whether this lane is it). The leader is the lowest
/// active lane (sm_90).
///
/// ```
/// use qd::prelude::*;
/// // One lane per warp bumps a counter.
/// let k = Kernel::range("leaders", 32, |k| {
///     let n = k.array::<u32>("n");
///     k.parallel_for(0, 128, |_| {
///         let (_leader, me) = qd::nv::elect();
///         if_(me, || {
///             atomic_add(n.at(0), 1u32);
///         });
///     });
/// });
/// let d = Device::cpu();
/// let n = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[n.arg()]).unwrap();
/// assert_eq!(n.to_vec().unwrap(), [4]); // four warps
/// ```
#[track_caller]
pub fn elect() -> (Val<u32>, Val<bool>) {
    let _op = op_scope("nv.elect");
    require_nv("nv.elect", NvFeature::Elect);
    let d = nv_op(NvOp::Elect, &[DType::U32, DType::Bool], Vec::new(), None);
    (Val::from_id(d[0]), Val::from_id(d[1]))
}

/// Reads an NVIDIA special register (seed 004's table): u32, or u64 for `%clock64`, `%globaltimer`
/// and `%gridid`.
///
/// ```
/// use qd::prelude::*;
/// use qd::ir::NvSreg;
/// let k = Kernel::range("ids", 32, |k| {
///     let out = k.array::<u64>("out");
///     k.parallel_for(0, out.len(), |i| out.set(i, qd::nv::sreg(NvSreg::Laneid)));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u64>(64).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[33], 1);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("lanes", 32, |k| {
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, out.len(), |i| out.set(i, qd::nv::laneid()));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(40).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[35], 3);
/// ```
#[track_caller]
pub fn laneid() -> Val<u32> {
    sreg(NvSreg::Laneid).cast()
}

/// `%warpid` (the warp's slot on its SM; not the warp index within the block).
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("warps", 128, |k| {
///     let out = k.array::<u32>("out");
///     out.set(block::thread_idx(), qd::nv::warpid());
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(128).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[100], 3); // the emulator numbers the block's warps in order
/// ```
#[track_caller]
pub fn warpid() -> Val<u32> {
    sreg(NvSreg::Warpid).cast()
}

/// `%lanemask_lt`: bits of the lanes below this one.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("below", 32, |k| {
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, out.len(), |i| out.set(i, qd::nv::lanemask_lt()));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[4], 0b1111);
/// ```
#[track_caller]
pub fn lanemask_lt() -> Val<u32> {
    sreg(NvSreg::LanemaskLt).cast()
}

/// `%clock64`: the SM's cycle counter.
///
/// ```
/// use qd::prelude::*;
/// // Time a loop in clock ticks (nanoseconds on the emulator).
/// let k = Kernel::explicit("ticks", 32, |k| {
///     let out = k.array::<u64>("out");
///     let start = qd::nv::clock64();
///     let x = var(0u32);
///     for_range(0, 100, |j| x.set(x.get() + j.cast::<u32>()));
///     out.set(block::thread_idx(), qd::nv::clock64() - start + (x.get() * 0u32).cast::<u64>());
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u64>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert!(out.to_vec().unwrap()[0] > 0);
/// ```
#[track_caller]
pub fn clock64() -> Val<u64> {
    sreg(NvSreg::Clock64)
}

/// `%dynamic_smem_size`.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("smem", 32, |k| {
///     let out = k.array::<u32>("out");
///     out.set(block::thread_idx(), qd::nv::dynamic_smem_size());
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text.contains("%dynamic_smem_size"));
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // A barrier for the 64 threads of the block: each arrives, then all wait for the phase.
/// let k = Kernel::explicit("phase", 64, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 64u32));
///     block::sync();
///     qd::nv::mbarrier_arrive(bar.at(0));
///     qd::nv::mbarrier_wait_parity(bar.at(0), 0u32);
///     out.set(t, 1u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(64).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 64]);
/// ```
#[track_caller]
pub fn mbarrier_init(bar: Elem<u64>, count: impl IntoVal<u32>) {
    let c = count.into_val();
    mbarrier("nv.mbarrier_init", NvOp::MbarrierInit, bar, vec![c.id()], &[]);
}

/// `mbarrier.arrive`: one arrival; returns the state token of the phase arrived at.
///
/// ```
/// use qd::prelude::*;
/// // Arrive, keep the token, and test it until the phase completes.
/// let k = Kernel::explicit("tokens", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 32u32));
///     block::sync();
///     let token = qd::nv::mbarrier_arrive(bar.at(0));
///     while_(|| !qd::nv::mbarrier_test_wait(bar.at(0), token), || {});
///     out.set(t, 2u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [2; 32]);
/// ```
#[track_caller]
pub fn mbarrier_arrive(bar: Elem<u64>) -> Val<u64> {
    Val::from_id(mbarrier("nv.mbarrier_arrive", NvOp::MbarrierArrive, bar, vec![], &[DType::U64])[0])
}

/// `mbarrier.arrive.noComplete`: `count` arrivals that must not complete the phase.
///
/// ```
/// use qd::prelude::*;
/// // Thread 0 counts 31 arrivals it knows about without completing the phase; the 32nd completes it.
/// let k = Kernel::explicit("batch", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || {
///         qd::nv::mbarrier_init(bar.at(0), 32u32);
///         qd::nv::mbarrier_arrive_no_complete(bar.at(0), 31u32);
///         qd::nv::mbarrier_arrive(bar.at(0));
///     });
///     block::sync();
///     qd::nv::mbarrier_wait_parity(bar.at(0), 0u32);
///     out.set(t, 1u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 32]);
/// ```
#[track_caller]
pub fn mbarrier_arrive_no_complete(bar: Elem<u64>, count: impl IntoVal<u32>) -> Val<u64> {
    let c = count.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_arrive_no_complete", NvOp::MbarrierArriveNoComplete, bar, vec![c.id()], &[DType::U64])[0],
    )
}

/// `mbarrier.arrive.expect_tx`: expect `tx` more transaction bytes, then arrive.
///
/// ```
/// use qd::prelude::*;
/// // The phase completes once 32 arrivals and 128 transaction bytes are in.
/// let k = Kernel::explicit("tx", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 32u32));
///     block::sync();
///     if_else(t.eq(0), || { qd::nv::mbarrier_arrive_expect_tx(bar.at(0), 128u32); }, || { qd::nv::mbarrier_arrive(bar.at(0)); });
///     if_(t.eq(1), || qd::nv::mbarrier_complete_tx(bar.at(0), 128u32)); // what a TMA copy would do
///     qd::nv::mbarrier_wait_parity(bar.at(0), 0u32);
///     out.set(t, 1u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 32]);
/// ```
#[track_caller]
pub fn mbarrier_arrive_expect_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) -> Val<u64> {
    let t = tx.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_arrive_expect_tx", NvOp::MbarrierArriveExpectTx, bar, vec![t.id()], &[DType::U64])[0],
    )
}

/// `mbarrier.expect_tx`: the current phase waits for `tx` more transaction bytes.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("expect", 32, |_| {
///     let bar = block::shared_array::<u64>(1);
///     qd::nv::mbarrier_expect_tx(bar.at(0), 64u32);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("mbarrier.expect_tx"));
/// assert!(k.trace(&Target::ptx(PtxTarget::sm(80))).is_err()); // sm_90 and up
/// ```
#[track_caller]
pub fn mbarrier_expect_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) {
    let t = tx.into_val();
    mbarrier("nv.mbarrier_expect_tx", NvOp::MbarrierExpectTx, bar, vec![t.id()], &[]);
}

/// `mbarrier.complete_tx`: `tx` transaction bytes arrived.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("complete", 32, |_| {
///     let bar = block::shared_array::<u64>(1);
///     qd::nv::mbarrier_complete_tx(bar.at(0), 64u32);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("mbarrier.complete_tx"));
/// ```
#[track_caller]
pub fn mbarrier_complete_tx(bar: Elem<u64>, tx: impl IntoVal<u32>) {
    let t = tx.into_val();
    mbarrier("nv.mbarrier_complete_tx", NvOp::MbarrierCompleteTx, bar, vec![t.id()], &[]);
}

/// `mbarrier.test_wait`: whether the phase of `token` has completed (does not block).
///
/// ```
/// use qd::prelude::*;
/// // Poll without blocking: count how often the phase was still open.
/// let k = Kernel::explicit("poll", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 32u32));
///     block::sync();
///     let token = qd::nv::mbarrier_arrive(bar.at(0));
///     let polls = var(0u32);
///     while_(|| !qd::nv::mbarrier_test_wait(bar.at(0), token), || polls.set(polls.get() + 1u32));
///     out.set(t, qd::nv::mbarrier_test_wait(bar.at(0), token).cast::<u32>());
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 32]);
/// ```
#[track_caller]
pub fn mbarrier_test_wait(bar: Elem<u64>, token: Val<u64>) -> Val<bool> {
    Val::from_id(mbarrier("nv.mbarrier_test_wait", NvOp::MbarrierTestWait, bar, vec![token.id()], &[DType::Bool])[0])
}

/// `mbarrier.try_wait.parity`: whether the phase with parity `parity` (0 or 1) has completed.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("try", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 32u32));
///     block::sync();
///     qd::nv::mbarrier_arrive(bar.at(0));
///     while_(|| !qd::nv::mbarrier_try_wait_parity(bar.at(0), 0u32), || {});
///     out.set(t, 1u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 32]);
/// ```
#[track_caller]
pub fn mbarrier_try_wait_parity(bar: Elem<u64>, parity: impl IntoVal<u32>) -> Val<bool> {
    let p = parity.into_val();
    Val::from_id(
        mbarrier("nv.mbarrier_try_wait_parity", NvOp::MbarrierTryWaitParity, bar, vec![p.id()], &[DType::Bool])[0],
    )
}

/// Waits until the phase with parity `parity` completes: a `try_wait.parity` loop (seed 004's `wait`).
///
/// ```
/// use qd::prelude::*;
/// // Two phases: the barrier flips parity each time it completes.
/// let k = Kernel::explicit("phases", 32, |k| {
///     let out = k.array::<u32>("out");
///     let bar = block::shared_array::<u64>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || qd::nv::mbarrier_init(bar.at(0), 32u32));
///     block::sync();
///     qd::nv::mbarrier_arrive(bar.at(0));
///     qd::nv::mbarrier_wait_parity(bar.at(0), 0u32);
///     qd::nv::mbarrier_arrive(bar.at(0));
///     qd::nv::mbarrier_wait_parity(bar.at(0), 1u32);
///     out.set(t, 2u32);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [2; 32]);
/// ```
#[track_caller]
pub fn mbarrier_wait_parity(bar: Elem<u64>, parity: impl IntoVal<u32>) {
    // The loop's body is a closure, which `#[track_caller]` does not reach: the scope keeps the
    // instructions and errors at the user's call.
    let _op = op_scope("nv.mbarrier_wait_parity");
    let p = parity.into_val();
    crate::trace::while_(|| !mbarrier_try_wait_parity(bar, p), || {});
}

/// `mbarrier.inval`: the barrier's memory may be reused.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// // Invalidate a barrier before its shared memory is reused for something else.
/// let k = Kernel::explicit("inval", 32, |_| {
///     let bar = block::shared_array::<u64>(1);
///     if_(block::thread_idx().eq(0), || {
///         qd::nv::mbarrier_init(bar.at(0), 1u32);
///         qd::nv::mbarrier_inval(bar.at(0));
///     });
/// });
/// Device::cpu().launch_grid(&k, 1, &[]).unwrap();
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text.contains("mbarrier.inval"));
/// ```
#[track_caller]
pub fn mbarrier_inval(bar: Elem<u64>) {
    mbarrier("nv.mbarrier_inval", NvOp::MbarrierInval, bar, vec![], &[]);
}

/// A fence with any ordering (acquire/release split fences fall back to `fence.acq_rel` before
/// sm_90, ptx.md §6).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::{Ordering, Scope};
/// // An acquire fence at block scope: `fence.acquire.cta` on sm_90, `fence.acq_rel.cta` before.
/// let k = Kernel::explicit("acq", 32, |_| qd::nv::fence(Ordering::Acquire, Scope::Block));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("fence.acquire.cta"));
/// Device::cpu().launch_grid(&k, 1, &[]).unwrap(); // a fence runs anywhere
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::explicit("alias", 32, |_| qd::nv::proxy_fence("alias"));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text.contains("fence.proxy.alias"));
/// let bad = Kernel::explicit("bad", 32, |_| qd::nv::proxy_fence("sideways"));
/// assert!(bad.trace(&Target::ptx(PtxTarget::sm(80))).is_err()); // unknown proxy
/// ```
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

/// `nanosleep.u32`: suspends the calling thread for about `ns` nanoseconds (a hint: PTX promises
/// a sleep between 0 and twice `ns`, at most a millisecond). A thread that spins on a value another
/// block publishes backs off with it, so its polls leave memory bandwidth to the blocks it waits
/// for (CUB's look-back does the same). It orders no memory. sm_70; the emulator runs it as a
/// no-op (its scheduler already runs other threads while one spins).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::range("backoff", 32, |k| {
///     let a = k.array::<u32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         qd::nv::nanosleep(100u32);
///         a.set(i, 1u32);
///     });
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("nanosleep.u32"));
/// let d = Device::cpu();
/// let a = d.zeros::<u32>(32).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), vec![1; 32]);
/// ```
#[track_caller]
pub fn nanosleep(ns: impl IntoVal<u32>) {
    let _op = op_scope("nv.nanosleep");
    if require_nv("nv.nanosleep", NvFeature::Nanosleep) {
        let ns = ns.into_val();
        nv_op(NvOp::Nanosleep, &[], vec![ns.id()], None);
    }
}
