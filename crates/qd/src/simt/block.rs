//! Block (CTA / workgroup) primitives (seed 000).

use crate::ir::{BarrierReduce, DType, InstKind, Ordering, Scope, Special};
use crate::trace::{self, current_loc, emit_at, new_value, op_scope, target, Array, IntoVal, Scalar, Val};

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
    if target().caps.barrier_reduce {
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
