//! The CUDA runtime: NVIDIA GPUs through the driver API (`cudarc`'s raw bindings, with `libcuda`
//! loaded at run time, so nothing is needed at build time and a machine without a driver gets
//! [`Error::Unavailable`] rather than a panic).
//!
//! * Context: the device's primary context, made current on the calling thread before every
//!   sequence of driver calls, so a [`Device`](super::Device) can be used from any thread.
//! * Memory: plain `cuMemAlloc` allocations (no managed memory), synchronous copies.
//! * Kernels: PTX from the NVPTX lowering (or [`Device::override_ptx`](super::Device::override_ptx)),
//!   compiled by the driver's JIT and loaded as a module. With the disk cache on (the default) the
//!   PTX goes through the link API (`cuLinkCreate`/`cuLinkAddData`/`cuLinkComplete`) and the cubin is
//!   stored (see `disk_cache.rs`); a later process loads the cubin with `cuModuleLoadData` and skips
//!   the JIT. With it off, the PTX goes straight to `cuModuleLoadDataEx`. Either way a rejected
//!   module comes back as [`Error::Driver`] with the JIT's error log in its message.
//! * Launch: params marshalled per [`PtxParam`] (an array is a u64 device pointer then its u32
//!   length; a scalar is passed at its natural width, bool as u8), block = the kernel's `block_dim`,
//!   grid per D1, on the legacy default stream, then `cuCtxSynchronize`: a fault inside the kernel is
//!   an [`Error::Driver`] from `cuCtxSynchronize` naming the kernel.
//! * Timed launch ([`Device::launch_timed`](super::Device::launch_timed)): the same launch between
//!   two events recorded on that stream; the time is `cuEventElapsedTime` between them.

use crate::backend::ptx::{
    lower::{lower_kernel, ParamAbi, PtxModule},
    PtxTarget,
};

use super::disk_cache::{self, DiskCache};
use super::{CompileStats, DiskCacheUse, Error, Result};
use crate::backend::Target;
use crate::ir::{self, DType, Param};
use crate::trace::TraceError;
use cudarc::driver::sys;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Shared memory a kernel may use without opting in (`cuFuncSetAttribute`).
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;
/// Size of each JIT log buffer.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// PTX for one kernel as the CUDA runtime loads it: what the NVPTX lowering produces, or what a
/// test or a debugging session hands to [`Device::override_ptx`](super::Device::override_ptx).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxCode {
    /// The whole module text (`.version`, `.target`, the `.entry`).
    pub text: String,
    /// The `.entry` name to launch.
    pub entry: String,
    /// Shared memory per block in bytes. The runtime reads the module's static shared size from the
    /// driver and passes the rest as dynamic shared memory at launch, setting the opt-in attribute
    /// when the total passes 48 KiB; so this may count static memory or not, as long as a module that
    /// needs a dynamic region counts it here.
    pub shared_bytes: u32,
    /// How each kernel parameter is passed, in order (one entry per IR parameter).
    pub params: Vec<PtxParam>,
}

/// How one kernel parameter is passed to a PTX entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxParam {
    /// Two PTX parameters: the array's u64 device pointer, then its u32 length.
    Array {
        /// Element type.
        dtype: DType,
    },
    /// One PTX parameter at the type's natural width (bool as u8).
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// Lowers `kernel` to PTX for `sm_<sm>` through the NVPTX backend.
pub(crate) fn lower(kernel: &ir::Kernel, sm: u32) -> std::result::Result<PtxCode, TraceError> {
    let m: PtxModule = lower_kernel(kernel, &PtxTarget::sm(sm))?;
    Ok(PtxCode {
        text: m.text,
        entry: m.entry,
        shared_bytes: m.shared_bytes,
        params: m
            .params
            .into_iter()
            .map(|p| match p {
                ParamAbi::Array { dtype } => PtxParam::Array { dtype },
                ParamAbi::Scalar { dtype } => PtxParam::Scalar { dtype },
            })
            .collect(),
    })
}

/// Settings of a CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// Store cubins on disk and load them in later processes (`QD_CACHE_DISABLE=1` turns it off).
    pub disk_cache: bool,
    /// The cache folder (`$QD_CACHE_DIR`, else `~/.cache/qd`); `None` with `disk_cache` means no
    /// folder could be found, so nothing is cached.
    pub cache_dir: Option<PathBuf>,
}

impl CudaOptions {
    /// From the environment: `QD_CACHE_DISABLE` and `QD_CACHE_DIR` (else `~/.cache/qd`).
    pub fn from_env() -> CudaOptions {
        CudaOptions { disk_cache: !disk_cache::disabled_by_env(), cache_dir: disk_cache::dir_from_env() }
    }
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions::from_env()
    }
}

/// A failed driver call: its name and the driver's message.
#[derive(Clone, Debug)]
pub(crate) struct DriverFailure {
    call: &'static str,
    message: String,
}

impl DriverFailure {
    /// As an [`Error::Driver`] for `kernel` (or an operation like `<host copy>`).
    pub(crate) fn into_error(self, kernel: &str) -> Error {
        Error::Driver { kernel: kernel.to_string(), call: self.call.to_string(), message: self.message }
    }

    fn with_log(mut self, log: &str) -> DriverFailure {
        let log = log.trim();
        if !log.is_empty() {
            self.message = format!("{}\nJIT log:\n{log}", self.message);
        }
        self
    }
}

/// `CUDA_ERROR_NAME: the driver's description`.
fn describe_result(r: sys::CUresult) -> String {
    let mut text: *const c_char = null();
    // SAFETY: cuGetErrorString writes a pointer to a static string or fails.
    let ok = unsafe { sys::cuGetErrorString(r, &mut text) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !text.is_null() {
        // SAFETY: non-null and NUL-terminated, owned by the driver for the process's life.
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        format!("{r:?}: {text}")
    } else {
        format!("{r:?}")
    }
}

fn check(call: &'static str, r: sys::CUresult) -> std::result::Result<(), DriverFailure> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverFailure { call, message: describe_result(r) })
    }
}

/// What `Device::from_name("cuda")` reports on a machine without the driver's library.
pub(crate) const NO_DRIVER: &str =
    "the CUDA driver library (libcuda.so / libcuda.so.1, installed with the NVIDIA driver) \
     was not found on the library search path; this machine has no usable NVIDIA driver";

/// The driver, initialised once per process.
struct Driver {
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor.
    version: u32,
}

static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();

/// The initialised driver, or why there is none. Never panics: the library's presence is checked
/// before the first call (cudarc panics otherwise).
fn driver() -> std::result::Result<&'static Driver, String> {
    DRIVER
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the library.
            if !unsafe { sys::is_culib_present() } {
                return Err(NO_DRIVER.to_string());
            }
            let init = || -> std::result::Result<Driver, DriverFailure> {
                // SAFETY: plain driver calls with valid out-pointers.
                unsafe {
                    check("cuInit", sys::cuInit(0))?;
                    let mut v: c_int = 0;
                    check("cuDriverGetVersion", sys::cuDriverGetVersion(&mut v))?;
                    Ok(Driver { version: v as u32 })
                }
            };
            // A driver too old to have an entry point makes cudarc panic; report it instead.
            match std::panic::catch_unwind(init) {
                Ok(Ok(d)) => Ok(d),
                Ok(Err(e)) => Err(format!("the CUDA driver did not start: {} failed: {}", e.call, e.message)),
                Err(_) => Err("the CUDA driver library lacks an entry point qd needs (driver too old?)".to_string()),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Number of CUDA devices (0 without a driver).
pub(crate) fn device_count() -> u32 {
    if driver().is_err() {
        return 0;
    }
    let mut n: c_int = 0;
    // SAFETY: the driver is initialised; valid out-pointer.
    match check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) }) {
        Ok(()) => n.max(0) as u32,
        Err(_) => 0,
    }
}

/// A retained primary context. Released when the last device, array and kernel using it are gone.
struct Context {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: driver API handles may be used from any thread; every use makes the context current on
// the calling thread first (`bind`).
unsafe impl Send for Context {}
// SAFETY: as above; the handles are never mutated after creation.
unsafe impl Sync for Context {}

impl Context {
    /// Makes this context current on the calling thread.
    fn bind(&self) -> std::result::Result<(), DriverFailure> {
        // SAFETY: `ctx` is a retained primary context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `CudaDevice::open`.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

/// What the driver says about a device.
#[derive(Clone, Debug)]
pub(crate) struct Props {
    pub(crate) ordinal: u32,
    pub(crate) model: String,
    pub(crate) cc: (u32, u32),
    pub(crate) sm_count: u32,
    pub(crate) warp_size: u32,
    pub(crate) max_shared_optin: u32,
    pub(crate) total_mem: u64,
    pub(crate) driver_version: u32,
}

impl Props {
    /// Compute capability as `sm_XY`'s number (90 for 9.0).
    pub(crate) fn sm(&self) -> u32 {
        self.cc.0 * 10 + self.cc.1
    }
}

/// One CUDA device: its primary context, properties and disk cache.
pub(crate) struct CudaDevice {
    ctx: Arc<Context>,
    pub(crate) props: Props,
    disk: Option<DiskCache>,
}

impl CudaDevice {
    /// Opens device `ordinal`, or says why it cannot be used.
    pub(crate) fn open(ordinal: u32, options: &CudaOptions) -> std::result::Result<CudaDevice, String> {
        let drv = driver()?;
        let count = device_count();
        if ordinal >= count {
            return Err(match count {
                0 => "the CUDA driver found no device".to_string(),
                n => format!("there is no CUDA device {ordinal}; this machine has {n} (cuda:0 to cuda:{})", n - 1),
            });
        }
        let fail = |e: DriverFailure| format!("{} failed: {}", e.call, e.message);
        let mut dev: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = null_mut();
        // SAFETY: the driver is initialised and `ordinal` is in range; valid out-pointers.
        unsafe {
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal as c_int)).map_err(fail)?;
            check("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)).map_err(fail)?;
        }
        let ctx = Arc::new(Context { dev, ctx });
        ctx.bind().map_err(fail)?;
        let attr = |a: sys::CUdevice_attribute| -> std::result::Result<u32, String> {
            let mut v: c_int = 0;
            // SAFETY: valid device and out-pointer.
            check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) }).map_err(fail)?;
            Ok(v.max(0) as u32)
        };
        use sys::CUdevice_attribute as A;
        let mut name = [0 as c_char; 256];
        let mut total_mem = 0usize;
        // SAFETY: buffer of the given length; valid out-pointer.
        unsafe {
            check("cuDeviceGetName", sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev))
                .map_err(fail)?;
            check("cuDeviceTotalMem_v2", sys::cuDeviceTotalMem_v2(&mut total_mem, dev)).map_err(fail)?;
        }
        // SAFETY: the driver NUL-terminates the name within the buffer.
        let model = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let props = Props {
            ordinal,
            model,
            cc: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_shared_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            total_mem: total_mem as u64,
            driver_version: drv.version,
        };
        let disk = match (&options.cache_dir, options.disk_cache) {
            (Some(dir), true) => Some(DiskCache::new(dir.clone())),
            _ => None,
        };
        Ok(CudaDevice { ctx, props, disk })
    }

    /// The target kernels are traced for: CUDA caps for this compute capability, with the device's
    /// own shared-memory limit.
    pub(crate) fn target(&self) -> Target {
        let mut t = Target::cuda(self.props.sm());
        t.caps.max_shared_bytes = self.props.max_shared_optin.max(DEFAULT_SHARED_LIMIT);
        t.subgroup_size = self.props.warp_size;
        t
    }

    /// The disk cache's folder, when it is on.
    pub(crate) fn cache_dir(&self) -> Option<&std::path::Path> {
        self.disk.as_ref().map(|d| d.root())
    }

    /// A new array of `len` elements of `dtype`: zeroed, or copied from `init` (`len` elements).
    pub(crate) fn alloc(
        &self,
        dtype: DType,
        len: usize,
        init: Option<&[u8]>,
    ) -> std::result::Result<CudaBuffer, DriverFailure> {
        let bytes = len * dtype.size_bytes();
        let mut buf = CudaBuffer { ctx: self.ctx.clone(), ordinal: self.props.ordinal, ptr: 0, len, dtype };
        if bytes == 0 {
            return Ok(buf);
        }
        self.ctx.bind()?;
        // SAFETY: valid out-pointer; the context is current.
        check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut buf.ptr, bytes) })?;
        match init {
            Some(data) => buf.write(data)?,
            // SAFETY: `ptr` holds `bytes` bytes.
            None => check("cuMemsetD8_v2", unsafe { sys::cuMemsetD8_v2(buf.ptr, 0, bytes) })?,
        }
        Ok(buf)
    }

    /// Loads a kernel: PTX through the disk cache or the JIT, then its entry function and
    /// shared-memory attributes. Fills the load part of `stats`.
    pub(crate) fn load(&self, kernel: ir::Kernel, code: PtxCode, stats: &mut CompileStats) -> Result<CudaKernel> {
        let name = kernel.name.clone();
        check_abi(&kernel, &code.params)?;
        let drv = |e: DriverFailure| e.into_error(&name);
        let bad =
            |what: &str| Error::Launch { kernel: name.clone(), message: format!("the PTX {what} contains a NUL byte") };
        let text = CString::new(code.text.as_str()).map_err(|_| bad("text"))?;
        let entry = CString::new(code.entry.as_str()).map_err(|_| bad("entry name"))?;
        let start = Instant::now();
        self.ctx.bind().map_err(drv)?;
        let sm = self.props.sm();
        let module = match &self.disk {
            None => {
                stats.disk = DiskCacheUse::Disabled;
                let (module, wall) = jit_load(&text).map_err(drv)?;
                stats.jit = wall;
                module
            }
            Some(disk) => {
                let key = disk_cache::key(&code.text, sm, self.props.driver_version);
                let path = disk.path(&key, sm);
                let cached = disk.load(&path).and_then(|cubin| load_image(&cubin).ok());
                match cached {
                    Some(module) => {
                        stats.disk = DiskCacheUse::Hit(path);
                        module
                    }
                    None => {
                        let (cubin, wall) = jit_link(&text, &name).map_err(drv)?;
                        stats.jit = wall;
                        stats.disk = match disk.store(&path, &cubin) {
                            Ok(()) => DiskCacheUse::Stored(path),
                            Err(e) => DiskCacheUse::StoreFailed(format!("{}: {e}", path.display())),
                        };
                        load_image(&cubin).map_err(drv)?
                    }
                }
            }
        };
        let module = Module { ctx: self.ctx.clone(), module };
        let mut func: sys::CUfunction = null_mut();
        // SAFETY: loaded module, NUL-terminated name, valid out-pointer.
        check("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut func, module.module, entry.as_ptr()) })
            .map_err(|e| drv(DriverFailure { message: format!("{} (entry `{}`)", e.message, code.entry), ..e }))?;
        let mut static_shared: c_int = 0;
        // SAFETY: valid function and out-pointer.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(
                &mut static_shared,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                func,
            )
        })
        .map_err(drv)?;
        let static_shared = static_shared.max(0) as u32;
        let dynamic_shared = code.shared_bytes.saturating_sub(static_shared);
        let total = static_shared + dynamic_shared;
        let limit = self.props.max_shared_optin.max(DEFAULT_SHARED_LIMIT);
        if total > limit {
            return Err(Error::Launch {
                kernel: name,
                message: format!(
                    "uses {total} bytes of shared memory per block; cuda:{} allows {limit}",
                    self.props.ordinal
                ),
            });
        }
        if dynamic_shared > 0 && total > DEFAULT_SHARED_LIMIT {
            // SAFETY: valid function; the value is within the device's opt-in limit.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    func,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as c_int,
                )
            })
            .map_err(drv)?;
        }
        stats.load = start.elapsed();
        Ok(CudaKernel { kernel, code, module, func, dynamic_shared })
    }

    /// Launches `k` on `grid` blocks with already checked `args` and waits for it.
    pub(crate) fn launch(&self, k: &CudaKernel, grid: u32, args: &[Bound]) -> Result<()> {
        self.launch_with(k, grid, args, None)
    }

    /// As [`launch`](CudaDevice::launch), timing the kernel alone with two events recorded on the
    /// launch's stream (the legacy default stream) around `cuLaunchKernel`.
    pub(crate) fn launch_timed(&self, k: &CudaKernel, grid: u32, args: &[Bound]) -> Result<Duration> {
        let name = &k.kernel.name;
        let drv = |e: DriverFailure| e.into_error(name);
        if grid == 0 {
            marshal(&k.kernel, &k.code.params, args)?;
            return Ok(Duration::ZERO);
        }
        self.ctx.bind().map_err(drv)?;
        let (start, stop) = (Event::new().map_err(drv)?, Event::new().map_err(drv)?);
        self.launch_with(k, grid, args, Some((&start, &stop)))?;
        stop.elapsed_since(&start).map_err(drv)
    }

    /// Launches and waits; with `events`, records the first just before the launch and the second
    /// just after it, on the same stream.
    fn launch_with(&self, k: &CudaKernel, grid: u32, args: &[Bound], events: Option<(&Event, &Event)>) -> Result<()> {
        let name = &k.kernel.name;
        let mut slots = marshal(&k.kernel, &k.code.params, args)?;
        if grid == 0 {
            return Ok(());
        }
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        let drv = |e: DriverFailure| e.into_error(name);
        self.ctx.bind().map_err(drv)?;
        if let Some((start, _)) = events {
            start.record().map_err(drv)?;
        }
        // SAFETY: `func` belongs to this context; `ptrs` has one pointer per PTX parameter, each to
        // a u64 slot whose low bytes (little-endian) hold the value at the parameter's width; the
        // slots and the arrays they point into outlive the synchronous launch.
        unsafe {
            check(
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    k.func,
                    grid,
                    1,
                    1,
                    k.kernel.block_dim,
                    1,
                    1,
                    k.dynamic_shared,
                    null_mut(),
                    ptrs.as_mut_ptr(),
                    null_mut(),
                ),
            )
            .map_err(drv)?;
        }
        if let Some((_, stop)) = events {
            stop.record().map_err(drv)?;
        }
        // SAFETY: plain driver call; the context is current.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }).map_err(drv)?;
        Ok(())
    }
}

impl CudaDevice {
    /// How many blocks of `k` fit on one multiprocessor at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`
    /// with the kernel's block size and dynamic shared memory).
    pub(crate) fn max_active_blocks(&self, k: &CudaKernel) -> Result<u32> {
        let drv = |e: DriverFailure| e.into_error(&k.kernel.name);
        self.ctx.bind().map_err(drv)?;
        let mut blocks: c_int = 0;
        // SAFETY: `func` belongs to this context; valid out-pointer.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                k.func,
                k.kernel.block_dim as c_int,
                k.dynamic_shared as usize,
            )
        })
        .map_err(drv)?;
        Ok(blocks.max(0) as u32)
    }
}

/// A CUDA event (with timing) of the current context, destroyed on drop.
struct Event(sys::CUevent);

impl Event {
    /// A new event; the context must be current.
    fn new() -> std::result::Result<Event, DriverFailure> {
        let mut ev: sys::CUevent = null_mut();
        // SAFETY: valid out-pointer; flags 0 (CU_EVENT_DEFAULT) keep timing on.
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut ev, 0) })?;
        Ok(Event(ev))
    }

    /// Records the event on the legacy default stream, the one launches use.
    fn record(&self) -> std::result::Result<(), DriverFailure> {
        // SAFETY: a live event of the current context; the null stream.
        check("cuEventRecord", unsafe { sys::cuEventRecord(self.0, null_mut()) })
    }

    /// Time from `start` to this event, both recorded and this one complete.
    fn elapsed_since(&self, start: &Event) -> std::result::Result<Duration, DriverFailure> {
        // SAFETY: a live, recorded event.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.0) })?;
        let mut ms = 0f32;
        // cudarc loads the entry point on first use and panics when the driver lacks it (older than
        // CUDA 12.8): report that as a failed call instead.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: both events recorded and complete; valid out-pointer.
            unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.0, self.0) }
        }))
        .map_err(|_| DriverFailure {
            call: "cuEventElapsedTime_v2",
            message: "the CUDA driver library lacks this entry point (driver older than CUDA 12.8?)".into(),
        })?;
        check("cuEventElapsedTime_v2", r)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate and destroyed once.
        unsafe {
            sys::cuEventDestroy_v2(self.0);
        }
    }
}

/// The parameter passing must match the kernel's parameters one to one.
fn check_abi(k: &ir::Kernel, params: &[PtxParam]) -> Result<()> {
    let mismatch = |message: String| Error::Launch {
        kernel: k.name.clone(),
        message: format!("the PTX module's parameters do not match the kernel's: {message}"),
    };
    if params.len() != k.params.len() {
        return Err(mismatch(format!("{} PTX parameters for {} kernel parameters", params.len(), k.params.len())));
    }
    for (i, (p, abi)) in k.params.iter().zip(params).enumerate() {
        let ok = match (p, abi) {
            (Param::Array { dtype, .. }, PtxParam::Array { dtype: d }) => dtype == d,
            (Param::Scalar { dtype, .. }, PtxParam::Scalar { dtype: d }) => dtype == d,
            _ => false,
        };
        if !ok {
            return Err(mismatch(format!("parameter {i} (`{}`) is {abi:?}", p.name())));
        }
    }
    Ok(())
}

/// An argument after checking, as the launch passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// A device array: its pointer and element count.
    Array {
        /// Device address.
        ptr: u64,
        /// Elements.
        len: usize,
    },
    /// A scalar's bits (zero-extended).
    Scalar(u64),
}

/// One u64 slot per PTX parameter, the value in its low bytes: an array is (pointer, u32 length), a
/// scalar is masked to its width (bool to one byte).
pub(crate) fn marshal(k: &ir::Kernel, params: &[PtxParam], args: &[Bound]) -> Result<Vec<u64>> {
    let mut slots = Vec::with_capacity(params.len() * 2);
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let err = |message: String| Error::Argument {
            kernel: k.name.clone(),
            index: i,
            param: k.params.get(i).map(|p| p.name().to_string()).unwrap_or_default(),
            message,
        };
        match (p, a) {
            (PtxParam::Array { .. }, Bound::Array { ptr, len }) => {
                let len = u32::try_from(*len)
                    .map_err(|_| err(format!("has {len} elements; CUDA kernels take at most {}", u32::MAX)))?;
                slots.push(*ptr);
                slots.push(len as u64);
            }
            (PtxParam::Scalar { dtype }, Bound::Scalar(bits)) => {
                let v = super::launch::scalar_slot(*dtype, *bits)
                    .ok_or_else(|| err(format!("a {}-bit scalar cannot be passed to a CUDA kernel", dtype.bits())))?;
                slots.push(v);
            }
            _ => return Err(err("an array where a scalar was expected, or the reverse".into())),
        }
    }
    Ok(slots)
}

/// A loaded module, unloaded on drop.
struct Module {
    ctx: Arc<Context>,
    module: sys::CUmodule,
}

// SAFETY: see `Context`.
unsafe impl Send for Module {}
// SAFETY: see `Context`.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: loaded in this context and no longer referenced.
            unsafe {
                sys::cuModuleUnload(self.module);
            }
        }
    }
}

/// A kernel ready to launch.
pub(crate) struct CudaKernel {
    pub(crate) kernel: ir::Kernel,
    pub(crate) code: PtxCode,
    module: Module,
    func: sys::CUfunction,
    dynamic_shared: u32,
}

// SAFETY: see `Context`; `func` lives as long as `module`.
unsafe impl Send for CudaKernel {}
// SAFETY: see `Context`.
unsafe impl Sync for CudaKernel {}

impl std::fmt::Debug for CudaKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaKernel")
            .field("kernel", &self.kernel.name)
            .field("entry", &self.code.entry)
            .field("dynamic_shared", &self.dynamic_shared)
            .field("module", &self.module.module)
            .finish()
    }
}

/// An array in GPU memory.
pub(crate) struct CudaBuffer {
    ctx: Arc<Context>,
    pub(crate) ordinal: u32,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
}

// SAFETY: see `Context`.
unsafe impl Send for CudaBuffer {}
// SAFETY: see `Context`; copies go through the driver, which orders them.
unsafe impl Sync for CudaBuffer {}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBuffer(cuda:{}, {}[{}] at {:#x})", self.ordinal, self.dtype, self.len, self.ptr)
    }
}

impl CudaBuffer {
    fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    /// Copies the contents to the host.
    pub(crate) fn read(&self) -> std::result::Result<Vec<u8>, DriverFailure> {
        let mut out = vec![0u8; self.bytes()];
        if out.is_empty() {
            return Ok(out);
        }
        self.ctx.bind()?;
        // SAFETY: `out` and the allocation both hold `bytes()` bytes.
        check("cuMemcpyDtoH_v2", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, self.ptr, out.len())
        })?;
        Ok(out)
    }

    /// Overwrites the contents; `data` has `bytes()` bytes.
    pub(crate) fn write(&self, data: &[u8]) -> std::result::Result<(), DriverFailure> {
        assert_eq!(data.len(), self.bytes(), "host copy of the wrong size");
        if data.is_empty() {
            return Ok(());
        }
        self.ctx.bind()?;
        // SAFETY: `data` and the allocation both hold `bytes()` bytes.
        check("cuMemcpyHtoD_v2", unsafe { sys::cuMemcpyHtoD_v2(self.ptr, data.as_ptr() as *const c_void, data.len()) })
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 && self.ctx.bind().is_ok() {
            // SAFETY: allocated by `cuMemAlloc_v2` in this context, no longer referenced.
            unsafe {
                sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// JIT options asking for the error and info logs and the JIT's wall time. The buffers live on the
/// heap, so the pointers stay valid while this value moves.
struct JitLogs {
    error: Vec<u8>,
    info: Vec<u8>,
    options: Vec<sys::CUjit_option>,
    values: Vec<*mut c_void>,
}

impl JitLogs {
    fn new() -> JitLogs {
        use sys::CUjit_option as O;
        let mut error = vec![0u8; JIT_LOG_BYTES];
        let mut info = vec![0u8; JIT_LOG_BYTES];
        let values = vec![
            error.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
            info.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
            null_mut(),
        ];
        let options = vec![
            O::CU_JIT_ERROR_LOG_BUFFER,
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_INFO_LOG_BUFFER,
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_WALL_TIME,
        ];
        JitLogs { error, info, options, values }
    }

    fn count(&self) -> c_uint {
        self.options.len() as c_uint
    }

    fn text(buf: &[u8]) -> String {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// The error log, followed by the info log when it says anything.
    fn log(&self) -> String {
        let (e, i) = (Self::text(&self.error), Self::text(&self.info));
        match (e.trim().is_empty(), i.trim().is_empty()) {
            (_, true) => e,
            (true, false) => i,
            (false, false) => format!("{e}\n{i}"),
        }
    }

    /// `CU_JIT_WALL_TIME`: the driver writes an f32 of milliseconds into the option's slot.
    fn wall_time(&self) -> Option<Duration> {
        let bits = self.values[4] as usize as u64 as u32;
        let ms = f32::from_bits(bits);
        (ms.is_finite() && ms > 0.0).then(|| Duration::from_secs_f64(ms as f64 / 1000.0))
    }
}

/// PTX straight through `cuModuleLoadDataEx` (no disk cache). The context must be current.
fn jit_load(text: &CStr) -> std::result::Result<(sys::CUmodule, Option<Duration>), DriverFailure> {
    let mut logs = JitLogs::new();
    let mut module: sys::CUmodule = null_mut();
    // SAFETY: NUL-terminated PTX; option arrays of `count()` entries whose buffers outlive the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            text.as_ptr() as *const c_void,
            logs.count(),
            logs.options.as_mut_ptr(),
            logs.values.as_mut_ptr(),
        )
    };
    check("cuModuleLoadDataEx", r).map_err(|e| e.with_log(&logs.log()))?;
    Ok((module, logs.wall_time()))
}

/// Destroys a link state on every path.
struct LinkState(sys::CUlinkState);

impl Drop for LinkState {
    fn drop(&mut self) {
        // SAFETY: created by cuLinkCreate_v2 and destroyed once.
        unsafe {
            sys::cuLinkDestroy(self.0);
        }
    }
}

/// PTX to a cubin through the link API (for the disk cache). The context must be current.
fn jit_link(text: &CStr, kernel: &str) -> std::result::Result<(Vec<u8>, Option<Duration>), DriverFailure> {
    let mut logs = JitLogs::new();
    let mut state: sys::CUlinkState = null_mut();
    // SAFETY: option arrays of `count()` entries whose buffers outlive the link state (`logs` is
    // dropped after `state`, declared later and so dropped first).
    check("cuLinkCreate_v2", unsafe {
        sys::cuLinkCreate_v2(logs.count(), logs.options.as_mut_ptr(), logs.values.as_mut_ptr(), &mut state)
    })?;
    let state = LinkState(state);
    let name = CString::new(format!("{kernel}.ptx")).unwrap_or_else(|_| c"kernel.ptx".to_owned());
    let bytes = text.to_bytes_with_nul();
    // SAFETY: the PTX bytes (with their NUL) and the name outlive the call; no per-input options.
    let r = unsafe {
        sys::cuLinkAddData_v2(
            state.0,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            bytes.as_ptr() as *mut c_void,
            bytes.len(),
            name.as_ptr(),
            0,
            null_mut(),
            null_mut(),
        )
    };
    check("cuLinkAddData_v2", r).map_err(|e| e.with_log(&logs.log()))?;
    let mut cubin: *mut c_void = null_mut();
    let mut size = 0usize;
    // SAFETY: valid link state and out-pointers.
    let r = unsafe { sys::cuLinkComplete(state.0, &mut cubin, &mut size) };
    check("cuLinkComplete", r).map_err(|e| e.with_log(&logs.log()))?;
    // SAFETY: the driver owns `size` bytes at `cubin` until the state is destroyed; copy them first.
    let image = unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec();
    drop(state);
    Ok((image, logs.wall_time()))
}

/// Loads a cubin image. The context must be current.
fn load_image(image: &[u8]) -> std::result::Result<sys::CUmodule, DriverFailure> {
    let mut module: sys::CUmodule = null_mut();
    // SAFETY: a complete ELF image in memory for the duration of the call.
    check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void) })?;
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Block, LaunchKind, ValueId};

    fn kernel(params: Vec<Param>) -> ir::Kernel {
        ir::Kernel {
            name: "k".into(),
            launch: LaunchKind::Explicit,
            block_dim: 32,
            subgroup_size: 32,
            params,
            values: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            body: Block::default(),
        }
    }

    #[test]
    fn marshal_passes_arrays_as_pointer_and_length_and_masks_scalars() {
        let k = kernel(vec![
            Param::Array { name: "a".into(), dtype: DType::F32 },
            Param::Scalar { name: "b".into(), dtype: DType::Bool, value: ValueId(0) },
            Param::Scalar { name: "s".into(), dtype: DType::I16, value: ValueId(1) },
            Param::Scalar { name: "x".into(), dtype: DType::U64, value: ValueId(2) },
        ]);
        let params = [
            PtxParam::Array { dtype: DType::F32 },
            PtxParam::Scalar { dtype: DType::Bool },
            PtxParam::Scalar { dtype: DType::I16 },
            PtxParam::Scalar { dtype: DType::U64 },
        ];
        check_abi(&k, &params).unwrap();
        let slots = marshal(
            &k,
            &params,
            &[
                Bound::Array { ptr: 0x7f00_0000_1000, len: 77 },
                Bound::Scalar(0xff),
                Bound::Scalar(0xffff_ffff_ffff_fffe),
                Bound::Scalar(u64::MAX),
            ],
        )
        .unwrap();
        assert_eq!(slots, vec![0x7f00_0000_1000, 77, 1, 0xfffe, u64::MAX]);
    }

    #[test]
    fn marshal_rejects_arrays_past_u32_lengths() {
        let k = kernel(vec![Param::Array { name: "a".into(), dtype: DType::U8 }]);
        let params = [PtxParam::Array { dtype: DType::U8 }];
        let e = marshal(&k, &params, &[Bound::Array { ptr: 1, len: 1 << 32 }]).unwrap_err();
        assert!(matches!(e, Error::Argument { index: 0, .. }), "{e}");
    }

    #[test]
    fn abi_mismatch_is_a_launch_error() {
        let k = kernel(vec![Param::Array { name: "a".into(), dtype: DType::F32 }]);
        let e = check_abi(&k, &[PtxParam::Array { dtype: DType::F64 }]).unwrap_err();
        assert!(e.to_string().contains("parameter 0 (`a`)"), "{e}");
        assert!(check_abi(&k, &[]).is_err());
    }
}
