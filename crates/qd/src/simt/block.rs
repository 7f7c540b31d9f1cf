//! Block (CTA / workgroup) primitives (seed 000).

use crate::ir::{BarrierReduce, DType, InstKind, Ordering, Scope, Special};
use crate::target::Feature;
use crate::trace::{
    self, current_loc, emit_at, new_value, op_scope, select, target, trace_error, var, Array, IntoVal, Scalar, Shuffle,
    Val,
};

/// Block-wide barrier: every thread of the block waits here; also orders memory for the block
/// (D6). Must be reached by every thread (rejected under varying control flow while tracing).
#[track_caller]
pub fn sync() {
    let _op = op_scope("block.sync");
    emit_at(InstKind::BlockBarrier { reduce: None }, current_loc());
}

#[track_caller]
fn sync_reduce(name: &'static str, red: BarrierReduce, predicate: Val<i32>) -> Val<i32> {
    let _op = op_scope(name);
    let loc = current_loc();
    let pred = predicate.nonzero();
    if target().has(Feature::BarrierReduce) {
        let dst = new_value(DType::I32);
        emit_at(InstKind::BlockBarrier { reduce: Some((red, pred.id(), dst)) }, loc);
        return Val::from_id(dst);
    }
    // Emulation for targets without a fused barrier-reduction: one shared slot, an atomic add per
    // contributing thread, and a trailing barrier so the slot can be reused by the next call (D-guide).
    let slot = shared_array::<i32>(1);
    trace::if_(thread_idx().eq(0), || slot.set(0, 0));
    sync();
    let contributes = match red {
        BarrierReduce::And => !pred,
        _ => pred,
    };
    trace::if_(contributes, || {
        crate::simt::atomic::atomic_add(slot.at(0), 1);
    });
    sync();
    let count = slot.get(0);
    sync();
    match red {
        BarrierReduce::And => count.eq(0).to_i32(),
        BarrierReduce::Or => count.ne(0).to_i32(),
        BarrierReduce::Popc => count,
    }
}

/// Barrier that returns 1 on every thread when `predicate != 0` on every thread of the block, else 0.
#[track_caller]
pub fn sync_all_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_all_nonzero", BarrierReduce::And, predicate.into_val())
}

/// Barrier that returns 1 when `predicate != 0` on some thread of the block, else 0.
#[track_caller]
pub fn sync_any_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_any_nonzero", BarrierReduce::Or, predicate.into_val())
}

/// Barrier that returns the number of threads of the block whose `predicate != 0`.
#[track_caller]
pub fn sync_count_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_count_nonzero", BarrierReduce::Popc, predicate.into_val())
}

/// Block-scope memory fence (`fence.sc.cta`, D6). No convergence requirement.
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("block.mem_fence");
    emit_at(InstKind::Fence { scope: Scope::Block, ordering: Ordering::SeqCst }, current_loc());
}

/// Deprecated name of [`mem_fence`].
#[deprecated(note = "qd.simt.block.mem_sync() is deprecated; use block::mem_fence() instead")]
#[track_caller]
pub fn mem_sync() {
    mem_fence()
}

#[track_caller]
fn special(reg: Special) -> Val<i32> {
    let loc = current_loc();
    let dst = new_value(DType::U32);
    emit_at(InstKind::Special { dst, reg }, loc);
    Val::<u32>::from_id(dst).cast()
}

/// Index of the calling thread within its block.
#[track_caller]
pub fn thread_idx() -> Val<i32> {
    special(Special::ThreadIdx)
}

/// `block_idx * block_dim + thread_idx`: equals `i - begin` on a range kernel's first grid-stride pass.
#[track_caller]
pub fn global_thread_idx() -> Val<i32> {
    special(Special::GlobalThreadIdx)
}

/// Index of the block within the grid.
#[track_caller]
pub fn block_idx() -> Val<i32> {
    special(Special::BlockIdx)
}

/// Threads per block, as a traced value (the same as the kernel's trace-time `block_dim`).
#[track_caller]
pub fn block_dim() -> Val<i32> {
    special(Special::BlockDim)
}

/// Blocks in the grid.
#[track_caller]
pub fn grid_dim() -> Val<i32> {
    special(Special::GridDim)
}

pub use super::block_radix::radix_rank_keys;
pub use super::shaped::{shared_array_shaped, ShapedArray};

/// Allocates a shared array of `len` elements, one per block, uninitialised.
///
/// Each call while tracing is one allocation; a call inside a traced loop allocates once.
#[track_caller]
pub fn shared_array<T: Scalar>(len: u32) -> Array<T> {
    let n = trace::with(|s| s.kernel.shared.len());
    crate::trace::shared_array_named(&format!("shared{n}"), len)
}

/// The kernel's `block_dim` as a plain value, read while tracing.
#[track_caller]
pub fn static_block_dim() -> u32 {
    trace::with(|s| s.kernel.block_dim)
}

// ---------------------------------------------------------------------------------------------
// Block reductions and scans (seed 000, quadrants.md 3.4): a shuffle tree per subgroup, one shared
// slot per subgroup, and a trailing barrier so the same call site can run again safely.
// ---------------------------------------------------------------------------------------------

/// Checks a block op's `block_dim` argument against the kernel's and the subgroup width (D1).
#[track_caller]
pub(crate) fn check_block_dim(op: &str, block_dim: u32) -> bool {
    let sg = crate::simt::subgroup::group_size();
    let kernel_bd = static_block_dim();
    if block_dim == 0 || !block_dim.is_multiple_of(sg) {
        trace_error(
            op,
            format!("{op}: block_dim must be a positive multiple of subgroup size ({sg}), got {block_dim}"),
        );
        return false;
    }
    if block_dim != kernel_bd {
        trace_error(op, format!("{op}: block_dim {block_dim} differs from the kernel's block_dim {kernel_bd}"));
        return false;
    }
    true
}

/// Subgroup index and lane of the calling thread.
#[track_caller]
fn subgroup_coords() -> (Val<i32>, Val<i32>) {
    let log2 = crate::simt::subgroup::log2_group_size() as i32;
    let t = thread_idx();
    (t >> log2, crate::simt::subgroup::invocation_id())
}

/// `op`-reduction of the whole subgroup (the subgroup library's tree): valid in lane 0.
#[track_caller]
fn subgroup_tree<T: Shuffle>(v: Val<T>, op: &impl Fn(Val<T>, Val<T>) -> Val<T>) -> Val<T> {
    crate::simt::subgroup::reduce_tree_with(v, crate::simt::subgroup::log2_group_size(), op)
}

/// Inclusive scan of the whole subgroup (the subgroup library's Hillis–Steele scan).
#[track_caller]
fn subgroup_scan<T: Shuffle>(v: Val<T>, op: &impl Fn(Val<T>, Val<T>) -> Val<T>) -> Val<T> {
    crate::simt::subgroup::inclusive_scan_with(v, crate::simt::subgroup::log2_group_size(), op)
}

/// Block reduction with a custom associative `op`; the result is valid in thread 0 only.
///
/// ```
/// # use qd::prelude::*;
/// #[qd::kernel(block_dim = 128)]
/// fn block_or(a: &mut [u32]) {
///     let t = block::thread_idx();
///     let r = block::reduce(a[t], 128, |x, y| x | y);
///     if t == 0 {
///         a[0] = r;
///     }
/// }
/// let d = Device::cpu();
/// let mut a = d.array_from(&(0..128).map(|i| 1u32 << (i % 32)).collect::<Vec<_>>()).unwrap();
/// block_or().launch_grid(&d, 1, (&mut a,)).unwrap();
/// assert_eq!(a.to_vec().unwrap()[0], u32::MAX);
/// ```
#[track_caller]
pub fn reduce<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32, op: impl Fn(Val<T>, Val<T>) -> Val<T>) -> Val<T> {
    let _op = op_scope("block.reduce");
    reduce_impl("block.reduce", value.into_val(), block_dim, &op)
}

#[track_caller]
fn reduce_impl<T: Shuffle>(name: &str, v: Val<T>, block_dim: u32, op: &impl Fn(Val<T>, Val<T>) -> Val<T>) -> Val<T> {
    if !check_block_dim(name, block_dim) {
        return v;
    }
    let a = subgroup_tree(v, op);
    let ns = block_dim / crate::simt::subgroup::group_size();
    if ns == 1 {
        return a;
    }
    let (sg, lane) = subgroup_coords();
    let slots = shared_array::<T>(ns);
    trace::if_(lane.eq(0), || slots.set(sg, a));
    sync();
    let result = var(a);
    trace::if_(thread_idx().eq(0), || {
        let acc = var(slots.get(0));
        for j in 1..ns {
            acc.set(op(acc.get(), slots.get(j)));
        }
        result.set(acc.get());
    });
    // Trailing barrier: the slots may be written again by the next call from this site.
    sync();
    result.get()
}

/// Block reduction broadcast to every thread, with a custom associative `op`.
#[track_caller]
pub fn reduce_all<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32, op: impl Fn(Val<T>, Val<T>) -> Val<T>) -> Val<T> {
    let _op = op_scope("block.reduce_all");
    reduce_all_impl("block.reduce_all", value.into_val(), block_dim, &op)
}

#[track_caller]
fn reduce_all_impl<T: Shuffle>(
    name: &str,
    v: Val<T>,
    block_dim: u32,
    op: &impl Fn(Val<T>, Val<T>) -> Val<T>,
) -> Val<T> {
    let r = reduce_impl(name, v, block_dim, op);
    let slot = shared_array::<T>(1);
    trace::if_(thread_idx().eq(0), || slot.set(0, r));
    sync();
    let out = slot.get(0);
    sync();
    out
}

/// Inclusive block scan with a custom associative `op`: thread `i` gets `op(v[0], ..., v[i])`.
#[track_caller]
pub fn inclusive_scan<T: Shuffle>(
    value: impl IntoVal<T>,
    block_dim: u32,
    op: impl Fn(Val<T>, Val<T>) -> Val<T>,
) -> Val<T> {
    let _op = op_scope("block.inclusive_scan");
    scan_impl("block.inclusive_scan", value.into_val(), block_dim, &op, None)
}

/// Exclusive block scan with a custom associative `op` and its `identity` (thread 0 gets `identity`).
#[track_caller]
pub fn exclusive_scan<T: Shuffle>(
    value: impl IntoVal<T>,
    block_dim: u32,
    op: impl Fn(Val<T>, Val<T>) -> Val<T>,
    identity: impl IntoVal<T>,
) -> Val<T> {
    let _op = op_scope("block.exclusive_scan");
    let id = identity.into_val();
    scan_impl("block.exclusive_scan", value.into_val(), block_dim, &op, Some(id))
}

#[track_caller]
fn scan_impl<T: Shuffle>(
    name: &str,
    v: Val<T>,
    block_dim: u32,
    op: &impl Fn(Val<T>, Val<T>) -> Val<T>,
    identity: Option<Val<T>>,
) -> Val<T> {
    if !check_block_dim(name, block_dim) {
        return v;
    }
    let sgs = crate::simt::subgroup::group_size();
    let ns = block_dim / sgs;
    let inc = subgroup_scan(v, op);
    let (sg, lane) = subgroup_coords();
    // The per-thread result inside its subgroup.
    let local = match identity {
        None => inc,
        Some(id) => {
            let shifted = crate::simt::subgroup::shuffle_up(inc, 1u32);
            select(lane.eq(0), id, shifted)
        }
    };
    if ns == 1 {
        return local;
    }
    let slots = shared_array::<T>(ns);
    trace::if_(lane.eq(sgs as i32 - 1), || slots.set(sg, inc));
    sync();
    // Every thread folds the totals of the subgroups before its own (no second barrier needed).
    let prefix = var(slots.get(0));
    for j in 1..ns {
        trace::if_(sg.gt(j as i32), || prefix.set(op(prefix.get(), slots.get(j))));
    }
    let result = var(local);
    match identity {
        None => trace::if_(sg.gt(0), || result.set(op(prefix.get(), local))),
        Some(id) => {
            trace::if_(sg.gt(0), || {
                let before = prefix.get();
                result.set(select(lane.eq(0), before, op(before, local)));
            });
            trace::if_(sg.eq(0) & lane.eq(0), || result.set(id));
        }
    }
    sync();
    result.get()
}

macro_rules! typed_block_ops {
    ($(($reduce:ident, $reduce_all:ident, $inclusive:ident, $exclusive:ident, $name:literal, $f:expr, $id:expr)),*) => {$(
        #[doc = concat!("Block ", $name, "-reduction (valid in thread 0); `block_dim` must equal the kernel's.")]
        #[track_caller]
        pub fn $reduce<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.reduce_", $name));
            reduce_impl(concat!("block.reduce_", $name), value.into_val(), block_dim, &$f)
        }

        #[doc = concat!("Block ", $name, "-reduction broadcast to every thread.")]
        #[track_caller]
        pub fn $reduce_all<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.reduce_all_", $name));
            reduce_all_impl(concat!("block.reduce_all_", $name), value.into_val(), block_dim, &$f)
        }

        #[doc = concat!("Inclusive block ", $name, "-scan.")]
        #[track_caller]
        pub fn $inclusive<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.inclusive_", $name));
            scan_impl(concat!("block.inclusive_", $name), value.into_val(), block_dim, &$f, None)
        }

        #[doc = concat!("Exclusive block ", $name, "-scan; thread 0 gets the identity derived from the dtype.")]
        #[track_caller]
        pub fn $exclusive<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.exclusive_", $name));
            let id = Val::constant($id);
            scan_impl(concat!("block.exclusive_", $name), value.into_val(), block_dim, &$f, Some(id))
        }
    )*};
}

typed_block_ops!(
    (reduce_add, reduce_all_add, inclusive_add, exclusive_add, "add", |a: Val<T>, b: Val<T>| a + b, T::ZERO),
    (reduce_min, reduce_all_min, inclusive_min, exclusive_min, "min", |a: Val<T>, b: Val<T>| a.min(b), T::MAX),
    (reduce_max, reduce_all_max, inclusive_max, exclusive_max, "max", |a: Val<T>, b: Val<T>| a.max(b), T::MIN)
);

/// Block radix ranking by match-and-count (seed 000): the stable rank of `key` within the block under
/// the digit `(key >> bit_start) & ((1 << num_bits) - 1)`; writes per-digit counts to `bins` and their
/// exclusive prefix to `excl_prefix` (both shared arrays of `1 << radix_bits` i32).
///
/// Constraints, checked while tracing: `block_dim == 1 << radix_bits`, `num_bits <= radix_bits`,
/// and the digit count a multiple of the subgroup width. The 64-lane path keeps u64 match masks.
#[allow(clippy::too_many_arguments)]
#[track_caller]
pub fn radix_rank_match_atomic_or(
    key: impl IntoVal<u32>,
    block_dim: u32,
    radix_bits: u32,
    bit_start: u32,
    num_bits: u32,
    bins: Array<i32>,
    excl_prefix: Array<i32>,
) -> Val<i32> {
    const NAME: &str = "block.radix_rank_match_atomic_or";
    let _op = op_scope(NAME);
    let key = key.into_val();
    let sgs = crate::simt::subgroup::group_size();
    if radix_bits > 10 || block_dim != 1 << radix_bits {
        trace_error(NAME, format!("{NAME}: block_dim must equal RADIX_DIGITS (1 << radix_bits), got {block_dim} and radix_bits {radix_bits}"));
        return Val::constant(0);
    }
    if num_bits > radix_bits {
        trace_error(NAME, format!("{NAME}: num_bits {num_bits} must be <= radix_bits {radix_bits}"));
        return Val::constant(0);
    }
    // Checked: `bit_start` may be anything a caller computed (u32::MAX would wrap the sum). The
    // digit's bits run from `bit_start` up, so past the key's 32 bits it is `bit_start` that is wrong.
    if bit_start.checked_add(num_bits).is_none_or(|end| end > 32) {
        let end = u64::from(bit_start) + u64::from(num_bits);
        trace_error(
            NAME,
            format!(
                "{NAME}: bit_start {bit_start} is too large: the digit's bits bit_start .. bit_start + num_bits \
                 ({bit_start}..{end}) go past the 32-bit key; with num_bits {num_bits}, bit_start must be at most {}",
                32u32.saturating_sub(num_bits)
            ),
        );
        return Val::constant(0);
    }
    let digits = 1u32 << radix_bits;
    if !digits.is_multiple_of(sgs) {
        trace_error(NAME, format!("{NAME}: the {digits} digits must be a multiple of the subgroup size {sgs}"));
        return Val::constant(0);
    }
    if !check_block_dim(NAME, block_dim) {
        return Val::constant(0);
    }
    if sgs == 64 {
        radix_rank_impl::<u64>(key, block_dim, digits, bit_start, num_bits, bins, excl_prefix)
    } else {
        radix_rank_impl::<u32>(key, block_dim, digits, bit_start, num_bits, bins, excl_prefix)
    }
}

/// Lane-mask words for the match phase: u32 up to 32 lanes, u64 for 64.
trait MaskWord: crate::trace::Int + Shuffle {}
impl MaskWord for u32 {}
impl MaskWord for u64 {}

#[allow(clippy::too_many_arguments)]
#[track_caller]
fn radix_rank_impl<M: MaskWord>(
    key: Val<u32>,
    block_dim: u32,
    digits: u32,
    bit_start: u32,
    num_bits: u32,
    bins: Array<i32>,
    excl_prefix: Array<i32>,
) -> Val<i32> {
    use crate::simt::subgroup;
    let sgs = subgroup::group_size();
    let ns = block_dim / sgs;
    let (sg, lane) = subgroup_coords();
    let tid = thread_idx();
    let r = digits as i32;
    let digit = ((key >> bit_start) & ((1u32 << num_bits) - 1)).cast::<i32>();
    let off = shared_array::<i32>(ns * digits);
    let matches = shared_array::<M>(ns * digits);
    // 1. Each subgroup clears its row, then builds its histogram.
    for b in 0..digits / sgs {
        let i = sg * r + lane + (b * sgs) as i32;
        off.set(i, 0);
        matches.set(i, M::ZERO);
    }
    subgroup::sync();
    subgroup::mem_fence();
    crate::simt::atomic::atomic_add(off.at(sg * r + digit), 1);
    sync();
    // 2. Column upsweep: thread `tid` owns digit `tid`.
    let count = var(0i32);
    for j in 0..ns as i32 {
        let c = off.get(tid + j * r);
        off.set(tid + j * r, count.get());
        count.set(count.get() + c);
    }
    // 3. Exclusive prefix over digits.
    let pfx = scan_impl(NAME_SCAN, count.get(), block_dim, &|a: Val<i32>, b: Val<i32>| a + b, Some(Val::constant(0)));
    // 4. Downsweep.
    for j in 0..ns as i32 {
        off.set(tid + j * r, off.get(tid + j * r) + pfx);
    }
    sync();
    // 5. Match phase: lanes sharing a digit find each other through an atomic-or mask.
    let slot = sg * r + digit;
    let one = Val::constant(M::ONE);
    crate::simt::atomic::atomic_or(matches.at(slot), one << lane.cast::<M>());
    subgroup::sync();
    subgroup::mem_fence();
    let m = matches.get(slot);
    let top = M::DTYPE.bits() as i32 - 1;
    let leader = Val::constant(top) - m.clz().cast::<i32>();
    let bit = one << lane.cast::<M>();
    let popc = (m & (bit | (bit - M::ONE))).popc().cast::<i32>();
    let base = var(0i32);
    trace::if_(lane.eq(leader), || base.set(crate::simt::atomic::atomic_add(off.at(slot), popc)));
    let base = subgroup::shuffle(base.get(), leader.cast::<u32>());
    trace::if_(lane.eq(leader), || matches.set(slot, M::ZERO));
    subgroup::sync();
    subgroup::mem_fence();
    let rank = base + popc - 1;
    // 6. Publish the digit counts and their prefix.
    bins.set(tid, count.get());
    excl_prefix.set(tid, pfx);
    sync();
    rank
}

const NAME_SCAN: &str = "block.radix_rank_match_atomic_or";
