//! Grid (device) scope primitives (seed 001).

use crate::ir::{InstKind, Ordering, Scope};
use crate::trace::{current_loc, emit_at, op_scope};

/// Device-scope memory fence: orders the calling thread's memory operations for every thread of the
/// launch (CUDA `fence.sc.gpu` = `membar.gl`, D6). No convergence requirement.
///
/// ```
/// use qd::prelude::*;
/// // Each block publishes a partial sum; the last block to take a ticket adds them up.
/// let k = Kernel::explicit("total", 32, |k| {
///     let a = k.array::<i32>("a");
///     let partial = k.array::<i32>("partial");
///     let ticket = k.array::<i32>("ticket");
///     let out = k.array::<i32>("out");
///     let b = block::block_idx();
///     let sum = block::reduce_add(a.get(block::global_thread_idx()), 32);
///     if_(block::thread_idx().eq(0), || {
///         partial.set(b, sum);
///         grid::mem_fence(); // the partial before the ticket
///         if_(atomic_add(ticket.at(0), 1).eq(block::grid_dim() - 1), || {
///             grid::mem_fence(); // the ticket before the partials
///             let total = var(0);
///             for_range(0, block::grid_dim(), |j| total.set(total.get() + partial.get(j)));
///             out.set(0, total.get());
///         });
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[1i32; 256]).unwrap();
/// let (partial, ticket, out) = (d.zeros::<i32>(8).unwrap(), d.zeros::<i32>(1).unwrap(), d.zeros::<i32>(1).unwrap());
/// d.launch_grid(&k, 8, &[a.arg(), partial.arg(), ticket.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [256]);
/// ```
#[track_caller]
pub fn mem_fence() {
    let _op = op_scope("grid.mem_fence");
    emit_at(InstKind::Fence { scope: Scope::Device, ordering: Ordering::SeqCst }, current_loc());
}

/// Deprecated name of [`mem_fence`].
///
/// ```
/// use qd::prelude::*;
/// #[allow(deprecated)]
/// let k = Kernel::explicit("old", 32, |k| {
///     let out = k.array::<i32>("out");
///     out.set(block::global_thread_idx(), 1);
///     grid::memfence(); // the old name of grid::mem_fence
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(64).unwrap();
/// d.launch_grid(&k, 2, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [1; 64]);
/// ```
#[deprecated(note = "qd.simt.grid.memfence() is deprecated; use grid::mem_fence() instead")]
#[track_caller]
pub fn memfence() {
    mem_fence()
}
