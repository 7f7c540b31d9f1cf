//! What a Metal device offers (MSL 3.0 on Apple family 7 and newer; seeds 000-003).

use crate::ir::{AtomicOp, DType};
use crate::target::{Feature, Limits, Polyfill, Support};

/// 32-wide SIMD groups (every shipping Mac GPU, seed 002) and 32 KiB of threadgroup memory; the
/// Metal specification promises no progress to an earlier threadgroup while a later one spins.
pub(crate) fn limits() -> Limits {
    Limits {
        subgroup_size: 32,
        max_shared_bytes: 32 * 1024,
        shared_cell_bytes: 1,
        max_buffer_bytes: None,
        loop_iteration_cap: None,
        block_forward_progress: false,
    }
}

const NO_ATOMIC64: &str =
    "Metal has no 64-bit atomics (only atomic_fetch_min/max on ulong, on Apple family 9; seed 003)";

/// How Metal provides `f`: no NVIDIA families, no f64, no 64-bit atomics; the library composes
/// `sync_*_nonzero` and full votes; 32-bit integer and f32-add atomics are native (MSL 3.0
/// `atomic<float>`), other atomics CAS loops.
pub(crate) fn support(f: Feature) -> Support {
    match f {
        Feature::Nv(_) => Support::unsupported("an NVIDIA-only operation (seed 004)"),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::BarrierReduce => Support::polyfill(Polyfill::Library(
            "a shared counter, one atomic add per contributing thread and two barriers",
        )),
        Feature::DynamicBroadcastLane => Support::Native,
        Feature::SubgroupFence => Support::polyfill(Polyfill::Lowering("a threadgroup-scope fence")),
        Feature::Tile { .. } | Feature::SharedMemory { .. } | Feature::SpinWait => Support::Native,
        Feature::Values(DType::F64) | Feature::Storage(DType::F64, _) => {
            Support::unsupported("Metal has no double-precision type")
        }
        Feature::Values(d) if d.is_packed() || d == DType::B128 => {
            Support::unsupported(format!("{d} values are not supported on metal"))
        }
        Feature::Values(DType::BF16) => Support::polyfill(Polyfill::Lowering("computed in f32 with exact conversions")),
        Feature::Values(_) | Feature::Storage(..) => Support::Native,
        Feature::OrderedAccess(t, _) | Feature::AtomicCas(t, _) | Feature::AtomicRmw(_, t, _) if t.bits() == 64 => {
            Support::unsupported(NO_ATOMIC64)
        }
        Feature::AtomicCas(DType::B128, _) | Feature::AtomicRmw(_, DType::B128, _) => {
            Support::unsupported("128-bit atomics are not supported on metal")
        }
        Feature::OrderedAccess(t, _) if t.bits() < 32 => Support::polyfill(Polyfill::SubwordCasLoop),
        Feature::OrderedAccess(..) => Support::Native,
        Feature::AtomicCas(t, _) | Feature::AtomicRmw(_, t, _) if t.bits() < 32 => {
            Support::polyfill(Polyfill::SubwordCasLoop)
        }
        Feature::AtomicCas(..) => Support::Native,
        Feature::AtomicRmw(op, t, _) => {
            let native = match op {
                AtomicOp::Mul => false,
                _ if t.is_int() => true,
                AtomicOp::Exchange | AtomicOp::Add => t == DType::F32,
                _ => false,
            };
            if native {
                Support::Native
            } else {
                Support::polyfill(Polyfill::CasLoop)
            }
        }
    }
}
