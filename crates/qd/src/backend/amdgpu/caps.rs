//! What an AMD GPU offers, per architecture (seeds 000-003; LLVM's AMDGPU backend).

use std::fmt;
use std::str::FromStr;

use crate::ir::{AtomicOp, DType};
use crate::target::{Feature, Limits, Polyfill, Support};

/// The AMD architectures the capability model knows (the ones `llc-19` targets and the seeds
/// name). Every one runs wave64: every AMDGPU target is pinned to `+wavefrontsize64` (seed 002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AmdgpuArch {
    /// CDNA2 (MI200).
    Gfx90a,
    /// CDNA3 (MI300).
    Gfx942,
    /// RDNA3 (RX 7900).
    Gfx1100,
    /// RDNA4 (R9700).
    Gfx1201,
}

impl AmdgpuArch {
    /// Every architecture, in order.
    pub const ALL: [AmdgpuArch; 4] = [AmdgpuArch::Gfx90a, AmdgpuArch::Gfx942, AmdgpuArch::Gfx1100, AmdgpuArch::Gfx1201];

    /// `gfx942`, ...
    pub fn name(self) -> &'static str {
        match self {
            AmdgpuArch::Gfx90a => "gfx90a",
            AmdgpuArch::Gfx942 => "gfx942",
            AmdgpuArch::Gfx1100 => "gfx1100",
            AmdgpuArch::Gfx1201 => "gfx1201",
        }
    }

    /// CDNA (gfx9 compute) parts have the f64 atomic add in global memory.
    fn is_cdna(self) -> bool {
        matches!(self, AmdgpuArch::Gfx90a | AmdgpuArch::Gfx942)
    }
}

impl fmt::Display for AmdgpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AmdgpuArch {
    type Err = String;
    fn from_str(s: &str) -> Result<AmdgpuArch, String> {
        AmdgpuArch::ALL.into_iter().find(|a| a.name() == s).ok_or_else(|| {
            let known: Vec<_> = AmdgpuArch::ALL.iter().map(|a| a.name()).collect();
            format!("unknown AMDGPU architecture `{s}` (known: {})", known.join(", "))
        })
    }
}

/// wave64, 64 KiB of LDS per workgroup; no promise that an earlier workgroup progresses while a
/// later one spins.
pub(crate) fn limits(_arch: AmdgpuArch) -> Limits {
    Limits {
        subgroup_size: 64,
        max_shared_bytes: 64 * 1024,
        shared_cell_bytes: 1,
        max_buffer_bytes: None,
        loop_iteration_cap: None,
        block_forward_progress: false,
        max_array_params: None,
    }
}

/// How `arch` provides `f`: no NVIDIA families and no fused barrier reduction or vote shortcut
/// (the library composes them, seed 000), broadcast from any lane (`ds_bpermute`), subgroup
/// fences at workgroup scope (seed 002), native 32/64-bit integer and f32-add atomics, f64
/// add/min/max in global memory on CDNA, CAS loops for the rest.
pub(crate) fn support(arch: AmdgpuArch, f: Feature) -> Support {
    match f {
        Feature::Nv(_) => Support::unsupported("an NVIDIA-only operation (seed 004)"),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::BarrierReduce => Support::polyfill(Polyfill::Library(
            "a shared counter, one atomic add per contributing thread and two barriers",
        )),
        Feature::DynamicBroadcastLane => Support::Native,
        Feature::SubgroupArith { .. } => Support::polyfill(Polyfill::SHUFFLE_TREES),
        Feature::SubgroupFence => {
            Support::polyfill(Polyfill::Lowering("a workgroup-scope fence (over-strict but correct, seed 002)"))
        }
        Feature::Tile { .. } | Feature::SharedMemory { .. } | Feature::SpinWait => Support::Native,
        Feature::SignedZeros(_) => Support::Native, // LLVM keeps them without `nsz` flags
        Feature::Values(d) if d.is_packed() || d == DType::B128 => {
            Support::unsupported(format!("{d} values are not lowered for amdgpu"))
        }
        Feature::Values(DType::BF16) => Support::polyfill(Polyfill::Lowering("computed in f32 with exact conversions")),
        Feature::Values(_) | Feature::Storage(..) | Feature::OrderedAccess(..) => Support::Native,
        Feature::AtomicCas(DType::B128, _) | Feature::AtomicRmw(_, DType::B128, _) => {
            Support::unsupported("128-bit atomics are not lowered for amdgpu")
        }
        Feature::AtomicCas(t, _) if t.bits() < 32 => Support::polyfill(Polyfill::SubwordCasLoop),
        Feature::AtomicCas(..) => Support::Native,
        Feature::AtomicRmw(_, t, _) if t.bits() < 32 => Support::polyfill(Polyfill::SubwordCasLoop),
        Feature::AtomicRmw(op, t, space) => {
            let native = match op {
                AtomicOp::Mul => false,
                _ if t.is_int() => true,
                AtomicOp::Exchange => true,
                AtomicOp::Add if t == DType::F32 => true,
                AtomicOp::Add if t == DType::F64 => arch.is_cdna() && space == crate::target::MemSpace::Device,
                // `global_atomic_min/max_f64` (CDNA, with `unsafe_fp_atomics`): past seed 003's
                // gfx90a row, checked with llc-19 (docs/decisions.md).
                AtomicOp::Min | AtomicOp::Max if t == DType::F64 => {
                    arch.is_cdna() && space == crate::target::MemSpace::Device
                }
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

/// Whether kernels for `arch` carry `"amdgpu-unsafe-fp-atomics"="true"`, which lets LLVM 19 use the
/// hardware float atomics (f32 add on every listed GFX, f64 add/min/max on CDNA) instead of CAS
/// loops. Those instructions are not coherent on fine-grained (host-visible) memory; qd only ever
/// allocates coarse-grained buffers (`hipMalloc`), where they are exact, so every architecture
/// opts in (docs/decisions.md).
pub fn unsafe_fp_atomics(arch: AmdgpuArch) -> bool {
    match arch {
        AmdgpuArch::Gfx90a | AmdgpuArch::Gfx942 | AmdgpuArch::Gfx1100 | AmdgpuArch::Gfx1201 => true,
    }
}

/// RDNA (gfx10 and later): under wave64 `ds_bpermute` reaches only its own 32-lane half, so a
/// shuffle across halves adds `v_permlane64` (which CDNA does not have, seed 002).
pub fn bpermute_is_half_wave(arch: AmdgpuArch) -> bool {
    !arch.is_cdna()
}
