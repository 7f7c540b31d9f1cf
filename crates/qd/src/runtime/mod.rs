//! The runtime: device selection, typed device arrays, launches, the compiled-kernel cache, errors.
//!
//! User code is the same for every backend: pick a [`Device`], make [`DeviceArray`]s, launch
//! [`Kernel`]s with [`Arg`]s. Every mistake comes back as an [`Error`], never a panic.
//!
//! A [`Device`] dispatches to one backend:
//!
//! * the CPU emulator (`cpu`, `cpu:sgN`): arrays are emulator [`Buffer`]s, kernels are
//!   [`cpu::Program`]s;
//! * CUDA (`cuda`, `cuda:N`, see `cuda.rs`): arrays live in GPU memory, kernels are PTX from the
//!   NVPTX lowering, compiled by the driver's JIT, with an in-memory cache per device and a cubin
//!   cache on disk shared between processes;
//! * Vulkan (`vulkan`, `vulkan:N`, see `vulkan/`): arrays are host-visible storage buffers, kernels
//!   are SPIR-V from the SPIR-V lowering, compute pipelines cached in memory per device.
//!
//! All share the argument checks ([`Error::Argument`]) and the D1 grid of range kernels
//! (`launch.rs`), so a mistake reads the same on every backend.

mod cuda;
mod disk_cache;
mod launch;
mod vulkan;

pub use cuda::{CudaOptions, PtxCode, PtxParam};
pub use disk_cache::{CACHE_DIR_VAR, CACHE_DISABLE_VAR};
pub use launch::{range_bounds, RANGE_GRID_CAP};
pub use vulkan::{SpirvCode, SpirvParam};

use crate::backend::cpu::{self, Buffer, CpuArg};
use crate::backend::{BackendKind, Target};
use crate::ir::DType;
use crate::trace::{Kernel, Scalar, TraceError};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Everything that can go wrong between a kernel definition and its results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A mistake seen while tracing or verifying (wrong dtype, bad `log2_size`, divergent barrier...).
    #[error("trace error: {0}")]
    Trace(#[from] TraceError),
    /// A mistake the emulator caught at run time (out of bounds, partial mask, hang...).
    #[error("emulator error: {0}")]
    Emulator(#[from] cpu::EmuError),
    /// The arguments do not fit the kernel's parameters.
    #[error("kernel `{kernel}`: argument {index} (`{param}`): {message}")]
    Argument {
        /// Kernel name.
        kernel: String,
        /// Parameter position.
        index: usize,
        /// Parameter name.
        param: String,
        /// What is wrong.
        message: String,
    },
    /// The launch itself is invalid (bounds, grid, D1 rules).
    #[error("kernel `{kernel}`: launch error: {message}")]
    Launch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The backend cannot be used on this machine.
    #[error("backend `{backend}` is not available: {reason}")]
    Unavailable {
        /// Backend name as given.
        backend: String,
        /// Why.
        reason: String,
    },
    /// A GPU driver call failed: loading a module (the JIT's log is in `message`), launching, a fault
    /// seen when synchronizing, an allocation or a copy.
    #[error("kernel `{kernel}`: driver call `{call}` failed: {message}")]
    Driver {
        /// Kernel name, or the host operation (`<alloc>`, `<host copy>`).
        kernel: String,
        /// The driver function (`cuModuleLoadDataEx`, `cuLaunchKernel`, `cuCtxSynchronize`, ...).
        call: String,
        /// The driver's error name and description, then the JIT's log when there is one.
        message: String,
    },
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Launch grid for explicit kernels: the number of blocks.
pub type Grid = u32;

/// The subgroup sizes of the CPU emulator.
const CPU_SUBGROUP_SIZES: [u32; 5] = [4, 8, 16, 32, 64];

/// Every device name [`Device::from_name`] accepts on this machine: `cpu`, the other `cpu:sgN`,
/// then `cuda:N` for each GPU the CUDA driver reports (none without a driver), then `vulkan:N` for
/// each device the Vulkan loader enumerates, in its order (none without a loader or driver).
///
/// A listed Vulkan device may still be unusable (too old, missing subgroup operations):
/// [`Device::from_name`] says why.
pub fn available_devices() -> Vec<String> {
    let mut names = vec!["cpu".to_string()];
    names.extend(CPU_SUBGROUP_SIZES.iter().filter(|&&sg| sg != 32).map(|sg| format!("cpu:sg{sg}")));
    names.extend((0..cuda::device_count()).map(|i| format!("cuda:{i}")));
    names.extend((0..vulkan::device_count()).map(|i| format!("vulkan:{i}")));
    names
}

/// A compute device.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct DeviceInner {
    name: String,
    target: Target,
    backend: Backend,
    cache: Mutex<HashMap<CacheKey, Arc<CompiledKernel>>>,
    last_compile: Mutex<Option<CompileStats>>,
    ptx_overrides: Mutex<HashMap<String, PtxCode>>,
    spirv_overrides: Mutex<HashMap<String, SpirvCode>>,
}

enum Backend {
    Cpu(cpu::Options),
    Cuda(cuda::CudaDevice),
    Vulkan(vulkan::VulkanDevice),
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    body: usize,
    name: String,
    block_dim: u32,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.inner.name)
    }
}

/// Locks a mutex, ignoring poisoning (the maps stay consistent: entries are inserted whole).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a device is, for `qd info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name as [`Device::from_name`] takes it (`cpu`, `cpu:sg8`, `cuda:0`, `vulkan:0`).
    pub name: String,
    /// Backend family.
    pub backend: BackendKind,
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
    /// Turned off (`QD_CACHE_DISABLE=1`, or no cache folder): the PTX went through the JIT.
    Disabled,
    /// The cubin was loaded from this file: no JIT.
    Hit(PathBuf),
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

/// A traced and lowered kernel, ready to launch on the device that compiled it.
pub struct CompiledKernel {
    exec: Exec,
}

enum Exec {
    Cpu(cpu::Program),
    Cuda(cuda::CudaKernel),
    Vulkan(vulkan::VulkanKernel),
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.exec {
            Exec::Cpu(p) => write!(f, "CompiledKernel(cpu, `{}`)", p.kernel.name),
            Exec::Cuda(k) => write!(f, "CompiledKernel({k:?})"),
            Exec::Vulkan(k) => write!(f, "CompiledKernel({k:?})"),
        }
    }
}

impl CompiledKernel {
    /// The traced IR.
    pub fn kernel(&self) -> &crate::ir::Kernel {
        match &self.exec {
            Exec::Cpu(p) => &p.kernel,
            Exec::Cuda(k) => &k.kernel,
            Exec::Vulkan(k) => &k.kernel,
        }
    }

    /// The emulator's program (CPU devices).
    pub fn cpu_program(&self) -> Option<&cpu::Program> {
        match &self.exec {
            Exec::Cpu(p) => Some(p),
            _ => None,
        }
    }

    /// The PTX that was loaded (CUDA devices).
    pub fn ptx(&self) -> Option<&PtxCode> {
        match &self.exec {
            Exec::Cuda(k) => Some(&k.code),
            _ => None,
        }
    }

    /// The SPIR-V that was loaded (Vulkan devices).
    pub fn spirv(&self) -> Option<&SpirvCode> {
        match &self.exec {
            Exec::Vulkan(k) => Some(&k.code),
            _ => None,
        }
    }
}

impl Device {
    fn new(name: String, target: Target, backend: Backend) -> Device {
        Device {
            inner: Arc::new(DeviceInner {
                name,
                target,
                backend,
                cache: Mutex::new(HashMap::new()),
                last_compile: Mutex::new(None),
                ptx_overrides: Mutex::new(HashMap::new()),
                spirv_overrides: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The CPU emulator with 32-lane subgroups.
    pub fn cpu() -> Device {
        Device::cpu_with(32, cpu::Options::default()).expect("32 is a valid subgroup size")
    }

    /// The CPU emulator with `subgroup_size` lanes (4, 8, 16, 32 or 64) and the given options.
    pub fn cpu_with(subgroup_size: u32, options: cpu::Options) -> Result<Device> {
        if !CPU_SUBGROUP_SIZES.contains(&subgroup_size) {
            return Err(Error::Unavailable {
                backend: format!("cpu:sg{subgroup_size}"),
                reason: "the emulator's subgroup size is one of 4, 8, 16, 32, 64".into(),
            });
        }
        let name = if subgroup_size == 32 { "cpu".into() } else { format!("cpu:sg{subgroup_size}") };
        Ok(Device::new(name, Target::cpu(subgroup_size), Backend::Cpu(options)))
    }

    /// CUDA device `ordinal` (`cuda:N`), with the disk cache set from the environment.
    ///
    /// Without a driver (no `libcuda`), with no such device, or when the driver fails to start,
    /// this is [`Error::Unavailable`] with the reason.
    pub fn cuda(ordinal: u32) -> Result<Device> {
        Device::cuda_with(ordinal, CudaOptions::from_env())
    }

    /// CUDA device `ordinal` with explicit options (e.g. a private cache folder).
    pub fn cuda_with(ordinal: u32, options: CudaOptions) -> Result<Device> {
        let name = format!("cuda:{ordinal}");
        let dev = cuda::CudaDevice::open(ordinal, &options)
            .map_err(|reason| Error::Unavailable { backend: name.clone(), reason })?;
        Ok(Device::new(name, dev.target(), Backend::Cuda(dev)))
    }

    /// Vulkan device `ordinal` (`vulkan:N`, in the order of [`available_devices`] and `qd info`).
    ///
    /// Without a Vulkan loader (`libvulkan.so.1`), without a driver, with no such device, or with a
    /// device that lacks what qd needs (Vulkan 1.1, compute subgroups with basic, vote, ballot,
    /// shuffle and relative shuffle operations, `shaderInt64`), this is [`Error::Unavailable`] with
    /// the reason and, where something is missing, how to install it. Every `Device` naming the same
    /// ordinal shares one logical device, so arrays move freely between them.
    pub fn vulkan(ordinal: u32) -> Result<Device> {
        let name = format!("vulkan:{ordinal}");
        let dev = vulkan::VulkanDevice::open(ordinal)
            .map_err(|reason| Error::Unavailable { backend: name.clone(), reason })?;
        Ok(Device::new(name, dev.target(), Backend::Vulkan(dev)))
    }

    /// A device by its command-line name (D10): `cpu`, `cpu:sgN`, `cuda[:N]`, `vulkan[:N]`, `amdgpu`.
    ///
    /// `cuda` is `cuda:0` and `vulkan` is `vulkan:0`; the device's [`name`](Device::name) is always
    /// `cuda:N` or `vulkan:N`.
    pub fn from_name(name: &str) -> Result<Device> {
        let unavailable = |reason: &str| Error::Unavailable { backend: name.to_string(), reason: reason.to_string() };
        match name {
            "cpu" => Ok(Device::cpu()),
            n if n.starts_with("cpu:sg") => {
                let sg: u32 = n["cpu:sg".len()..]
                    .parse()
                    .map_err(|_| unavailable("expected cpu:sgN with N in 4, 8, 16, 32, 64"))?;
                Device::cpu_with(sg, cpu::Options::default())
            }
            "cuda" => Device::cuda(0).map_err(|e| rename_unavailable(e, name)),
            n if n.starts_with("cuda:") => {
                let ordinal: u32 = n["cuda:".len()..]
                    .parse()
                    .map_err(|_| unavailable("expected cuda or cuda:N with N a device index (see `qd info`)"))?;
                Device::cuda(ordinal).map_err(|e| rename_unavailable(e, name))
            }
            "vulkan" => Device::vulkan(0).map_err(|e| rename_unavailable(e, name)),
            n if n.starts_with("vulkan:") => {
                let ordinal: u32 = n["vulkan:".len()..]
                    .parse()
                    .map_err(|_| unavailable("expected vulkan or vulkan:N with N a device index (see `qd info`)"))?;
                Device::vulkan(ordinal).map_err(|e| rename_unavailable(e, name))
            }
            "amdgpu" | "metal" => Err(unavailable("this build has no runtime for it")),
            _ => Err(unavailable("unknown backend; expected cpu, cpu:sgN, cuda[:N], vulkan[:N], amdgpu")),
        }
    }

    /// The device's name (`cpu`, `cpu:sg8`, `cuda:0`, `vulkan:0`, ...).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The target kernels are traced for.
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Subgroup width (usable on the host to size blocks).
    pub fn subgroup_size(&self) -> u32 {
        self.inner.target.subgroup_size
    }

    /// What this device is: model, compute capability or Vulkan version, driver, SM count, subgroup
    /// size, shared memory.
    pub fn info(&self) -> DeviceInfo {
        let t = &self.inner.target;
        match &self.inner.backend {
            Backend::Cpu(_) => DeviceInfo {
                name: self.inner.name.clone(),
                backend: BackendKind::Cpu,
                model: "CPU SIMT emulator".into(),
                api_version: None,
                driver: None,
                notes: Vec::new(),
                loop_iteration_limit: None,
                compute_capability: None,
                driver_version: None,
                multiprocessors: None,
                memory_bytes: None,
                subgroup_size: t.subgroup_size,
                max_shared_bytes: t.caps.max_shared_bytes,
                cache_dir: None,
            },
            Backend::Cuda(d) => DeviceInfo {
                name: self.inner.name.clone(),
                backend: BackendKind::Cuda,
                model: d.props.model.clone(),
                api_version: None,
                driver: None,
                notes: Vec::new(),
                loop_iteration_limit: None,
                compute_capability: Some(d.props.cc),
                driver_version: Some((d.props.driver_version / 1000, d.props.driver_version % 1000 / 10)),
                multiprocessors: Some(d.props.sm_count),
                memory_bytes: Some(d.props.total_mem),
                subgroup_size: t.subgroup_size,
                max_shared_bytes: t.caps.max_shared_bytes,
                cache_dir: d.cache_dir().map(|p| p.to_path_buf()),
            },
            Backend::Vulkan(d) => {
                let p = d.props();
                let mut notes = vec![d.subgroup().note];
                notes.push(format!("{} device", p.device_type));
                let features = d.feature_names();
                if !features.is_empty() {
                    notes.push(features.join(", "));
                }
                notes.extend(d.loop_note());
                DeviceInfo {
                    name: self.inner.name.clone(),
                    backend: BackendKind::Vulkan,
                    model: p.model.clone(),
                    api_version: Some(p.api()),
                    driver: Some(p.driver.clone()),
                    notes,
                    loop_iteration_limit: d.loop_iteration_limit(),
                    compute_capability: None,
                    driver_version: None,
                    multiprocessors: None,
                    memory_bytes: (p.memory_bytes > 0).then_some(p.memory_bytes),
                    subgroup_size: t.subgroup_size,
                    max_shared_bytes: t.caps.max_shared_bytes,
                    cache_dir: None,
                }
            }
        }
    }

    /// One line for `qd info`: [`info`](Device::info) as text.
    pub fn describe(&self) -> String {
        self.info().to_string()
    }

    /// Copies `data` to a new device array.
    pub fn array_from<T: Scalar>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        let storage = match &self.inner.backend {
            Backend::Cpu(_) => {
                let bits: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
                Storage::Cpu(Arc::new(Buffer::from_bits(T::DTYPE, &bits)))
            }
            Backend::Cuda(d) => {
                let bytes = encode(data);
                let buf = d.alloc(T::DTYPE, data.len(), Some(&bytes)).map_err(|e| e.into_error("<alloc>"))?;
                Storage::Cuda(Arc::new(buf))
            }
            Backend::Vulkan(d) => {
                let bytes = encode(data);
                let buf = d.alloc(T::DTYPE, data.len(), Some(&bytes)).map_err(|e| e.into_error("<alloc>"))?;
                Storage::Vulkan(Arc::new(buf))
            }
        };
        Ok(DeviceArray { handle: ArrayHandle { storage }, _t: PhantomData })
    }

    /// A new zero-filled device array.
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceArray<T>> {
        let storage = match &self.inner.backend {
            Backend::Cpu(_) => Storage::Cpu(Arc::new(Buffer::zeroed(T::DTYPE, len))),
            Backend::Cuda(d) => {
                let buf = d.alloc(T::DTYPE, len, None).map_err(|e| e.into_error("<alloc>"))?;
                Storage::Cuda(Arc::new(buf))
            }
            Backend::Vulkan(d) => {
                let buf = d.alloc(T::DTYPE, len, None).map_err(|e| e.into_error("<alloc>"))?;
                Storage::Vulkan(Arc::new(buf))
            }
        };
        Ok(DeviceArray { handle: ArrayHandle { storage }, _t: PhantomData })
    }

    /// Traces (once per kernel definition and device), lowers and loads `kernel`.
    ///
    /// The in-memory cache is keyed by the closure's identity, the name and the block size; a miss
    /// records its [`CompileStats`] (see [`compile_stats`](Device::compile_stats)).
    pub fn compile(&self, kernel: &Kernel) -> Result<Arc<CompiledKernel>> {
        let start = Instant::now();
        let key =
            CacheKey { body: kernel_identity(kernel), name: kernel.name().to_string(), block_dim: kernel.block_dim() };
        if let Some(p) = lock(&self.inner.cache).get(&key) {
            return Ok(p.clone());
        }
        let mut stats = CompileStats { kernel: kernel.name().to_string(), ..CompileStats::default() };
        let t = Instant::now();
        let ir = kernel.trace(&self.inner.target)?;
        stats.trace = t.elapsed();
        let exec = match &self.inner.backend {
            Backend::Cpu(_) => {
                let t = Instant::now();
                let prog = cpu::compile(&ir)?;
                stats.lower = t.elapsed();
                Exec::Cpu(prog)
            }
            Backend::Cuda(d) => {
                let t = Instant::now();
                let overridden = lock(&self.inner.ptx_overrides).get(&ir.name).cloned();
                let code = match overridden {
                    Some(code) => code,
                    None => cuda::lower(&ir, d.props.sm())?,
                };
                stats.lower = t.elapsed();
                Exec::Cuda(d.load(ir, code, &mut stats)?)
            }
            Backend::Vulkan(d) => {
                let t = Instant::now();
                let overridden = lock(&self.inner.spirv_overrides).get(&ir.name).cloned();
                let code = match overridden {
                    Some(code) => code,
                    None => vulkan::lower(&ir, d)?,
                };
                stats.lower = t.elapsed();
                Exec::Vulkan(d.load(ir, code, &mut stats)?)
            }
        };
        let compiled = Arc::new(CompiledKernel { exec });
        lock(&self.inner.cache).insert(key, compiled.clone());
        stats.total = start.elapsed();
        *lock(&self.inner.last_compile) = Some(stats);
        Ok(compiled)
    }

    /// Where the time of this device's last compile went (the last in-memory cache miss).
    pub fn compile_stats(&self) -> Option<CompileStats> {
        lock(&self.inner.last_compile).clone()
    }

    /// Forgets every compiled kernel of this device (the disk cache stays), so the next launch
    /// compiles again: for measuring compile latency.
    pub fn clear_cache(&self) {
        lock(&self.inner.cache).clear();
    }

    /// Runs `code` instead of the NVPTX lowering's output for kernels named `kernel_name` on this
    /// CUDA device: for debugging the lowering and for testing the runtime with hand-written PTX.
    /// Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    pub fn override_ptx(&self, kernel_name: &str, code: PtxCode) -> Result<()> {
        if !matches!(self.inner.backend, Backend::Cuda(_)) {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("PTX overrides apply to CUDA devices; this is {}", self.inner.name),
            });
        }
        lock(&self.inner.ptx_overrides).insert(kernel_name.to_string(), code);
        lock(&self.inner.cache).retain(|k, _| k.name != kernel_name);
        Ok(())
    }

    /// Runs `code` instead of the SPIR-V lowering's output for kernels named `kernel_name` on this
    /// Vulkan device: for debugging the lowering and for testing the runtime with hand-written
    /// SPIR-V. Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    pub fn override_spirv(&self, kernel_name: &str, code: SpirvCode) -> Result<()> {
        if !matches!(self.inner.backend, Backend::Vulkan(_)) {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("SPIR-V overrides apply to Vulkan devices; this is {}", self.inner.name),
            });
        }
        lock(&self.inner.spirv_overrides).insert(kernel_name.to_string(), code);
        lock(&self.inner.cache).retain(|k, _| k.name != kernel_name);
        Ok(())
    }

    /// Traces `kernel` for this device and returns the IR (for dumps and tests).
    pub fn trace(&self, kernel: &Kernel) -> Result<crate::ir::Kernel> {
        Ok(kernel.trace(&self.inner.target)?)
    }

    /// Launches a range kernel: the grid comes from its `parallel_for` bounds (D1).
    pub fn launch(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        if k.launch != crate::ir::LaunchKind::Range {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "an explicit kernel is launched with launch_grid(kernel, blocks, args)".into(),
            });
        }
        self.check_args(k, args)?;
        let grid = launch::range_grid(k, args)?;
        self.run(&compiled, grid, args, Timing::Off).map(drop)
    }

    /// Launches an explicit kernel on `grid` blocks of its `block_dim` threads.
    pub fn launch_grid(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "a range kernel is launched with launch(kernel, args); its grid comes from its range".into(),
            });
        }
        self.check_args(k, args)?;
        self.run(&compiled, grid, args, Timing::Off).map(drop)
    }

    /// Launches `kernel` once, waits for it, and returns how long it ran: a range kernel with
    /// `grid == None` (its grid comes from its range, as in [`launch`](Device::launch)), an explicit
    /// kernel with `Some(blocks)` (as in [`launch_grid`](Device::launch_grid)); the other pairings
    /// are an [`Error::Launch`].
    ///
    /// What the time covers depends on the backend:
    ///
    /// * CUDA: the kernel alone, from two events recorded on the launch's stream just before and
    ///   just after `cuLaunchKernel` (`cuEventElapsedTime`, about half a microsecond of
    ///   resolution). Argument marshalling, the host's launch call overhead before the first event
    ///   and the wait after the second are outside it.
    /// * Vulkan: the host clock around the whole launch: parameter-block upload, descriptor set
    ///   and command buffer recording, submission, and the wait on the fence. Tens of microseconds
    ///   of host work are included; compare large launches only.
    /// * CPU emulator: the host clock around the emulated launch (the emulator's speed, not a GPU's).
    ///
    /// Compiling is never timed: the first call compiles (or finds the kernel in the caches) before
    /// the clock starts. Errors are those of [`launch`](Device::launch) and
    /// [`launch_grid`](Device::launch_grid), plus [`Error::Driver`] for a failed event call.
    pub fn launch_timed(&self, kernel: &Kernel, grid: Option<Grid>, args: &[Arg]) -> Result<Duration> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        use crate::ir::LaunchKind;
        let mismatch = |message: &str| Error::Launch { kernel: k.name.clone(), message: message.into() };
        let grid = match (k.launch, grid) {
            (LaunchKind::Range, None) => {
                self.check_args(k, args)?;
                launch::range_grid(k, args)?
            }
            (LaunchKind::Explicit, Some(g)) => {
                self.check_args(k, args)?;
                g
            }
            (LaunchKind::Range, Some(_)) => {
                return Err(mismatch("a range kernel is timed with launch_timed(kernel, None, args)"));
            }
            (LaunchKind::Explicit, None) => {
                return Err(mismatch("an explicit kernel is timed with launch_timed(kernel, Some(blocks), args)"));
            }
        };
        self.run(&compiled, grid, args, Timing::On)
    }

    /// How many blocks of `kernel` run at once on one multiprocessor, as the driver computes it from
    /// the compiled kernel's registers, shared memory and block size (CUDA); `None` on backends that
    /// do not say (the CPU emulator, Vulkan). Compiles the kernel first, like a launch. For sizing
    /// grids that should fill the device in one wave.
    pub fn max_active_blocks_per_multiprocessor(&self, kernel: &Kernel) -> Result<Option<u32>> {
        let compiled = self.compile(kernel)?;
        match (&compiled.exec, &self.inner.backend) {
            (Exec::Cuda(k), Backend::Cuda(d)) => d.max_active_blocks(k).map(Some),
            _ => Ok(None),
        }
    }

    /// Checks `args` against the parameters, and that every array lives on this device.
    fn check_args(&self, k: &crate::ir::Kernel, args: &[Arg]) -> Result<()> {
        check_args(k, args)?;
        for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
            if let Arg::Array(h) = a {
                let here = match (&h.storage, &self.inner.backend) {
                    (Storage::Cpu(_), Backend::Cpu(_)) => true,
                    (Storage::Cuda(b), Backend::Cuda(d)) => b.ordinal == d.props.ordinal,
                    (Storage::Vulkan(b), Backend::Vulkan(d)) => d.owns(b),
                    _ => false,
                };
                if !here {
                    return Err(Error::Argument {
                        kernel: k.name.clone(),
                        index: i,
                        param: p.name().to_string(),
                        message: format!(
                            "the array lives on {}, the kernel runs on {}; arrays do not move between devices",
                            h.device(),
                            self.inner.name
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Runs a compiled kernel with checked arguments and waits for it; with `timing` on, returns
    /// its time as [`launch_timed`](Device::launch_timed) describes (zero otherwise).
    fn run(&self, compiled: &CompiledKernel, grid: u32, args: &[Arg], timing: Timing) -> Result<Duration> {
        let start = Instant::now();
        let host_time = |r: Result<()>| r.map(|()| if timing == Timing::On { start.elapsed() } else { Duration::ZERO });
        match (&compiled.exec, &self.inner.backend) {
            (Exec::Cpu(prog), Backend::Cpu(options)) => {
                let cpu_args: Vec<CpuArg> = args
                    .iter()
                    .map(|a| match a {
                        Arg::Array(ArrayHandle { storage: Storage::Cpu(b) }) => CpuArg::Array(b.clone()),
                        Arg::Array(_) => unreachable!("checked: arrays live on this device"),
                        Arg::Scalar(_, bits) => CpuArg::Scalar(*bits),
                    })
                    .collect();
                let geo =
                    cpu::LaunchGeometry { grid, block_dim: prog.kernel.block_dim, subgroup_size: self.subgroup_size() };
                host_time(cpu::launch(prog, geo, &cpu_args, options).map_err(Error::from))
            }
            (Exec::Cuda(k), Backend::Cuda(d)) => {
                let bound: Vec<cuda::Bound> = args
                    .iter()
                    .map(|a| match a {
                        Arg::Array(ArrayHandle { storage: Storage::Cuda(b) }) => {
                            cuda::Bound::Array { ptr: b.ptr, len: b.len }
                        }
                        Arg::Array(_) => unreachable!("checked: arrays live on this device"),
                        Arg::Scalar(_, bits) => cuda::Bound::Scalar(*bits),
                    })
                    .collect();
                match timing {
                    Timing::On => d.launch_timed(k, grid, &bound),
                    Timing::Off => d.launch(k, grid, &bound).map(|()| Duration::ZERO),
                }
            }
            (Exec::Vulkan(k), Backend::Vulkan(d)) => {
                let bound: Vec<vulkan::Bound> = args
                    .iter()
                    .map(|a| match a {
                        Arg::Array(ArrayHandle { storage: Storage::Vulkan(b) }) => vulkan::Bound::Array(b),
                        Arg::Array(_) => unreachable!("checked: arrays live on this device"),
                        Arg::Scalar(_, bits) => vulkan::Bound::Scalar(*bits),
                    })
                    .collect();
                host_time(d.launch(k, grid, &bound))
            }
            _ => unreachable!("a device only holds kernels it compiled"),
        }
    }
}

/// Whether a launch is timed (see [`Device::launch_timed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timing {
    Off,
    On,
}

/// `Unavailable` errors of `Device::cuda` and `Device::vulkan` name `cuda:N` / `vulkan:N`; keep the
/// name the user gave.
fn rename_unavailable(e: Error, name: &str) -> Error {
    match e {
        Error::Unavailable { reason, .. } => Error::Unavailable { backend: name.to_string(), reason },
        other => other,
    }
}

fn kernel_identity(k: &Kernel) -> usize {
    k.body_ptr()
}

/// Arguments against parameters: count, array or scalar, dtype. The same on every backend.
fn check_args(k: &crate::ir::Kernel, args: &[Arg]) -> Result<()> {
    if args.len() != k.params.len() {
        return Err(Error::Launch {
            kernel: k.name.clone(),
            message: format!("expects {} arguments ({}), got {}", k.params.len(), param_list(k), args.len()),
        });
    }
    for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
        let err = |message: String| Error::Argument {
            kernel: k.name.clone(),
            index: i,
            param: p.name().to_string(),
            message,
        };
        match (p, a) {
            (crate::ir::Param::Array { dtype, .. }, Arg::Array(h)) => {
                if h.dtype() != *dtype {
                    return Err(err(format!("expects an array of {dtype}, got an array of {}", h.dtype())));
                }
            }
            (crate::ir::Param::Scalar { dtype, .. }, Arg::Scalar(d, _)) => {
                if d != dtype {
                    return Err(err(format!("expects a {dtype} scalar, got {d}")));
                }
            }
            (crate::ir::Param::Array { dtype, .. }, Arg::Scalar(d, _)) => {
                return Err(err(format!("expects an array of {dtype}, got a {d} scalar")));
            }
            (crate::ir::Param::Scalar { dtype, .. }, Arg::Array(h)) => {
                return Err(err(format!("expects a {dtype} scalar, got an array of {}", h.dtype())));
            }
        }
    }
    Ok(())
}

fn param_list(k: &crate::ir::Kernel) -> String {
    k.params.iter().map(|p| format!("{}: {}", p.name(), p.dtype())).collect::<Vec<_>>().join(", ")
}

/// Host values to device bytes: each element's low `size_bytes` bytes, little-endian (bool is one
/// byte, 0 or 1).
fn encode<T: Scalar>(data: &[T]) -> Vec<u8> {
    let w = T::DTYPE.size_bytes();
    let mut out = Vec::with_capacity(data.len() * w);
    for x in data {
        out.extend_from_slice(&x.to_bits().to_le_bytes()[..w]);
    }
    out
}

/// Device bytes back to host values (the inverse of [`encode`]).
fn decode<T: Scalar>(bytes: &[u8]) -> Vec<T> {
    let w = T::DTYPE.size_bytes();
    bytes
        .chunks_exact(w)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(c);
            T::from_bits(u64::from_le_bytes(b))
        })
        .collect()
}

/// A kernel argument: a device array or a scalar.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A device array.
    Array(ArrayHandle),
    /// A scalar: its type and bits.
    Scalar(DType, u64),
}

impl Arg {
    /// A scalar argument.
    pub fn scalar<T: Scalar>(x: T) -> Arg {
        Arg::Scalar(T::DTYPE, x.to_bits())
    }
}

/// An untyped reference to a device array (what [`DeviceArray::arg`] passes to a kernel).
#[derive(Clone, Debug)]
pub struct ArrayHandle {
    storage: Storage,
}

#[derive(Clone, Debug)]
enum Storage {
    Cpu(Arc<Buffer>),
    Cuda(Arc<cuda::CudaBuffer>),
    Vulkan(Arc<vulkan::VulkanBuffer>),
}

impl ArrayHandle {
    /// Element type.
    pub fn dtype(&self) -> DType {
        match &self.storage {
            Storage::Cpu(b) => b.dtype,
            Storage::Cuda(b) => b.dtype,
            Storage::Vulkan(b) => b.dtype,
        }
    }

    /// Element count.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Cpu(b) => b.len(),
            Storage::Cuda(b) => b.len,
            Storage::Vulkan(b) => b.len,
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the array lives: `cpu` (any emulator device), `cuda:N` or `vulkan:N`.
    pub fn device(&self) -> String {
        match &self.storage {
            Storage::Cpu(_) => "cpu".into(),
            Storage::Cuda(b) => format!("cuda:{}", b.ordinal),
            Storage::Vulkan(b) => format!("vulkan:{}", b.ordinal()),
        }
    }

    /// The emulator buffer, for arrays of the CPU backend.
    pub fn cpu_buffer(&self) -> Option<&Arc<Buffer>> {
        match &self.storage {
            Storage::Cpu(b) => Some(b),
            _ => None,
        }
    }
}

/// A typed array in device memory.
#[derive(Clone, Debug)]
pub struct DeviceArray<T> {
    handle: ArrayHandle,
    _t: PhantomData<T>,
}

impl<T: Scalar> DeviceArray<T> {
    /// Copies the contents back to the host.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        match &self.handle.storage {
            Storage::Cpu(b) => Ok(b.to_bits().into_iter().map(T::from_bits).collect()),
            Storage::Cuda(b) => Ok(decode(&b.read().map_err(|e| e.into_error("<host copy>"))?)),
            Storage::Vulkan(b) => Ok(decode(&b.read().map_err(|e| e.into_error("<host copy>"))?)),
        }
    }

    /// Overwrites the contents; `data` must have the array's length.
    pub fn write(&self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::Launch {
                kernel: "<host copy>".into(),
                message: format!("writes {} elements into an array of {}", data.len(), self.len()),
            });
        }
        match &self.handle.storage {
            Storage::Cpu(b) => b.write_bits(&data.iter().map(|x| x.to_bits()).collect::<Vec<_>>()),
            Storage::Cuda(b) => b.write(&encode(data)).map_err(|e| e.into_error("<host copy>"))?,
            Storage::Vulkan(b) => b.write(&encode(data)).map_err(|e| e.into_error("<host copy>"))?,
        }
        Ok(())
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.handle.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.handle.is_empty()
    }

    /// This array as a kernel argument.
    pub fn arg(&self) -> Arg {
        Arg::Array(self.handle.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{BF16, F16};

    #[test]
    fn encode_decode_round_trip_at_memory_width() {
        let b = [true, false, true];
        assert_eq!(encode(&b), vec![1, 0, 1]);
        assert_eq!(decode::<bool>(&encode(&b)), b);
        let i = [-2i16, 7];
        assert_eq!(encode(&i), vec![0xfe, 0xff, 7, 0]);
        assert_eq!(decode::<i16>(&encode(&i)), i);
        let f = [1.5f64, -0.0];
        assert_eq!(decode::<f64>(&encode(&f)), f);
        let h = [F16::from_f32(0.5), F16::from_f32(-3.0)];
        assert_eq!(encode(&h).len(), 4);
        assert_eq!(decode::<F16>(&encode(&h)), h);
        let bf = [BF16::from_f32(2.0)];
        assert_eq!(decode::<BF16>(&encode(&bf)), bf);
        let u = [u64::MAX, 1];
        assert_eq!(decode::<u64>(&encode(&u)), u);
    }

    #[test]
    fn launch_timed_runs_the_kernel_and_checks_the_grid_kind() {
        let d = Device::cpu();
        let range = Kernel::range("timed_inc", 32, |k| {
            let a = k.array::<i32>("a");
            k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + 1));
        });
        let explicit = Kernel::explicit("timed_twice", 32, |k| {
            let a = k.array::<i32>("a");
            let i = crate::simt::block::global_thread_idx();
            a.set(i, a.get(i) * 2);
        });
        let a = d.array_from(&[1i32; 64]).unwrap();
        let t = d.launch_timed(&range, None, &[a.arg()]).unwrap();
        assert!(t > Duration::ZERO);
        d.launch_timed(&explicit, Some(2), &[a.arg()]).unwrap();
        assert_eq!(a.to_vec().unwrap(), vec![4; 64]);
        let e = d.launch_timed(&range, Some(2), &[a.arg()]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        let e = d.launch_timed(&explicit, None, &[a.arg()]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        let e = d.launch_timed(&explicit, Some(1), &[]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        assert_eq!(a.to_vec().unwrap(), vec![4; 64]);
        assert_eq!(d.max_active_blocks_per_multiprocessor(&explicit).unwrap(), None);
    }

    #[test]
    fn cpu_info_and_device_list() {
        let d = Device::cpu_with(8, cpu::Options::default()).unwrap();
        let info = d.info();
        assert_eq!(info.name, "cpu:sg8");
        assert_eq!(info.subgroup_size, 8);
        assert!(d.describe().starts_with("cpu:sg8: CPU SIMT emulator"), "{}", d.describe());
        let names = available_devices();
        assert_eq!(&names[..5], ["cpu", "cpu:sg4", "cpu:sg8", "cpu:sg16", "cpu:sg64"]);
        for n in &names {
            assert_eq!(Device::from_name(n).unwrap().name(), n);
        }
    }
}
