//! The CPU backend: a lane-exact SIMT emulator (D8).
//!
//! * [`program`] lowers a kernel's structured IR to a flat program with explicit join points;
//! * [`exec`] runs it: each subgroup is one lockstep unit with an active mask, divergent paths are
//!   scheduled independently and reconverge where the `if` ends, a block's subgroups switch at
//!   barriers and loop back-edges, and blocks run in id order on a fixed thread pool;
//! * [`memory`] backs global and shared memory with atomics.
//!
//! Mistakes that only show at run time (an out-of-bounds index, a collective under a partial mask, a
//! spin-wait that never ends) are errors naming the kernel, the op and the user's line.

pub mod exec;
pub mod memory;
pub mod program;

pub use exec::{launch, CpuArg, EmuError, EmuErrorKind, LaunchGeometry, Options};
pub use memory::Buffer;
pub use program::{compile, Program};

use super::Caps;

/// What the emulator supports with `subgroup_size` lanes. It implements every core intrinsic
/// natively, and with 32-lane subgroups also the NVIDIA families (`nv`, `redux`), so kernels using
/// them are tested without a GPU (D8).
pub fn caps(subgroup_size: u32) -> Caps {
    let warp = subgroup_size == 32;
    Caps {
        nv: warp,
        vote_shortcut: false,
        redux: warp,
        uniform_broadcast_lane: false,
        barrier_reduce: true,
        f64: true,
        atomic_i64: true,
        max_shared_bytes: 228 * 1024,
    }
}
