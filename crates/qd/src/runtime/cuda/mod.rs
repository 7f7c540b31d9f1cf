//! The CUDA runtime: NVIDIA GPUs through the driver API (`cudarc`'s raw bindings, with `libcuda`
//! loaded at run time, so nothing is needed at build time and a machine without a driver gets
//! [`Error::Unavailable`](crate::runtime::Error::Unavailable) rather than a panic).
//!
//! * Context: the device's primary context, made current on the calling thread before every
//!   sequence of driver calls, so a [`Device`](super::Device) can be used from any thread.
//! * Memory: plain `cuMemAlloc` allocations (no managed memory), synchronous copies.
//! * Kernels: PTX from the NVPTX lowering (or [`Device::override_ptx`](super::Device::override_ptx)),
//!   compiled to whole-program code and loaded as a module (D23). Where a `ptxas` is installed
//!   ([`CudaOptions::ptxas`]), it compiles the PTX to a cubin that qd's disk cache keeps (see
//!   `disk_cache.rs`), so a later process only loads the file (`cuModuleLoadData`). Without one,
//!   the PTX goes straight to `cuModuleLoadDataEx`: the same code, which the driver keeps in its
//!   own JIT cache (`CUDA_CACHE_PATH`, `~/.nv/ComputeCache` by default; `CUDA_CACHE_DISABLE=1`
//!   turns it off), with a slower lookup. `QD_CUDA_CUBIN_CACHE=1` without a `ptxas` caches cubins
//!   from the link API (`cuLinkCreate`/`cuLinkAddData`/`cuLinkComplete`): relocatable code (more
//!   registers; the look-back scan 4-6% slower). Either way a rejected module comes back as
//!   [`Error::Driver`](crate::runtime::Error::Driver) with the JIT's error log in its message.
//! * Launch: params marshalled per [`PtxParam`] (an array is a u64 device pointer then its u32
//!   length; a scalar is passed at its natural width, bool as u8), block = the kernel's `block_dim`,
//!   grid per D1, on the legacy default stream, then `cuCtxSynchronize`: a fault inside the kernel is
//!   an [`Error::Driver`](crate::runtime::Error::Driver) from `cuCtxSynchronize` naming the kernel.
//! * Timed launch ([`Device::launch_timed`](super::Device::launch_timed)): the same launch between
//!   two events recorded on that stream; the time is `cuEventElapsedTime` between them.
//!
//! The public types here ([`PtxCode`], [`PtxParam`], [`CudaOptions`]) are always built; the driver
//! bindings (`cudarc`) and everything that calls them only with the `cuda` cargo feature. Without
//! it, `cuda:N` is [`Error::BackendNotBuilt`](crate::runtime::Error::BackendNotBuilt) and no CUDA device is listed.
//!
//! Files: `driver.rs` (the driver library, errors, the primary context), `device.rs` (opening a
//! device, its properties, arrays), `jit.rs` (PTX to a module: the JIT and the link API),
//! `ptxas.rs` (whole-program cubins from NVIDIA's `ptxas`), `ir_cache.rs` (the IR-level key and
//! sidecar that let a warm process skip the lowering),
//! `module.rs` (lowering, loading a kernel, shared-memory attributes), `launch.rs` (parameter
//! marshalling, launches, events, occupancy), `runtime.rs` (the `Runtime` implementation `Device`
//! holds).

#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod driver;
mod ir_cache;
#[cfg(feature = "cuda")]
mod jit;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod module;
mod ptxas;
#[cfg(feature = "cuda")]
mod runtime;

#[cfg(feature = "cuda")]
pub(super) use driver::device_count;
#[cfg(feature = "cuda")]
pub(super) use runtime::open;

pub use ptxas::PTXAS_VAR;

use super::disk_cache;
use crate::ir::DType;
use std::path::PathBuf;
#[cfg(not(feature = "cuda"))]
use {super::device::Runtime, super::Error, super::Result, std::sync::Arc};

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

/// Environment variable that turns qd's cubin cache on (`1`) or off (`0`) for CUDA (D23); unset,
/// the cache is on where a `ptxas` is found ([`CudaOptions::ptxas`]).
pub const CUBIN_CACHE_VAR: &str = "QD_CUDA_CUBIN_CACHE";

/// Settings of a CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// Keep cubins in qd's disk cache, so a later process loads them instead of compiling: a warm
    /// first launch of a small kernel in 0.27 ms on an H100, against 0.47 ms through the driver's
    /// JIT cache. The cubins come from [`ptxas`](CudaOptions::ptxas) when there is one
    /// (whole-program code, the JIT's), else from the link API (relocatable code: the look-back
    /// scan takes 64 registers instead of 48 and runs 4-6% slower). Off, PTX goes to
    /// `cuModuleLoadDataEx`, which the driver's own JIT cache keeps between processes (D23).
    /// From the environment: on where a `ptxas` is found, or with `QD_CUDA_CUBIN_CACHE=1`;
    /// `QD_CUDA_CUBIN_CACHE=0` and `QD_CACHE_DISABLE=1` turn it off.
    pub disk_cache: bool,
    /// The cache folder (`$QD_CACHE_DIR`, else `~/.cache/qd`); `None` with `disk_cache` means no
    /// folder could be found, so nothing is cached.
    pub cache_dir: Option<PathBuf>,
    /// The `ptxas` that compiles the cached cubins: `$QD_PTXAS` (empty or `0`: none), else
    /// `ptxas` on `PATH`, in `$CUDA_PATH/bin`, `$CUDA_HOME/bin` or `/usr/local/cuda/bin`. `None`:
    /// the link API compiles them. When `ptxas` fails, or the driver refuses its cubin (a toolkit
    /// newer than the driver), the kernel is compiled by the driver's JIT and
    /// [`CompileStats::disk`](super::CompileStats::disk) says why.
    pub ptxas: Option<PathBuf>,
}

impl CudaOptions {
    /// From the environment: `QD_PTXAS` (else the `ptxas` found), `QD_CUDA_CUBIN_CACHE` (unset: on
    /// where a `ptxas` is found; else on when set to anything but empty or `0`),
    /// `QD_CACHE_DISABLE` (wins over both) and `QD_CACHE_DIR` (else `~/.cache/qd`).
    ///
    /// ```
    /// use qd::runtime::CudaOptions;
    /// let options = CudaOptions::from_env();
    /// // `QD_CACHE_DISABLE=1` turns the disk cache off; `QD_CACHE_DIR` moves it.
    /// println!("disk cache {} in {:?}, cubins by {:?}", options.disk_cache, options.cache_dir, options.ptxas);
    /// let private = CudaOptions { cache_dir: Some(std::env::temp_dir().join("my-cubins")), ..options };
    /// assert!(private.cache_dir.is_some());
    /// ```
    pub fn from_env() -> CudaOptions {
        let ptxas = ptxas::find_from_env();
        let cubins = match std::env::var_os(CUBIN_CACHE_VAR) {
            None => ptxas.is_some(),
            Some(v) => !v.is_empty() && v != "0",
        };
        CudaOptions {
            disk_cache: cubins && !disk_cache::disabled_by_env(),
            cache_dir: disk_cache::dir_from_env(),
            ptxas,
        }
    }
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions::from_env()
    }
}

/// Without the `cuda` feature there is no CUDA runtime to open.
#[cfg(not(feature = "cuda"))]
pub(super) fn open(_ordinal: u32, _options: &CudaOptions, _name: &str) -> Result<Arc<dyn Runtime>> {
    Err(Error::BackendNotBuilt { backend: "cuda", feature: "cuda" })
}

/// Without the `cuda` feature no CUDA device is listed.
#[cfg(not(feature = "cuda"))]
pub(super) fn device_count() -> u32 {
    0
}

/// This runtime in the table of runtimes ([`super::RUNTIMES`]).
pub(super) const FAMILY: super::RuntimeFamily = super::RuntimeFamily {
    name: "cuda",
    about: "NVIDIA GPUs through PTX",
    name_hint: "expected cuda or cuda:N with N a device index (see `qd info`)",
    device_count,
    open: |ordinal, name| open(ordinal, &CudaOptions::from_env(), name),
};

impl super::Device {
    /// CUDA device `ordinal` (`cuda:N`), with the disk cache set from the environment.
    ///
    /// Without a driver (no `libcuda`), with no such device, or when the driver fails to start,
    /// this is [`Error::Unavailable`](super::Error::Unavailable) with the reason; in a build without the `cuda` feature it is
    /// [`Error::BackendNotBuilt`](super::Error::BackendNotBuilt).
    ///
    /// ```
    /// use qd::prelude::*;
    /// match Device::cuda(0) {
    ///     Ok(gpu) => println!("{}", gpu.describe()),
    ///     // No driver or GPU (`Unavailable`), or a build without the `cuda` feature (`BackendNotBuilt`).
    ///     Err(e) => assert!(matches!(e, QdError::Unavailable { .. } | QdError::BackendNotBuilt { .. }), "{e}"),
    /// }
    /// ```
    pub fn cuda(ordinal: u32) -> super::Result<super::Device> {
        super::Device::cuda_with(ordinal, CudaOptions::from_env())
    }

    /// CUDA device `ordinal` with explicit options (e.g. a private cache folder).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::CudaOptions;
    /// // A device whose cubins never touch the disk.
    /// let options = CudaOptions { disk_cache: false, ..CudaOptions::from_env() };
    /// if let Ok(gpu) = Device::cuda_with(0, options) {
    ///     println!("{} (no disk cache: {:?})", gpu.describe(), gpu.info().cache_dir);
    /// }
    /// ```
    pub fn cuda_with(ordinal: u32, options: CudaOptions) -> super::Result<super::Device> {
        let name = format!("cuda:{ordinal}");
        let runtime = open(ordinal, &options, &name)?;
        Ok(super::Device::new(name, runtime))
    }
}
