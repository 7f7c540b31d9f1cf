//! Memory forms of seed 004 only the NVIDIA module reaches: `.L2::cache_hint` loads and atomics,
//! 128-bit compare-and-swap and exchange, packed `f16x2`/`bf16x2` atomics and `red`, the
//! sync_restrict and async-proxy fences, and the tensormap proxy fences and copy.
//!
//! The emulator (32-lane subgroups) runs the cache-hinted accesses as the plain ones and the
//! packed atomics with D5's 16-bit float add; the 128-bit atomics (its memory cells are 64-bit)
//! and the proxy fences (it has no proxies) are CUDA-only: the capability check refuses them there
//! and on every other backend, and their examples trace for a CUDA target.

use super::{nv_op, require_nv};
use crate::ir::{ArrayRef, AtomicOp, DType, L2Policy, NvOp, Ordering, PackedHalf, Scope, ValueId};
use crate::target::NvFeature;
use crate::trace::{op_scope, trace_error, Array, Elem, IntoVal, Scalar, Val};

/// Records an error unless `elem` is an element of a kernel array (global memory).
#[track_caller]
fn require_global<T: Scalar>(name: &str, elem: Elem<T>) -> bool {
    let global = matches!(elem.place().array, ArrayRef::Param(_));
    if !global {
        trace_error(name, format!("`{name}` needs an element of a kernel array (global memory)"));
    }
    global
}

/// Loads `elem` (global memory) with `.L2::cache_hint` under a `createpolicy` cache policy of
/// `policy` (sm_80): the value is the plain load's; only where the line stays in L2 changes (the
/// emulator, which has no L2, loads plainly).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel]
/// fn hinted(a: &[f32], out: &mut [f32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(a.len()) {
///         out[i] = qd::nv::load_l2_hint(&a[i], qd::ir::L2Policy::EvictFirst) * 2.0f32;
///     }
/// }
/// let d = Device::cpu();
/// let (a, mut out) = (d.array_from(&[1.0f32; 32]).unwrap(), d.zeros::<f32>(32).unwrap());
/// hinted().launch(&d, (&a, &mut out)).unwrap();
/// let k = hinted().into_kernel();
/// assert_eq!(out.to_vec().unwrap(), vec![2.0; 32]);
/// // On CUDA (sm_80 and up):
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text;
/// assert!(ptx.contains("createpolicy.fractional.L2::evict_first.b64"));
/// assert!(ptx.contains("ld.global.L2::cache_hint.f32"));
/// ```
#[track_caller]
pub fn load_l2_hint<T: Scalar>(elem: Elem<T>, policy: L2Policy) -> Val<T> {
    let _op = op_scope("nv.load_l2_hint");
    if T::DTYPE == DType::Bool {
        trace_error("nv.load_l2_hint", "`nv.load_l2_hint` loads numbers, not bool");
    }
    require_global("nv.load_l2_hint", elem);
    require_nv("nv.load_l2_hint", NvFeature::L2CacheHint);
    Val::from_id(nv_op(NvOp::LoadL2Hint(policy), &[T::DTYPE], vec![], Some(elem.place()))[0])
}

/// The `N` consecutive elements of global memory starting at `elem`, in one 8- or 16-byte load
/// (`ld.global.v2` / `.v4`): `N` is 2 or 4, the elements 4 or 8 bytes, `N` of them 16 bytes at
/// most (a trace-time error otherwise). `elem`'s index must be a multiple of `N`, so the load is
/// aligned to its size (device arrays start 256-byte aligned); the emulator reports one that is
/// not, or that reaches past the array, as an error at this call. The values are those of `N`
/// plain loads; a subgroup reading consecutive vectors moves the same bytes in a quarter (or half)
/// of the load instructions.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel]
/// fn sum4(a: &[i32], out: &mut [i32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(out.len()) {
///         let [x, y, z, w] = qd::nv::load_vector::<i32, 4>(&a[4 * i]);
///         out[i] = x + y + z + w;
///     }
/// }
/// let d = Device::from_name("cpu:sg32").unwrap();
/// let a = d.array_from(&(0..128).collect::<Vec<i32>>()).unwrap();
/// let mut out = d.zeros::<i32>(32).unwrap();
/// sum4().launch(&d, (&a, &mut out)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[1], 4 + 5 + 6 + 7);
/// let ir = sum4().into_kernel().trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("ld.global.v4.s32"));
/// ```
#[track_caller]
pub fn load_vector<T: Scalar, const N: usize>(elem: Elem<T>) -> [Val<T>; N] {
    const NAME: &str = "nv.load_vector";
    let _op = op_scope(NAME);
    let bytes = T::DTYPE.size_bytes();
    if !matches!(N, 2 | 4) || !matches!(bytes, 4 | 8) || N * bytes > 16 {
        trace_error(
            NAME,
            format!("`{NAME}` loads 2 or 4 elements of 4 or 8 bytes, 16 bytes at most, not {N} x {}", T::DTYPE),
        );
    }
    require_global(NAME, elem);
    require_nv(NAME, NvFeature::VectorLoad);
    let dsts = nv_op(NvOp::LoadVector, &[T::DTYPE; N], vec![], Some(elem.place()));
    std::array::from_fn(|k| Val::from_id(dsts[k]))
}

/// An atomic `op` on `elem` (global memory) with `.L2::cache_hint` under a cache policy of
/// `policy`: relaxed at system scope (cache-hint atomics take only cta or sys scope, seed 004).
/// Returns the old value; when it is unused the atomic prints as `red`. The operations and types
/// are those with a native `atom` (add on 32/64-bit integers and floats, min/max on integers,
/// and/or/xor on integers, exchange on 32/64-bit values); others are a trace-time error.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::{AtomicOp, L2Policy};
/// #[qd::kernel]
/// fn hinted_add(sum: &mut [u32]) {
///     qd::loop_config(block_dim = 32);
///     for _ in range(32) {
///         qd::nv::atomic_l2_hint(AtomicOp::Add, &sum[0], 1u32, L2Policy::EvictLast);
///     }
/// }
/// let d = Device::cpu();
/// let mut sum = d.zeros::<u32>(1).unwrap();
/// hinted_add().launch(&d, (&mut sum,)).unwrap();
/// let k = hinted_add().into_kernel();
/// assert_eq!(sum.to_vec().unwrap(), vec![32]);
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text;
/// assert!(ptx.contains("red.relaxed.sys.add.u32.global.L2::cache_hint"), "{ptx}");
/// ```
#[track_caller]
pub fn atomic_l2_hint<T: Scalar>(op: AtomicOp, elem: Elem<T>, value: impl IntoVal<T>, policy: L2Policy) -> Val<T> {
    let _op = op_scope("nv.atomic_l2_hint");
    let v = value.into_val();
    if !hint_native(op, T::DTYPE) {
        trace_error(
            "nv.atomic_l2_hint",
            format!("atomic_{} on {} has no native PTX atom to carry a cache hint", op.name(), T::DTYPE),
        );
    }
    require_global("nv.atomic_l2_hint", elem);
    require_nv("nv.atomic_l2_hint", NvFeature::L2CacheHint);
    Val::from_id(nv_op(NvOp::AtomicL2Hint(op, policy), &[T::DTYPE], vec![v.id()], Some(elem.place()))[0])
}

/// Whether `atom` has `op` on `t` natively (ptx.md §2.2), so a cache hint has an instruction to
/// ride on.
fn hint_native(op: AtomicOp, t: DType) -> bool {
    use DType::*;
    match op {
        AtomicOp::Add => matches!(t, I32 | U32 | I64 | U64 | F32 | F64),
        AtomicOp::Min | AtomicOp::Max | AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
            matches!(t, I32 | U32 | I64 | U64)
        }
        AtomicOp::Exchange => matches!(t, I32 | U32 | I64 | U64 | F32 | F64),
        AtomicOp::Mul => false,
    }
}

/// The 16-byte pair `pair` of a u64 kernel array (elements `2 * pair` and `2 * pair + 1`, low
/// then high), as the place of a 128-bit atomic; records an error for other arrays.
#[track_caller]
fn pair_place(name: &str, array: Array<u64>, pair: impl IntoVal<u32>) -> Elem<u64> {
    let lo = array.at(pair.into_val() * 2u32);
    require_global(name, lo);
    lo
}

#[track_caller]
fn atomic128(
    name: &'static str,
    op: NvOp,
    array: Array<u64>,
    pair: impl IntoVal<u32>,
    args: Vec<ValueId>,
) -> (Val<u64>, Val<u64>) {
    let _op = op_scope(name);
    let place = pair_place(name, array, pair).place();
    require_nv(name, NvFeature::Atomic128);
    let d = nv_op(op, &[DType::U64, DType::U64], args, Some(place));
    (Val::from_id(d[0]), Val::from_id(d[1]))
}

/// `atom.exch.b128` (sm_90): swaps the 16-byte pair `pair` of the u64 kernel array `array`
/// (elements `2 * pair`, `2 * pair + 1`: 16-byte aligned, since device arrays are) with
/// (`lo`, `hi`) as one atomic access, relaxed at device scope; returns the old (low, high).
/// CUDA-only (the emulator's memory cells are 64-bit).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel]
/// fn swap128(a: &mut [u64]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(32) {
///         let (lo, hi) = qd::nv::atomic_exch_b128(a, 0, i as u64, i as u64 + 1u64);
///         a[2 + i * 2] = lo;
///         a[3 + i * 2] = hi;
///     }
/// }
/// let k = swap128().into_kernel();
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("atom.exch.b128.global"));
/// ```
#[track_caller]
pub fn atomic_exch_b128(
    array: Array<u64>,
    pair: impl IntoVal<u32>,
    lo: impl IntoVal<u64>,
    hi: impl IntoVal<u64>,
) -> (Val<u64>, Val<u64>) {
    let (lo, hi) = (lo.into_val(), hi.into_val());
    atomic128("nv.atomic_exch_b128", NvOp::Exch128, array, pair, vec![lo.id(), hi.id()])
}

/// `atom.cas.b128` (sm_90): where the 16-byte pair `pair` of `array` equals `expected` (low,
/// high), stores `desired`, as one atomic access (relaxed, device scope); returns the old pair.
/// Layout and alignment as [`atomic_exch_b128`]; CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// // Swap pair 0 for (3, 4) where it still holds (1, 2): one 16-byte compare-and-swap.
/// let k = Kernel::explicit("cas128", 32, |k| {
///     let a = k.array::<u64>("a");
///     let one = (Val::constant(1u64), Val::constant(2u64));
///     let (lo, hi) = qd::nv::atomic_cas_b128(a, 0u32, one, (Val::constant(3u64), Val::constant(4u64)));
///     a.set(2, lo + hi);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("atom.cas.b128"));
/// ```
#[track_caller]
pub fn atomic_cas_b128(
    array: Array<u64>,
    pair: impl IntoVal<u32>,
    expected: (Val<u64>, Val<u64>),
    desired: (Val<u64>, Val<u64>),
) -> (Val<u64>, Val<u64>) {
    let args = vec![expected.0.id(), expected.1.id(), desired.0.id(), desired.1.id()];
    atomic128("nv.atomic_cas_b128", NvOp::Cas128, array, pair, args)
}

#[track_caller]
fn packed_add(name: &'static str, half: PackedHalf, word: Elem<u32>, value: Val<u32>) -> Val<u32> {
    let _op = op_scope(name);
    let feature = if half == PackedHalf::F16x2 { NvFeature::PackedF16x2 } else { NvFeature::PackedBf16x2 };
    if matches!(word.place().array, ArrayRef::Local(_)) {
        trace_error(name, format!("`{name}` needs a word of global or shared memory"));
    }
    require_nv(name, feature);
    Val::from_id(nv_op(NvOp::PackedAdd(half), &[DType::U32], vec![value.id()], Some(word.place()))[0])
}

/// `atom.add.noftz.f16x2` (sm_60): adds two packed f16 (low half = element 0) to the u32 word
/// `word` of global or shared memory, each half rounded to nearest without flushing subnormals;
/// returns the old word. Unused, it prints as `red.add.noftz.f16x2`. Pack with [`pack_f16x2`].
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// #[qd::kernel]
/// fn addh2(acc: &mut [u32]) {
///     qd::loop_config(block_dim = 32);
///     for _ in range(32) {
///         qd::nv::atomic_add_f16x2(&acc[0], qd::nv::pack_f16x2(F16::from_f32(1.0), F16::from_f32(2.0)));
///     }
/// }
/// let d = Device::cpu();
/// let mut acc = d.zeros::<u32>(1).unwrap();
/// addh2().launch(&d, (&mut acc,)).unwrap();
/// let k = addh2().into_kernel();
/// let w = acc.to_vec().unwrap()[0];
/// assert_eq!((F16(w as u16).to_f32(), F16((w >> 16) as u16).to_f32()), (32.0, 64.0));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(80))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(80)).unwrap().text.contains("red.add.noftz.f16x2.global"));
/// ```
#[track_caller]
pub fn atomic_add_f16x2(word: Elem<u32>, value: impl IntoVal<u32>) -> Val<u32> {
    packed_add("nv.atomic_add_f16x2", PackedHalf::F16x2, word, value.into_val())
}

/// `atom.add.noftz.bf16x2` (sm_90): as [`atomic_add_f16x2`] for two packed bf16 (pack with
/// [`pack_bf16x2`]).
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("bhalves", 32, |k| {
///     let w = k.array::<u32>("w");
///     k.parallel_for(0, 4, |_| {
///         let step = qd::nv::pack_bf16x2(BF16::from_f32(1.0), BF16::from_f32(-2.0));
///         qd::nv::atomic_add_bf16x2(w.at(0), step);
///     });
/// });
/// let d = Device::cpu();
/// let w = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[w.arg()]).unwrap();
/// let bits = w.to_vec().unwrap()[0];
/// assert_eq!(f32::from_bits((bits & 0xFFFF) << 16), 4.0);
/// assert_eq!(f32::from_bits(bits & 0xFFFF_0000), -8.0);
/// ```
#[track_caller]
pub fn atomic_add_bf16x2(word: Elem<u32>, value: impl IntoVal<u32>) -> Val<u32> {
    packed_add("nv.atomic_add_bf16x2", PackedHalf::BF16x2, word, value.into_val())
}

/// Two f16 as the u32 word the packed atomics take: `lo` in bits 0..16, `hi` in 16..32.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("pack", 32, |k| {
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, 1, |i| out.set(i, qd::nv::pack_f16x2(F16::from_f32(1.0), F16::from_f32(-2.0))));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [0xC000_3C00]); // high half -2.0, low half 1.0
/// ```
#[track_caller]
pub fn pack_f16x2(lo: impl IntoVal<crate::trace::F16>, hi: impl IntoVal<crate::trace::F16>) -> Val<u32> {
    let (lo, hi) = (lo.into_val().bit_cast::<u16>(), hi.into_val().bit_cast::<u16>());
    lo.cast::<u32>() | (hi.cast::<u32>() << 16u32)
}

/// Two bf16 as the u32 word the packed atomics take: `lo` in bits 0..16, `hi` in 16..32.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("bpack", 32, |k| {
///     let out = k.array::<u32>("out");
///     k.parallel_for(0, 1, |i| out.set(i, qd::nv::pack_bf16x2(BF16::from_f32(1.0), BF16::from_f32(2.0))));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [0x4000_3F80]);
/// ```
#[track_caller]
pub fn pack_bf16x2(lo: impl IntoVal<crate::trace::BF16>, hi: impl IntoVal<crate::trace::BF16>) -> Val<u32> {
    let (lo, hi) = (lo.into_val().bit_cast::<u16>(), hi.into_val().bit_cast::<u16>());
    lo.cast::<u32>() | (hi.cast::<u32>() << 16u32)
}

/// Checks that `ordering` is acquire or release, the two sync_restrict forms.
#[track_caller]
fn acquire_or_release(name: &str, ordering: Ordering) -> bool {
    let ok = matches!(ordering, Ordering::Acquire | Ordering::Release);
    if !ok {
        trace_error(name, format!("`{name}` is an acquire or a release fence, not {}", ordering.name()));
    }
    ok
}

/// `fence.acquire.sync_restrict::shared::cluster.cluster` (acquire) or
/// `fence.release.sync_restrict::shared::cta.cluster` (release) (sm_90, PTX 8.6): a cluster-scope
/// fence restricted to shared memory, the lighter pairing of a remote mbarrier arrive (release on
/// the arriving CTA's own shared memory, acquire on the cluster's). CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::Ordering;
/// let k = Kernel::explicit("restrict", 32, |_| qd::nv::fence_sync_restrict(Ordering::Release));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text;
/// assert!(ptx.contains("fence.release.sync_restrict::shared::cta.cluster;"));
/// ```
#[track_caller]
pub fn fence_sync_restrict(ordering: Ordering) {
    let _op = op_scope("nv.fence_sync_restrict");
    if acquire_or_release("nv.fence_sync_restrict", ordering)
        && require_nv("nv.fence_sync_restrict", NvFeature::SyncRestrict)
    {
        nv_op(NvOp::FenceSyncRestrict(ordering), &[], vec![], None);
    }
}

/// The async-proxy acquire/release fences (sm_90, PTX 8.6):
/// `fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster` or
/// `fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster`: order generic-proxy
/// accesses to shared memory with the async proxy (TMA, `cp.async.bulk`) across the cluster.
/// CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::Ordering;
/// let k = Kernel::explicit("async", 32, |_| qd::nv::proxy_async_fence(Ordering::Acquire));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("fence.proxy.async::generic.acquire"));
/// assert!(Device::cpu().trace(&k).is_err()); // CUDA-only: the emulator has no proxies
/// ```
#[track_caller]
pub fn proxy_async_fence(ordering: Ordering) {
    let _op = op_scope("nv.proxy_async_fence");
    if acquire_or_release("nv.proxy_async_fence", ordering)
        && require_nv("nv.proxy_async_fence", NvFeature::SyncRestrict)
    {
        nv_op(NvOp::ProxyAsyncFence(ordering), &[], vec![], None);
    }
}

/// Checks a tensormap fence's scope: cta (block), cluster, gpu (device) or sys.
#[track_caller]
fn tensormap_scope(name: &str, scope: Scope) -> bool {
    let ok = !matches!(scope, Scope::Thread | Scope::Subgroup);
    if !ok {
        trace_error(name, format!("`{name}` takes block, cluster, device or system scope, not {}", scope.name()));
    }
    ok
}

/// `fence.proxy.tensormap::generic.release.<scope>` (sm_90, PTX 8.3): generic-proxy writes to a
/// tensor map before it are visible to the tensormap proxy (TMA) at `scope`. CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::Scope;
/// let k = Kernel::explicit("tm_release", 32, |_| qd::nv::tensormap_fence_release(Scope::Device));
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("fence.proxy.tensormap::generic.release"));
/// ```
#[track_caller]
pub fn tensormap_fence_release(scope: Scope) {
    let _op = op_scope("nv.tensormap_fence_release");
    if tensormap_scope("nv.tensormap_fence_release", scope)
        && require_nv("nv.tensormap_fence_release", NvFeature::TensormapProxy)
    {
        nv_op(NvOp::TensormapRelease(scope), &[], vec![], None);
    }
}

/// `fence.proxy.tensormap::generic.acquire.<scope> [addr], 128` (sm_90, PTX 8.3): the 128-byte
/// tensor map starting at `elem` (a 128-byte aligned element of a kernel array) is acquired by the
/// tensormap proxy after a release at `scope`. CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::Scope;
/// let k = Kernel::explicit("tmap", 32, |k| {
///     let map = k.array::<u64>("map");
///     qd::nv::tensormap_fence_release(Scope::Device);
///     qd::nv::tensormap_fence_acquire(map.at(0), Scope::Device);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// let ptx = lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text;
/// assert!(ptx.contains("fence.proxy.tensormap::generic.release.gpu;"));
/// assert!(ptx.contains("fence.proxy.tensormap::generic.acquire.gpu"));
/// ```
#[track_caller]
pub fn tensormap_fence_acquire<T: Scalar>(elem: Elem<T>, scope: Scope) {
    let _op = op_scope("nv.tensormap_fence_acquire");
    if tensormap_scope("nv.tensormap_fence_acquire", scope)
        && require_global("nv.tensormap_fence_acquire", elem)
        && require_nv("nv.tensormap_fence_acquire", NvFeature::TensormapProxy)
    {
        nv_op(NvOp::TensormapAcquire(scope), &[], vec![], Some(elem.place()));
    }
}

/// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned`
/// (sm_90, PTX 8.3): copies the 128-byte tensor map at `src` (a 128-byte aligned element of a
/// shared array: element 0 of the kernel's first shared array is, since the shared memory of a
/// kernel that copies tensor maps is aligned to 128 bytes) to
/// `dst` (an element of a kernel array, 128-byte aligned) and releases it to the tensormap proxy
/// at `scope`. Every thread of the warp executes it together (`.sync.aligned`). CUDA-only.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// use qd::ir::Scope;
/// // Publish a tensor map built in shared memory to global memory for the TMA.
/// let k = Kernel::explicit("publish_map", 32, |k| {
///     let maps = k.array::<u64>("maps");
///     let staged = block::shared_array::<u64>(16); // 128 bytes
///     qd::nv::tensormap_copy_fence(maps.at(0), staged.at(0), Scope::Device);
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::sm(90)).unwrap().text.contains("tensormap.cp_fenceproxy"));
/// ```
#[track_caller]
pub fn tensormap_copy_fence<T: Scalar>(dst: Elem<T>, src: Elem<T>, scope: Scope) {
    let name = "nv.tensormap_copy_fence";
    let _op = op_scope(name);
    if !matches!(src.place().array, ArrayRef::Shared(_)) {
        trace_error(name, format!("`{name}` copies from a shared array element"));
        return;
    }
    if tensormap_scope(name, scope) && require_global(name, dst) && require_nv(name, NvFeature::TensormapProxy) {
        let op = NvOp::TensormapCopy { scope, src: src.place().array };
        nv_op(op, &[], vec![src.place().index], Some(dst.place()));
    }
}
