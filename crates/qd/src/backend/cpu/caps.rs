//! The capability model's answers for the emulator itself (`cpu:sgN`); wearing another target
//! (`cpu:sg64@amdgpu:gfx942`) it answers with that target's instead (`crate::target`).

use crate::target::{Feature, Limits, NvFeature, Polyfill, Support};

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
        max_array_params: None,
    }
}

/// The emulator implements every core instruction natively, and with 32-lane subgroups the NVIDIA
/// families too, so kernels using them are tested without a GPU (D8). Its library paths are the
/// portable ones: votes as butterflies, reductions and scans as shuffle trees and subgroup fences
/// at block scope, as on CUDA, so what it traces is the IR the PTX and SPIR-V tests lower. (It runs
/// `vote` and `subgroup_reduce` all the same: wearing a target that has them, `cpu:sg32@metal`.)
pub(crate) fn support(limits: &Limits, f: Feature) -> Support {
    match f {
        Feature::Nv(_) if limits.subgroup_size != 32 => Support::unsupported(format!(
            "the NVIDIA families need 32-lane warps; this emulator has {}-lane subgroups (use cpu:sg32)",
            limits.subgroup_size
        )),
        Feature::Nv(n) => cuda_only(n).map_or(Support::Native, Support::unsupported),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::SubgroupArith { .. } => Support::polyfill(Polyfill::SHUFFLE_TREES),
        Feature::SubgroupFence => {
            Support::polyfill(Polyfill::Lowering("a block-scope fence (over-strict but correct, D6)"))
        }
        _ => Support::Native,
    }
}

/// Why the emulator does not run an NVIDIA family it leaves to CUDA (`None`: it runs it; D16).
pub(crate) fn cuda_only(n: NvFeature) -> Option<&'static str> {
    Some(match n {
        NvFeature::ReduxFloat => "float redux.sync is CUDA-only (sm_100a-class hardware; not emulated)",
        NvFeature::Atomic128 => "128-bit atomics are CUDA-only (the emulator's memory cells are 64-bit)",
        NvFeature::SyncRestrict | NvFeature::TensormapProxy => {
            "cluster, async-proxy and tensormap-proxy fences are CUDA-only (the emulator has no proxies)"
        }
        NvFeature::ClusterMbarrier => "thread-block clusters are CUDA-only (the emulator has no clusters)",
        NvFeature::Breakpoint => "nv.breakpoint traps the GPU: CUDA-only, never launched by tests",
        _ => return None,
    })
}
