//! The runtime: device selection, typed device arrays, launches, the compiled-kernel cache, errors.
//!
//! User code is the same for every backend: pick a [`Device`], make [`DeviceArray`]s, launch
//! [`Kernel`](crate::trace::Kernel)s with [`Arg`]s. Every mistake comes back as an [`Error`], never
//! a panic.
//!
//! A [`Device`] holds one runtime behind the crate-private `Runtime` trait (`device.rs`); each
//! runtime is one module implementing it, with its arrays (`RuntimeArray`, `array.rs`) and loaded
//! kernels (`RuntimeKernel`):
//!
//! * the CPU emulator (`cpu`, `cpu:sgN`, `cpu.rs`): arrays are emulator buffers, kernels are
//!   emulator programs;
//! * CUDA (`cuda`, `cuda:N`, `cuda/`, cargo feature `cuda`): arrays live in GPU memory, kernels are
//!   PTX from the NVPTX lowering, compiled by the driver's JIT, with an in-memory cache per device
//!   and a cubin cache on disk shared between processes (`disk_cache.rs`);
//! * Vulkan (`vulkan`, `vulkan:N`, `vulkan/`, cargo feature `vulkan`): arrays are storage buffers
//!   in device-local memory (`gpu-allocator`), copied through a staging buffer or their mapping,
//!   kernels are SPIR-V from the SPIR-V lowering, compute pipelines cached in memory per device and
//!   on disk beside the cubins, each kernel's launch recorded once and resubmitted;
//! * Metal (`metal`, `metal:0`, `metal/`, cargo feature `metal`, macOS only): arrays are shared
//!   buffers, kernels are MSL from the MSL printer compiled by Metal; not yet run on Apple hardware;
//! * AMDGPU (`amdgpu`, `amdgpu:N`, `amdgpu/`, cargo feature `amdgpu`): HIP loaded at run time,
//!   arrays are `hipMalloc` allocations, kernels are LLVM IR from the AMDGPU printer made into code
//!   objects by ROCm's `llc`/`ld.lld` (cached on disk); not yet run on AMD hardware.
//!
//! A build without a GPU runtime's feature has no driver bindings for it (no `cudarc`, no `ash`):
//! its devices are [`Error::BackendNotBuilt`] and [`available_devices`] leaves them out. The code
//! generators (`backend/`) are always built.
//!
//! The GPU runtimes are found through one table, `RUNTIMES` (`RuntimeFamily`): each runtime
//! module exports a `FAMILY` with its name, how to count its devices and how to open one, and
//! defines its own `Device::<name>` constructor; [`Device::from_name`], [`available_devices`] and
//! `qd info` read the table. A new runtime is its folder plus one `mod` line and one entry here.
//!
//! All share the argument checks ([`Error::Argument`]) and the D1 grid of range kernels
//! (`launch.rs`), so a mistake reads the same on every backend. The rest: `errors.rs` ([`Error`]),
//! `info.rs` ([`DeviceInfo`], [`CompileStats`]), `cache.rs` (the in-memory kernel cache).

mod amdgpu;
mod array;
mod cache;
mod cpu;
mod cuda;
mod device;
mod disk_cache;
mod errors;
mod info;
mod launch;
mod metal;
mod vulkan;

pub use array::{Arg, ArrayHandle, DeviceArray};
pub use cuda::{CudaOptions, PtxCode, PtxParam, CUBIN_CACHE_VAR, PTXAS_VAR};
pub use device::{CompiledKernel, Device};
pub use disk_cache::{CACHE_DIR_VAR, CACHE_DISABLE_VAR};
pub use errors::{Error, Result};
pub use info::{CompileStats, DeviceInfo, DiskCacheUse, RuntimeCounters};
pub use launch::{range_bounds, RANGE_GRID_CAP};
pub use vulkan::{SpirvCode, SpirvParam, VulkanOptions, VULKAN_STAGING_VAR};

/// One GPU runtime as device names see it: `<name>` and `<name>:N` open its device `N`.
pub(crate) struct RuntimeFamily {
    /// The name before `:N` (`cuda`, `vulkan`, `metal`, `amdgpu`).
    pub(crate) name: &'static str,
    /// What its devices are, for `qd info`.
    pub(crate) about: &'static str,
    /// What a name of this family must look like, for the error when `:N` is not a number.
    pub(crate) name_hint: &'static str,
    /// How many devices this machine has: 0 without the driver, or in a build without the feature.
    pub(crate) device_count: fn() -> u32,
    /// Opens device `ordinal`, named `name` in errors and in [`Device::name`]: the driver missing,
    /// no such device, a device qd cannot use or the feature left out are typed errors.
    pub(crate) open: fn(ordinal: u32, name: &str) -> Result<std::sync::Arc<dyn device::Runtime>>,
}

/// Every GPU runtime, in the order devices are listed (the emulator is not in it: it is always
/// there and has its own names, `cpu` and `cpu:sgN`).
pub(crate) const RUNTIMES: &[RuntimeFamily] = &[cuda::FAMILY, vulkan::FAMILY, metal::FAMILY, amdgpu::FAMILY];

/// The GPU runtime families by name, with what their devices are (`qd info`'s list): `cuda`,
/// `vulkan`, `metal`, `amdgpu`.
///
/// ```
/// let names: Vec<&str> = qd::runtime::runtime_families().map(|(name, _)| name).collect();
/// assert_eq!(names, ["cuda", "vulkan", "metal", "amdgpu"]);
/// ```
pub fn runtime_families() -> impl Iterator<Item = (&'static str, &'static str)> {
    RUNTIMES.iter().map(|f| (f.name, f.about))
}

/// Launch grid for explicit kernels: the number of blocks.
pub type Grid = u32;

/// Every device name [`Device::from_name`] accepts on this machine: `cpu`, the other `cpu:sgN`,
/// then `cuda:N` for each GPU the CUDA driver reports (none without a driver, or in a build without
/// the `cuda` feature), then `vulkan:N` for each device the Vulkan loader enumerates, in its order
/// (none without a loader or driver, or in a build without the `vulkan` feature), then `metal:0`
/// on a Mac with the `metal` feature, then `amdgpu:N` for each GPU HIP reports (none without ROCm,
/// or in a build without the `amdgpu` feature).
///
/// A listed Vulkan device may still be unusable (too old, missing subgroup operations):
/// [`Device::from_name`] says why.
///
/// ```
/// let names = qd::runtime::available_devices();
/// assert_eq!(&names[..5], ["cpu", "cpu:sg4", "cpu:sg8", "cpu:sg16", "cpu:sg64"]);
/// for gpu in &names[5..] {
///     println!("also here: {gpu}"); // cuda:N, vulkan:N, ... found on this machine
/// }
/// ```
pub fn available_devices() -> Vec<String> {
    let mut names = vec!["cpu".to_string()];
    names.extend(cpu::SUBGROUP_SIZES.iter().filter(|&&sg| sg != 32).map(|sg| format!("cpu:sg{sg}")));
    for family in RUNTIMES {
        names.extend((0..(family.device_count)()).map(|i| format!("{}:{i}", family.name)));
    }
    names
}
