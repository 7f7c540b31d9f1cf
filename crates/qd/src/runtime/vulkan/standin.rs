//! A stand-in for `crate::backend::spirv` (the SPIR-V lowering), with exactly its interface, used
//! until the lowering lands: every kernel is a clear [`TraceError`] saying so, while hand-written
//! SPIR-V ([`Device::override_spirv`](crate::runtime::Device::override_spirv)) already runs.
//!
//! Switching to the real lowering is the one `use` line at the top of `vulkan/mod.rs`; then this
//! file is deleted.

#![allow(dead_code)] // the real lowering reads what this one ignores

use crate::backend::{BackendKind, Target};
use crate::ir::{DType, Kernel, SrcLoc};
use crate::trace::TraceError;

/// What a SPIR-V module is lowered for.
pub struct SpirvTarget {
    /// Subgroup width the kernel was traced for.
    pub subgroup_size: u32,
    /// Device features the lowering may use.
    pub caps: SpirvCaps,
}

/// Device features the lowering may use.
pub struct SpirvCaps {
    pub float32_atomic_add: bool,
    pub float64: bool,
    pub int64_atomics: bool,
    pub int8_storage: bool,
    pub int16_storage: bool,
    pub float16: bool,
    pub max_shared_bytes: u32,
}

/// A lowered kernel.
pub struct SpirvModule {
    pub words: Vec<u32>,
    pub entry: String,
    pub workgroup_size: u32,
    pub params: Vec<ParamAbi>,
    pub shared_bytes: u32,
}

/// How one kernel parameter is bound.
pub enum ParamAbi {
    Array { dtype: DType, binding: u32 },
    Scalar { dtype: DType },
}

/// Always an error: the lowering has not landed in this build.
#[track_caller]
pub fn lower_kernel(kernel: &Kernel, _target: &SpirvTarget) -> Result<SpirvModule, TraceError> {
    Err(TraceError {
        kernel: kernel.name.clone(),
        op: "spirv.module".into(),
        loc: SrcLoc::caller(),
        message: "this build has no SPIR-V lowering yet (crate::backend::spirv); only SPIR-V given to \
                  Device::override_spirv runs on Vulkan devices"
            .into(),
    })
}

/// `Target::vulkan` until `backend/mod.rs` has it: the SPIR-V capabilities (no NVIDIA families, no
/// fused barrier reduction, broadcast from a subgroup-uniform lane).
pub trait VulkanTarget {
    /// The target of a Vulkan device with this subgroup width and these features.
    fn vulkan(subgroup_size: u32, caps: &SpirvCaps) -> Target;
}

impl VulkanTarget for Target {
    fn vulkan(subgroup_size: u32, caps: &SpirvCaps) -> Target {
        let mut t = Target::cpu(8);
        t.backend = BackendKind::Vulkan;
        t.subgroup_size = subgroup_size;
        t.caps.nv = false;
        t.caps.vote_shortcut = false;
        t.caps.redux = false;
        t.caps.uniform_broadcast_lane = true;
        t.caps.barrier_reduce = false;
        t.caps.f64 = caps.float64;
        t.caps.atomic_i64 = caps.int64_atomics;
        t.caps.max_shared_bytes = caps.max_shared_bytes;
        t
    }
}
