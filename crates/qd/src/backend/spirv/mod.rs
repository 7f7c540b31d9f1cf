//! The Vulkan backend's code generator: SPIR-V 1.3 (Vulkan 1.1 environment) built with `rspirv`,
//! on the Vulkan memory model (`SPV_KHR_vulkan_memory_model`) where the device has it, else GLSL450.
//!
//! Same inner shape as the other backends:
//!
//! * [`caps`]: [`SpirvCaps`] (what the device offers) and [`SpirvTarget`]; the up-front check that
//!   rejects what this backend cannot express, naming the op and "vulkan".
//! * [`types`](self): the module under construction: ids, capabilities, deduplicated types and
//!   constants, and which SPIR-V type holds each IR dtype.
//! * [`lower`]: whole kernels ([`lower_kernel`]): the ABI ([`ParamAbi`]), structured control flow,
//!   locals, special registers, subgroup operations, barriers and fences.
//! * `arith`: D5 arithmetic, casts, f16/bf16 conversions.
//! * `memory`: loads, stores and atomics (D6), and the u32 word view of narrow device arrays.
//! * `subgroup`: shuffles and broadcasts.
//!
//! The runtime (`crate::runtime`) calls [`lower_kernel`] on a kernel traced for
//! [`Target::vulkan`](crate::backend::Target::vulkan) and binds what [`SpirvModule`] describes.

mod arith;
pub mod caps;
pub mod lower;
mod memory;
mod subgroup;
mod types;

pub use caps::{SpirvCaps, SpirvTarget};
pub use lower::{lower_kernel, ParamAbi, SpirvModule};

/// The Vulkan backend's face ([`Backend`](super::Backend)): SPIR-V for a Vulkan target.
pub struct Spirv;

impl super::Backend for Spirv {
    type Artifact = SpirvModule;
    const NAME: &'static str = "spirv";

    #[track_caller]
    fn lower(kernel: &crate::ir::Kernel, target: &super::Target) -> Result<SpirvModule, crate::trace::TraceError> {
        let caller = crate::ir::SrcLoc::caller();
        let spirv = target.spirv_target().ok_or_else(|| super::wrong_target(kernel, Self::NAME, target, caller))?;
        lower_kernel(kernel, &spirv)
    }
}

/// How tools drive this backend (see [`super::EMITTERS`]): `spirv` (32 lanes) or `spirv:sgN`, for
/// a Vulkan device with `N`-lane subgroups and lavapipe's features ([`SpirvCaps::lavapipe`]),
/// written as `.spv` (little-endian words).
pub const EMITTER: super::Emitter = super::Emitter {
    family: "spirv",
    about: "Vulkan through SPIR-V",
    extension: "spv",
    binary: true,
    syntax: "spirv[:sgN]",
    examples: &["spirv:sg32", "spirv:sg8"],
    target: |detail| {
        let lanes = match detail {
            None => Some(32),
            Some(d) => d.strip_prefix("sg").and_then(|n| n.parse::<u32>().ok()),
        };
        match lanes {
            Some(n) if n.is_power_of_two() && (4..=128).contains(&n) => {
                Ok(super::Target::vulkan(n, &SpirvCaps::lavapipe()))
            }
            _ => Err("the SPIR-V subgroup size is sgN with N a power of two from 4 to 128, e.g. spirv:sg32".into()),
        }
    },
    emit: |kernel, target| {
        <Spirv as super::Backend>::lower(kernel, target).map(|m| m.words.iter().flat_map(|w| w.to_le_bytes()).collect())
    },
};
