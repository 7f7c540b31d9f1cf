//! The Vulkan runtime: any Vulkan 1.1+ device with compute subgroups (lavapipe on CPU-only machines
//! and in CI, the NVIDIA driver on the GPU machines) through `ash`, with `libvulkan` loaded at run
//! time, so a machine without a loader, a driver or a device gets [`Error::Unavailable`](crate::runtime::Error::Unavailable) naming
//! what is missing and how to install it, never a panic.
//!
//! * Device (`vulkan:N`, N in the loader's order, as `qd info` lists them): one logical device per
//!   physical device and process, shared by every [`Device`](super::Device) naming it, with one
//!   compute queue. The subgroup properties must cover BASIC, VOTE, BALLOT, SHUFFLE and
//!   SHUFFLE_RELATIVE in compute shaders, and `shaderInt64` must exist (ballots are u64); the
//!   optional features (f64, 8/16-bit storage, f16, 64-bit atomics, f32 atomic add, the Vulkan memory
//!   model, extended subgroup types, subgroup size control) are enabled where they exist and become
//!   the `SpirvCaps` the lowering reads. At creation a probe kernel measures the subgroup size the
//!   device really runs (lavapipe's property and its executed size can differ); kernels are traced
//!   for the measured size, or for the property when the probe cannot run (the device's
//!   [`info`](super::Device::info) says which).
//! * Memory (`memory.rs`): arrays in device-local memory chosen by `gpu-allocator` from the
//!   device's memory types, sub-allocated from shared blocks. Host copies go through the array's
//!   mapping where that memory is also host-visible and coherent (lavapipe, integrated GPUs; reads
//!   also need it host-cached), else through one staging buffer per device (64 MiB, host-cached, copy
//!   commands piece by piece); `QD_VULKAN_STAGING=1` or [`VulkanOptions::staging`] forces the staging
//!   path anywhere. Copies and launches are ordered by the queue lock and end with a barrier.
//! * Kernels: SPIR-V from the lowering (or [`Device::override_spirv`](super::Device::override_spirv)),
//!   a descriptor set layout from its parameters, a compute pipeline per kernel held in the device's
//!   in-memory cache, built through the pipeline cache on disk (`pipeline_cache.rs`, beside CUDA's
//!   cubins; `QD_CACHE_DISABLE=1` turns it off). With subgroup size control the pipeline requires the
//!   traced subgroup size and full subgroups, so every subgroup of a block is the width the kernel was
//!   traced for.
//! * Launch (the ABI of `backend::spirv`): descriptor set 0; binding 0 is the *parameter block*, one
//!   u64 slot per kernel parameter in order (an array's slot holds its element count, a scalar's its
//!   bits zero-extended, bool 0 or 1), written per launch; array parameter `j` (counting arrays only)
//!   is the storage buffer at binding `1 + j`. Each kernel owns its parameter block, descriptor set
//!   and command buffer (`launch.rs`): the dispatch `(grid, 1, 1)` of the module's workgroup size,
//!   between two timestamps, then a barrier to the host, recorded again only when the arrays or grid
//!   differ from the kernel's last launch; then a fence wait (at most `QD_VULKAN_TIMEOUT_S` seconds,
//!   60 by default: a kernel still running then cannot be stopped, so the device is unusable
//!   afterwards). [`Device::launch_timed`](super::Device::launch_timed) reads the timestamps (the
//!   device's time for the dispatch; the host clock on a queue without timestamps).
//!   Every failing Vulkan call is an [`Error::Driver`](crate::runtime::Error::Driver) naming the kernel and the call.
//! * Probes (`probe.rs`): besides the subgroup size, whether the driver silently ends long loops
//!   (lavapipe: 65535 iterations per invocation), reported as `DeviceInfo::loop_iteration_limit`.
//!
//! The public types here ([`SpirvCode`], [`SpirvParam`]) are always built; the loader bindings
//! (`ash`) and everything that calls them only with the `vulkan` cargo feature. Without it,
//! `vulkan:N` is [`Error::BackendNotBuilt`](crate::runtime::Error::BackendNotBuilt) and no Vulkan
//! device is listed.
//!
//! Files: `instance.rs` (the loader and instance), `device.rs` (properties, requirements, features,
//! the logical device), `context.rs` (the shared state `Core`, submissions, the device handle),
//! `memory.rs` (the allocator, arrays, host copies), `launch.rs` (pipelines, the parameter block,
//! recorded dispatches), `pipeline_cache.rs` (pipelines through the disk cache), `probe.rs`,
//! `runtime.rs` (the `Runtime` implementation the runtime's `Device` holds).

#[cfg(feature = "vulkan")]
mod context;
#[cfg(feature = "vulkan")]
mod device;
#[cfg(feature = "vulkan")]
mod instance;
#[cfg(feature = "vulkan")]
mod launch;
#[cfg(feature = "vulkan")]
mod memory;
#[cfg(feature = "vulkan")]
mod pipeline_cache;
#[cfg(feature = "vulkan")]
mod probe;
#[cfg(feature = "vulkan")]
mod runtime;

#[cfg(feature = "vulkan")]
pub(super) use instance::device_count;
#[cfg(feature = "vulkan")]
use runtime::open_with;

// The sibling files name these through `super::`, as when they lived here.
#[cfg(feature = "vulkan")]
use crate::runtime::cache::lock;
#[cfg(feature = "vulkan")]
use context::{check, Bound, Core, SubgroupChoice, Submit, VkFailure};

use super::disk_cache;
#[cfg(not(feature = "vulkan"))]
use super::Error;
use super::{Device, Result};
use crate::ir::DType;
use std::path::PathBuf;
#[cfg(feature = "vulkan")]
use std::time::Duration;
use {super::device::Runtime, std::sync::Arc};

/// Environment variable that makes Vulkan host copies go through the staging buffer (`1`).
pub const VULKAN_STAGING_VAR: &str = "QD_VULKAN_STAGING";

/// Settings of a Vulkan device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanOptions {
    /// Copy arrays between the host and the device through the staging buffer even where their
    /// memory is host-visible (`QD_VULKAN_STAGING=1`): the path of a discrete GPU, taken on any
    /// device. Off, an array whose device-local memory is also host-visible and coherent (lavapipe,
    /// integrated GPUs) is copied through its mapping.
    pub staging: bool,
    /// Keep compiled pipelines on disk for later processes (`QD_CACHE_DISABLE=1` turns it off).
    pub disk_cache: bool,
    /// The cache folder (`$QD_CACHE_DIR`, else `~/.cache/qd`), shared with CUDA; `None` with
    /// `disk_cache` means no folder could be found, so nothing is cached.
    pub cache_dir: Option<PathBuf>,
}

impl VulkanOptions {
    /// From the environment: `QD_VULKAN_STAGING`, `QD_CACHE_DISABLE` and `QD_CACHE_DIR` (else
    /// `~/.cache/qd`). `QD_VULKAN_STAGING` is on when set to anything but empty or `0`.
    ///
    /// ```
    /// use qd::runtime::VulkanOptions;
    /// let options = VulkanOptions::from_env();
    /// println!("staging {}, disk cache {} in {:?}", options.staging, options.disk_cache, options.cache_dir);
    /// // Force the staging path (what a discrete GPU takes) whatever the environment says.
    /// let staged = VulkanOptions { staging: true, ..options };
    /// assert!(staged.staging);
    /// ```
    pub fn from_env() -> VulkanOptions {
        VulkanOptions {
            staging: std::env::var_os(VULKAN_STAGING_VAR).is_some_and(|v| !v.is_empty() && v != "0"),
            disk_cache: !disk_cache::disabled_by_env(),
            cache_dir: disk_cache::dir_from_env(),
        }
    }
}

impl Default for VulkanOptions {
    fn default() -> Self {
        VulkanOptions::from_env()
    }
}

/// How long a launch may run before the runtime gives up on it (`QD_VULKAN_TIMEOUT_S` overrides).
/// A kernel still running then cannot be stopped: the device is unusable for the rest of the process.
#[cfg(feature = "vulkan")]
const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The SPIR-V magic number, the first word of every module.
#[cfg(feature = "vulkan")]
const SPIRV_MAGIC: u32 = 0x0723_0203;

/// A SPIR-V module as the Vulkan runtime loads it: what the SPIR-V lowering produces, or what a test
/// or a debugging session hands to [`Device::override_spirv`](super::Device::override_spirv).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpirvCode {
    /// The module's words (magic number first).
    pub words: Vec<u32>,
    /// The `GLCompute` entry point to run.
    pub entry: String,
    /// The entry point's `LocalSize` x (y = z = 1): the kernel's `block_dim`.
    pub workgroup_size: u32,
    /// How each kernel parameter is bound, in order (one entry per IR parameter).
    pub params: Vec<SpirvParam>,
    /// Workgroup (shared) memory the module declares, in bytes.
    pub shared_bytes: u32,
}

/// How one kernel parameter reaches a SPIR-V module (besides its slot in the parameter block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpirvParam {
    /// A storage buffer at `binding` of set 0: 1 + the array's index among the array parameters.
    Array {
        /// Element type.
        dtype: DType,
        /// Its binding.
        binding: u32,
    },
    /// Only its slot in the parameter block.
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// Without the `vulkan` feature there is no Vulkan runtime to open.
#[cfg(not(feature = "vulkan"))]
fn open_with(_ordinal: u32, _options: &VulkanOptions, _name: &str) -> Result<Arc<dyn Runtime>> {
    Err(Error::BackendNotBuilt { backend: "vulkan", feature: "vulkan" })
}

/// Without the `vulkan` feature no Vulkan device is listed.
#[cfg(not(feature = "vulkan"))]
pub(super) fn device_count() -> u32 {
    0
}

/// Opens device `ordinal` with the options of the environment (`Device::from_name`, `vulkan:N`).
fn open(ordinal: u32, name: &str) -> Result<Arc<dyn Runtime>> {
    open_with(ordinal, &VulkanOptions::from_env(), name)
}

/// This runtime in the table of runtimes ([`super::RUNTIMES`]).
pub(super) const FAMILY: super::RuntimeFamily = super::RuntimeFamily {
    name: "vulkan",
    about: "Vulkan through SPIR-V",
    name_hint: "expected vulkan or vulkan:N with N a device index (see `qd info`)",
    device_count,
    open,
};

impl super::Device {
    /// Vulkan device `ordinal` (`vulkan:N`, in the order of [`available_devices`](super::available_devices)
    /// and `qd info`).
    ///
    /// Without a Vulkan loader (`libvulkan.so.1`), without a driver, with no such device, or with a
    /// device that lacks what qd needs (Vulkan 1.1, compute subgroups with basic, vote, ballot,
    /// shuffle and relative shuffle operations, `shaderInt64`), this is [`Error::Unavailable`](super::Error::Unavailable) with
    /// the reason and, where something is missing, how to install it; in a build without the
    /// `vulkan` feature it is [`Error::BackendNotBuilt`](super::Error::BackendNotBuilt). Every `Device` naming the same ordinal
    /// shares one logical device, so arrays move freely between them.
    ///
    /// ```
    /// use qd::prelude::*;
    /// match Device::vulkan(0) {
    ///     Ok(device) => println!("{} (subgroups of {})", device.describe(), device.subgroup_size()),
    ///     Err(e) => println!("no Vulkan device: {e}"), // the reason, e.g. what to install
    /// }
    /// ```
    pub fn vulkan(ordinal: u32) -> super::Result<super::Device> {
        super::Device::vulkan_with(ordinal, VulkanOptions::from_env())
    }

    /// Vulkan device `ordinal` with explicit options (e.g. `staging: true` to take the staging path
    /// of discrete GPUs on any device, or a private cache folder). [`Device::vulkan`] takes them
    /// from the environment; errors are the same.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::VulkanOptions;
    ///
    /// let options = VulkanOptions { staging: true, ..VulkanOptions::from_env() };
    /// match Device::vulkan_with(0, options) {
    ///     Ok(d) => {
    ///         let a = d.array_from(&[1u32, 2, 3]).unwrap();
    ///         assert_eq!(a.to_vec().unwrap(), vec![1, 2, 3]);
    ///     }
    ///     Err(e) => eprintln!("no Vulkan device here: {e}"),
    /// }
    /// ```
    pub fn vulkan_with(ordinal: u32, options: VulkanOptions) -> Result<Device> {
        let name = format!("vulkan:{ordinal}");
        let runtime = open_with(ordinal, &options, &name)?;
        Ok(Device::new(name, runtime))
    }
}
