//! The capability layer: what a kernel is traced for, and what that target can do.
//!
//! A [`Target`] answers every [`Feature`] (an enum of each choice a backend or a library path
//! makes) with a [`Support`] (native, a polyfill and its cost, or unsupported and why), and fixes
//! the [`Limits`] (subgroup width, shared memory, loop cap, forward progress). The answers live in
//! one file per backend (`backend/<name>/caps.rs`); everything else asks the target:
//!
//! * library code (`simt/`, `nv`) picks its lowering with [`Target::support`] / [`Target::has`]
//!   and reads [`Target::limits`], never a backend's name;
//! * every IR instruction states what it needs ([`Inst::requirements`](crate::ir::Inst::requirements)),
//!   and the one check pass, [`check`], turns a missing feature into a typed [`TraceError`](crate::trace::TraceError)
//!   naming the op, the target, the feature and the user's line, while tracing;
//! * [`legalize_atomics`] rewrites the atomics a target provides as [`Polyfill::CasLoop`] into a
//!   compare-and-swap loop in the IR, once for every backend;
//! * the emulator can wear another target's features ([`Target::wearing`], `cpu:sg64@amdgpu:gfx942`),
//!   so the library paths of a GPU nobody here has run in strict mode on the CPU;
//! * [`table`] renders op × backend support for `qd info --support` and `docs/support.md`.
//!
//! ```
//! use qd::target::{Feature, Support, Target};
//! let vulkan = Target::vulkan(32, &qd::backend::spirv::SpirvCaps::lavapipe());
//! assert!(!vulkan.has(Feature::BarrierReduce)); // block.sync_*_nonzero is emulated there
//! let metal_on_cpu = Target::cpu(32).wearing(&Target::metal());
//! assert_eq!(metal_on_cpu.name(), "cpu:sg32@metal");
//! assert!(matches!(metal_on_cpu.support(Feature::Values(qd::ir::DType::F64)), Support::Unsupported { .. }));
//! ```

mod check;
mod feature;
mod legalize;
mod limits;
pub mod table;

use std::fmt;

pub use check::check;
pub use feature::{Feature, MemSpace, NvFeature, Polyfill, Support};
pub use legalize::legalize_atomics;
pub use limits::Limits;

use crate::backend::amdgpu::AmdgpuArch;
use crate::backend::spirv::SpirvCaps;
use crate::backend::{amdgpu, cpu, metal, ptx, spirv};

/// The backend families. Crate-private: code outside `backend/`, `runtime/` and this layer asks
/// the target for features and limits instead of testing which backend it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BackendKind {
    /// The CPU SIMT emulator.
    Cpu,
    /// NVIDIA through PTX.
    Cuda,
    /// Vulkan through SPIR-V.
    Vulkan,
    /// Apple GPUs through MSL.
    Metal,
    /// AMD GPUs through LLVM IR for amdgcn.
    Amdgpu,
}

impl BackendKind {
    /// Lower-case name (`cpu`, `cuda`, `vulkan`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Metal => "metal",
            BackendKind::Amdgpu => "amdgpu",
        }
    }
}

/// Whose features a target has: a backend's device description.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Profile {
    /// The emulator itself: every feature (the NVIDIA families with 32-lane subgroups).
    Cpu,
    /// An NVIDIA GPU: the PTX `.target` it is compiled for (`sm_90`, `sm_90a`).
    Cuda(ptx::PtxTarget),
    /// A Vulkan device with these SPIR-V features.
    Vulkan(SpirvCaps),
    /// An AMD GPU of this architecture (wave64).
    Amdgpu(AmdgpuArch),
    /// An Apple GPU through Metal (32-wide SIMD groups) whose OS compiles MSL up to this version.
    Metal(metal::MslVersion),
}

impl Profile {
    fn name(&self, limits: &Limits) -> String {
        match self {
            Profile::Cpu => format!("cpu:sg{}", limits.subgroup_size),
            Profile::Cuda(t) => format!("cuda:{t}"),
            Profile::Vulkan(_) => format!("vulkan:sg{}", limits.subgroup_size),
            Profile::Amdgpu(arch) => format!("amdgpu:{arch}"),
            Profile::Metal(v) if *v == metal::MslVersion::LATEST => "metal".into(),
            Profile::Metal(v) => format!("metal:msl{v}"),
        }
    }

    fn support(&self, limits: &Limits, f: Feature) -> Support {
        match self {
            Profile::Cpu => cpu::caps::support(limits, f),
            Profile::Cuda(t) => ptx::caps::support(*t, f),
            Profile::Vulkan(caps) => spirv::caps::support(caps, f),
            Profile::Amdgpu(arch) => amdgpu::caps::support(*arch, f),
            Profile::Metal(v) => metal::caps::support(*v, f),
        }
    }
}

/// What a kernel is traced for: the backend that compiles or runs it, whose features it has,
/// and its limits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The backend that compiles or runs the kernel (the emulator when it wears another target).
    pub(crate) backend: BackendKind,
    /// Whose features the kernel may use.
    profile: Profile,
    limits: Limits,
    /// Answers that replace the profile's (tests, what-if studies).
    overrides: Vec<(Feature, Support)>,
}

impl Target {
    /// The CPU emulator with subgroups of `subgroup_size` lanes (4 to 64).
    pub fn cpu(subgroup_size: u32) -> Target {
        Target::new(BackendKind::Cpu, Profile::Cpu, cpu::caps::limits(subgroup_size))
    }

    /// An NVIDIA GPU of compute capability `sm` (`90` for sm_90), 32-lane warps. The shared-memory
    /// limit is the architecture's opt-in maximum per block; the CUDA runtime sets the device's own.
    pub fn cuda(sm: u32) -> Target {
        Target::ptx(ptx::PtxTarget::sm(sm))
    }

    /// An NVIDIA GPU compiled for this PTX `.target` (`sm_90a` enables the architecture-specific
    /// features), 32-lane warps.
    pub fn ptx(target: ptx::PtxTarget) -> Target {
        Target::new(BackendKind::Cuda, Profile::Cuda(target), ptx::caps::limits(target.sm))
    }

    /// A Vulkan device with `subgroup_size` lanes and these SPIR-V features (what kernels are
    /// traced for on `vulkan:N`).
    pub fn vulkan(subgroup_size: u32, caps: &SpirvCaps) -> Target {
        Target::new(BackendKind::Vulkan, Profile::Vulkan(caps.clone()), spirv::caps::limits(subgroup_size, caps))
    }

    /// An AMD GPU of `arch` (wave64, as every AMDGPU target is pinned). Its code generator is
    /// [`backend::amdgpu`](crate::backend::amdgpu); the emulator can wear it ([`Target::wearing`]).
    pub fn amdgpu(arch: AmdgpuArch) -> Target {
        Target::new(BackendKind::Amdgpu, Profile::Amdgpu(arch), amdgpu::caps::limits(arch))
    }

    /// An Apple GPU (family 7 or newer) through Metal, on an OS that compiles MSL 3.2 (macOS 15):
    /// 32-wide SIMD groups, 32 KiB of threadgroup memory. Its code generator is
    /// [`backend::metal`](crate::backend::metal); the emulator can wear it ([`Target::wearing`]).
    pub fn metal() -> Target {
        Target::metal_msl(metal::MslVersion::LATEST)
    }

    /// [`Target::metal`] on an OS whose Metal compiles MSL only up to `version`: what needs a later
    /// version (bf16 values: 3.1; fences, orderings beyond relaxed, `volatile_load`: 3.2) is refused.
    pub fn metal_msl(version: metal::MslVersion) -> Target {
        Target::new(BackendKind::Metal, Profile::Metal(version), metal::caps::limits())
    }

    fn new(backend: BackendKind, profile: Profile, limits: Limits) -> Target {
        Target { backend, profile, limits, overrides: Vec::new() }
    }

    /// This emulator target wearing `other`'s features and limits (its subgroup width included):
    /// kernels traced for it take the library paths `other` takes and are refused what `other`
    /// lacks, then run on the emulator. `cpu:sg64@amdgpu:gfx942` and `cpu:sg32@metal` prove those
    /// backends' library paths without their hardware.
    pub fn wearing(&self, other: &Target) -> Target {
        Target {
            backend: BackendKind::Cpu,
            profile: other.profile.clone(),
            limits: other.limits.clone(),
            overrides: other.overrides.clone(),
        }
    }

    /// The same target with `feature` answered by `support` (for tests and what-if studies).
    pub fn with_support(mut self, feature: Feature, support: Support) -> Target {
        self.overrides.retain(|(f, _)| *f != feature);
        self.overrides.push((feature, support));
        self
    }

    /// The same target with another shared-memory limit (the runtime sets the device's value).
    pub fn with_max_shared_bytes(mut self, bytes: u32) -> Target {
        self.limits.max_shared_bytes = bytes;
        self
    }

    /// The same target with a limit on the bytes one array may take (the runtimes set the device's:
    /// CUDA and AMDGPU its memory, Vulkan the smaller of `maxStorageBufferRange` and
    /// `maxMemoryAllocationSize`). [`Device::check_allocation`](crate::runtime::Device::check_allocation)
    /// refuses larger arrays with a typed error.
    pub fn with_max_buffer_bytes(mut self, bytes: u64) -> Target {
        self.limits.max_buffer_bytes = Some(bytes);
        self
    }

    /// The same target with the device's own subgroup width (the CUDA runtime reads the warp size).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn with_subgroup_size(mut self, lanes: u32) -> Target {
        self.limits.subgroup_size = lanes;
        self
    }

    /// The same target with a loop-iteration cap (measured by the Vulkan runtime).
    pub fn with_loop_iteration_cap(mut self, cap: Option<u64>) -> Target {
        self.limits.loop_iteration_cap = cap;
        self
    }

    /// How this target provides `feature`.
    pub fn support(&self, feature: Feature) -> Support {
        if let Some((_, s)) = self.overrides.iter().find(|(f, _)| *f == feature) {
            return s.clone();
        }
        match feature {
            Feature::Tile { lanes } if lanes > self.limits.subgroup_size => Support::unsupported(format!(
                "a tile of {lanes} lanes needs subgroups of at least {lanes} lanes; {} has {}",
                self.name(),
                self.limits.subgroup_size
            )),
            Feature::Tile { .. } => Support::Native,
            Feature::SharedMemory { bytes } if bytes > self.limits.max_shared_bytes => Support::unsupported(format!(
                "{bytes} bytes of shared memory per block are over the {} bytes {} allows",
                self.limits.max_shared_bytes,
                self.name()
            )),
            Feature::SharedMemory { .. } => Support::Native,
            Feature::SpinWait => match self.limits.loop_iteration_cap {
                Some(cap) => Support::unsupported(format!(
                    "{} ends every loop of an invocation after {cap} iterations, which an unbounded spin-wait can exceed",
                    self.name()
                )),
                None => Support::Native,
            },
            f => self.profile.support(&self.limits, f),
        }
    }

    /// True when `feature` is native here.
    pub fn has(&self, feature: Feature) -> bool {
        self.support(feature).is_native()
    }

    /// The numbers this target fixes.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Subgroup width (a trace-time constant).
    pub fn subgroup_size(&self) -> u32 {
        self.limits.subgroup_size
    }

    /// log2 of the subgroup width.
    pub fn log2_subgroup_size(&self) -> u32 {
        self.limits.log2_subgroup_size()
    }

    /// The backend that compiles or runs kernels traced for this target (`cpu`, `cuda`, `vulkan`),
    /// for messages.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whose features this target has (`cuda:sm_90`, `vulkan:sg8`, `amdgpu:gfx942`, `metal`, `cpu:sg32`).
    pub fn features_name(&self) -> String {
        self.profile.name(&self.limits)
    }

    /// The target's name: [`Target::features_name`], prefixed by `cpu:sgN@` when the emulator
    /// wears another target's features.
    pub fn name(&self) -> String {
        let features = self.features_name();
        match (self.backend, &self.profile) {
            (BackendKind::Cpu, Profile::Cpu) => features,
            (BackendKind::Cpu, _) => format!("cpu:sg{}@{features}", self.limits.subgroup_size),
            _ => features,
        }
    }

    /// The target whose features `name` names: `amdgpu` (gfx942), `amdgpu:gfxN`, `metal`, `metal:mslX.Y`,
    /// `cuda:sm_N`, `cpu:sgN` (what [`Target::features_name`] prints, for the profiles that need
    /// no device to describe).
    pub fn from_features_name(name: &str) -> Result<Target, String> {
        let (family, detail) = name.split_once(':').unwrap_or((name, ""));
        match (family, detail) {
            ("amdgpu", "") => Ok(Target::amdgpu(AmdgpuArch::Gfx942)),
            ("amdgpu", arch) => Ok(Target::amdgpu(arch.parse()?)),
            ("metal", "") => Ok(Target::metal()),
            ("metal", msl) => Ok(Target::metal_msl(msl.parse()?)),
            ("cuda", sm) => Ok(Target::ptx(ptx::PtxTarget::parse(sm).map_err(|e| e.to_string())?)),
            ("cpu", sg) => match sg.strip_prefix("sg").and_then(|n| n.parse().ok()) {
                Some(n) => Ok(Target::cpu(n)),
                None => Err(format!("expected cpu:sgN, got `{name}`")),
            },
            _ => Err(format!("unknown target `{name}`; expected amdgpu[:gfxN], metal, cuda:sm_N or cpu:sgN")),
        }
    }

    /// The PTX `.target` of a CUDA target (`None` for the others).
    pub(crate) fn ptx_target(&self) -> Option<ptx::PtxTarget> {
        match &self.profile {
            Profile::Cuda(t) => Some(*t),
            _ => None,
        }
    }

    /// What the SPIR-V lowering targets for a Vulkan target (`None` for the others).
    pub(crate) fn spirv_target(&self) -> Option<spirv::SpirvTarget> {
        match &self.profile {
            Profile::Vulkan(caps) => {
                Some(spirv::SpirvTarget { subgroup_size: self.limits.subgroup_size, caps: caps.clone() })
            }
            _ => None,
        }
    }

    /// The highest MSL version a Metal target compiles (`None` for the others).
    pub(crate) fn msl_version(&self) -> Option<metal::MslVersion> {
        match &self.profile {
            Profile::Metal(v) => Some(*v),
            _ => None,
        }
    }

    /// The architecture of an AMDGPU target (`None` for the others).
    pub(crate) fn amdgpu_arch(&self) -> Option<AmdgpuArch> {
        match &self.profile {
            Profile::Amdgpu(arch) if self.backend == BackendKind::Amdgpu => Some(*arch),
            _ => None,
        }
    }

    /// True when the emulator runs kernels for this target (itself or wearing another's features).
    pub fn is_emulated(&self) -> bool {
        self.backend == BackendKind::Cpu
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
