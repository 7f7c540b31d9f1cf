//! What a Metal device offers (Apple family 7 and newer; seeds 000-003), and which MSL version
//! each construct needs.

use std::fmt;
use std::str::FromStr;

use super::abi::MAX_BUFFERS;
use crate::ir::{AtomicOp, DType, ReduxOp, ScanKind};
use crate::target::{Feature, Limits, MemSpace, Polyfill, Support};

/// An MSL language version. Each printed kernel states the lowest one it needs, which the runtime
/// passes to Metal's compiler as `MTLLanguageVersion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MslVersion {
    /// MSL 3.0 (macOS 13): `atomic<float>` on device memory, 64-bit integers, SIMD-group functions.
    V3_0,
    /// MSL 3.1 (macOS 14): the `bfloat` type.
    V3_1,
    /// MSL 3.2 (macOS 15): `coherent(device)` buffers and `atomic_thread_fence` with a scope.
    V3_2,
}

impl MslVersion {
    /// The newest version the printer knows (what [`Target::metal`](crate::target::Target::metal) assumes).
    pub const LATEST: MslVersion = MslVersion::V3_2;

    /// `3.0`, `3.1`, `3.2`.
    pub fn name(self) -> &'static str {
        match self {
            MslVersion::V3_0 => "3.0",
            MslVersion::V3_1 => "3.1",
            MslVersion::V3_2 => "3.2",
        }
    }
}

impl fmt::Display for MslVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MslVersion {
    type Err = String;
    /// `msl3.0`, `3.1`, ...
    fn from_str(s: &str) -> Result<MslVersion, String> {
        let v = s.strip_prefix("msl").unwrap_or(s);
        [MslVersion::V3_0, MslVersion::V3_1, MslVersion::V3_2]
            .into_iter()
            .find(|m| m.name() == v)
            .ok_or_else(|| format!("unknown MSL version `{s}` (known: msl3.0, msl3.1, msl3.2)"))
    }
}

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
        max_array_params: Some(MAX_BUFFERS as u32 - 1),
    }
}

/// Why 64-bit atomics are refused. Apple family 9 (M3/A17) has `atomic_fetch_min/max_explicit` on
/// `ulong` only; qd targets family 7 and newer with one answer per target, so it refuses those too
/// rather than make a kernel compile on some Macs and not others (decision recorded in docs/metal.md).
const NO_ATOMIC64: &str =
    "Metal has no 64-bit atomics (Apple family 9's ulong atomic_fetch_min/max is refused too: qd targets family 7; seed 003)";

/// `simd_sum/min/max/and/or/xor` and `simd_prefix_{inclusive,exclusive}_sum` (MSL 3.0 section
/// 6.9.2; prefixes exist for sums and products only) on 32-bit integers; 64-bit values, which the
/// SIMD-group functions do not take, and the other scans take the library's trees.
fn simd_arith(op: ReduxOp, scan: Option<ScanKind>, dtype: DType) -> Support {
    let sum_or_reduction = scan.is_none() || op == ReduxOp::Add;
    if matches!(dtype, DType::I32 | DType::U32) && sum_or_reduction {
        Support::Native
    } else {
        Support::polyfill(Polyfill::SHUFFLE_TREES)
    }
}

/// How Metal (compiling MSL up to `msl`) provides `f`: no NVIDIA families, no f64, no 64-bit
/// atomics; the library composes `sync_*_nonzero` and full votes; 32-bit integer atomics and the
/// f32 add on device memory are native (MSL 3.0 `atomic<float>`, which threadgroup memory lacks),
/// other atomics CAS loops; bf16 needs MSL 3.1. (What needs MSL 3.2, an ordering beyond relaxed or
/// a fence, the printer refuses on an older target, at the instruction: `abi::Needs`.)
pub(crate) fn support(msl: MslVersion, f: Feature) -> Support {
    match f {
        Feature::Nv(_) => Support::unsupported("an NVIDIA-only operation (seed 004)"),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::BarrierReduce => Support::polyfill(Polyfill::Library(
            "a shared counter, one atomic add per contributing thread and two barriers",
        )),
        Feature::DynamicBroadcastLane => Support::Native,
        Feature::SubgroupArith { op, scan, dtype } => simd_arith(op, scan, dtype),
        Feature::SubgroupFence => Support::polyfill(Polyfill::Lowering("a threadgroup-scope fence")),
        Feature::SignedZeros(_) => Support::Native, // the runtime compiles with fast math off
        Feature::Tile { .. } | Feature::SharedMemory { .. } | Feature::SpinWait => Support::Native,
        Feature::Values(DType::F64) | Feature::Storage(DType::F64, _) => {
            Support::unsupported("Metal has no double-precision type")
        }
        Feature::Values(d) if d.is_packed() || d == DType::B128 => {
            Support::unsupported(format!("{d} values are not supported on metal"))
        }
        Feature::Values(DType::BF16) | Feature::Storage(DType::BF16, _) if msl < MslVersion::V3_1 => {
            Support::unsupported(format!("bf16 needs MSL 3.1 (`bfloat`); this target compiles MSL {msl}"))
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
        Feature::AtomicRmw(op, t, space) => {
            let native = match op {
                AtomicOp::Mul => false,
                _ if t.is_int() => true,
                // The exchange moves bits, so the f32 one is the u32 exchange on the same word.
                AtomicOp::Exchange => t == DType::F32,
                // `atomic<float>` exists in device memory only (MSL 3.0, section 6.15).
                AtomicOp::Add => t == DType::F32 && space == MemSpace::Device,
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
