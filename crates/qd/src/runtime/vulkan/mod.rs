//! The Vulkan runtime: any Vulkan 1.1+ device with compute subgroups (lavapipe on CPU-only machines
//! and in CI, the NVIDIA driver on the GPU machines) through `ash`, with `libvulkan` loaded at run
//! time, so a machine without a loader, a driver or a device gets [`Error::Unavailable`] naming
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
//! * Memory: one host-visible, host-coherent buffer per array (correctness first), mapped for its
//!   whole life; copies are `memcpy`s under the queue lock, so they are ordered with launches.
//! * Kernels: SPIR-V from the lowering (or [`Device::override_spirv`](super::Device::override_spirv)),
//!   a descriptor set layout from its parameters, a compute pipeline per kernel held in the device's
//!   in-memory cache. With subgroup size control the pipeline requires the traced subgroup size and
//!   full subgroups, so every subgroup of a block is the width the kernel was traced for.
//! * Launch (the ABI of `backend::spirv`): descriptor set 0; binding 0 is the *parameter block*, one
//!   u64 slot per kernel parameter in order (an array's slot holds its element count, a scalar's its
//!   bits zero-extended, bool 0 or 1), written per launch; array parameter `j` (counting arrays only)
//!   is the storage buffer at binding `1 + j`. Dispatch `(grid, 1, 1)` of the module's workgroup
//!   size, then a barrier to the host and a fence wait (at most `QD_VULKAN_TIMEOUT_S` seconds, 60 by
//!   default: a kernel still running then cannot be stopped, so the device is unusable afterwards).
//!   Every failing Vulkan call is an [`Error::Driver`] naming the kernel and the call.

mod instance;
mod probe;

pub(crate) use instance::device_count;

use super::{lock, CompileStats, Error, Result};
use crate::backend::{spirv, Target};
use crate::ir::{self, DType, Param};
use crate::trace::TraceError;
use ash::vk;
use instance::{version_text, MIN_API};
use std::ffi::{CStr, CString};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long a launch may run before the runtime gives up on it (`QD_VULKAN_TIMEOUT_S` overrides).
/// A kernel still running then cannot be stopped: the device is unusable for the rest of the process.
const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The SPIR-V magic number, the first word of every module.
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

/// Lowers `kernel` (traced for `dev`) to SPIR-V for `dev`: its subgroup width and features.
pub(crate) fn lower(kernel: &ir::Kernel, dev: &VulkanDevice) -> std::result::Result<SpirvCode, TraceError> {
    let m = spirv::lower_kernel(kernel, &dev.spirv_target())?;
    Ok(SpirvCode {
        words: m.words,
        entry: m.entry,
        workgroup_size: m.workgroup_size,
        shared_bytes: m.shared_bytes,
        params: m
            .params
            .into_iter()
            .map(|p| match p {
                spirv::ParamAbi::Array { dtype, binding } => SpirvParam::Array { dtype, binding },
                spirv::ParamAbi::Scalar { dtype } => SpirvParam::Scalar { dtype },
            })
            .collect(),
    })
}

/// A failed Vulkan call: its name and the result.
#[derive(Clone, Debug)]
pub(crate) struct VkFailure {
    call: &'static str,
    message: String,
}

impl VkFailure {
    fn new(call: &'static str, r: vk::Result) -> VkFailure {
        VkFailure { call, message: format!("{r:?}: {r}") }
    }

    /// As an [`Error::Driver`] for `kernel` (or an operation like `<host copy>`).
    pub(crate) fn into_error(self, kernel: &str) -> Error {
        Error::Driver { kernel: kernel.to_string(), call: self.call.to_string(), message: self.message }
    }
}

/// `r` with a failure named after `call`.
fn check<T>(call: &'static str, r: ash::prelude::VkResult<T>) -> std::result::Result<T, VkFailure> {
    r.map_err(|e| VkFailure::new(call, e))
}

/// The optional device features qd uses, as found (and then enabled).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Features {
    float64: bool,
    int16: bool,
    int8: bool,
    storage8: bool,
    storage16: bool,
    float16: bool,
    buffer_int64_atomics: bool,
    shared_int64_atomics: bool,
    buffer_f32_atomics: bool,
    buffer_f32_atomic_add: bool,
    shared_f32_atomics: bool,
    shared_f32_atomic_add: bool,
    memory_model: bool,
    memory_model_device_scope: bool,
    subgroup_extended_types: bool,
    size_control: bool,
    full_subgroups: bool,
}

impl Features {
    /// What the lowering may use. A storage width counts only with its arithmetic (`shaderInt8`,
    /// `shaderInt16`), 64-bit atomics only on both buffers and shared memory, f32 atomic add likewise.
    fn spirv_caps(&self, core: &Core) -> spirv::SpirvCaps {
        spirv::SpirvCaps {
            float32_atomic_add: self.buffer_f32_atomic_add && self.shared_f32_atomic_add,
            float64: self.float64,
            int64_atomics: self.buffer_int64_atomics && self.shared_int64_atomics,
            int8_storage: self.storage8 && self.int8,
            int16_storage: self.storage16 && self.int16,
            float16: self.float16,
            max_shared_bytes: core.props.limits.max_shared,
        }
    }

    /// The enabled features, for `describe`.
    fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |on: bool, name| {
            if on {
                v.push(name)
            }
        };
        add(self.float64, "f64");
        add(self.float16, "f16");
        add(self.int8 && self.storage8, "8-bit storage");
        add(self.int16 && self.storage16, "16-bit storage");
        add(self.buffer_int64_atomics && self.shared_int64_atomics, "64-bit atomics");
        add(self.buffer_f32_atomic_add && self.shared_f32_atomic_add, "f32 atomic add");
        add(self.memory_model, "memory model");
        v
    }
}

/// Device limits the runtime checks before the driver sees a mistake.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_shared: u32,
    max_invocations: u32,
    max_size_x: u32,
    pub(crate) max_count_x: u32,
    max_storage_range: u64,
    max_stage_storage_buffers: u32,
    max_set_storage_buffers: u32,
    max_alloc: u64,
}

/// Subgroup size control, when the device has it (`VK_EXT_subgroup_size_control` or Vulkan 1.3).
#[derive(Clone, Copy, Debug)]
struct SizeControl {
    min: u32,
    max: u32,
    max_workgroup_subgroups: u32,
    compute: bool,
}

/// What the driver says about a device.
#[derive(Clone, Debug)]
pub(crate) struct Props {
    pub(crate) ordinal: u32,
    pub(crate) model: String,
    /// `CPU`, `discrete GPU`, ...
    pub(crate) device_type: &'static str,
    /// The device's API version (packed).
    pub(crate) api_version: u32,
    /// Driver name and info (`llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)`), else the vendor's version.
    pub(crate) driver: String,
    /// `subgroupSize` as reported.
    pub(crate) reported_subgroup_size: u32,
    size_control: Option<SizeControl>,
    pub(crate) limits: Limits,
    /// Sum of the device-local heaps.
    pub(crate) memory_bytes: u64,
    /// The highest SPIR-V version (`0x00010300` for 1.3) the device accepts.
    spirv_max: u32,
}

impl Props {
    /// `vulkan:N (model)`, for messages.
    fn label(&self) -> String {
        format!("vulkan:{} ({})", self.ordinal, self.model)
    }
}

/// The subgroup width kernels are traced for, and how it was found.
#[derive(Clone, Debug)]
pub(crate) struct SubgroupChoice {
    /// The width.
    pub(crate) size: u32,
    /// How it was found (`measured`, or why the property is trusted).
    pub(crate) note: String,
    /// `requiredSubgroupSize` for pipelines, with size control.
    required: Option<u32>,
}

/// Host-visible memory holding one buffer, mapped for its life.
struct HostBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    /// Bytes allocated (at least the bytes asked for).
    size: u64,
}

/// What one submission at a time uses: the queue and its command buffer, fence, descriptor pool and
/// parameter block. Behind the device's mutex, which also orders host copies with launches.
struct Submit {
    queue: vk::Queue,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    desc_pool: vk::DescriptorPool,
    /// Storage-buffer descriptors `desc_pool` holds (one set at a time).
    desc_capacity: u32,
    params: Option<HostBuffer>,
    /// Why the queue can no longer be used (a launch that timed out, a lost device).
    wedged: Option<String>,
}

// SAFETY: the mapped pointer is only used under the device's mutex; handles may move threads.
unsafe impl Send for Submit {}

/// A logical device and what every kernel and array on it shares.
struct Core {
    device: ash::Device,
    props: Props,
    features: Features,
    memory: vk::PhysicalDeviceMemoryProperties,
    queue_family: u32,
    pipeline_cache: vk::PipelineCache,
    subgroup: OnceLock<SubgroupChoice>,
    /// What the loop probe found: the iterations after which loops end, if they do.
    loop_limit: OnceLock<std::result::Result<Option<u64>, String>>,
    submit: Mutex<Submit>,
}

impl Drop for Core {
    fn drop(&mut self) {
        let s = self.submit.get_mut().unwrap_or_else(|p| p.into_inner());
        if s.wedged.is_some() {
            // A kernel may still be running: leak everything rather than free memory it uses.
            return;
        }
        // SAFETY: every array and kernel holds an `Arc<Core>`, so none is left; the queue is idle
        // after the wait; destroying null handles is allowed.
        unsafe {
            let _ = self.device.device_wait_idle();
            if let Some(p) = s.params.take() {
                free_host_buffer(&self.device, &p);
            }
            self.device.destroy_descriptor_pool(s.desc_pool, None);
            self.device.destroy_fence(s.fence, None);
            self.device.destroy_command_pool(s.pool, None);
            self.device.destroy_pipeline_cache(self.pipeline_cache, None);
            self.device.destroy_device(None);
        }
    }
}

/// Frees a host buffer. It must not be in use by a pending submission.
unsafe fn free_host_buffer(device: &ash::Device, b: &HostBuffer) {
    device.destroy_buffer(b.buffer, None);
    device.free_memory(b.memory, None);
}

/// The logical devices of this process, one per ordinal, while something uses them.
static OPEN: Mutex<Vec<(u32, Weak<Core>)>> = Mutex::new(Vec::new());

/// One Vulkan device.
pub(crate) struct VulkanDevice {
    core: Arc<Core>,
}

impl VulkanDevice {
    /// Opens device `ordinal` (or reuses this process's logical device for it), or says why it
    /// cannot be used.
    pub(crate) fn open(ordinal: u32) -> std::result::Result<VulkanDevice, String> {
        let v = instance::vk()?;
        let count = v.physical.len() as u32;
        if ordinal >= count {
            return Err(format!(
                "there is no Vulkan device {ordinal}; this machine has {count} (vulkan:0 to vulkan:{})",
                count - 1
            ));
        }
        let mut open = lock(&OPEN);
        if let Some(core) = open.iter().find(|(o, _)| *o == ordinal).and_then(|(_, w)| w.upgrade()) {
            return Ok(VulkanDevice { core });
        }
        let core = Arc::new(Core::create(v, ordinal)?);
        let choice = probe::measure(&core);
        let _ = core.subgroup.set(choice);
        let _ = core.loop_limit.set(probe::loop_limit(&core));
        open.retain(|(_, w)| w.strong_count() > 0);
        open.push((ordinal, Arc::downgrade(&core)));
        Ok(VulkanDevice { core })
    }

    /// What the driver says about the device.
    pub(crate) fn props(&self) -> &Props {
        &self.core.props
    }

    /// The subgroup width kernels are traced for, and how it was found.
    pub(crate) fn subgroup(&self) -> SubgroupChoice {
        self.core.subgroup()
    }

    /// The loop iterations after which this device silently ends a kernel's loops (lavapipe 22.3:
    /// 65535 for all the loops of an invocation together), as the probe measured at creation; `None`
    /// when it found no limit (or could not tell: see [`loop_note`](Self::loop_note)).
    pub(crate) fn loop_iteration_limit(&self) -> Option<u64> {
        self.core.loop_limit.get().and_then(|r| r.clone().ok().flatten())
    }

    /// A line for `describe` about the loop probe, when it has something to say.
    pub(crate) fn loop_note(&self) -> Option<String> {
        match self.core.loop_limit.get()? {
            Ok(Some(n)) => Some(format!("loops end after {n} iterations")),
            Ok(None) => None,
            Err(e) => Some(format!("loop limit not measured: {e}")),
        }
    }

    /// The enabled optional features, by name.
    pub(crate) fn feature_names(&self) -> Vec<&'static str> {
        self.core.features.names()
    }

    /// The target kernels are traced for.
    pub(crate) fn target(&self) -> Target {
        self.spirv_target().trace_target()
    }

    /// What the SPIR-V lowering targets on this device: the traced subgroup width and the features.
    fn spirv_target(&self) -> spirv::SpirvTarget {
        spirv::SpirvTarget { subgroup_size: self.subgroup().size, caps: self.core.features.spirv_caps(&self.core) }
    }

    /// Whether `b` lives on this device.
    pub(crate) fn owns(&self, b: &VulkanBuffer) -> bool {
        Arc::ptr_eq(&self.core, &b.core)
    }

    /// A new array of `len` elements of `dtype`: zeroed, or copied from `init` (`len` elements).
    pub(crate) fn alloc(
        &self,
        dtype: DType,
        len: usize,
        init: Option<&[u8]>,
    ) -> std::result::Result<VulkanBuffer, VkFailure> {
        let bytes = (len as u64).checked_mul(dtype.size_bytes() as u64).ok_or_else(|| VkFailure {
            call: "vkCreateBuffer",
            message: format!("{len} elements of {dtype} overflow a 64-bit size"),
        })?;
        let mem = self.core.alloc_host_buffer(bytes)?;
        let buf = VulkanBuffer { core: self.core.clone(), mem, len, dtype };
        if let Some(data) = init {
            buf.write(data)?;
        }
        Ok(buf)
    }

    /// Loads a kernel: checks the module against the kernel and the device's limits, then creates
    /// its shader module, layouts and compute pipeline. Fills the load part of `stats`.
    pub(crate) fn load(&self, kernel: ir::Kernel, code: SpirvCode, stats: &mut CompileStats) -> Result<VulkanKernel> {
        let start = Instant::now();
        let k = self.core.load(kernel, code, &self.subgroup())?;
        stats.load = start.elapsed();
        Ok(k)
    }

    /// Launches `k` on `grid` workgroups with already checked `args` and waits for it.
    pub(crate) fn launch(&self, k: &VulkanKernel, grid: u32, args: &[Bound<'_>]) -> Result<()> {
        self.core.launch(k, grid, args)
    }
}

/// An argument after checking, as the launch binds it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bound<'a> {
    /// A device array.
    Array(&'a VulkanBuffer),
    /// A scalar's bits (zero-extended).
    Scalar(u64),
}

impl Core {
    /// Creates the logical device for physical device `ordinal`: checks what qd needs, enables the
    /// optional features that exist, and makes the queue's command buffer, fence and pools.
    fn create(v: &instance::Vk, ordinal: u32) -> std::result::Result<Core, String> {
        let inst = &v.instance;
        let pd = v.physical[ordinal as usize];
        // SAFETY: a physical device of this instance; valid out-structures throughout.
        let base = unsafe { inst.get_physical_device_properties(pd) };
        let model = base.device_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        let label = format!("vulkan:{ordinal} ({model})");
        if base.api_version < MIN_API {
            return Err(format!(
                "{label} supports Vulkan {}; qd needs 1.1 (subgroup operations)",
                version_text(base.api_version)
            ));
        }
        let api = base.api_version.min(vk::API_VERSION_1_3);
        let v12 = api >= vk::API_VERSION_1_2;
        let v13 = api >= vk::API_VERSION_1_3;
        // SAFETY: as above.
        let exts: Vec<CString> = unsafe { inst.enumerate_device_extension_properties(pd) }
            .map_err(|e| format!("{label}: vkEnumerateDeviceExtensionProperties failed: {e:?}: {e}"))?
            .iter()
            .filter_map(|e| e.extension_name_as_c_str().ok().map(CStr::to_owned))
            .collect();
        let has = |name: &CStr| exts.iter().any(|e| e.as_c_str() == name);

        // Properties.
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
        let mut size_ctl = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let has_size_ctl = v13 || has(ash::ext::subgroup_size_control::NAME);
        let has_driver = v12 || has(ash::khr::driver_properties::NAME);
        {
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup).push_next(&mut maint3);
            if has_size_ctl {
                p2 = p2.push_next(&mut size_ctl);
            }
            if has_driver {
                p2 = p2.push_next(&mut driver);
            }
            // SAFETY: a chain of structures this device version or its extensions define.
            unsafe { inst.get_physical_device_properties2(pd, &mut p2) };
        }
        // SAFETY: as above.
        let families = unsafe { inst.get_physical_device_queue_family_properties(pd) };
        let queue_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0)
            .ok_or_else(|| format!("{label} has no compute queue"))? as u32;
        if !subgroup.supported_stages.contains(vk::ShaderStageFlags::COMPUTE) {
            return Err(format!(
                "{label} has no subgroup operations in compute shaders (supported stages: {:#x})",
                subgroup.supported_stages.as_raw()
            ));
        }
        let ops = subgroup.supported_operations;
        let missing: Vec<&str> = SUBGROUP_OPS[..5].iter().filter(|(f, _)| !ops.contains(*f)).map(|(_, n)| *n).collect();
        if !missing.is_empty() {
            let present: Vec<&str> = SUBGROUP_OPS.iter().filter(|(f, _)| ops.contains(*f)).map(|(_, n)| *n).collect();
            return Err(format!(
                "{label} lacks subgroup operations qd needs in compute shaders: {} (it has {})",
                missing.join(", "),
                if present.is_empty() { "none".to_string() } else { present.join(", ") }
            ));
        }
        let sg = subgroup.subgroup_size;
        if !sg.is_power_of_two() || !(4..=128).contains(&sg) {
            return Err(format!("{label} reports a subgroup size of {sg}; qd needs a power of two from 4 to 128"));
        }

        // Features.
        let mut f16bit = vk::PhysicalDevice16BitStorageFeatures::default();
        let mut f8bit = vk::PhysicalDevice8BitStorageFeatures::default();
        let mut f16i8 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
        let mut fat64 = vk::PhysicalDeviceShaderAtomicInt64Features::default();
        let mut fmm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default();
        let mut fatf = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let mut fext = vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures::default();
        let mut fsize = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
        let ext8 = !v12 && has(ash::khr::_8bit_storage::NAME);
        let ext16i8 = !v12 && has(ash::khr::shader_float16_int8::NAME);
        let extat64 = !v12 && has(ash::khr::shader_atomic_int64::NAME);
        let extmm = !v12 && has(ash::khr::vulkan_memory_model::NAME);
        let extsgt = !v12 && has(ash::khr::shader_subgroup_extended_types::NAME);
        let extsize = !v13 && has(ash::ext::subgroup_size_control::NAME);
        let extatf = has(ash::ext::shader_atomic_float::NAME);
        let core_features = {
            let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f16bit);
            if v12 || ext8 {
                f2 = f2.push_next(&mut f8bit);
            }
            if v12 || ext16i8 {
                f2 = f2.push_next(&mut f16i8);
            }
            if v12 || extat64 {
                f2 = f2.push_next(&mut fat64);
            }
            if v12 || extmm {
                f2 = f2.push_next(&mut fmm);
            }
            if v12 || extsgt {
                f2 = f2.push_next(&mut fext);
            }
            if v13 || extsize {
                f2 = f2.push_next(&mut fsize);
            }
            if extatf {
                f2 = f2.push_next(&mut fatf);
            }
            // SAFETY: a chain of structures this device version or its extensions define.
            unsafe { inst.get_physical_device_features2(pd, &mut f2) };
            f2.features
        };
        if core_features.shader_int64 == 0 {
            return Err(format!("{label} lacks shaderInt64, which qd needs (ballots are 64-bit)"));
        }
        let on = |b: vk::Bool32| b != 0;
        let features = Features {
            float64: on(core_features.shader_float64),
            int16: on(core_features.shader_int16),
            int8: on(f16i8.shader_int8),
            storage8: on(f8bit.storage_buffer8_bit_access),
            storage16: on(f16bit.storage_buffer16_bit_access),
            float16: on(f16i8.shader_float16),
            buffer_int64_atomics: on(fat64.shader_buffer_int64_atomics),
            shared_int64_atomics: on(fat64.shader_shared_int64_atomics),
            buffer_f32_atomics: on(fatf.shader_buffer_float32_atomics),
            buffer_f32_atomic_add: on(fatf.shader_buffer_float32_atomic_add),
            shared_f32_atomics: on(fatf.shader_shared_float32_atomics),
            shared_f32_atomic_add: on(fatf.shader_shared_float32_atomic_add),
            memory_model: on(fmm.vulkan_memory_model),
            memory_model_device_scope: on(fmm.vulkan_memory_model_device_scope),
            subgroup_extended_types: on(fext.shader_subgroup_extended_types),
            size_control: has_size_ctl && on(fsize.subgroup_size_control),
            full_subgroups: has_size_ctl && on(fsize.compute_full_subgroups),
        };

        // Enable exactly what is used.
        let f = &features;
        let b = |x: bool| x as vk::Bool32;
        let enabled_core = vk::PhysicalDeviceFeatures {
            shader_float64: b(f.float64),
            shader_int64: vk::TRUE,
            shader_int16: b(f.int16),
            ..Default::default()
        };
        let mut e16bit = vk::PhysicalDevice16BitStorageFeatures::default().storage_buffer16_bit_access(f.storage16);
        let mut e8bit = vk::PhysicalDevice8BitStorageFeatures::default().storage_buffer8_bit_access(f.storage8);
        let mut e16i8 =
            vk::PhysicalDeviceShaderFloat16Int8Features::default().shader_int8(f.int8).shader_float16(f.float16);
        let mut eat64 = vk::PhysicalDeviceShaderAtomicInt64Features::default()
            .shader_buffer_int64_atomics(f.buffer_int64_atomics)
            .shader_shared_int64_atomics(f.shared_int64_atomics);
        let mut emm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default()
            .vulkan_memory_model(f.memory_model)
            .vulkan_memory_model_device_scope(f.memory_model_device_scope);
        let mut eatf = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomics(f.buffer_f32_atomics)
            .shader_buffer_float32_atomic_add(f.buffer_f32_atomic_add)
            .shader_shared_float32_atomics(f.shared_f32_atomics)
            .shader_shared_float32_atomic_add(f.shared_f32_atomic_add);
        let mut eext = vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures::default()
            .shader_subgroup_extended_types(f.subgroup_extended_types);
        let mut esize = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
            .subgroup_size_control(f.size_control)
            .compute_full_subgroups(f.full_subgroups);
        let mut ext_names: Vec<&CStr> = Vec::new();
        let mut e2 = vk::PhysicalDeviceFeatures2::default().features(enabled_core).push_next(&mut e16bit);
        if (v12 || ext8) && f.storage8 {
            e2 = e2.push_next(&mut e8bit);
            if ext8 {
                ext_names.push(ash::khr::_8bit_storage::NAME);
            }
        }
        if (v12 || ext16i8) && (f.int8 || f.float16) {
            e2 = e2.push_next(&mut e16i8);
            if ext16i8 {
                ext_names.push(ash::khr::shader_float16_int8::NAME);
            }
        }
        if (v12 || extat64) && (f.buffer_int64_atomics || f.shared_int64_atomics) {
            e2 = e2.push_next(&mut eat64);
            if extat64 {
                ext_names.push(ash::khr::shader_atomic_int64::NAME);
            }
        }
        if (v12 || extmm) && f.memory_model {
            e2 = e2.push_next(&mut emm);
            if extmm {
                ext_names.push(ash::khr::vulkan_memory_model::NAME);
            }
        }
        if (v12 || extsgt) && f.subgroup_extended_types {
            e2 = e2.push_next(&mut eext);
            if extsgt {
                ext_names.push(ash::khr::shader_subgroup_extended_types::NAME);
            }
        }
        if (v13 || extsize) && (f.size_control || f.full_subgroups) {
            e2 = e2.push_next(&mut esize);
            if extsize {
                ext_names.push(ash::ext::subgroup_size_control::NAME);
            }
        }
        if extatf && (f.buffer_f32_atomics || f.shared_f32_atomics) {
            e2 = e2.push_next(&mut eatf);
            ext_names.push(ash::ext::shader_atomic_float::NAME);
        }
        // SPIR-V 1.4 on a Vulkan 1.1 device.
        let spirv14 = !v12 && has(ash::khr::spirv_1_4::NAME) && has(ash::khr::shader_float_controls::NAME);
        if spirv14 {
            ext_names.push(ash::khr::spirv_1_4::NAME);
            ext_names.push(ash::khr::shader_float_controls::NAME);
        }
        let spirv_max = match api {
            a if a >= vk::API_VERSION_1_3 => 0x0001_0600,
            a if a >= vk::API_VERSION_1_2 => 0x0001_0500,
            _ if spirv14 => 0x0001_0400,
            _ => 0x0001_0300,
        };
        let ext_ptrs: Vec<*const std::ffi::c_char> = ext_names.iter().map(|n| n.as_ptr()).collect();
        let priorities = [1.0f32];
        let queue_info =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(queue_family).queue_priorities(&priorities)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .enabled_extension_names(&ext_ptrs)
            .push_next(&mut e2);
        // SAFETY: every enabled feature and extension was reported by this device.
        let device = unsafe { inst.create_device(pd, &info, None) }
            .map_err(|e| format!("{label}: vkCreateDevice failed: {e:?}: {e}"))?;

        // SAFETY: as above.
        let memory = unsafe { inst.get_physical_device_memory_properties(pd) };
        let memory_bytes = memory.memory_heaps[..memory.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .sum();
        let l = &base.limits;
        let driver_text = if has_driver {
            let name = driver.driver_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            let info = driver.driver_info_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            match (name.is_empty(), info.is_empty()) {
                (false, false) => format!("{name} {info}"),
                (false, true) => name,
                _ => format!("version {:#x}", base.driver_version),
            }
        } else {
            format!("version {:#x}", base.driver_version)
        };
        let props = Props {
            ordinal,
            model,
            device_type: device_type_text(base.device_type),
            api_version: base.api_version,
            driver: driver_text,
            reported_subgroup_size: sg,
            size_control: has_size_ctl.then_some(SizeControl {
                min: size_ctl.min_subgroup_size,
                max: size_ctl.max_subgroup_size,
                max_workgroup_subgroups: size_ctl.max_compute_workgroup_subgroups,
                compute: size_ctl.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE),
            }),
            limits: Limits {
                max_shared: l.max_compute_shared_memory_size,
                max_invocations: l.max_compute_work_group_invocations,
                max_size_x: l.max_compute_work_group_size[0],
                max_count_x: l.max_compute_work_group_count[0],
                max_storage_range: l.max_storage_buffer_range as u64,
                max_stage_storage_buffers: l.max_per_stage_descriptor_storage_buffers,
                max_set_storage_buffers: l.max_descriptor_set_storage_buffers,
                max_alloc: maint3.max_memory_allocation_size,
            },
            memory_bytes,
            spirv_max,
        };
        // SAFETY: a queue this device was created with.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        let core = Core {
            device,
            props,
            features,
            memory,
            queue_family,
            pipeline_cache: vk::PipelineCache::null(),
            subgroup: OnceLock::new(),
            loop_limit: OnceLock::new(),
            submit: Mutex::new(Submit {
                queue,
                pool: vk::CommandPool::null(),
                cmd: vk::CommandBuffer::null(),
                fence: vk::Fence::null(),
                desc_pool: vk::DescriptorPool::null(),
                desc_capacity: 0,
                params: None,
                wedged: None,
            }),
        };
        core.init_submit().map_err(|e| format!("{label}: {} failed: {}", e.call, e.message))
    }

    /// Creates the pipeline cache, command pool and buffer, fence and descriptor pool. On failure
    /// the `Core` is dropped, which destroys what was made.
    fn init_submit(mut self) -> std::result::Result<Core, VkFailure> {
        let d = &self.device;
        // SAFETY: valid create infos on a live device.
        unsafe {
            self.pipeline_cache =
                check("vkCreatePipelineCache", d.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None))?;
            let s = self.submit.get_mut().unwrap_or_else(|p| p.into_inner());
            s.pool = check(
                "vkCreateCommandPool",
                d.create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
                        .queue_family_index(self.queue_family),
                    None,
                ),
            )?;
            s.cmd = check(
                "vkAllocateCommandBuffers",
                d.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(s.pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                ),
            )?[0];
            s.fence = check("vkCreateFence", d.create_fence(&vk::FenceCreateInfo::default(), None))?;
            let (pool, capacity) = create_descriptor_pool(d, 16)?;
            s.desc_pool = pool;
            s.desc_capacity = capacity;
        }
        Ok(self)
    }

    fn subgroup(&self) -> SubgroupChoice {
        self.subgroup.get().cloned().unwrap_or_else(|| SubgroupChoice {
            size: self.props.reported_subgroup_size,
            note: "reported by the driver".into(),
            required: None,
        })
    }

    /// The subgroup choice that trusts the property: pipelines require that size when the device
    /// allows it.
    fn reported_choice(&self, note: String) -> SubgroupChoice {
        let sg = self.props.reported_subgroup_size;
        SubgroupChoice { size: sg, note, required: self.required_size(sg) }
    }

    /// `sg` as a `requiredSubgroupSize`, when subgroup size control allows it for compute shaders.
    fn required_size(&self, sg: u32) -> Option<u32> {
        let c = self.props.size_control?;
        (self.features.size_control && c.compute && c.min <= sg && sg <= c.max).then_some(sg)
    }

    /// A host-visible, coherent, mapped and zeroed buffer of at least `bytes` bytes (16 at least, a
    /// multiple of 16). Device-local memory types are tried first.
    fn alloc_host_buffer(&self, bytes: u64) -> std::result::Result<HostBuffer, VkFailure> {
        let size = bytes.max(16).div_ceil(16) * 16;
        let max = self.props.limits.max_alloc;
        if max > 0 && size > max {
            return Err(VkFailure {
                call: "vkAllocateMemory",
                message: format!("{size} bytes exceed {}'s maxMemoryAllocationSize of {max} bytes", self.props.label()),
            });
        }
        let d = &self.device;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid create info.
        let buffer = check("vkCreateBuffer", unsafe { d.create_buffer(&info, None) })?;
        // SAFETY: a buffer of this device.
        let reqs = unsafe { d.get_buffer_memory_requirements(buffer) };
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let types = &self.memory.memory_types[..self.memory.memory_type_count as usize];
        let mut candidates: Vec<u32> = (0..types.len() as u32)
            .filter(|&i| reqs.memory_type_bits & (1 << i) != 0 && types[i as usize].property_flags.contains(want))
            .collect();
        candidates.sort_by_key(|&i| !types[i as usize].property_flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL));
        let mut last = VkFailure {
            call: "vkAllocateMemory",
            message: format!(
                "{} has no host-visible, host-coherent memory type for storage buffers",
                self.props.label()
            ),
        };
        for ty in candidates {
            let alloc = vk::MemoryAllocateInfo::default().allocation_size(reqs.size).memory_type_index(ty);
            // SAFETY: a memory type the buffer accepts.
            match unsafe { d.allocate_memory(&alloc, None) } {
                Ok(memory) => {
                    // SAFETY: fresh memory of the buffer's requirements, mapped whole; it is
                    // host-visible, and zeroed before anyone reads it.
                    let mapped = unsafe {
                        check("vkBindBufferMemory", d.bind_buffer_memory(buffer, memory, 0)).and_then(|()| {
                            check("vkMapMemory", d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()))
                        })
                    };
                    return match mapped {
                        Ok(ptr) => {
                            // SAFETY: the mapping holds `reqs.size >= size` bytes.
                            unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, size as usize) };
                            Ok(HostBuffer { buffer, memory, ptr: ptr as *mut u8, size })
                        }
                        Err(e) => {
                            // SAFETY: unused objects of this device.
                            unsafe {
                                free_host_buffer(d, &HostBuffer { buffer, memory, ptr: std::ptr::null_mut(), size })
                            };
                            Err(e)
                        }
                    };
                }
                Err(e) => last = VkFailure::new("vkAllocateMemory", e),
            }
        }
        // SAFETY: unused buffer of this device.
        unsafe { d.destroy_buffer(buffer, None) };
        Err(last)
    }

    /// Checks `code` against the kernel and this device, then builds its pipeline.
    fn load(self: &Arc<Self>, kernel: ir::Kernel, code: SpirvCode, sg: &SubgroupChoice) -> Result<VulkanKernel> {
        let name = kernel.name.clone();
        check_abi(&kernel, &code)?;
        let launch_err = |message: String| Error::Launch { kernel: name.clone(), message };
        let p = &self.props;
        let dev = p.label();
        if code.words.len() < 5 || code.words[0] != SPIRV_MAGIC {
            return Err(launch_err("the SPIR-V module does not start with the SPIR-V magic number".into()));
        }
        let version = code.words[1];
        if version > p.spirv_max {
            return Err(launch_err(format!(
                "the SPIR-V module is version {}.{}; {dev} (Vulkan {}) accepts at most {}.{}",
                version >> 16 & 0xff,
                version >> 8 & 0xff,
                version_text(p.api_version),
                p.spirv_max >> 16 & 0xff,
                p.spirv_max >> 8 & 0xff
            )));
        }
        let bd = code.workgroup_size;
        let l = &p.limits;
        if bd == 0 || bd > l.max_invocations || bd > l.max_size_x {
            return Err(launch_err(format!(
                "block_dim {bd} is outside {dev}'s limits (maxComputeWorkGroupInvocations {}, maxComputeWorkGroupSize[0] {})",
                l.max_invocations, l.max_size_x
            )));
        }
        if code.shared_bytes > l.max_shared {
            return Err(launch_err(format!(
                "uses {} bytes of shared memory per block; {dev} allows {} (maxComputeSharedMemorySize)",
                code.shared_bytes, l.max_shared
            )));
        }
        let arrays = code.params.iter().filter(|p| matches!(p, SpirvParam::Array { .. })).count() as u32;
        let buffers = arrays + 1;
        let limit = l.max_stage_storage_buffers.min(l.max_set_storage_buffers);
        if buffers > limit {
            return Err(launch_err(format!(
                "binds {buffers} storage buffers (the parameter block and {arrays} arrays); {dev} allows {limit} per shader"
            )));
        }
        let entry = CString::new(code.entry.as_str())
            .map_err(|_| launch_err("the SPIR-V entry name contains a NUL byte".into()))?;
        let drv = |e: VkFailure| e.into_error(&name);
        let d = &self.device;
        let mut k = VulkanKernel {
            kernel,
            code,
            core: self.clone(),
            shader: vk::ShaderModule::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            storage_buffers: buffers,
        };
        // SAFETY: valid create infos on a live device; `k` destroys what was made if a later step
        // fails.
        unsafe {
            k.shader = check(
                "vkCreateShaderModule",
                d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&k.code.words), None),
            )
            .map_err(drv)?;
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..buffers)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            k.set_layout = check(
                "vkCreateDescriptorSetLayout",
                d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None),
            )
            .map_err(drv)?;
            let set_layouts = [k.set_layout];
            k.layout = check(
                "vkCreatePipelineLayout",
                d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None),
            )
            .map_err(drv)?;
            // Pin the subgroup width the kernel was traced for, and full subgroups, where allowed.
            let required = sg
                .required
                .filter(|&r| p.size_control.is_some_and(|c| bd <= c.max_workgroup_subgroups.saturating_mul(r)));
            let full_multiple = required.or(p.size_control.map(|c| c.max)).unwrap_or(sg.size);
            let full = self.features.full_subgroups && bd.is_multiple_of(full_multiple);
            let mut req_info = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
                .required_subgroup_size(required.unwrap_or(0));
            let mut stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(k.shader)
                .name(&entry);
            if full {
                stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
            }
            if required.is_some() {
                stage = stage.push_next(&mut req_info);
            }
            let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(k.layout)];
            let pipelines = d.create_compute_pipelines(self.pipeline_cache, &info, None).map_err(|(made, e)| {
                for p in made {
                    d.destroy_pipeline(p, None);
                }
                drv(VkFailure::new("vkCreateComputePipelines", e))
            })?;
            k.pipeline = pipelines[0];
        }
        Ok(k)
    }

    /// Marshals the parameter block, binds the buffers, dispatches and waits.
    fn launch(&self, k: &VulkanKernel, grid: u32, args: &[Bound<'_>]) -> Result<()> {
        let name = &k.kernel.name;
        let slots = marshal(&k.kernel, &k.code.params, args, &self.props)?;
        if grid == 0 {
            return Ok(());
        }
        let max = self.props.limits.max_count_x;
        if grid > max {
            return Err(Error::Launch {
                kernel: name.clone(),
                message: format!(
                    "a grid of {grid} blocks exceeds {}'s maxComputeWorkGroupCount[0] of {max}",
                    self.props.label()
                ),
            });
        }
        let drv = |e: VkFailure| e.into_error(name);
        let d = &self.device;
        let mut s = lock(&self.submit);
        if let Some(why) = &s.wedged {
            return Err(Error::Driver {
                kernel: name.clone(),
                call: "vkQueueSubmit".into(),
                message: format!("{} is unusable: {why}", self.props.label()),
            });
        }
        // The parameter block: one u64 per parameter.
        let need = (slots.len().max(1) * 8) as u64;
        if s.params.as_ref().is_none_or(|p| p.size < need) {
            if let Some(old) = s.params.take() {
                // SAFETY: the last submission finished (every launch waits for its fence).
                unsafe { free_host_buffer(d, &old) };
            }
            s.params = Some(self.alloc_host_buffer(need.max(256)).map_err(drv)?);
        }
        let params = s.params.as_ref().map(|p| (p.buffer, p.ptr)).unwrap_or_default();
        // SAFETY: the mapping holds at least `need` bytes and no submission is pending.
        unsafe { std::ptr::copy_nonoverlapping(slots.as_ptr() as *const u8, params.1, slots.len() * 8) };
        // Descriptors: the parameter block at 0, each array at its binding.
        if s.desc_capacity < k.storage_buffers {
            let want = k.storage_buffers.max(2 * s.desc_capacity);
            // SAFETY: no set of the pool is in use (no submission is pending).
            unsafe { d.destroy_descriptor_pool(s.desc_pool, None) };
            s.desc_pool = vk::DescriptorPool::null();
            s.desc_capacity = 0;
            // SAFETY: a valid create info.
            let (pool, capacity) = unsafe { create_descriptor_pool(d, want) }.map_err(drv)?;
            s.desc_pool = pool;
            s.desc_capacity = capacity;
        } else {
            // SAFETY: as above.
            unsafe {
                check(
                    "vkResetDescriptorPool",
                    d.reset_descriptor_pool(s.desc_pool, vk::DescriptorPoolResetFlags::empty()),
                )
            }
            .map_err(drv)?;
        }
        let layouts = [k.set_layout];
        // SAFETY: the pool was just reset or created with room for this layout.
        let set = unsafe {
            check(
                "vkAllocateDescriptorSets",
                d.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default().descriptor_pool(s.desc_pool).set_layouts(&layouts),
                ),
            )
        }
        .map_err(drv)?[0];
        let mut infos: Vec<[vk::DescriptorBufferInfo; 1]> =
            vec![[vk::DescriptorBufferInfo { buffer: params.0, offset: 0, range: vk::WHOLE_SIZE }]];
        let mut bindings = vec![0u32];
        for (p, a) in k.code.params.iter().zip(args) {
            if let (SpirvParam::Array { binding, .. }, Bound::Array(b)) = (p, a) {
                infos.push([vk::DescriptorBufferInfo { buffer: b.mem.buffer, offset: 0, range: vk::WHOLE_SIZE }]);
                bindings.push(*binding);
            }
        }
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .zip(&bindings)
            .map(|(info, &binding)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(binding)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        let cmd = s.cmd;
        // SAFETY: the command buffer is not pending (the last launch waited for its fence); every
        // handle belongs to this device; the buffers outlive the wait below (`args` borrows them).
        unsafe {
            d.update_descriptor_sets(&writes, &[]);
            check("vkResetCommandBuffer", d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()))
                .map_err(drv)?;
            check(
                "vkBeginCommandBuffer",
                d.begin_command_buffer(
                    cmd,
                    &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                ),
            )
            .map_err(drv)?;
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, k.pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, k.layout, 0, &[set], &[]);
            d.cmd_dispatch(cmd, grid, 1, 1);
            // The kernel's writes become visible to the host once the fence signals.
            let to_host = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
            check("vkEndCommandBuffer", d.end_command_buffer(cmd)).map_err(drv)?;
            check("vkResetFences", d.reset_fences(&[s.fence])).map_err(drv)?;
            let cmds = [cmd];
            let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
            // Host writes made before this call are visible to the kernel (coherent memory).
            check("vkQueueSubmit", d.queue_submit(s.queue, &submit, s.fence)).map_err(|e| {
                if e.message.starts_with("ERROR_DEVICE_LOST") {
                    s.wedged = Some("the device was lost".into());
                }
                drv(e)
            })?;
            let timeout = launch_timeout();
            match d.wait_for_fences(&[s.fence], true, timeout.as_nanos().min(u64::MAX as u128) as u64) {
                Ok(()) => Ok(()),
                Err(vk::Result::TIMEOUT) => {
                    let why = format!(
                        "kernel `{name}` did not finish within {} s (QD_VULKAN_TIMEOUT_S); a running kernel cannot be \
                         stopped, so the device is unusable for the rest of this process",
                        timeout.as_secs()
                    );
                    s.wedged = Some(why.clone());
                    Err(Error::Driver {
                        kernel: name.clone(),
                        call: "vkWaitForFences".into(),
                        message: format!("TIMEOUT: {why}"),
                    })
                }
                Err(e) => {
                    if e == vk::Result::ERROR_DEVICE_LOST {
                        s.wedged = Some(format!("the device was lost while kernel `{name}` ran"));
                    }
                    Err(drv(VkFailure::new("vkWaitForFences", e)))
                }
            }
        }
    }
}

/// The launch timeout: `QD_VULKAN_TIMEOUT_S` seconds, else 60.
fn launch_timeout() -> Duration {
    std::env::var("QD_VULKAN_TIMEOUT_S")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_LAUNCH_TIMEOUT)
}

/// A descriptor pool for one set of up to `capacity` storage buffers.
unsafe fn create_descriptor_pool(
    d: &ash::Device,
    capacity: u32,
) -> std::result::Result<(vk::DescriptorPool, u32), VkFailure> {
    let capacity = capacity.max(16);
    let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: capacity }];
    let pool = check(
        "vkCreateDescriptorPool",
        d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None),
    )?;
    Ok((pool, capacity))
}

/// The module's parameters must match the kernel's one to one; arrays are bound at 1, 2, ... in
/// order; the workgroup is the kernel's block.
fn check_abi(k: &ir::Kernel, code: &SpirvCode) -> Result<()> {
    let mismatch = |message: String| Error::Launch {
        kernel: k.name.clone(),
        message: format!("the SPIR-V module does not match the kernel: {message}"),
    };
    if code.params.len() != k.params.len() {
        return Err(mismatch(format!(
            "{} SPIR-V parameters for {} kernel parameters",
            code.params.len(),
            k.params.len()
        )));
    }
    let mut next_binding = 1;
    for (i, (p, abi)) in k.params.iter().zip(&code.params).enumerate() {
        let ok = match (p, abi) {
            (Param::Array { dtype, .. }, SpirvParam::Array { dtype: d, binding }) => {
                let ok = dtype == d && *binding == next_binding;
                next_binding += 1;
                ok
            }
            (Param::Scalar { dtype, .. }, SpirvParam::Scalar { dtype: d }) => dtype == d,
            _ => false,
        };
        if !ok {
            return Err(mismatch(format!("parameter {i} (`{}`) is {abi:?}", p.name())));
        }
    }
    if code.workgroup_size != k.block_dim {
        return Err(mismatch(format!("workgroup size {} for block_dim {}", code.workgroup_size, k.block_dim)));
    }
    Ok(())
}

/// One u64 slot per parameter: an array's element count, a scalar's bits masked to its width (bool
/// to 0 or 1). Arrays must fit a storage buffer binding.
fn marshal(k: &ir::Kernel, params: &[SpirvParam], args: &[Bound<'_>], props: &Props) -> Result<Vec<u64>> {
    let mut slots = Vec::with_capacity(params.len());
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let err = |message: String| Error::Argument {
            kernel: k.name.clone(),
            index: i,
            param: k.params.get(i).map(|p| p.name().to_string()).unwrap_or_default(),
            message,
        };
        match (p, a) {
            (SpirvParam::Array { .. }, Bound::Array(b)) => {
                let max = props.limits.max_storage_range;
                if b.mem.size > max {
                    return Err(err(format!(
                        "has {} bytes; {} binds at most {max} bytes per storage buffer (maxStorageBufferRange)",
                        b.len * b.dtype.size_bytes(),
                        props.label()
                    )));
                }
                slots.push(b.len as u64);
            }
            (SpirvParam::Scalar { dtype }, Bound::Scalar(bits)) => {
                let v = match dtype.bits() {
                    1 => (bits & 1 != 0) as u64,
                    64 => *bits,
                    w if w < 64 => bits & ((1u64 << w) - 1),
                    w => return Err(err(format!("a {w}-bit scalar cannot be passed to a Vulkan kernel"))),
                };
                slots.push(v);
            }
            _ => return Err(err("an array where a scalar was expected, or the reverse".into())),
        }
    }
    Ok(slots)
}

/// A kernel ready to launch.
pub(crate) struct VulkanKernel {
    pub(crate) kernel: ir::Kernel,
    pub(crate) code: SpirvCode,
    core: Arc<Core>,
    shader: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    /// Bindings of its set: the parameter block and one per array.
    storage_buffers: u32,
}

impl std::fmt::Debug for VulkanKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanKernel")
            .field("kernel", &self.kernel.name)
            .field("entry", &self.code.entry)
            .field("device", &self.core.props.ordinal)
            .field("words", &self.code.words.len())
            .finish()
    }
}

impl Drop for VulkanKernel {
    fn drop(&mut self) {
        if lock(&self.core.submit).wedged.is_some() {
            return;
        }
        let d = &self.core.device;
        // SAFETY: launches wait for completion, so nothing pending uses these; null handles are
        // allowed.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_shader_module(self.shader, None);
        }
    }
}

/// An array in host-visible device memory.
pub(crate) struct VulkanBuffer {
    core: Arc<Core>,
    mem: HostBuffer,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
}

// SAFETY: the mapping is only read or written under the device's mutex (`read`, `write`) or by
// kernels the runtime waits for; Vulkan handles may be used from any thread.
unsafe impl Send for VulkanBuffer {}
// SAFETY: as above.
unsafe impl Sync for VulkanBuffer {}

impl std::fmt::Debug for VulkanBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VulkanBuffer(vulkan:{}, {}[{}])", self.core.props.ordinal, self.dtype, self.len)
    }
}

impl VulkanBuffer {
    /// The device's ordinal.
    pub(crate) fn ordinal(&self) -> u32 {
        self.core.props.ordinal
    }

    fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    fn usable(&self, s: &Submit) -> std::result::Result<(), VkFailure> {
        match &s.wedged {
            Some(why) => Err(VkFailure {
                call: "vkMapMemory",
                message: format!("{} is unusable: {why}", self.core.props.label()),
            }),
            None => Ok(()),
        }
    }

    /// Copies the contents to the host.
    pub(crate) fn read(&self) -> std::result::Result<Vec<u8>, VkFailure> {
        let s = lock(&self.core.submit);
        self.usable(&s)?;
        let mut out = vec![0u8; self.bytes()];
        // SAFETY: the mapping holds at least `bytes()` bytes; no kernel runs (the lock is held and
        // launches wait for completion under it).
        unsafe { std::ptr::copy_nonoverlapping(self.mem.ptr, out.as_mut_ptr(), out.len()) };
        Ok(out)
    }

    /// Overwrites the contents; `data` has `bytes()` bytes.
    pub(crate) fn write(&self, data: &[u8]) -> std::result::Result<(), VkFailure> {
        if data.len() != self.bytes() {
            return Err(VkFailure {
                call: "<host copy>",
                message: format!("{} bytes for an array of {} bytes", data.len(), self.bytes()),
            });
        }
        let s = lock(&self.core.submit);
        self.usable(&s)?;
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.ptr, data.len()) };
        Ok(())
    }
}

impl Drop for VulkanBuffer {
    fn drop(&mut self) {
        if lock(&self.core.submit).wedged.is_some() {
            return;
        }
        // SAFETY: launches wait for completion and hold the array while they run.
        unsafe { free_host_buffer(&self.core.device, &self.mem) };
    }
}

/// Subgroup operation classes by name: the five qd needs first.
const SUBGROUP_OPS: [(vk::SubgroupFeatureFlags, &str); 8] = [
    (vk::SubgroupFeatureFlags::BASIC, "BASIC"),
    (vk::SubgroupFeatureFlags::VOTE, "VOTE"),
    (vk::SubgroupFeatureFlags::BALLOT, "BALLOT"),
    (vk::SubgroupFeatureFlags::SHUFFLE, "SHUFFLE"),
    (vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE, "SHUFFLE_RELATIVE"),
    (vk::SubgroupFeatureFlags::ARITHMETIC, "ARITHMETIC"),
    (vk::SubgroupFeatureFlags::CLUSTERED, "CLUSTERED"),
    (vk::SubgroupFeatureFlags::QUAD, "QUAD"),
];

/// A short description of the device type (`CPU`, `discrete GPU`).
fn device_type_text(t: vk::PhysicalDeviceType) -> &'static str {
    match t {
        vk::PhysicalDeviceType::CPU => "CPU",
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
        _ => "other",
    }
}

impl Props {
    /// The API version as (major, minor, patch).
    pub(crate) fn api(&self) -> (u32, u32, u32) {
        let v = self.api_version;
        (vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Block, LaunchKind, ValueId};

    fn kernel(params: Vec<Param>) -> ir::Kernel {
        ir::Kernel {
            name: "k".into(),
            launch: LaunchKind::Explicit,
            block_dim: 64,
            subgroup_size: 8,
            params,
            values: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            body: Block::default(),
        }
    }

    fn code(params: Vec<SpirvParam>) -> SpirvCode {
        SpirvCode {
            words: vec![SPIRV_MAGIC, 0x10300, 0, 1, 0],
            entry: "k".into(),
            workgroup_size: 64,
            params,
            shared_bytes: 0,
        }
    }

    #[test]
    fn abi_checks_types_bindings_and_workgroup() {
        let k = kernel(vec![
            Param::Array { name: "a".into(), dtype: DType::F32 },
            Param::Scalar { name: "s".into(), dtype: DType::Bool, value: ValueId(0) },
            Param::Array { name: "b".into(), dtype: DType::U8 },
        ]);
        let good = vec![
            SpirvParam::Array { dtype: DType::F32, binding: 1 },
            SpirvParam::Scalar { dtype: DType::Bool },
            SpirvParam::Array { dtype: DType::U8, binding: 2 },
        ];
        check_abi(&k, &code(good.clone())).unwrap();
        let mut swapped = good.clone();
        swapped[2] = SpirvParam::Array { dtype: DType::U8, binding: 3 };
        let e = check_abi(&k, &code(swapped)).unwrap_err();
        assert!(e.to_string().contains("parameter 2 (`b`)"), "{e}");
        let e = check_abi(&k, &code(good[..2].to_vec())).unwrap_err();
        assert!(e.to_string().contains("2 SPIR-V parameters for 3"), "{e}");
        let mut wide = code(good);
        wide.workgroup_size = 128;
        let e = check_abi(&k, &wide).unwrap_err();
        assert!(e.to_string().contains("workgroup size 128 for block_dim 64"), "{e}");
    }
}
