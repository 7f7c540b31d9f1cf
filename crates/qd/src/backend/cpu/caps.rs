//! The capability model's answers for the emulator itself (`cpu:sgN`); wearing another target
//! (`cpu:sg64@amdgpu:gfx942`) it answers with that target's instead (`crate::target`).

use crate::target::{Feature, Limits, Polyfill, Support};

/// The emulator's limits with `subgroup_size` lanes: as much shared memory as the largest GPU
/// (228 KiB), and blocks run in id order, so an earlier block always makes progress.
pub(crate) fn limits(subgroup_size: u32) -> Limits {
    Limits {
        subgroup_size,
        max_shared_bytes: 228 * 1024,
        shared_cell_bytes: 1,
        max_buffer_bytes: None,
        loop_iteration_cap: None,
        block_forward_progress: true,
    }
}

/// The emulator implements every core instruction natively, and with 32-lane subgroups the NVIDIA
/// families too, so kernels using them are tested without a GPU (D8). Its library paths are the
/// portable ones: votes as butterflies and subgroup fences at block scope, as on CUDA.
pub(crate) fn support(limits: &Limits, f: Feature) -> Support {
    match f {
        Feature::Nv(_) if limits.subgroup_size != 32 => Support::unsupported(format!(
            "the NVIDIA families need 32-lane warps; this emulator has {}-lane subgroups (use cpu:sg32)",
            limits.subgroup_size
        )),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::SubgroupFence => {
            Support::polyfill(Polyfill::Lowering("a block-scope fence (over-strict but correct, D6)"))
        }
        _ => Support::Native,
    }
}
