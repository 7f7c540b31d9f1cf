//! Block (CTA / workgroup) primitives (seed 000).

use crate::ir::{BarrierReduce, DType, InstKind, Ordering, Scope, Special};
use crate::target::Feature;
use crate::trace::{
    self, current_loc, emit_at, new_value, op_scope, select, target, trace_error, var, Array, IntoVal, Scalar, Shuffle,
    Val,
};

/// Block-wide barrier: every thread of the block waits here; also orders memory for the block
/// (D6). Must be reached by every thread (rejected under varying control flow while tracing).
///
/// ```
/// use qd::prelude::*;
/// // Reverse each block through shared memory: every write lands before any read.
/// let k = Kernel::explicit("reverse", 64, |k| {
///     let a = k.array::<i32>("a");
///     let s = block::shared_array::<i32>(64);
///     let t = block::thread_idx();
///     let g = block::global_thread_idx();
///     s.set(t, a.get(g));
///     block::sync();
///     a.set(g, s.get(63 - t));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..128).collect::<Vec<i32>>()).unwrap();
/// d.launch_grid(&k, 2, &[a.arg()]).unwrap();
/// let a = a.to_vec().unwrap();
/// assert_eq!((a[0], a[63], a[64]), (63, 0, 127));
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("all", 64, |k| {
///     let a = k.array::<i32>("a");
///     let g = block::global_thread_idx();
///     a.set(g, block::sync_all_nonzero(a.get(g)));
/// });
/// let d = Device::cpu();
/// let mut data = vec![3i32; 128];
/// data[100] = 0; // block 1 has a zero
/// let a = d.array_from(&data).unwrap();
/// d.launch_grid(&k, 2, &[a.arg()]).unwrap();
/// let a = a.to_vec().unwrap();
/// assert_eq!((a[0], a[64]), (1, 0));
/// ```
#[track_caller]
pub fn sync_all_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_all_nonzero", BarrierReduce::And, predicate.into_val())
}

/// Barrier that returns 1 when `predicate != 0` on some thread of the block, else 0.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("any", 64, |k| {
///     let a = k.array::<i32>("a");
///     let g = block::global_thread_idx();
///     a.set(g, block::sync_any_nonzero(a.get(g)));
/// });
/// let d = Device::cpu();
/// let mut data = vec![0i32; 128];
/// data[5] = -2; // any non-zero value counts as true
/// let a = d.array_from(&data).unwrap();
/// d.launch_grid(&k, 2, &[a.arg()]).unwrap();
/// let a = a.to_vec().unwrap();
/// assert_eq!((a[0], a[64]), (1, 0));
/// ```
#[track_caller]
pub fn sync_any_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_any_nonzero", BarrierReduce::Or, predicate.into_val())
}

/// Barrier that returns the number of threads of the block whose `predicate != 0`.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("count", 64, |k| {
///     let a = k.array::<i32>("a");
///     let g = block::global_thread_idx();
///     a.set(g, block::sync_count_nonzero(a.get(g) % 2));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..64).collect::<Vec<i32>>()).unwrap();
/// d.launch_grid(&k, 1, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [32; 64]); // 32 odd numbers
/// ```
#[track_caller]
pub fn sync_count_nonzero(predicate: impl IntoVal<i32>) -> Val<i32> {
    sync_reduce("block.sync_count_nonzero", BarrierReduce::Popc, predicate.into_val())
}

/// Block-scope memory fence (`fence.sc.cta`, D6). No convergence requirement.
///
/// ```
/// use qd::prelude::*;
/// // Thread 0 publishes through shared memory while the others wait on a flag: the fence orders the
/// // value before the flag (a barrier would deadlock, the two sides never meet).
/// let k = Kernel::explicit("publish", 64, |k| {
///     let out = k.array::<i32>("out");
///     let value = block::shared_array::<i32>(1);
///     let flag = block::shared_array::<i32>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || flag.set(0, 0));
///     block::sync();
///     if_else(
///         t.eq(0),
///         || {
///             value.set(0, 99);
///             block::mem_fence();
///             atomic_exchange(flag.at(0), 1);
///         },
///         || {
///             while_(|| volatile_load(flag.at(0)).eq(0), || {});
///             block::mem_fence();
///         },
///     );
///     out.set(t, value.get(0));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(64).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [99; 64]);
/// ```
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("block.mem_fence");
    emit_at(InstKind::Fence { scope: Scope::Block, ordering: Ordering::SeqCst }, current_loc());
}

/// Deprecated name of [`mem_fence`].
///
/// ```
/// use qd::prelude::*;
/// #[allow(deprecated)]
/// let k = Kernel::explicit("old", 32, |k| {
///     let out = k.array::<i32>("out");
///     out.set(block::thread_idx(), 1);
///     block::mem_sync(); // the old name of block::mem_fence
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 32]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("tid", 32, |k| {
///     let out = k.array::<i32>("out");
///     out.set(block::global_thread_idx(), block::thread_idx());
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(96).unwrap();
/// d.launch_grid(&k, 3, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[40], 8);
/// ```
#[track_caller]
pub fn thread_idx() -> Val<i32> {
    special(Special::ThreadIdx)
}

/// `block_idx * block_dim + thread_idx`: equals `i - begin` on a range kernel's first grid-stride pass.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("gid", 16, |k| {
///     let out = k.array::<i32>("out");
///     let g = block::global_thread_idx();
///     out.set(g, g * 2);
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(48).unwrap();
/// d.launch_grid(&k, 3, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[47], 94);
/// ```
#[track_caller]
pub fn global_thread_idx() -> Val<i32> {
    special(Special::GlobalThreadIdx)
}

/// Index of the block within the grid.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("bid", 32, |k| {
///     let out = k.array::<i32>("out");
///     if_(block::thread_idx().eq(0), || out.set(block::block_idx(), block::block_idx() * 10));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(4).unwrap();
/// d.launch_grid(&k, 4, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [0, 10, 20, 30]);
/// ```
#[track_caller]
pub fn block_idx() -> Val<i32> {
    special(Special::BlockIdx)
}

/// Threads per block, as a traced value (the same as the kernel's trace-time `block_dim`).
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::explicit("bdim", 128, |k| {
///     let out = k.array::<i32>("out");
///     out.set(block::thread_idx(), block::block_dim());
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(128).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[5], 128);
/// ```
#[track_caller]
pub fn block_dim() -> Val<i32> {
    special(Special::BlockDim)
}

/// Blocks in the grid.
///
/// ```
/// use qd::prelude::*;
/// // A range kernel's grid is ceil(n / block_dim) blocks.
/// let k = Kernel::range("gdim", 64, |k| {
///     let out = k.array::<i32>("out");
///     k.parallel_for(0, out.len(), |i| out.set(i, block::grid_dim()));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(200).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[0], 4);
/// ```
#[track_caller]
pub fn grid_dim() -> Val<i32> {
    special(Special::GridDim)
}

pub use super::block_radix::radix_rank_keys;
pub use super::shaped::{shared_array_shaped, ShapedArray};

/// Allocates a shared array of `len` elements, one per block, uninitialised.
///
/// Each call while tracing is one allocation; a call inside a traced loop allocates once.
///
/// ```
/// use qd::prelude::*;
/// // Sum of each block's neighbours: stage the block's values in shared memory first.
/// let k = Kernel::explicit("neighbours", 32, |k| {
///     let a = k.array::<f32>("a");
///     let out = k.array::<f32>("out");
///     let s = block::shared_array::<f32>(32);
///     let t = block::thread_idx();
///     let g = block::global_thread_idx();
///     s.set(t, a.get(g));
///     block::sync();
///     out.set(g, s.get((t + 31) % 32) + s.get((t + 1) % 32));
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..32).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
/// let out = d.zeros::<f32>(32).unwrap();
/// d.launch_grid(&k, 1, &[a.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap()[..2], [32.0, 2.0]);
/// ```
#[track_caller]
pub fn shared_array<T: Scalar>(len: u32) -> Array<T> {
    let n = trace::with(|s| s.kernel.shared.len());
    crate::trace::shared_array_named(&format!("shared{n}"), len)
}

/// The kernel's `block_dim` as a plain value, read while tracing.
///
/// ```
/// use qd::prelude::*;
/// // Size a shared array from the kernel's own block_dim.
/// let k = Kernel::explicit("sized", 96, |k| {
///     let out = k.array::<u32>("out");
///     let n = block::static_block_dim();
///     let s = block::shared_array::<u32>(n);
///     let t = block::thread_idx();
///     s.set(t, n);
///     out.set(t, s.get(t));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(96).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [96; 96]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // Every thread gets its block's largest absolute value.
/// let k = Kernel::explicit("max_abs", 64, |k| {
///     let a = k.array::<f32>("a");
///     let g = block::global_thread_idx();
///     a.set(g, block::reduce_all(a.get(g), 64, |x, y| x.abs().max(y.abs())));
/// });
/// let d = Device::cpu();
/// let mut data = vec![0.5f32; 64];
/// data[10] = -3.0;
/// let a = d.array_from(&data).unwrap();
/// d.launch_grid(&k, 1, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [3.0; 64]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // Running maximum of |x| over the block.
/// let k = Kernel::explicit("running", 32, |k| {
///     let a = k.array::<i32>("a");
///     let t = block::thread_idx();
///     a.set(t, block::inclusive_scan(a.get(t).abs(), 32, |x, y| x.max(y)));
/// });
/// let d = Device::from_name("cpu:sg8").unwrap();
/// let data: Vec<i32> = (0..32).map(|x| if x == 5 { -50 } else { x }).collect();
/// let a = d.array_from(&data).unwrap();
/// d.launch_grid(&k, 1, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap()[..8], [0, 1, 2, 3, 4, 50, 50, 50]);
/// ```
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
///
/// ```
/// use qd::prelude::*;
/// // Offsets for a variable number of items per thread: an exclusive sum, identity 0.
/// let k = Kernel::explicit("offsets", 64, |k| {
///     let counts = k.array::<u32>("counts");
///     let offsets = k.array::<u32>("offsets");
///     let t = block::thread_idx();
///     offsets.set(t, block::exclusive_scan(counts.get(t), 64, |x, y| x + y, 0u32));
/// });
/// let d = Device::cpu();
/// let counts = d.array_from(&(0..64).map(|x| x % 4).collect::<Vec<u32>>()).unwrap();
/// let offsets = d.zeros::<u32>(64).unwrap();
/// d.launch_grid(&k, 1, &[counts.arg(), offsets.arg()]).unwrap();
/// assert_eq!(offsets.to_vec().unwrap()[..6], [0, 0, 1, 3, 6, 6]);
/// ```
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
    ($(($reduce:ident, $reduce_all:ident, $inclusive:ident, $exclusive:ident, $name:literal, $f:expr, $id:expr,
        $host:literal, $host_id:literal)),*) => {$(
        #[doc = concat!("Block ", $name, "-reduction (valid in thread 0); `block_dim` must equal the kernel's.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "// Blocks of 32 threads, 4 subgroups of 8 lanes each.\n",
            "let k = Kernel::range(\"k\", 32, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = block::", stringify!($reduce), "(a.get(i), 32);\n",
            "        if_(block::thread_idx().eq(0), || out.set(i, r)); // valid in thread 0\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..64).map(|x| (x * 7) % 23 - 11).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(64).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $host_id, ");\n",
            "let got = out.to_vec().unwrap();\n",
            "for b in 0..2 {\n",
            "    assert_eq!(got[b * 32], data[b * 32..][..32].iter().copied().fold(identity, op));\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $reduce<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.reduce_", $name));
            reduce_impl(concat!("block.reduce_", $name), value.into_val(), block_dim, &$f)
        }

        #[doc = concat!("Block ", $name, "-reduction broadcast to every thread.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "// Blocks of 32 threads, 4 subgroups of 8 lanes each.\n",
            "let k = Kernel::range(\"k\", 32, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = block::", stringify!($reduce_all), "(a.get(i), 32);\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..64).map(|x| (x * 7) % 23 - 11).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(64).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $host_id, ");\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    assert_eq!(g, data[j / 32 * 32..][..32].iter().copied().fold(identity, op));\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $reduce_all<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.reduce_all_", $name));
            reduce_all_impl(concat!("block.reduce_all_", $name), value.into_val(), block_dim, &$f)
        }

        #[doc = concat!("Inclusive block ", $name, "-scan.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "// Blocks of 32 threads, 4 subgroups of 8 lanes each.\n",
            "let k = Kernel::range(\"k\", 32, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = block::", stringify!($inclusive), "(a.get(i), 32);\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..64).map(|x| (x * 7) % 23 - 11).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(64).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $host_id, ");\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    assert_eq!(g, data[j / 32 * 32..=j].iter().copied().fold(identity, op));\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $inclusive<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.inclusive_", $name));
            scan_impl(concat!("block.inclusive_", $name), value.into_val(), block_dim, &$f, None)
        }

        #[doc = concat!("Exclusive block ", $name, "-scan; thread 0 gets the identity derived from the dtype.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "// Blocks of 32 threads, 4 subgroups of 8 lanes each.\n",
            "let k = Kernel::range(\"k\", 32, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = block::", stringify!($exclusive), "(a.get(i), 32);\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..64).map(|x| (x * 7) % 23 - 11).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(64).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $host_id, ");\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    assert_eq!(g, data[j / 32 * 32..j].iter().copied().fold(identity, op)); // thread 0: the identity\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $exclusive<T: Shuffle>(value: impl IntoVal<T>, block_dim: u32) -> Val<T> {
            let _op = op_scope(concat!("block.exclusive_", $name));
            let id = Val::constant($id);
            scan_impl(concat!("block.exclusive_", $name), value.into_val(), block_dim, &$f, Some(id))
        }
    )*};
}

typed_block_ops!(
    (
        reduce_add,
        reduce_all_add,
        inclusive_add,
        exclusive_add,
        "add",
        |a: Val<T>, b: Val<T>| a + b,
        T::ZERO,
        "|x: i32, y: i32| x + y",
        "0"
    ),
    (
        reduce_min,
        reduce_all_min,
        inclusive_min,
        exclusive_min,
        "min",
        |a: Val<T>, b: Val<T>| a.min(b),
        T::MAX,
        "|x: i32, y: i32| x.min(y)",
        "i32::MAX"
    ),
    (
        reduce_max,
        reduce_all_max,
        inclusive_max,
        exclusive_max,
        "max",
        |a: Val<T>, b: Val<T>| a.max(b),
        T::MIN,
        "|x: i32, y: i32| x.max(y)",
        "i32::MIN"
    )
);

/// Block radix ranking by match-and-count (seed 000): the stable rank of `key` within the block under
/// the digit `(key >> bit_start) & ((1 << num_bits) - 1)`; writes per-digit counts to `bins` and their
/// exclusive prefix to `excl_prefix` (both shared arrays of `1 << radix_bits` i32).
///
/// Constraints, checked while tracing: `block_dim == 1 << radix_bits`, `num_bits <= radix_bits`,
/// and the digit count a multiple of the subgroup width. The 64-lane path keeps u64 match masks.
///
/// ```
/// use qd::prelude::*;
/// // Rank 64 keys by their low 3 bits: a stable counting sort's scatter positions.
/// let k = Kernel::explicit("rank", 64, |k| {
///     let keys = k.array::<u32>("keys");
///     let ranks = k.array::<i32>("ranks");
///     let t = block::thread_idx();
///     let (bins, prefix) = (block::shared_array::<i32>(64), block::shared_array::<i32>(64));
///     ranks.set(t, block::radix_rank_match_atomic_or(keys.get(t), 64, 6, 0, 3, bins, prefix));
/// });
/// let d = Device::cpu();
/// let data: Vec<u32> = (0..64).map(|x| (x * 5 + 3) % 64).collect();
/// let keys = d.array_from(&data).unwrap();
/// let ranks = d.zeros::<i32>(64).unwrap();
/// d.launch_grid(&k, 1, &[keys.arg(), ranks.arg()]).unwrap();
/// let mut sorted = vec![0u32; 64];
/// for (key, rank) in data.iter().zip(ranks.to_vec().unwrap()) {
///     sorted[rank as usize] = *key;
/// }
/// let mut want = data.clone();
/// want.sort_by_key(|k| k & 7); // stable, like the ranking
/// assert_eq!(sorted, want);
/// ```
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
