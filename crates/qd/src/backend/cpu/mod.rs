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

pub(crate) mod caps;
pub mod exec;
pub mod memory;
pub mod program;

pub use exec::{launch, CpuArg, EmuError, EmuErrorKind, LaunchGeometry, Memory, Options};
pub use memory::Buffer;
pub use program::{compile, Program};

/// The emulator's face ([`Backend`](super::Backend)): a program for any target, its own or one it
/// wears (the atomics that target provides as CAS loops run as those loops).
pub struct Emulator;

impl super::Backend for Emulator {
    type Artifact = Program;
    const NAME: &'static str = "cpu";

    #[track_caller]
    fn lower(kernel: &crate::ir::Kernel, target: &super::Target) -> Result<Program, crate::trace::TraceError> {
        crate::target::check(kernel, target, crate::ir::SrcLoc::caller())?;
        let mut legal = kernel.clone();
        crate::target::legalize_atomics(&mut legal, target);
        compile(&legal)
    }
}
