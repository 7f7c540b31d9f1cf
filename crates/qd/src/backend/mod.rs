//! Backends: each has the same inner shape (capabilities, lowering, emitter or executor).
//!
//! * [`cpu`]: the lane-exact SIMT emulator (D8).
//!
//! The [`Target`] a kernel is traced for carries the backend's [`Caps`]; library code reads it to
//! pick per-target lowerings, and unsupported features fail while tracing with the op and backend named.

pub mod cpu;
pub mod ptx;
pub mod spirv;

use std::fmt;

/// The backend families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The CPU SIMT emulator.
    Cpu,
    /// NVIDIA through PTX.
    Cuda,
    /// Vulkan through SPIR-V.
    Vulkan,
    /// Metal through MSL.
    Metal,
    /// AMD through LLVM IR for amdgcn.
    Amdgpu,
}

impl BackendKind {
    /// Lower-case name (`cpu`, `cuda`, ...).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Metal => "metal",
            BackendKind::Amdgpu => "amdgpu",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a target supports natively; library code and the verifier read it while tracing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caps {
    /// The NVIDIA-only families of seed 004 (match, redux, elect, sregs, mbarrier, proxy fences).
    pub nv: bool,
    /// Full-warp `vote.all`/`vote.any` is one instruction (CUDA).
    pub vote_shortcut: bool,
    /// Integer `redux.sync` (sm_80+).
    pub redux: bool,
    /// `broadcast` needs a subgroup-uniform lane (SPIR-V).
    pub uniform_broadcast_lane: bool,
    /// A fused barrier-with-reduction instruction exists (CUDA `bar.red`).
    pub barrier_reduce: bool,
    /// f64 arithmetic and storage.
    pub f64: bool,
    /// 64-bit integer atomics.
    pub atomic_i64: bool,
    /// Shared memory per block, in bytes.
    pub max_shared_bytes: u32,
}

/// What a kernel is traced for: the backend, its subgroup width and capabilities.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Backend family.
    pub backend: BackendKind,
    /// Subgroup width (a trace-time constant).
    pub subgroup_size: u32,
    /// Capabilities.
    pub caps: Caps,
}

impl Target {
    /// The CPU emulator with subgroups of `subgroup_size` lanes (4 to 64).
    pub fn cpu(subgroup_size: u32) -> Target {
        Target { backend: BackendKind::Cpu, subgroup_size, caps: cpu::caps(subgroup_size) }
    }

    /// An NVIDIA GPU of compute capability `sm` (`90` for sm_90), 32-lane warps. `max_shared_bytes`
    /// is the architecture's opt-in limit per block; the CUDA runtime sets the device's own value.
    pub fn cuda(sm: u32) -> Target {
        let max_shared_kib = match sm {
            70 | 72 => 96,
            75 => 64,
            80 | 87 => 163,
            86 | 89 | 120 | 121 => 99,
            90.. => 227,
            _ => 48,
        };
        let caps = Caps {
            nv: true,
            vote_shortcut: true,
            redux: sm >= 80,
            uniform_broadcast_lane: false,
            barrier_reduce: true,
            f64: true,
            atomic_i64: true,
            max_shared_bytes: max_shared_kib * 1024,
        };
        Target { backend: BackendKind::Cuda, subgroup_size: 32, caps }
    }

    /// A Vulkan device with `subgroup_size` lanes and these SPIR-V capabilities (what kernels are
    /// traced for on `vulkan:N`).
    pub fn vulkan(subgroup_size: u32, caps: &spirv::SpirvCaps) -> Target {
        spirv::SpirvTarget { subgroup_size, caps: caps.clone() }.trace_target()
    }

    /// log2 of the subgroup width.
    pub fn log2_subgroup_size(&self) -> u32 {
        self.subgroup_size.trailing_zeros()
    }
}
