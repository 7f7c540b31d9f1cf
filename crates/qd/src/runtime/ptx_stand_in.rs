//! TEMPORARY stand-in for `crate::backend::ptx::lower` until the NVPTX lowering lands.
//!
//! It has the lowering's interface (`lower_kernel`, `PtxModule`, `ParamAbi`, `PtxTarget`) and lowers
//! nothing: every kernel is a trace error saying so. Kernels given hand-written PTX through
//! [`Device::override_ptx`](super::Device::override_ptx) never reach it, which is how the CUDA
//! runtime is tested on a GPU before the lowering exists.
//!
//! To switch to the real lowering, change the one `use` line at the top of `runtime/cuda.rs`, then
//! delete this file and its `mod ptx_stand_in;` line in `runtime/mod.rs`.

#![allow(dead_code)]

use crate::ir::{DType, Kernel, SrcLoc};
use crate::trace::TraceError;

/// How one kernel parameter is passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamAbi {
    /// Two parameters: a u64 device pointer, then the u32 length.
    Array {
        /// Element type.
        dtype: DType,
    },
    /// By value at its natural width; bool as u8.
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// A lowered kernel.
#[derive(Clone, Debug)]
pub struct PtxModule {
    /// The module text.
    pub text: String,
    /// The `.entry` name.
    pub entry: String,
    /// Shared memory per block in bytes.
    pub shared_bytes: u32,
    /// Parameter passing, in order.
    pub params: Vec<ParamAbi>,
}

/// What the PTX is printed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxTarget {
    /// Compute capability times ten (`90` for sm_90).
    pub sm: u32,
}

impl PtxTarget {
    /// `sm_<sm>` (as `backend::ptx::PtxTarget::sm`).
    pub const fn sm(sm: u32) -> PtxTarget {
        PtxTarget { sm }
    }
}

/// Lowers nothing yet: always a trace error naming the kernel.
pub fn lower_kernel(kernel: &Kernel, target: &PtxTarget) -> Result<PtxModule, TraceError> {
    Err(TraceError {
        kernel: kernel.name.clone(),
        op: "ptx.lower".into(),
        loc: SrcLoc::caller(),
        message: format!(
            "this build has no NVPTX lowering yet (sm_{}); only kernels given PTX with Device::override_ptx run on CUDA",
            target.sm
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn lowers_nothing() {
        let k = crate::trace::Kernel::explicit("empty", 32, |_| {});
        let ir = k.trace(&crate::backend::Target::cpu(32)).unwrap();
        let e = super::lower_kernel(&ir, &super::PtxTarget::sm(90)).unwrap_err();
        assert_eq!(e.kernel, "empty");
    }
}
