//! The runtime's errors: every mistake between a kernel definition and its results comes back as an
//! [`Error`], never a panic.

use crate::backend::cpu;
use crate::trace::TraceError;

/// Everything that can go wrong between a kernel definition and its results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A mistake seen while tracing or verifying (wrong dtype, bad `log2_size`, divergent barrier...).
    #[error("trace error: {0}")]
    Trace(#[from] TraceError),
    /// A mistake the emulator caught at run time (out of bounds, partial mask, hang...).
    #[error("emulator error: {0}")]
    Emulator(#[from] cpu::EmuError),
    /// The arguments do not fit the kernel's parameters.
    #[error("kernel `{kernel}`: argument {index} (`{param}`): {message}")]
    Argument {
        /// Kernel name.
        kernel: String,
        /// Parameter position.
        index: usize,
        /// Parameter name.
        param: String,
        /// What is wrong.
        message: String,
    },
    /// The launch itself is invalid (bounds, grid, D1 rules).
    #[error("kernel `{kernel}`: launch error: {message}")]
    Launch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// An array the device cannot hold: its size overflows, or exceeds the device's memory (on the
    /// emulator, its memory budget: [`crate::backend::cpu::memory::memory_budget`]).
    #[error("cannot allocate an array of {len} {dtype} elements: {message}")]
    Allocation {
        /// Element type.
        dtype: crate::ir::DType,
        /// Requested element count.
        len: usize,
        /// Why.
        message: String,
    },
    /// The backend cannot be used on this machine.
    #[error("backend `{backend}` is not available: {reason}")]
    Unavailable {
        /// Backend name as given.
        backend: String,
        /// Why.
        reason: String,
    },
    /// A GPU driver call failed: loading a module (the JIT's log is in `message`), launching, a fault
    /// seen when synchronizing, an allocation or a copy.
    #[error("kernel `{kernel}`: driver call `{call}` failed: {message}")]
    Driver {
        /// Kernel name, or the host operation (`<alloc>`, `<host copy>`).
        kernel: String,
        /// The driver function (`cuModuleLoadDataEx`, `cuLaunchKernel`, `cuCtxSynchronize`, ...).
        call: String,
        /// The driver's error name and description, then the JIT's log when there is one.
        message: String,
    },
    /// This build of qd has no runtime for the backend: it was compiled without the cargo feature
    /// that brings in its driver bindings (the code generators are always built, so `qd emit`
    /// still works).
    #[error("backend `{backend}` is not available: qd was built without the `{feature}` cargo feature (rebuild with `--features {feature}`)")]
    BackendNotBuilt {
        /// The backend family (`cuda`, `vulkan`).
        backend: &'static str,
        /// The cargo feature of the `qd` crate that builds its runtime.
        feature: &'static str,
    },
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;
