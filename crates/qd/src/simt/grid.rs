//! Grid (device) scope primitives (seed 001).

use crate::ir::{InstKind, Ordering, Scope};
use crate::trace::{current_loc, emit_at, op_scope};

/// Device-scope memory fence: orders the calling thread's memory operations for every thread of the
/// launch (CUDA `fence.sc.gpu` = `membar.gl`, D6). No convergence requirement.
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("grid.mem_fence");
    emit_at(InstKind::Fence { scope: Scope::Device, ordering: Ordering::SeqCst }, current_loc());
}

/// Deprecated name of [`mem_fence`].
#[deprecated(note = "qd.simt.grid.memfence() is deprecated; use grid::mem_fence() instead")]
#[track_caller]
pub fn memfence() {
    mem_fence()
}
