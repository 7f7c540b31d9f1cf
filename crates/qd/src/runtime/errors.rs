//! The runtime's errors: every mistake between a kernel definition and its results comes back as an
//! [`Error`], never a panic.

use crate::backend::cpu;
use crate::ir::SrcLoc;
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
    /// A host copy of the wrong length: [`DeviceArray::write`](super::DeviceArray::write) copies a
    /// whole array, so `data` must have exactly the array's length.
    #[error("host write at {at}: {array} takes exactly {expected} elements, {given} given")]
    HostCopy {
        /// The array written (its element type, length and device, e.g. `the i32 array of 4 elements on cpu`).
        array: String,
        /// The array's length.
        expected: usize,
        /// The length of the data given.
        given: usize,
        /// The user's line of the call.
        at: SrcLoc,
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

impl Error {
    /// Names the user's line of the launch call (D30) in a launch, argument or driver error
    /// (`Error::Launch`, `Error::Argument`, `Error::Driver`): those are found after tracing, where no instruction points at the user's
    /// code, so the message ends with `(the launch at file:line:col)`. Other errors already carry
    /// their own line (trace and emulator errors) or concern the device, and pass unchanged.
    pub(crate) fn at_launch_site(self, site: SrcLoc) -> Error {
        let sited = |message: String| format!("{message} (the launch at {site})");
        match self {
            Error::Launch { kernel, message } => Error::Launch { kernel, message: sited(message) },
            Error::Argument { kernel, index, param, message } => {
                Error::Argument { kernel, index, param, message: sited(message) }
            }
            // A driver failure of this launch (loading its module, the launch, a fault seen at the
            // synchronization) happened for the user's launch call: name it too.
            Error::Driver { kernel, call, message } => Error::Driver { kernel, call, message: sited(message) },
            other => other,
        }
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_argument_and_driver_errors_name_the_launch_line() {
        let site = SrcLoc::caller();
        let line = format!("(the launch at {site})");
        let launch = Error::Launch { kernel: "k".into(), message: "bad grid".into() };
        assert!(launch.at_launch_site(site).to_string().ends_with(&line));
        let driver = Error::Driver { kernel: "k".into(), call: "cuCtxSynchronize".into(), message: "fault".into() };
        assert!(driver.at_launch_site(site).to_string().ends_with(&line));
        // Errors that carry their own line, or none that a launch explains, pass unchanged.
        let other = Error::Unavailable { backend: "cuda".into(), reason: "no driver".into() };
        assert!(!other.at_launch_site(site).to_string().contains("the launch at"));
    }
}
