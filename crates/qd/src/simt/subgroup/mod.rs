//! Subgroup (warp / wave) primitives (seed 002).
//!
//! A *subgroup* is the set of lanes that execute in lockstep: 32 on CUDA and Metal, 64 on AMDGPU,
//! whatever the device reports on Vulkan, and 4 to 64 on the CPU emulator (`cpu:sgN`). Every op here
//! works across the lanes of one subgroup, without memory or block barriers, and must be called by
//! every lane of the subgroup (from subgroup-uniform control flow; the verifier rejects the cases it
//! can see while tracing, the emulator reports the rest).
//!
//! Everything is built from a handful of core intrinsics (shuffle by index / up / down, broadcast,
//! ballot, vote, lane id) and fully unrolled while tracing. The `_tiled(…, log2_size)` forms split
//! the subgroup into independent, aligned tiles of `2^log2_size` lanes; the plain forms are the
//! tiled forms at [`log2_group_size`] (one code path, so they agree lane for lane, undefined lanes
//! included). `log2_size` is checked against the subgroup width while tracing.
//!
//! | family | ops |
//! |---|---|
//! | data movement | [`shuffle`], [`shuffle_up`], [`shuffle_down`], [`shuffle_xor`], [`broadcast`], [`broadcast_first`] |
//! | identity and control | [`invocation_id`], [`group_size`], [`log2_group_size`], [`elect`], [`sync`], [`mem_fence`] |
//! | votes and ballots | [`ballot`], [`ballot_first_n`], [`all_true`], [`any_true`], [`all_equal`], `lanemask_{lt,le,eq,gt,ge}` |
//! | reductions | `reduce_{add,min,max}`, `reduce_all_{add,min,max}`, `segmented_reduce_{add,min,max}` |
//! | scans | `inclusive_{add,mul,min,max,and,or,xor}`, `exclusive_{…}` |
//! | sorting | [`bitonic_sort_kv`] |
//!
//! Values moved between lanes are i32, u32, i64, u64, f32 or f64 (the [`Shuffle`] types).
//!
//! ```
//! use qd::prelude::*;
//!
//! // Prefix sums over tiles of 8 lanes, and each tile's total in every lane.
//! let kernel = Kernel::range("scan8", 64, |k| {
//!     let a = k.array::<i32>("a");
//!     let total = k.array::<i32>("total");
//!     k.parallel_for(0, a.len(), |i| {
//!         let v = a.get(i);
//!         a.set(i, subgroup::inclusive_add_tiled(v, 3));
//!         total.set(i, subgroup::reduce_all_add_tiled(v, 3));
//!     });
//! });
//! let device = Device::from_name("cpu:sg16").unwrap();
//! let a = device.array_from(&[1i32; 64]).unwrap();
//! let total = device.zeros::<i32>(64).unwrap();
//! device.launch(&kernel, &[a.arg(), total.arg()]).unwrap();
//! assert_eq!(a.to_vec().unwrap()[..9], [1, 2, 3, 4, 5, 6, 7, 8, 1]);
//! assert!(total.to_vec().unwrap().iter().all(|&t| t == 8));
//! ```

mod reduce;
mod scan;
pub(crate) use reduce::reduce_tree_with;
pub(crate) use scan::inclusive_scan_with;
mod sort;

pub use reduce::{
    reduce_add, reduce_add_tiled, reduce_all_add, reduce_all_add_tiled, reduce_all_max, reduce_all_max_tiled,
    reduce_all_min, reduce_all_min_tiled, reduce_max, reduce_max_tiled, reduce_min, reduce_min_tiled,
    segmented_reduce_add, segmented_reduce_add_tiled, segmented_reduce_max, segmented_reduce_max_tiled,
    segmented_reduce_min, segmented_reduce_min_tiled,
};
pub use scan::{
    exclusive_add, exclusive_add_tiled, exclusive_and, exclusive_and_tiled, exclusive_max, exclusive_max_tiled,
    exclusive_min, exclusive_min_tiled, exclusive_mul, exclusive_mul_tiled, exclusive_or, exclusive_or_tiled,
    exclusive_xor, exclusive_xor_tiled, inclusive_add, inclusive_add_tiled, inclusive_and, inclusive_and_tiled,
    inclusive_max, inclusive_max_tiled, inclusive_min, inclusive_min_tiled, inclusive_mul, inclusive_mul_tiled,
    inclusive_or, inclusive_or_tiled, inclusive_xor, inclusive_xor_tiled,
};
pub use sort::{bitonic_sort_kv, bitonic_sort_kv_tiled};

pub use crate::trace::Shuffle;

use crate::ir::{BinOp, DType, InstKind, Ordering, Scope, ShuffleKind, Special, VoteKind};
use crate::target::Feature;
use crate::trace::{current_loc, emit_at, new_value, op_scope, target, trace_error, Int, IntoVal, Scalar, Val};

/// A per-lane predicate: a `Val<bool>`, or any integer value tested `!= 0` ("truthy").
pub trait Predicate {
    /// The predicate as a bool value.
    #[track_caller]
    fn into_pred(self) -> Val<bool>;
}

impl Predicate for Val<bool> {
    fn into_pred(self) -> Val<bool> {
        self
    }
}

impl<T: Int> Predicate for Val<T> {
    #[track_caller]
    fn into_pred(self) -> Val<bool> {
        self.nonzero()
    }
}

impl Predicate for bool {
    #[track_caller]
    fn into_pred(self) -> Val<bool> {
        Val::constant(self)
    }
}

impl Predicate for i32 {
    #[track_caller]
    fn into_pred(self) -> Val<bool> {
        Val::constant(self != 0)
    }
}

// ---------------------------------------------------------------------------------------------------
// Identification
// ---------------------------------------------------------------------------------------------------

/// This lane's index within its subgroup, `0..group_size()`, as an i32.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn lanes(out: &mut [i32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(out.len()) {
///         out[i] = subgroup::invocation_id();
///     }
/// }
/// let d = Device::from_name("cpu:sg16").unwrap();
/// let mut out = d.zeros::<i32>(64).unwrap();
/// lanes().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[14..18], [14, 15, 0, 1]);
/// ```
#[track_caller]
pub fn invocation_id() -> Val<i32> {
    let _op = op_scope("subgroup.invocation_id");
    let loc = current_loc();
    let dst = new_value(DType::U32);
    emit_at(InstKind::Special { dst, reg: Special::LaneId }, loc);
    Val::<u32>::from_id(dst).cast()
}

/// The lane id as u32 (for lane arithmetic inside this module).
#[track_caller]
pub(super) fn lane_u32() -> Val<u32> {
    invocation_id().cast()
}

/// The lane's index within its `2^log2_size`-lane tile (the lane id itself for a full-subgroup tile).
#[track_caller]
pub(super) fn tile_lane(log2_size: u32) -> Val<u32> {
    let lane = lane_u32();
    if log2_size >= log2_group_size() {
        lane
    } else {
        lane & ((1u32 << log2_size) - 1)
    }
}

/// The subgroup width of the target being traced, as a plain value (folded into the kernel).
///
/// Panics when called outside a kernel body; on the host use [`group_size_of`] (or
/// [`Device::subgroup_size`](crate::runtime::Device::subgroup_size)).
#[track_caller]
pub fn group_size() -> u32 {
    target().subgroup_size()
}

/// log2 of [`group_size`], a plain value: the `log2_size` at which every `_tiled` op covers the
/// whole subgroup.
///
/// Panics when called outside a kernel body; on the host use [`log2_group_size_of`].
#[track_caller]
pub fn log2_group_size() -> u32 {
    target().log2_subgroup_size()
}

/// The subgroup width of `device`, on the host: the value [`group_size`] folds into kernels traced
/// for it (handy for sizing blocks and tiles).
///
/// ```
/// use qd::prelude::*;
/// let d = Device::from_name("cpu:sg16").unwrap();
/// assert_eq!((subgroup::group_size_of(&d), subgroup::log2_group_size_of(&d)), (16, 4));
/// ```
pub fn group_size_of(device: &crate::runtime::Device) -> u32 {
    device.subgroup_size()
}

/// log2 of [`group_size_of`]: the value [`log2_group_size`] folds into kernels traced for `device`.
pub fn log2_group_size_of(device: &crate::runtime::Device) -> u32 {
    device.target().log2_subgroup_size()
}

/// Checks `log2_size <= log2_group_size()` for a `_tiled` op while tracing.
///
/// On failure records a trace error naming `op` (or the outermost library op in progress) at the
/// user's line, and returns false; the caller then returns a placeholder value so tracing can finish.
#[track_caller]
pub fn check_log2_size(op: &str, log2_size: u32) -> bool {
    let max = log2_group_size();
    if log2_size <= max {
        return true;
    }
    let message = format!(
        "log2_size {log2_size} exceeds log2_group_size() = {max} (a subgroup of {} lanes on {})",
        group_size(),
        target().name()
    );
    // Tiles up to 64 lanes exist on some target (AMDGPU's wave64): this one lacks them. Wider
    // ones exist nowhere, which is a mistake in the kernel.
    if log2_size <= 6 {
        crate::trace::trace_unsupported(op, Feature::Tile { lanes: 1 << log2_size }, message);
    } else {
        trace_error(op, message);
    }
    false
}

// ---------------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------------

#[track_caller]
fn shuffle_kind<T: Shuffle>(kind: ShuffleKind, value: Val<T>, lane: Val<u32>) -> Val<T> {
    let loc = current_loc();
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Shuffle { dst, valid: None, kind, value: value.id(), lane: lane.id() }, loc);
    Val::from_id(dst)
}

/// Each lane reads `value` from the lane whose id is `index`.
///
/// An `index` outside the subgroup gives an implementation-defined value (the emulator, like CUDA,
/// returns the lane's own value, D8).
///
/// ```
/// use qd::prelude::*;
/// // Reverse each group of four lanes.
/// #[qd::kernel]
/// fn reverse4(a: &mut [f32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(a.len()) {
///         let lane = subgroup::invocation_id();
///         let group_base = (lane / 4) * 4;
///         let src_lane = group_base + 3 - lane % 4;
///         a[i] = subgroup::shuffle(a[i], src_lane as u32);
///     }
/// }
/// let d = Device::from_name("cpu:sg8").unwrap();
/// let mut a = d.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
/// reverse4().launch(&d, (&mut a,)).unwrap();
/// assert_eq!(a.to_vec().unwrap()[..8], [3.0, 2.0, 1.0, 0.0, 7.0, 6.0, 5.0, 4.0]);
/// ```
#[track_caller]
pub fn shuffle<T: Shuffle>(value: impl IntoVal<T>, index: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle");
    shuffle_kind(ShuffleKind::Idx, value.into_val(), index.into_val())
}

/// Lane `i` reads lane `i + offset`; lanes where `i + offset >= group_size()` get an
/// implementation-defined value (the emulator returns their own value).
#[track_caller]
pub fn shuffle_down<T: Shuffle>(value: impl IntoVal<T>, offset: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_down");
    shuffle_kind(ShuffleKind::Down, value.into_val(), offset.into_val())
}

/// Lane `i` reads lane `i - offset`; lanes below `offset` get an implementation-defined value (the
/// emulator returns their own value).
#[track_caller]
pub fn shuffle_up<T: Shuffle>(value: impl IntoVal<T>, offset: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_up");
    shuffle_kind(ShuffleKind::Up, value.into_val(), offset.into_val())
}

/// Lane `i` reads lane `i ^ mask`: the same as `shuffle(value, invocation_id() ^ mask)`.
///
/// The partner must be inside the subgroup. Traced as one butterfly shuffle (`shfl.sync.bfly` on
/// CUDA, `OpGroupNonUniformShuffleXor` on SPIR-V), which saves the lane arithmetic.
#[track_caller]
pub fn shuffle_xor<T: Shuffle>(value: impl IntoVal<T>, mask: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_xor");
    shuffle_kind(ShuffleKind::Xor, value.into_val(), mask.into_val())
}

/// Every lane reads `value` from lane `index`.
///
/// Expresses "read lane `index`" and may map to a cheaper instruction than [`shuffle`]. Where the
/// broadcast instruction needs a subgroup-uniform lane (SPIR-V, MSL's `simd_broadcast`), a lane
/// the backend cannot prove uniform is lowered to a shuffle; a target that could do neither would
/// answer [`Feature::DynamicBroadcastLane`]
/// unsupported, and a varying `index` there is a trace-time error.
#[track_caller]
pub fn broadcast<T: Shuffle>(value: impl IntoVal<T>, index: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.broadcast");
    let loc = current_loc();
    let (value, lane) = (value.into_val(), index.into_val());
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Broadcast { dst, value: value.id(), lane: lane.id() }, loc);
    Val::from_id(dst)
}

/// Every lane reads lane 0's `value`: `broadcast(value, 0)`.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn first(a: &mut [i64]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(a.len()) {
///         a[i] = subgroup::broadcast_first(a[i]);
///     }
/// }
/// let d = Device::from_name("cpu:sg32").unwrap();
/// let mut a = d.array_from(&(100..164).collect::<Vec<i64>>()).unwrap();
/// first().launch(&d, (&mut a,)).unwrap();
/// let out = a.to_vec().unwrap();
/// assert_eq!((out[31], out[32]), (100, 132));
/// ```
#[track_caller]
pub fn broadcast_first<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
    let _op = op_scope("subgroup.broadcast_first");
    broadcast(value, 0u32)
}

// ---------------------------------------------------------------------------------------------------
// Ballots and votes
// ---------------------------------------------------------------------------------------------------

/// A u64 mask with bit `i` set when lane `i`'s predicate is true (non-zero); bits at and above
/// [`group_size`] are zero. The same mask on every lane.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn odd(out: &mut [u64]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(out.len()) {
///         out[i] = subgroup::ballot(i % 2);
///     }
/// }
/// let d = Device::from_name("cpu:sg64").unwrap();
/// let mut out = d.zeros::<u64>(64).unwrap();
/// odd().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[0], 0xAAAA_AAAA_AAAA_AAAA);
/// ```
#[track_caller]
pub fn ballot(predicate: impl Predicate) -> Val<u64> {
    let _op = op_scope("subgroup.ballot");
    let loc = current_loc();
    let pred = predicate.into_pred();
    let dst = new_value(DType::U64);
    emit_at(InstKind::Ballot { dst, pred: pred.id() }, loc);
    Val::from_id(dst)
}

/// Deprecated name of [`ballot`].
#[deprecated(note = "qd.simt.subgroup.ballot_full_subgroup() is deprecated; use qd.simt.subgroup.ballot() instead")]
#[track_caller]
pub fn ballot_full_subgroup(predicate: impl Predicate) -> Val<u64> {
    ballot(predicate)
}

/// A u32 mask of the lanes in `[0, n)` whose predicate is true; `n` is a compile-time value in
/// `1..=32` (anything else is a trace-time error). Bits at and above `n` are zero; at `n == 32` no
/// masking is emitted. On 64-lane subgroups, lanes 32..63 receive the same low-half mask.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn first16(out: &mut [u32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(out.len()) {
///         out[i] = subgroup::ballot_first_n(true, 16);
///     }
/// }
/// let d = Device::cpu();
/// let mut out = d.zeros::<u32>(32).unwrap();
/// first16().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[5], 0xFFFF);
/// ```
#[track_caller]
pub fn ballot_first_n(predicate: impl Predicate, n: u32) -> Val<u32> {
    let _op = op_scope("subgroup.ballot_first_n");
    if !(1..=32).contains(&n) {
        trace_error("subgroup.ballot_first_n", format!("n must be a compile-time value in 1..=32, got {n}"));
    }
    let mut pred = predicate.into_pred();
    if n < 32 {
        pred = pred & invocation_id().lt(n as i32);
    }
    ballot(pred).cast::<u32>()
}

#[track_caller]
fn vote(kind: VoteKind, pred: Val<bool>) -> Val<bool> {
    let loc = current_loc();
    let dst = new_value(DType::Bool);
    emit_at(InstKind::Vote { dst, kind, pred: pred.id() }, loc);
    Val::from_id(dst)
}

/// The shared body of `all_true_tiled` / `any_true_tiled` (the op scope is opened by the caller).
#[track_caller]
fn vote_tiled(name: &'static str, all: bool, predicate: Val<bool>, log2_size: u32) -> Val<i32> {
    if !check_log2_size(name, log2_size) {
        return Val::constant(0);
    }
    let t = target();
    if log2_size == t.log2_subgroup_size() && t.has(Feature::VoteShortcut) {
        // CUDA: one vote.all / vote.any for the full warp.
        return vote(if all { VoteKind::All } else { VoteKind::Any }, predicate).to_i32();
    }
    // Portable shuffle_xor butterfly over the tile.
    let mut q = predicate.to_i32();
    for j in 0..log2_size {
        let other = shuffle_xor(q, 1u32 << j);
        q = if all { q & other } else { q | other };
    }
    q
}

/// i32 1 on every lane of each aligned `2^log2_size`-lane tile where the predicate is true
/// (non-zero) on every lane of the tile, else 0.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn all4(out: &mut [i32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(out.len()) {
///         // False only on lane 5 of each subgroup: tile 1 (lanes 4..8) votes 0.
///         let p = subgroup::invocation_id() != 5;
///         out[i] = subgroup::all_true_tiled(p, 2);
///     }
/// }
/// let d = Device::from_name("cpu:sg16").unwrap();
/// let mut out = d.zeros::<i32>(64).unwrap();
/// all4().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[..12], [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
/// ```
#[track_caller]
pub fn all_true_tiled(predicate: impl Predicate, log2_size: u32) -> Val<i32> {
    let _op = op_scope("subgroup.all_true_tiled");
    let p = predicate.into_pred();
    vote_tiled("subgroup.all_true_tiled", true, p, log2_size)
}

/// i32 1 on every lane of each tile where the predicate is true on at least one lane of the tile.
#[track_caller]
pub fn any_true_tiled(predicate: impl Predicate, log2_size: u32) -> Val<i32> {
    let _op = op_scope("subgroup.any_true_tiled");
    let p = predicate.into_pred();
    vote_tiled("subgroup.any_true_tiled", false, p, log2_size)
}

/// i32 1 on every lane when the predicate is true on every lane of the subgroup
/// (`all_true_tiled(p, log2_group_size())`; one `vote.all` on CUDA).
#[track_caller]
pub fn all_true(predicate: impl Predicate) -> Val<i32> {
    let _op = op_scope("subgroup.all_true");
    all_true_tiled(predicate, log2_group_size())
}

/// i32 1 on every lane when the predicate is true on some lane of the subgroup
/// (`any_true_tiled(p, log2_group_size())`; one `vote.any` on CUDA).
#[track_caller]
pub fn any_true(predicate: impl Predicate) -> Val<i32> {
    let _op = op_scope("subgroup.any_true");
    any_true_tiled(predicate, log2_group_size())
}

/// i32 1 on every lane of each tile whose lanes all hold the same `value` under the native `==`,
/// else 0.
///
/// Floats compare as IEEE values: a tile holding a NaN gives 0, and `+0.0 == -0.0`. Bit-cast to the
/// same-width integer first for bit equality. Cost: one shuffle from the tile's lane 0 plus
/// [`all_true_tiled`].
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn pairs_equal(a: &[f32], out: &mut [i32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(a.len()) {
///         out[i] = subgroup::all_equal_tiled(a[i], 1);
///     }
/// }
/// let d = Device::from_name("cpu:sg8").unwrap();
/// let mut v = vec![1.0f32; 64];
/// v[0] = 0.0;
/// v[1] = -0.0; // equal to +0.0
/// v[2] = f32::NAN; // unequal to everything, itself included
/// let a = d.array_from(&v).unwrap();
/// let mut out = d.zeros::<i32>(64).unwrap();
/// pairs_equal().launch(&d, (&a, &mut out)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[..6], [1, 1, 0, 0, 1, 1]);
/// ```
#[track_caller]
pub fn all_equal_tiled<T: Shuffle>(value: impl IntoVal<T>, log2_size: u32) -> Val<i32> {
    let name = "subgroup.all_equal_tiled";
    let _op = op_scope(name);
    let v = value.into_val();
    if !check_log2_size(name, log2_size) {
        return Val::constant(0);
    }
    let base = if log2_size == 0 {
        // A one-lane tile: compare with itself (still 0 for NaN).
        v
    } else if log2_size == log2_group_size() {
        shuffle(v, 0u32)
    } else {
        shuffle(v, lane_u32() & !((1u32 << log2_size) - 1))
    };
    let eq = v.eq(base);
    vote_tiled(name, true, eq, log2_size)
}

/// i32 1 on every lane when every lane of the subgroup holds the same value
/// (`all_equal_tiled(value, log2_group_size())`): NaN unequal, `+0.0 == -0.0`.
#[track_caller]
pub fn all_equal<T: Shuffle>(value: impl IntoVal<T>) -> Val<i32> {
    let _op = op_scope("subgroup.all_equal");
    all_equal_tiled(value, log2_group_size())
}

// ---------------------------------------------------------------------------------------------------
// Control
// ---------------------------------------------------------------------------------------------------

/// i32 1 on lane 0 of every subgroup, 0 elsewhere (deliberately lane 0, not "some active lane").
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn leaders(out: &mut [i32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(out.len()) {
///         out[i] = subgroup::elect();
///     }
/// }
/// let d = Device::from_name("cpu:sg16").unwrap();
/// let mut out = d.zeros::<i32>(64).unwrap();
/// leaders().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap().iter().sum::<i32>(), 4);
/// ```
#[track_caller]
pub fn elect() -> Val<i32> {
    let _op = op_scope("subgroup.elect");
    invocation_id().eq(0).to_i32()
}

/// Subgroup barrier: every lane of the subgroup reaches it before any proceeds.
#[track_caller]
pub fn sync() {
    let _op = op_scope("subgroup.sync");
    emit_at(InstKind::SubgroupBarrier, current_loc());
}

/// Deprecated name of [`sync`].
#[deprecated(
    note = "qd.simt.subgroup.barrier() is deprecated; use qd.simt.subgroup.sync() instead (matching block.sync())."
)]
#[track_caller]
pub fn barrier() {
    sync()
}

/// Subgroup memory fence: orders this lane's memory accesses as seen by the subgroup. A
/// subgroup-scope fence where the target has one (Vulkan), else a block-scope fence (CUDA, AMDGPU:
/// over-strict but correct, D6). Sequentially consistent, as seed 002 lowers it (`membar.cta`,
/// i.e. `fence.sc.cta`, on CUDA; `fence syncscope("workgroup") seq_cst` on AMDGPU).
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("subgroup.mem_fence");
    let scope = if target().has(Feature::SubgroupFence) { Scope::Subgroup } else { Scope::Block };
    emit_at(InstKind::Fence { scope, ordering: Ordering::SeqCst }, current_loc());
}

/// Deprecated name of [`mem_fence`].
#[deprecated(note = "qd.simt.subgroup.memory_barrier() is deprecated; use qd.simt.subgroup.mem_fence() instead.")]
#[track_caller]
pub fn memory_barrier() {
    mem_fence()
}

// ---------------------------------------------------------------------------------------------------
// Lane masks
// ---------------------------------------------------------------------------------------------------

/// Lane ids accepted by the lane-mask ops: a traced integer, or a constant `u32` / `i32` in
/// `0..=31` (a constant outside that range is a trace-time error).
pub trait LaneId {
    /// As a u32 value, checking constants while tracing.
    #[track_caller]
    fn lane_u32(self, op: &str) -> Val<u32>;
}

impl<T: Int> LaneId for Val<T> {
    #[track_caller]
    fn lane_u32(self, _op: &str) -> Val<u32> {
        self.cast()
    }
}

impl LaneId for u32 {
    #[track_caller]
    fn lane_u32(self, op: &str) -> Val<u32> {
        if self > 31 {
            trace_error(op, format!("lane id {self} is out of range 0..=31 (the mask is a u32)"));
        }
        Val::constant(self)
    }
}

impl LaneId for i32 {
    #[track_caller]
    fn lane_u32(self, op: &str) -> Val<u32> {
        if !(0..=31).contains(&self) {
            trace_error(op, format!("lane id {self} is out of range 0..=31 (the mask is a u32)"));
        }
        Val::constant(self as u32)
    }
}

#[track_caller]
fn lanemask(name: &'static str, lane_id: impl LaneId, f: impl FnOnce(Val<u32>) -> Val<u32>) -> Val<u32> {
    let _op = op_scope(name);
    let l = lane_id.lane_u32(name);
    let b = Val::constant(1u32) << l;
    f(b)
}

/// u32 with bit `i` set for every `i < lane_id`: `(1 << lane_id) - 1`. `lane_id` must be in
/// `0..=31`; pass [`invocation_id`] for the current lane's mask.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn masks(out: &mut [u32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(out.len()) {
///         out[i] = subgroup::lanemask_lt(subgroup::invocation_id());
///     }
/// }
/// let d = Device::cpu();
/// let mut out = d.zeros::<u32>(32).unwrap();
/// masks().launch(&d, (&mut out,)).unwrap();
/// assert_eq!(out.to_vec().unwrap()[4], 0b1111);
/// ```
#[track_caller]
pub fn lanemask_lt(lane_id: impl LaneId) -> Val<u32> {
    lanemask("subgroup.lanemask_lt", lane_id, |b| b - 1u32)
}

/// u32 with bit `i` set for every `i <= lane_id` (`lanemask_lt | lanemask_eq`).
#[track_caller]
pub fn lanemask_le(lane_id: impl LaneId) -> Val<u32> {
    lanemask("subgroup.lanemask_le", lane_id, |b| b | (b - 1u32))
}

/// u32 with only bit `lane_id` set: `1 << lane_id`.
#[track_caller]
pub fn lanemask_eq(lane_id: impl LaneId) -> Val<u32> {
    lanemask("subgroup.lanemask_eq", lane_id, |b| b)
}

/// u32 with bit `i` set for every `i > lane_id` (`!lanemask_le`).
#[track_caller]
pub fn lanemask_gt(lane_id: impl LaneId) -> Val<u32> {
    lanemask("subgroup.lanemask_gt", lane_id, |b| !(b | (b - 1u32)))
}

/// u32 with bit `i` set for every `i >= lane_id` (`!lanemask_lt`).
#[track_caller]
pub fn lanemask_ge(lane_id: impl LaneId) -> Val<u32> {
    lanemask("subgroup.lanemask_ge", lane_id, |b| !(b - 1u32))
}

// ---------------------------------------------------------------------------------------------------
// Shared helpers of the reductions, scans and sort
// ---------------------------------------------------------------------------------------------------

/// The binary operators of the reductions and scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Add,
    Mul,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl Op {
    /// `a op b` (`a` is the left operand: the predecessor in a scan).
    #[track_caller]
    pub(super) fn apply<T: Shuffle>(self, a: Val<T>, b: Val<T>) -> Val<T> {
        let op = match self {
            Op::Add => BinOp::Add,
            Op::Mul => BinOp::Mul,
            Op::Min => BinOp::Min,
            Op::Max => BinOp::Max,
            Op::And => BinOp::And,
            Op::Or => BinOp::Or,
            Op::Xor => BinOp::Xor,
        };
        let loc = current_loc();
        let dst = new_value(T::DTYPE);
        emit_at(InstKind::Binary { dst, op, a: a.id(), b: b.id() }, loc);
        Val::from_id(dst)
    }

    /// The identity of the operator for `T` (add/or/xor 0, mul 1, and all ones, min `T::MAX`
    /// (+inf for floats), max `T::MIN` (-inf for floats, 0 for unsigned)).
    pub(super) fn identity<T: Shuffle>(self) -> T {
        match self {
            Op::Add | Op::Or | Op::Xor => T::ZERO,
            Op::Mul => T::ONE,
            Op::And => T::from_bits(u64::MAX),
            Op::Min => T::MAX,
            Op::Max => T::MIN,
        }
    }

    /// Bitwise operators take integers only.
    pub(super) fn is_bitwise(self) -> bool {
        matches!(self, Op::And | Op::Or | Op::Xor)
    }
}

/// Rejects a float dtype for a bitwise op while tracing; true when the dtype is accepted.
#[track_caller]
pub(super) fn check_dtype<T: Scalar>(name: &str, op: Op) -> bool {
    if op.is_bitwise() && !T::DTYPE.is_int() {
        trace_error(
            name,
            format!(
                "{name} takes an integer dtype (i32, u32, i64, u64), got {}: bitwise ops are not defined on floats",
                T::DTYPE
            ),
        );
        return false;
    }
    true
}
