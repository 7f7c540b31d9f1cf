//! What a device is ([`DeviceInfo`], for `qd info`) and where a compile's time went
//! ([`CompileStats`], [`DiskCacheUse`]).

use std::path::PathBuf;
use std::time::Duration;

/// What a device is, for `qd info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name as [`Device::from_name`](super::Device::from_name) takes it (`cpu`,
    /// `cpu:sg8`, `cuda:0`, `vulkan:0`).
    pub name: String,
    /// The backend that runs kernels on it (`cpu`, `cuda`, `vulkan`), for display.
    pub backend: &'static str,
    /// What it is (`NVIDIA H100 80GB HBM3`, `CPU SIMT emulator`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub model: String,
    /// Vulkan only: the device's Vulkan API version (major, minor, patch).
    pub api_version: Option<(u32, u32, u32)>,
    /// Vulkan only: the driver's name and version (`llvmpipe Mesa 22.3.6 (LLVM 15.0.6)`).
    pub driver: Option<String>,
    /// Vulkan only: how the subgroup size was found (`measured`, or why the driver's property is
    /// trusted), the device type, the optional features enabled, the loop limit.
    pub notes: Vec<String>,
    /// The loop iterations after which the device silently ends a kernel's loops, when it does:
    /// lavapipe (Mesa 22.3) ends every loop of an invocation after 65535 iterations in all, so a
    /// spin-wait on another block may give up instead of waiting. Measured when a Vulkan device is
    /// opened (`None`: no limit up to 2^20 iterations); `None` on the CPU emulator and CUDA.
    pub loop_iteration_limit: Option<u64>,
    /// Whether [`Device::launch_timed`](super::Device::launch_timed) measures with the device's
    /// own timers (CUDA events, Vulkan timestamps) rather than the host clock around a synchronous
    /// launch.
    pub device_timer: bool,
    /// Compute capability (major, minor), CUDA only.
    pub compute_capability: Option<(u32, u32)>,
    /// CUDA version the driver supports (major, minor) from `cuDriverGetVersion`, CUDA only.
    pub driver_version: Option<(u32, u32)>,
    /// Streaming multiprocessors, CUDA only.
    pub multiprocessors: Option<u32>,
    /// Device memory in bytes (CUDA; Vulkan: the device-local heaps).
    pub memory_bytes: Option<u64>,
    /// Subgroup (warp) width.
    pub subgroup_size: u32,
    /// Shared memory a block may use, in bytes.
    pub max_shared_bytes: u32,
    /// The disk cache folder, when this device uses one.
    pub cache_dir: Option<PathBuf>,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.model)?;
        if let Some((major, minor, patch)) = self.api_version {
            write!(f, ", Vulkan {major}.{minor}.{patch}")?;
        }
        if let Some(d) = &self.driver {
            write!(f, ", driver {d}")?;
        }
        if let Some((major, minor)) = self.compute_capability {
            write!(f, ", compute capability {major}.{minor} (sm_{major}{minor})")?;
        }
        if let Some((major, minor)) = self.driver_version {
            write!(f, ", driver CUDA {major}.{minor}")?;
        }
        if let Some(n) = self.multiprocessors {
            write!(f, ", {n} SMs")?;
        }
        if let Some(b) = self.memory_bytes {
            write!(f, ", {:.1} GiB", b as f64 / (1u64 << 30) as f64)?;
        }
        write!(f, ", subgroup size {}", self.subgroup_size)?;
        if let Some(first) = self.notes.first() {
            write!(f, " ({first})")?;
        }
        write!(f, ", shared memory {} KiB per block", self.max_shared_bytes / 1024)?;
        for n in self.notes.iter().skip(1) {
            write!(f, ", {n}")?;
        }
        if let Some(d) = &self.cache_dir {
            write!(f, ", kernel cache {}", d.display())?;
        }
        Ok(())
    }
}

/// How the disk cache took part in a compile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DiskCacheUse {
    /// The backend has no disk cache (the CPU emulator).
    #[default]
    NotApplicable,
    /// Turned off (`QD_CACHE_DISABLE=1`, or no cache folder; CUDA: `CUDA_CACHE_DISABLE=1`): the
    /// code was compiled.
    Disabled,
    /// The code came from the driver's JIT, which keeps its own cache between processes (CUDA by
    /// default, D23: `CUDA_CACHE_PATH`); [`CompileStats::jit`] is `None` when it was found there.
    Driver,
    /// The cubin was loaded from this file: no JIT.
    Hit(PathBuf),
    /// CUDA: the kernel's IR key named this cubin (D23), which was loaded without lowering the
    /// kernel at all: no PTX was made (it is made on request, by
    /// [`CompiledKernel::ptx`](super::CompiledKernel::ptx)), and [`CompileStats::lower`] is the
    /// key's hashing and the lookup.
    IrHit(PathBuf),
    /// A miss: the PTX went through the JIT and the cubin was stored in this file.
    Stored(PathBuf),
    /// A miss, and storing the cubin failed (why); the kernel still runs.
    StoreFailed(String),
}

/// Where the time of one compile went (Instant-based wall time), for cold and warm latency
/// measurements. Only compiles that missed the in-memory cache are recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Kernel name.
    pub kernel: String,
    /// Running the closure and verifying the IR.
    pub trace: Duration,
    /// Lowering: PTX generation (CUDA), SPIR-V generation (Vulkan) or the emulator's program (CPU).
    pub lower: Duration,
    /// Getting a loaded kernel: from the PTX, the JIT or the cubin load, the entry lookup and the
    /// shared-memory attributes (CUDA); from the SPIR-V, the shader module, layouts and compute
    /// pipeline creation (Vulkan); zero on the CPU.
    pub load: Duration,
    /// The JIT's own wall time as the driver reports it (`CU_JIT_WALL_TIME`), when it ran.
    pub jit: Option<Duration>,
    /// How the disk cache took part.
    pub disk: DiskCacheUse,
    /// The whole compile, cache lookups included.
    pub total: Duration,
}

/// What a device's runtime has done and holds so far ([`Device::counters`](super::Device::counters)),
/// for checking that repeated launches and copies reuse what they made. Vulkan only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCounters {
    /// Kernel launches submitted (launches with an empty grid submit nothing).
    pub launches: u64,
    /// Command buffers recorded for launches: a launch records its kernel's command buffer (and
    /// points its descriptor set at the arrays) only when its arrays or grid differ from that
    /// kernel's last launch.
    pub recordings: u64,
    /// Pieces of host copies that went through the staging buffer (at most 64 MiB each).
    pub staged_copies: u64,
    /// Bytes of device memory the runtime's allocator holds in blocks: arrays, parameter blocks,
    /// the staging buffer.
    pub reserved_bytes: u64,
}
