//! [`Device`], what user code holds, and the [`Runtime`] trait it dispatches to: one
//! implementation per runtime (the CPU emulator in `cpu.rs`, CUDA in `cuda/`, Vulkan in
//! `vulkan/`, Metal in `metal/`, AMDGPU in `amdgpu/`), so a new runtime is one module implementing
//! three traits: [`Runtime`] for the device, [`RuntimeArray`] for its memory, [`RuntimeKernel`] for
//! its loaded kernels.
//!
//! What is the same on every runtime lives here: the in-memory kernel cache, tracing, the argument
//! checks and the D1 grid of range kernels, so a mistake reads the same everywhere.

use super::array::{DeviceArray, RuntimeArray};
use super::cache::{lock, CodeOverrides, KernelCache};
use super::errors::{Error, Result};
use super::info::{CompileStats, DeviceInfo, RuntimeCounters};
use super::{cpu, launch, Arg, Grid, PtxCode, SpirvCode};
use crate::backend::Target;
use crate::ir::{self, DType};
use crate::trace::{Kernel, Scalar};
use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One device of one runtime: everything [`Device`] asks of a backend.
///
/// Arguments reaching [`launch`](Runtime::launch) are checked: their count and dtypes match the
/// kernel's parameters and every array is one this runtime [`owns`](Runtime::owns); kernels are
/// ones this runtime compiled.
pub(crate) trait Runtime: Send + Sync {
    /// The target kernels are traced for (asked once, when the [`Device`] is made).
    fn target(&self) -> Target;

    /// What this device is; `name` and `target` are the [`Device`]'s.
    fn info(&self, name: &str, target: &Target) -> DeviceInfo;

    /// A new array of `len` elements of `dtype`: zeroed, or holding `init` (`len` element bits).
    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>>;

    /// Bytes an array of `len` elements of `dtype` takes in this runtime's memory, `None` when the
    /// number overflows: `len * dtype.size_bytes()` by default (the emulator keeps 8 per element).
    fn array_bytes(&self, dtype: DType, len: usize) -> Option<u64> {
        (len as u64).checked_mul(dtype.size_bytes() as u64)
    }

    /// The memory one new array may take at most, and what that figure is (for the error), when
    /// the runtime knows it: the device's memory on a GPU, the memory budget on the emulator.
    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        None
    }

    /// Whether `array` lives on this device, so a kernel here can use it.
    fn owns(&self, array: &dyn RuntimeArray) -> bool;

    /// Lowers and loads a traced kernel, filling the `lower`, `load`, `jit` and `disk` parts of
    /// `stats` (the [`Device`] times tracing and the whole).
    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>>;

    /// Runs `kernel` on `grid` blocks with checked `args` and waits for it.
    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()>;

    /// As [`launch`](Runtime::launch), returning how long it ran. By default the host clock around
    /// the whole launch; a runtime with device timers (CUDA's events) times the kernel alone.
    fn launch_timed(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<Duration> {
        let start = Instant::now();
        self.launch(kernel, grid, args)?;
        Ok(start.elapsed())
    }

    /// Runs `kernel` on `grid` blocks grouped in thread-block clusters of `cluster` blocks (checked:
    /// `grid` a multiple of `cluster`, at most 8) and waits for it. Only CUDA has clusters.
    fn launch_cluster(&self, kernel: &dyn RuntimeKernel, _grid: u32, _cluster: u32, _args: &[Arg]) -> Result<()> {
        Err(Error::Launch {
            kernel: kernel.kernel().name.clone(),
            message: "thread-block clusters are a CUDA feature (sm_90); this device has none".into(),
        })
    }

    /// How many blocks of `kernel` run at once on one multiprocessor, when the driver says.
    fn max_active_blocks(&self, _kernel: &dyn RuntimeKernel) -> Result<Option<u32>> {
        Ok(None)
    }

    /// Where [`Device::override_ptx`] stores PTX, on a runtime that loads PTX.
    fn ptx_overrides(&self) -> Option<&CodeOverrides<PtxCode>> {
        None
    }

    /// Where [`Device::override_spirv`] stores SPIR-V, on a runtime that loads SPIR-V.
    fn spirv_overrides(&self) -> Option<&CodeOverrides<SpirvCode>> {
        None
    }

    /// What the runtime has done and holds so far, on a runtime that counts (Vulkan).
    fn counters(&self) -> Option<RuntimeCounters> {
        None
    }
}

/// A kernel one runtime loaded; the runtime finds its own type again with [`downcast_kernel`].
pub(crate) trait RuntimeKernel: Any + Send + Sync + std::fmt::Debug {
    /// The traced IR.
    fn kernel(&self) -> &ir::Kernel;

    /// The emulator's program (CPU runtime).
    fn cpu_program(&self) -> Option<&crate::backend::cpu::Program> {
        None
    }

    /// The PTX that was loaded (CUDA runtime).
    fn ptx(&self) -> Option<&PtxCode> {
        None
    }

    /// The SPIR-V that was loaded (Vulkan runtime).
    fn spirv(&self) -> Option<&SpirvCode> {
        None
    }

    /// Registers per thread of the loaded code, when the driver says (CUDA).
    fn registers(&self) -> Option<u32> {
        None
    }
}

/// `kernel` as runtime `T`'s own kernel type. A device only launches kernels it compiled, so
/// another type is a bug in the runtime.
pub(crate) fn downcast_kernel<T: RuntimeKernel>(kernel: &dyn RuntimeKernel) -> &T {
    (kernel as &dyn Any).downcast_ref::<T>().expect("a device only holds kernels it compiled")
}

/// A compute device.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct DeviceInner {
    name: String,
    target: Target,
    runtime: Arc<dyn Runtime>,
    cache: KernelCache,
    last_compile: Mutex<Option<CompileStats>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.inner.name)
    }
}

/// A traced and lowered kernel, ready to launch on the device that compiled it.
pub struct CompiledKernel {
    exec: Arc<dyn RuntimeKernel>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompiledKernel({:?})", self.exec)
    }
}

impl CompiledKernel {
    /// The traced IR.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("ir", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// let ir = compiled.kernel(); // the IR as traced for this device
    /// assert_eq!((ir.block_dim, ir.subgroup_size), (32, 32));
    /// println!("{}", qd::ir::print_kernel(ir));
    /// ```
    pub fn kernel(&self) -> &crate::ir::Kernel {
        self.exec.kernel()
    }

    /// The emulator's program (CPU devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("prog", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// assert!(compiled.cpu_program().is_some()); // the emulator's program
    /// assert!(compiled.ptx().is_none() && compiled.spirv().is_none());
    /// ```
    pub fn cpu_program(&self) -> Option<&crate::backend::cpu::Program> {
        self.exec.cpu_program()
    }

    /// The PTX that was loaded (CUDA devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The PTX a CUDA device loaded; the emulator has none. `qd::backend::ptx` prints it for any kernel.
    /// let k = Kernel::range("p", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let device = Device::from_name("cuda").unwrap_or_else(|_| Device::cpu());
    /// let compiled = device.compile(&k).unwrap();
    /// if let Some(ptx) = compiled.ptx() {
    ///     assert!(ptx.text.contains(".entry"));
    /// }
    /// ```
    pub fn ptx(&self) -> Option<&PtxCode> {
        self.exec.ptx()
    }

    /// The SPIR-V that was loaded (Vulkan devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The SPIR-V a Vulkan device loaded (the emulator has none).
    /// let k = Kernel::range("s", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// assert!(compiled.spirv().is_none());
    /// ```
    pub fn spirv(&self) -> Option<&SpirvCode> {
        self.exec.spirv()
    }

    /// Registers per thread of the code the driver made (CUDA: `CU_FUNC_ATTRIBUTE_NUM_REGS`);
    /// `None` on other devices.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("s", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// // The emulator has no registers to count.
    /// assert_eq!(Device::cpu().compile(&k).unwrap().registers(), None);
    /// ```
    pub fn registers(&self) -> Option<u32> {
        self.exec.registers()
    }
}

impl Device {
    pub(crate) fn new(name: String, runtime: Arc<dyn Runtime>) -> Device {
        let target = runtime.target();
        Device {
            inner: Arc::new(DeviceInner {
                name,
                target,
                runtime,
                cache: KernelCache::default(),
                last_compile: Mutex::new(None),
            }),
        }
    }

    /// The CPU emulator with 32-lane subgroups.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// assert_eq!((d.name(), d.subgroup_size()), ("cpu", 32));
    /// let a = d.array_from(&[1u8, 2, 3]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1, 2, 3]);
    /// ```
    pub fn cpu() -> Device {
        Device::cpu_with(32, crate::backend::cpu::Options::default()).expect("32 is a valid subgroup size")
    }

    /// The CPU emulator with `subgroup_size` lanes (4, 8, 16, 32 or 64) and the given options.
    ///
    /// ```
    /// use qd::backend::cpu::Options;
    /// use qd::prelude::*;
    /// use std::time::Duration;
    /// // 8-lane subgroups, strict mode, a shorter hang timeout.
    /// let options = Options { strict: true, hang_timeout: Duration::from_millis(500), ..Options::default() };
    /// let d = Device::cpu_with(8, options).unwrap();
    /// assert_eq!(d.subgroup_size(), 8);
    /// assert!(Device::cpu_with(12, Options::default()).is_err()); // 4, 8, 16, 32 or 64 lanes
    /// ```
    pub fn cpu_with(subgroup_size: u32, options: crate::backend::cpu::Options) -> Result<Device> {
        if !cpu::SUBGROUP_SIZES.contains(&subgroup_size) {
            return Err(Error::Unavailable {
                backend: format!("cpu:sg{subgroup_size}"),
                reason: "the emulator's subgroup size is one of 4, 8, 16, 32, 64".into(),
            });
        }
        let base = if subgroup_size == 32 { "cpu".into() } else { format!("cpu:sg{subgroup_size}") };
        let name = base + &memory_suffix(options.memory);
        Ok(Device::new(name, Arc::new(cpu::CpuRuntime::new(Target::cpu(subgroup_size), options))))
    }

    /// The emulator wearing `target`'s features and limits (its subgroup width included): kernels
    /// take the library paths that target takes and are refused what it lacks
    /// (`cpu:sg64@amdgpu:gfx942`, `cpu:sg32@metal`; see [`Target::wearing`]). Pass
    /// `Options { strict: true, .. }` to also poison implementation-defined results.
    ///
    /// ```
    /// use qd::backend::amdgpu::AmdgpuArch;
    /// use qd::backend::cpu::Options;
    /// use qd::prelude::*;
    /// use qd::target::Target;
    /// // The emulator with an AMD GPU's features and 64-lane wavefronts.
    /// let d = Device::cpu_wearing(&Target::amdgpu(AmdgpuArch::Gfx942), Options::default()).unwrap();
    /// assert_eq!(d.name(), "cpu:sg64@amdgpu:gfx942");
    /// assert_eq!(d.subgroup_size(), 64);
    /// assert!(!d.target().limits().block_forward_progress); // as on the AMD GPU
    /// ```
    pub fn cpu_wearing(target: &Target, options: crate::backend::cpu::Options) -> Result<Device> {
        let sg = target.subgroup_size();
        if !cpu::SUBGROUP_SIZES.contains(&sg) {
            return Err(Error::Unavailable {
                backend: target.name(),
                reason: format!("the emulator cannot run {sg}-lane subgroups (4, 8, 16, 32 or 64)"),
            });
        }
        let worn = Target::cpu(sg).wearing(target);
        let name = worn.name() + &memory_suffix(options.memory);
        Ok(Device::new(name, Arc::new(cpu::CpuRuntime::new(worn, options))))
    }

    /// A device by its command-line name (D10): `cpu`, `cpu:sgN`, `cuda[:N]`, `vulkan[:N]`,
    /// `metal[:0]`, `amdgpu[:N]`, or the
    /// emulator wearing another target's features, `cpu[:sgN]@<target>` with `<target>` one of
    /// `amdgpu[:gfxN]`, `metal`, `cuda:sm_N` (see [`Device::cpu_wearing`]), in strict mode: an
    /// implementation-defined result reaching memory is an error, so a library path that leans on
    /// one GPU's behaviour shows up before that GPU is in reach.
    ///
    /// `cuda` is `cuda:0` and `vulkan` is `vulkan:0`; the device's [`name`](Device::name) is always
    /// `cuda:N` or `vulkan:N` (`amdgpu` is `amdgpu:0`).
    ///
    /// An emulator name may end in `+weak` or `+weak=SEED` (`cpu:sg32+weak`, `cpu@metal+weak=7`):
    /// the weak-memory mode of D26 ([`Memory::Weak`](crate::backend::cpu::Memory::Weak), seed 0
    /// unless given), where a kernel that leaves out a fence can fail.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Device::from_name("cpu").unwrap().subgroup_size(), 32);
    /// assert_eq!(Device::from_name("cpu:sg16").unwrap().name(), "cpu:sg16");
    /// assert_eq!(Device::from_name("cpu@metal").unwrap().name(), "cpu:sg32@metal");
    /// assert_eq!(Device::from_name("cpu:sg8+weak=3").unwrap().name(), "cpu:sg8+weak=3");
    /// // A GPU that is not there is an error, never a panic.
    /// match Device::from_name("cuda:7") {
    ///     Ok(d) => println!("{}", d.describe()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// assert!(matches!(Device::from_name("tpu"), Err(QdError::Unavailable { .. })));
    /// ```
    pub fn from_name(name: &str) -> Result<Device> {
        let unavailable = |reason: &str| Error::Unavailable { backend: name.to_string(), reason: reason.to_string() };
        let (name, memory) = split_memory(name).map_err(|reason| unavailable(&reason))?;
        let options = crate::backend::cpu::Options { memory, ..Default::default() };
        if memory != crate::backend::cpu::Memory::Sequential && !name.starts_with("cpu") {
            return Err(unavailable("only the emulator (cpu, cpu:sgN, cpu…@target) has a weak-memory mode"));
        }
        if let Some((emulator, worn)) = name.split_once('@') {
            let target = Target::from_features_name(worn).map_err(|e| unavailable(&e))?;
            let sg = target.subgroup_size();
            if emulator != "cpu" && emulator != format!("cpu:sg{sg}") {
                return Err(unavailable(&format!(
                    "only the emulator can wear another target, with that target's subgroup width: \
                     cpu@{worn} or cpu:sg{sg}@{worn}"
                )));
            }
            let strict = crate::backend::cpu::Options { strict: true, ..options };
            return Device::cpu_wearing(&target, strict);
        }
        if name == "cpu" {
            return Device::cpu_with(32, options);
        }
        if let Some(lanes) = name.strip_prefix("cpu:sg") {
            let sg: u32 = lanes.parse().map_err(|_| unavailable("expected cpu:sgN with N in 4, 8, 16, 32, 64"))?;
            return Device::cpu_with(sg, options);
        }
        for family in super::RUNTIMES {
            let ordinal = if name == family.name {
                0
            } else if let Some(n) = name.strip_prefix(family.name).and_then(|rest| rest.strip_prefix(':')) {
                n.parse().map_err(|_| unavailable(family.name_hint))?
            } else {
                continue;
            };
            // The device is always named `<family>:N`; an error keeps the name the user gave.
            let runtime = (family.open)(ordinal, &format!("{}:{ordinal}", family.name))
                .map_err(|e| rename_unavailable(e, name))?;
            return Ok(Device::new(format!("{}:{ordinal}", family.name), runtime));
        }
        let mut known = vec!["cpu".to_string(), "cpu:sgN".to_string()];
        known.extend(super::RUNTIMES.iter().map(|f| format!("{}[:N]", f.name)));
        Err(unavailable(&format!("unknown backend; expected {}", known.join(", "))))
    }

    /// The device's name (`cpu`, `cpu:sg8`, `cuda:0`, `vulkan:0`, ...).
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Device::from_name("cpu:sg64").unwrap().name(), "cpu:sg64");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The target kernels are traced for.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::target::Feature;
    /// let d = Device::from_name("cpu@metal").unwrap();
    /// let t = d.target();
    /// assert_eq!(t.name(), "cpu:sg32@metal");
    /// assert!(!t.has(Feature::BarrierReduce)); // Metal builds block::sync_*_nonzero from a counter
    /// ```
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Subgroup width (usable on the host to size blocks).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::from_name("cpu:sg4").unwrap();
    /// assert_eq!(d.subgroup_size(), 4);
    /// ```
    pub fn subgroup_size(&self) -> u32 {
        self.inner.target.subgroup_size()
    }

    /// What this device is: model, compute capability or Vulkan version, driver, SM count, subgroup
    /// size, shared memory.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let info = Device::cpu().info();
    /// assert_eq!(info.subgroup_size, 32);
    /// assert!(!info.device_timer); // the emulator times with the host clock
    /// assert_eq!(info.loop_iteration_limit, None);
    /// println!("{info}");
    /// ```
    pub fn info(&self) -> DeviceInfo {
        self.inner.runtime.info(&self.inner.name, &self.inner.target)
    }

    /// One line for `qd info`: [`info`](Device::info) as text.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let text = Device::from_name("cpu:sg8").unwrap().describe();
    /// assert!(text.starts_with("cpu:sg8"), "{text}");
    /// ```
    pub fn describe(&self) -> String {
        self.info().to_string()
    }

    /// Copies `data` to a new device array (checked first by
    /// [`check_allocation`](Device::check_allocation)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1.5f64, -2.0]).unwrap();
    /// assert_eq!((a.len(), a.to_vec().unwrap()), (2, vec![1.5, -2.0]));
    /// let flags = d.array_from(&[true, false]).unwrap(); // bool: one byte per element
    /// assert_eq!(flags.to_vec().unwrap(), [true, false]);
    /// ```
    pub fn array_from<T: Scalar>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        self.check_allocation(T::DTYPE, data.len())?;
        let bits: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
        Ok(DeviceArray::from_storage(self.inner.runtime.alloc(T::DTYPE, data.len(), Some(&bits))?))
    }

    /// A new zero-filled device array (checked first by [`check_allocation`](Device::check_allocation)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let a = d.zeros::<i16>(1000).unwrap();
    /// assert!(a.to_vec().unwrap().iter().all(|&x| x == 0));
    /// // More than the machine can hold is an error, not an abort.
    /// assert!(matches!(d.zeros::<f64>(1 << 60), Err(QdError::Allocation { .. })));
    /// ```
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceArray<T>> {
        self.check_allocation(T::DTYPE, len)?;
        Ok(DeviceArray::from_storage(self.inner.runtime.alloc(T::DTYPE, len, None)?))
    }

    /// Whether this device can hold an array of `len` elements of `dtype`, checked before any
    /// driver sees the request (every allocation of [`zeros`](Device::zeros) and
    /// [`array_from`](Device::array_from) goes through it): its size in bytes must not overflow,
    /// nor exceed the largest array the device can address (the target's
    /// [`max_buffer_bytes`](crate::target::Limits::max_buffer_bytes)) or the memory it has (on the
    /// emulator, its memory budget, half the available memory: reserving alone does not stop the
    /// OOM killer). Otherwise [`Error::Allocation`], naming the array, its size and the limit.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// assert!(d.check_allocation(qd::ir::DType::F32, 1024).is_ok());
    /// let e = d.check_allocation(qd::ir::DType::F64, usize::MAX).unwrap_err();
    /// assert!(e.to_string().contains("overflows"), "{e}");
    /// ```
    pub fn check_allocation(&self, dtype: DType, len: usize) -> Result<()> {
        let err = |message: String| Err(Error::Allocation { dtype, len, message });
        let runtime = &self.inner.runtime;
        // What a kernel addresses (the target's element size), and what the runtime's memory holds
        // (the emulator keeps 8 bytes per element).
        let addressed = (len as u64).checked_mul(dtype.size_bytes() as u64);
        let (Some(addressed), Some(held)) = (addressed, runtime.array_bytes(dtype, len)) else {
            return err(format!("its size in bytes ({len} × {}) overflows", dtype.size_bytes()));
        };
        let device = &self.inner.name;
        if let Some(max) = self.inner.target.limits().max_buffer_bytes.filter(|max| addressed > *max) {
            return err(format!("its {addressed} bytes are over the {max} bytes one array may take on {device}"));
        }
        if let Some((limit, what)) = runtime.memory_limit().filter(|(limit, _)| held > *limit) {
            return err(format!("it needs {held} bytes, over {what} of {limit} bytes on {device}"));
        }
        Ok(())
    }

    /// Traces (once per kernel definition and device), lowers and loads `kernel`.
    ///
    /// The in-memory cache is keyed by the closure's identity, the name and the block size; a miss
    /// records its [`CompileStats`] (see [`compile_stats`](Device::compile_stats)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Compile ahead of the first launch (launch would do it too); a second call hits the cache.
    /// let k = Kernel::range("inc", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + 1));
    /// });
    /// let d = Device::cpu();
    /// let first = d.compile(&k).unwrap();
    /// let again = d.compile(&k).unwrap();
    /// assert!(std::sync::Arc::ptr_eq(&first, &again));
    /// assert_eq!(first.kernel().name, "inc");
    /// ```
    #[track_caller]
    pub fn compile(&self, kernel: &Kernel) -> Result<Arc<CompiledKernel>> {
        let start = Instant::now();
        // A traced op called outside a kernel body earlier on this thread (crate::trace docs).
        if !crate::trace::is_tracing()
            && let Some(e) = crate::trace::take_misuse()
        {
            return Err(e.into());
        }
        if let Some(p) = self.inner.cache.get(kernel) {
            return Ok(p);
        }
        let mut stats = CompileStats { kernel: kernel.name().to_string(), ..CompileStats::default() };
        let t = Instant::now();
        let ir = kernel.trace(&self.inner.target)?;
        stats.trace = t.elapsed();
        let exec = self.inner.runtime.compile(ir, &mut stats)?;
        let compiled = Arc::new(CompiledKernel { exec });
        self.inner.cache.insert(kernel, compiled.clone());
        stats.total = start.elapsed();
        *lock(&self.inner.last_compile) = Some(stats);
        Ok(compiled)
    }

    /// Where the time of this device's last compile went (the last in-memory cache miss).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("timed", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, 0));
    /// });
    /// let d = Device::cpu();
    /// assert!(d.compile_stats().is_none());
    /// d.compile(&k).unwrap();
    /// let stats = d.compile_stats().unwrap();
    /// assert_eq!(stats.kernel, "timed");
    /// assert!(stats.total >= stats.trace);
    /// ```
    pub fn compile_stats(&self) -> Option<CompileStats> {
        lock(&self.inner.last_compile).clone()
    }

    /// Forgets every compiled kernel of this device (the disk cache stays), so the next launch
    /// compiles again: for measuring compile latency.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("again", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, 1));
    /// });
    /// let d = Device::cpu();
    /// let first = d.compile(&k).unwrap();
    /// d.clear_cache();
    /// let second = d.compile(&k).unwrap(); // traced and lowered again
    /// assert!(!std::sync::Arc::ptr_eq(&first, &second));
    /// ```
    pub fn clear_cache(&self) {
        self.inner.cache.clear();
    }

    /// Runs `code` instead of the NVPTX lowering's output for kernels named `kernel_name` on this
    /// CUDA device: for debugging the lowering and for testing the runtime with hand-written PTX.
    /// Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::PtxCode;
    /// // Only a CUDA device runs PTX: elsewhere the override is refused.
    /// let code = PtxCode { text: String::new(), entry: "k".into(), shared_bytes: 0, params: vec![] };
    /// let err = Device::cpu().override_ptx("k", code).unwrap_err();
    /// assert!(matches!(err, QdError::Launch { .. }), "{err}");
    /// ```
    pub fn override_ptx(&self, kernel_name: &str, code: PtxCode) -> Result<()> {
        let Some(overrides) = self.inner.runtime.ptx_overrides() else {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("PTX overrides apply to CUDA devices; this is {}", self.inner.name),
            });
        };
        overrides.insert(kernel_name, code);
        self.inner.cache.forget_name(kernel_name);
        Ok(())
    }

    /// Runs `code` instead of the SPIR-V lowering's output for kernels named `kernel_name` on this
    /// Vulkan device: for debugging the lowering and for testing the runtime with hand-written
    /// SPIR-V. Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::SpirvCode;
    /// // Only a Vulkan device runs SPIR-V: elsewhere the override is refused.
    /// let code = SpirvCode { words: vec![], entry: "main".into(), workgroup_size: 32, params: vec![], shared_bytes: 0 };
    /// let err = Device::cpu().override_spirv("k", code).unwrap_err();
    /// assert!(matches!(err, QdError::Launch { .. }), "{err}");
    /// ```
    pub fn override_spirv(&self, kernel_name: &str, code: SpirvCode) -> Result<()> {
        let Some(overrides) = self.inner.runtime.spirv_overrides() else {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("SPIR-V overrides apply to Vulkan devices; this is {}", self.inner.name),
            });
        };
        overrides.insert(kernel_name, code);
        self.inner.cache.forget_name(kernel_name);
        Ok(())
    }

    /// Traces `kernel` for this device and returns the IR (for dumps and tests).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The IR this device would run, without running it; trace errors come back as `Error::Trace`.
    /// let k = Kernel::range("tiles", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_all_add_tiled(a.get(i), 5)));
    /// });
    /// assert!(Device::from_name("cpu:sg32").unwrap().trace(&k).is_ok());
    /// let err = Device::from_name("cpu:sg16").unwrap().trace(&k).unwrap_err();
    /// assert!(matches!(err, QdError::Trace(_)), "{err}"); // a 32-lane tile on 16-lane subgroups
    /// ```
    #[track_caller]
    pub fn trace(&self, kernel: &Kernel) -> Result<crate::ir::Kernel> {
        Ok(kernel.trace(&self.inner.target)?)
    }

    /// Launches a range kernel: the grid comes from its `parallel_for` bounds (D1).
    ///
    /// A launch or argument error ([`Error::Launch`], [`Error::Argument`]) ends with the caller's
    /// line, `(the launch at file:line:col)`; so do those of the other launch calls.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("axpy", 64, |k| {
    ///     let a = k.scalar::<f32>("a");
    ///     let x = k.array::<f32>("x");
    ///     let y = k.array::<f32>("y");
    ///     k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let (x, y) = (d.array_from(&[1.0f32, 2.0]).unwrap(), d.array_from(&[0.5f32, 0.5]).unwrap());
    /// d.launch(&k, &[Arg::scalar(3.0f32), x.arg(), y.arg()]).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [3.5, 6.5]);
    /// // A missing argument is an error naming it.
    /// let err = d.launch(&k, &[Arg::scalar(3.0f32), x.arg()]).unwrap_err();
    /// assert!(matches!(err, QdError::Argument { .. } | QdError::Launch { .. }), "{err}");
    /// ```
    #[track_caller]
    pub fn launch(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_unsited(kernel, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_unsited(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
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
        self.inner.runtime.launch(compiled.exec.as_ref(), grid, args)
    }

    /// Launches an explicit kernel on `grid` blocks of its `block_dim` threads.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("blocks", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     if_(block::thread_idx().eq(0), || out.set(block::block_idx(), block::grid_dim()));
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(5).unwrap();
    /// d.launch_grid(&k, 5, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5; 5]);
    /// ```
    #[track_caller]
    pub fn launch_grid(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_grid_unsited(kernel, grid, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_grid_unsited(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "a range kernel is launched with launch(kernel, args); its grid comes from its range".into(),
            });
        }
        self.check_args(k, args)?;
        self.inner.runtime.launch(compiled.exec.as_ref(), grid, args)
    }

    /// Launches an explicit kernel on `grid` blocks grouped in thread-block clusters of `cluster`
    /// consecutive blocks (CUDA, sm_90: `cuLaunchKernelEx` with the cluster-dimension attribute),
    /// which the cluster forms of `qd::nv` (`cluster_sync`, `mbarrier_arrive_cluster`, ...) need.
    /// `grid` must be a multiple of `cluster`, and `cluster` at most 8 (the portable cluster size);
    /// other devices have no clusters. Errors are those of [`launch_grid`](Device::launch_grid),
    /// plus [`Error::Launch`] for a cluster size that does not fit.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Clusters exist on CUDA (sm_90) only: other devices refuse a cluster launch.
    /// let k = Kernel::explicit("clustered", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     out.set(block::global_thread_idx(), 1);
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(128).unwrap();
    /// assert!(d.launch_cluster(&k, 4, 2, &[out.arg()]).is_err());
    /// d.launch_grid(&k, 4, &[out.arg()]).unwrap(); // the same grid without clusters
    /// ```
    #[track_caller]
    pub fn launch_cluster(&self, kernel: &Kernel, grid: Grid, cluster: u32, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_cluster_unsited(kernel, grid, cluster, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_cluster_unsited(&self, kernel: &Kernel, grid: Grid, cluster: u32, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        let fail = |message: String| Error::Launch { kernel: k.name.clone(), message };
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(fail("a cluster launch takes an explicit kernel (Kernel::explicit)".into()));
        }
        if !(1..=8).contains(&cluster) || !grid.is_multiple_of(cluster) {
            return Err(fail(format!(
                "clusters of {cluster} blocks: the size must be 1 to 8 and divide the grid of {grid} blocks"
            )));
        }
        self.check_args(k, args)?;
        self.inner.runtime.launch_cluster(compiled.exec.as_ref(), grid, cluster, args)
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
    /// * Vulkan: the dispatch alone, from two timestamps written just before and just after it in
    ///   the kernel's command buffer (`vkCmdWriteTimestamp`, the device's `timestampPeriod` of
    ///   resolution). On a queue without timestamps ([`DeviceInfo::device_timer`] false), the host
    ///   clock around the whole launch.
    /// * AMDGPU: the host clock around `hipModuleLaunchKernel` and `hipDeviceSynchronize`.
    /// * CPU emulator: the host clock around the emulated launch (the emulator's speed, not a GPU's).
    ///
    /// Compiling is never timed: the first call compiles (or finds the kernel in the caches) before
    /// the clock starts. Errors are those of [`launch`](Device::launch) and
    /// [`launch_grid`](Device::launch_grid), plus [`Error::Driver`] for a failed event call.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("busy", 64, |k| {
    ///     let a = k.array::<f32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).sqrt()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&vec![4.0f32; 1024]).unwrap();
    /// let took = d.launch_timed(&k, None, &[a.arg()]).unwrap(); // `None`: a range kernel's own grid
    /// assert!(took.as_nanos() > 0);
    /// assert_eq!(a.to_vec().unwrap()[0], 2.0);
    /// ```
    #[track_caller]
    pub fn launch_timed(&self, kernel: &Kernel, grid: Option<Grid>, args: &[Arg]) -> Result<Duration> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_timed_unsited(kernel, grid, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_timed_unsited(&self, kernel: &Kernel, grid: Option<Grid>, args: &[Arg]) -> Result<Duration> {
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
        self.inner.runtime.launch_timed(compiled.exec.as_ref(), grid, args)
    }

    /// How many blocks of `kernel` run at once on one multiprocessor, as the driver computes it from
    /// the compiled kernel's registers, shared memory and block size (CUDA); `None` on backends that
    /// do not say (the CPU emulator, Vulkan). Compiles the kernel first, like a launch. For sizing
    /// grids that should fill the device in one wave.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("k", 256, |k| {
    ///     let a = k.array::<i32>("a");
    ///     a.set(block::global_thread_idx(), 0);
    /// });
    /// // The CUDA driver answers from registers and shared memory; the emulator does not say.
    /// assert_eq!(Device::cpu().max_active_blocks_per_multiprocessor(&k).unwrap(), None);
    /// ```
    pub fn max_active_blocks_per_multiprocessor(&self, kernel: &Kernel) -> Result<Option<u32>> {
        let compiled = self.compile(kernel)?;
        self.inner.runtime.max_active_blocks(compiled.exec.as_ref())
    }

    /// What this device's runtime has done and holds so far (launches submitted, command buffers
    /// recorded, staged copies, device memory reserved), to check that repeated launches reuse what
    /// they made; `None` on runtimes that do not count (all but Vulkan). Every [`Device`] naming
    /// the same Vulkan ordinal shares one logical device, so they share the counts.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::from_name("vulkan").unwrap_or_else(|_| Device::cpu());
    /// match d.counters() {
    ///     Some(c) => println!("{} launches so far: {c:?}", d.name()),
    ///     None => assert_eq!(d.name(), "cpu"), // the emulator does not count
    /// }
    /// ```
    pub fn counters(&self) -> Option<RuntimeCounters> {
        self.inner.runtime.counters()
    }

    /// Checks `args` against the parameters, and that every array lives on this device.
    fn check_args(&self, k: &crate::ir::Kernel, args: &[Arg]) -> Result<()> {
        launch::check_args(k, args)?;
        for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
            if let Arg::Array(h) = a
                && !self.inner.runtime.owns(h.storage())
            {
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
        Ok(())
    }
}

/// The device-name suffix of an emulator memory mode (D26): none, `+weak` (seed 0), `+weak=SEED`.
fn memory_suffix(memory: crate::backend::cpu::Memory) -> String {
    match memory {
        crate::backend::cpu::Memory::Sequential => String::new(),
        crate::backend::cpu::Memory::Weak { seed: 0 } => "+weak".into(),
        crate::backend::cpu::Memory::Weak { seed } => format!("+weak={seed}"),
    }
}

/// A device name without its memory suffix, and the memory mode that suffix names.
fn split_memory(name: &str) -> std::result::Result<(&str, crate::backend::cpu::Memory), String> {
    use crate::backend::cpu::Memory;
    let Some((base, mode)) = name.rsplit_once('+') else { return Ok((name, Memory::Sequential)) };
    let seed = match mode.strip_prefix("weak") {
        Some("") => 0,
        Some(s) => s.strip_prefix('=').and_then(|s| s.parse().ok()).ok_or_else(|| {
            format!("`+{mode}`: the seed of the weak-memory mode is a number (`+weak` or `+weak=SEED`)")
        })?,
        None => return Err(format!("unknown memory mode `+{mode}`; the emulator's is `+weak` or `+weak=SEED`")),
    };
    Ok((base, Memory::Weak { seed }))
}

/// `Unavailable` errors of `Device::cuda` and `Device::vulkan` name `cuda:N` / `vulkan:N`; keep the
/// name the user gave.
fn rename_unavailable(e: Error, name: &str) -> Error {
    match e {
        Error::Unavailable { reason, .. } => Error::Unavailable { backend: name.to_string(), reason },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::super::available_devices;
    use super::*;

    /// A build without a GPU runtime's feature names the feature instead of looking for a driver.
    #[test]
    fn a_runtime_left_out_of_the_build_says_which_feature_brings_it() {
        let cases: [(&str, &str, bool); 3] = [
            ("cuda", "cuda:0", cfg!(feature = "cuda")),
            ("vulkan", "vulkan:0", cfg!(feature = "vulkan")),
            ("amdgpu", "amdgpu:0", cfg!(feature = "amdgpu")),
        ];
        for (backend, name, built) in cases {
            if built {
                continue;
            }
            let e = Device::from_name(name).unwrap_err();
            assert!(
                matches!(e, Error::BackendNotBuilt { backend: b, feature: f } if b == backend && f == backend),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("built without the `{backend}` cargo feature")), "{e}");
            assert!(available_devices().iter().all(|n| !n.starts_with(backend)));
        }
    }
}
