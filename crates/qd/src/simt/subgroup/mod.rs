//! Subgroup (warp / wave) primitives (seed 002).
//!
//! Everything here is built from the core intrinsics (shuffles, broadcast, ballot, votes, lane id)
//! and unrolled while tracing; the full-subgroup forms are the `_tiled` forms at
//! [`log2_group_size`].

use crate::ir::{DType, InstKind, Ordering, Scope, ShuffleKind, Special, VoteKind};
use crate::trace::{
    current_loc, emit_at, new_value, op_scope, target, trace_error, Int, IntoVal, Shuffle, Val,
};

/// A per-lane predicate: a `Val<bool>`, or any integer value tested `!= 0`.
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

/// Lane index within the subgroup, `0..group_size()`.
#[track_caller]
pub fn invocation_id() -> Val<i32> {
    let loc = current_loc();
    let dst = new_value(DType::U32);
    emit_at(InstKind::Special { dst, reg: Special::LaneId }, loc);
    Val::<u32>::from_id(dst).cast()
}

/// Subgroup width of the target being traced (a plain value; use `Device::subgroup_size` on the host).
pub fn group_size() -> u32 {
    target().subgroup_size
}

/// log2 of [`group_size`].
pub fn log2_group_size() -> u32 {
    target().log2_subgroup_size()
}

/// Checks `log2_size <= log2_group_size()` for a `_tiled` op while tracing.
#[track_caller]
pub fn check_log2_size(op: &str, log2_size: u32) -> bool {
    let max = log2_group_size();
    if log2_size > max {
        trace_error(
            op,
            format!(
                "log2_size {log2_size} exceeds log2_group_size() = {max} (subgroup of {} lanes on {})",
                group_size(),
                target().backend
            ),
        );
        return false;
    }
    true
}

#[track_caller]
fn shuffle_kind<T: Shuffle>(kind: ShuffleKind, value: Val<T>, lane: Val<u32>) -> Val<T> {
    let loc = current_loc();
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Shuffle { dst, valid: None, kind, value: value.id(), lane: lane.id() }, loc);
    Val::from_id(dst)
}

/// Each lane reads `value` from lane `index` (out of range: implementation-defined, D8 gives the
/// lane's own value).
#[track_caller]
pub fn shuffle<T: Shuffle>(value: impl IntoVal<T>, index: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle");
    shuffle_kind(ShuffleKind::Idx, value.into_val(), index.into_val())
}

/// Lane `i` reads lane `i + offset` (lanes past the end: implementation-defined).
#[track_caller]
pub fn shuffle_down<T: Shuffle>(value: impl IntoVal<T>, offset: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_down");
    shuffle_kind(ShuffleKind::Down, value.into_val(), offset.into_val())
}

/// Lane `i` reads lane `i - offset` (lanes below `offset`: implementation-defined).
#[track_caller]
pub fn shuffle_up<T: Shuffle>(value: impl IntoVal<T>, offset: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_up");
    shuffle_kind(ShuffleKind::Up, value.into_val(), offset.into_val())
}

/// Lane `i` reads lane `i ^ mask`: `shuffle(value, invocation_id() ^ mask)`.
#[track_caller]
pub fn shuffle_xor<T: Shuffle>(value: impl IntoVal<T>, mask: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.shuffle_xor");
    let lane = invocation_id().cast::<u32>() ^ mask.into_val();
    shuffle_kind(ShuffleKind::Idx, value.into_val(), lane)
}

/// Every lane reads `value` from lane `index` (on SPIR-V `index` must be subgroup-uniform).
#[track_caller]
pub fn broadcast<T: Shuffle>(value: impl IntoVal<T>, index: impl IntoVal<u32>) -> Val<T> {
    let _op = op_scope("subgroup.broadcast");
    let loc = current_loc();
    let (value, lane) = (value.into_val(), index.into_val());
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Broadcast { dst, value: value.id(), lane: lane.id() }, loc);
    Val::from_id(dst)
}

/// Every lane reads lane 0's `value`.
#[track_caller]
pub fn broadcast_first<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
    let _op = op_scope("subgroup.broadcast_first");
    broadcast(value, 0u32)
}

/// u64 mask of the lanes whose predicate is non-zero (bits above the subgroup width are zero).
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
#[deprecated(note = "qd.simt.subgroup.ballot_full_subgroup() is deprecated; use subgroup::ballot() instead")]
#[track_caller]
pub fn ballot_full_subgroup(predicate: impl Predicate) -> Val<u64> {
    ballot(predicate)
}

/// u32 mask of lanes `[0, n)` whose predicate is non-zero; `n` is a compile-time value in 1..=32.
#[track_caller]
pub fn ballot_first_n(predicate: impl Predicate, n: u32) -> Val<u32> {
    let _op = op_scope("subgroup.ballot_first_n");
    if !(1..=32).contains(&n) {
        trace_error("subgroup.ballot_first_n", format!("n must be in 1..=32, got {n}"));
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

#[track_caller]
fn vote_tiled(name: &'static str, all: bool, predicate: Val<bool>, log2_size: u32) -> Val<i32> {
    let _op = op_scope(name);
    if !check_log2_size(name, log2_size) {
        return Val::constant(0);
    }
    let t = target();
    if log2_size == t.log2_subgroup_size() && t.caps.vote_shortcut {
        return vote(if all { VoteKind::All } else { VoteKind::Any }, predicate).to_i32();
    }
    // Portable butterfly over the tile.
    let mut q = predicate.to_i32();
    for j in 0..log2_size {
        let other = shuffle_xor(q, 1u32 << j);
        q = if all { q & other } else { q | other };
    }
    q
}

/// 1 on every lane of each `2^log2_size` tile when the predicate holds on every lane of the tile.
#[track_caller]
pub fn all_true_tiled(predicate: impl Predicate, log2_size: u32) -> Val<i32> {
    let p = predicate.into_pred();
    vote_tiled("subgroup.all_true_tiled", true, p, log2_size)
}

/// 1 on every lane of each tile when the predicate holds on some lane of the tile.
#[track_caller]
pub fn any_true_tiled(predicate: impl Predicate, log2_size: u32) -> Val<i32> {
    let p = predicate.into_pred();
    vote_tiled("subgroup.any_true_tiled", false, p, log2_size)
}

/// 1 on every lane when the predicate holds on every lane of the subgroup.
#[track_caller]
pub fn all_true(predicate: impl Predicate) -> Val<i32> {
    let p = predicate.into_pred();
    vote_tiled("subgroup.all_true", true, p, log2_group_size())
}

/// 1 on every lane when the predicate holds on some lane of the subgroup.
#[track_caller]
pub fn any_true(predicate: impl Predicate) -> Val<i32> {
    let p = predicate.into_pred();
    vote_tiled("subgroup.any_true", false, p, log2_group_size())
}

/// 1 on lane 0 of every subgroup, 0 elsewhere.
#[track_caller]
pub fn elect() -> Val<i32> {
    let _op = op_scope("subgroup.elect");
    invocation_id().eq(0).to_i32()
}

/// Subgroup barrier: every lane reaches it before any proceeds.
#[track_caller]
pub fn sync() {
    let _op = op_scope("subgroup.sync");
    emit_at(InstKind::SubgroupBarrier, current_loc());
}

/// Deprecated name of [`sync`].
#[deprecated(note = "qd.simt.subgroup.barrier() is deprecated; use subgroup::sync() instead (matching block::sync())")]
#[track_caller]
pub fn barrier() {
    sync()
}

/// Subgroup memory fence (a block-scope fence on CUDA and AMDGPU, D6).
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("subgroup.mem_fence");
    let scope = if target().backend == crate::backend::BackendKind::Vulkan { Scope::Subgroup } else { Scope::Block };
    emit_at(InstKind::Fence { scope, ordering: Ordering::AcqRel }, current_loc());
}

/// Deprecated name of [`mem_fence`].
#[deprecated(note = "qd.simt.subgroup.memory_barrier() is deprecated; use subgroup::mem_fence() instead")]
#[track_caller]
pub fn memory_barrier() {
    mem_fence()
}

#[track_caller]
fn lanemask(name: &'static str, lane_id: Val<u32>, f: impl FnOnce(Val<u32>) -> Val<u32>) -> Val<u32> {
    let _op = op_scope(name);
    let b = Val::constant(1u32) << lane_id;
    f(b)
}

/// Lane ids accepted by the lane-mask ops: a traced integer or a constant in 0..=31.
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

/// Bits of lanes `< lane_id`.
#[track_caller]
pub fn lanemask_lt(lane_id: impl LaneId) -> Val<u32> {
    let l = lane_id.lane_u32("subgroup.lanemask_lt");
    lanemask("subgroup.lanemask_lt", l, |b| b - 1u32)
}
/// Bits of lanes `<= lane_id`.
#[track_caller]
pub fn lanemask_le(lane_id: impl LaneId) -> Val<u32> {
    let l = lane_id.lane_u32("subgroup.lanemask_le");
    lanemask("subgroup.lanemask_le", l, |b| b | (b - 1u32))
}
/// Bit of lane `lane_id`.
#[track_caller]
pub fn lanemask_eq(lane_id: impl LaneId) -> Val<u32> {
    let l = lane_id.lane_u32("subgroup.lanemask_eq");
    lanemask("subgroup.lanemask_eq", l, |b| b)
}
/// Bits of lanes `> lane_id`.
#[track_caller]
pub fn lanemask_gt(lane_id: impl LaneId) -> Val<u32> {
    let l = lane_id.lane_u32("subgroup.lanemask_gt");
    lanemask("subgroup.lanemask_gt", l, |b| !(b | (b - 1u32)))
}
/// Bits of lanes `>= lane_id`.
#[track_caller]
pub fn lanemask_ge(lane_id: impl LaneId) -> Val<u32> {
    let l = lane_id.lane_u32("subgroup.lanemask_ge");
    lanemask("subgroup.lanemask_ge", l, |b| !(b - 1u32))
}

