//! Opening a Vulkan device: what the driver says about it (properties, limits, subgroup
//! operations), what qd needs (Vulkan 1.1, compute subgroups, `shaderInt64`), and the optional
//! features it enables where they exist.

use super::{check, instance, memory, Core, Submit, VkFailure};
use crate::backend::spirv;
use ash::vk;
use instance::{version_text, MIN_API};
use std::ffi::{CStr, CString};
use std::mem::ManuallyDrop;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};

/// The optional device features qd uses, as found (and then enabled).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Features {
    pub(super) float64: bool,
    pub(super) int16: bool,
    pub(super) int8: bool,
    pub(super) storage8: bool,
    pub(super) storage16: bool,
    pub(super) float16: bool,
    pub(super) buffer_int64_atomics: bool,
    pub(super) shared_int64_atomics: bool,
    pub(super) buffer_f32_atomics: bool,
    pub(super) buffer_f32_atomic_add: bool,
    pub(super) shared_f32_atomics: bool,
    pub(super) shared_f32_atomic_add: bool,
    pub(super) buffer_f64_atomic_add: bool,
    /// `VK_EXT_shader_atomic_float2` `shaderBufferFloat16AtomicAdd`.
    pub(super) buffer_f16_atomic_add: bool,
    /// `shaderSignedZeroInfNanPreserveFloat32/64` (a property of the float controls, which are
    /// usable: Vulkan 1.2, or `VK_KHR_shader_float_controls` enabled).
    pub(super) signed_zeros32: bool,
    pub(super) signed_zeros64: bool,
    pub(super) memory_model: bool,
    pub(super) memory_model_device_scope: bool,
    pub(super) subgroup_extended_types: bool,
    pub(super) size_control: bool,
    pub(super) full_subgroups: bool,
}

impl Features {
    /// What the lowering may use. A storage width counts only with its arithmetic (`shaderInt8`,
    /// `shaderInt16`), 64-bit atomics only on both buffers and shared memory, f32 atomic add likewise,
    /// the Vulkan memory model only with device scope (device-scope fences and atomics use it).
    pub(super) fn spirv_caps(&self, core: &Core) -> spirv::SpirvCaps {
        spirv::SpirvCaps {
            float32_atomic_add: self.buffer_f32_atomic_add && self.shared_f32_atomic_add,
            float64_atomic_add: self.buffer_f64_atomic_add && self.float64,
            float16_atomic_add: self.buffer_f16_atomic_add,
            signed_zeros32: self.signed_zeros32,
            signed_zeros64: self.signed_zeros64 && self.float64,
            float64: self.float64,
            int64_atomics: self.buffer_int64_atomics && self.shared_int64_atomics,
            int8_storage: self.storage8 && self.int8,
            int16_storage: self.storage16 && self.int16,
            float16: self.float16,
            max_shared_bytes: core.props.limits.max_shared,
            vulkan_memory_model: self.memory_model && self.memory_model_device_scope,
        }
    }

    /// The enabled features, for `describe`.
    pub(super) fn names(&self) -> Vec<&'static str> {
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
        add(self.buffer_f64_atomic_add && self.float64, "f64 atomic add");
        add(self.buffer_f16_atomic_add && self.float16 && self.storage16, "f16 atomic add");
        add(self.signed_zeros32, "signed zeros in f32");
        add(self.signed_zeros64 && self.float64, "signed zeros in f64");
        add(self.memory_model && self.memory_model_device_scope, "Vulkan memory model");
        v
    }
}

/// Device limits the runtime checks before the driver sees a mistake.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_shared: u32,
    pub(super) max_invocations: u32,
    pub(super) max_size_x: u32,
    pub(crate) max_count_x: u32,
    pub(super) max_storage_range: u64,
    pub(super) max_stage_storage_buffers: u32,
    pub(super) max_set_storage_buffers: u32,
    pub(super) max_alloc: u64,
}

/// Subgroup size control, when the device has it (`VK_EXT_subgroup_size_control` or Vulkan 1.3).
#[derive(Clone, Copy, Debug)]
pub(super) struct SizeControl {
    pub(super) min: u32,
    pub(super) max: u32,
    pub(super) max_workgroup_subgroups: u32,
    pub(super) compute: bool,
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
    pub(super) size_control: Option<SizeControl>,
    pub(crate) limits: Limits,
    /// Sum of the device-local heaps.
    pub(crate) memory_bytes: u64,
    /// The highest SPIR-V version (`0x00010300` for 1.3) the device accepts.
    pub(super) spirv_max: u32,
    /// `vendorID`, `deviceID`, `driverVersion` and `pipelineCacheUUID`: what a pipeline cache
    /// belongs to.
    pub(super) vendor_id: u32,
    pub(super) device_id: u32,
    pub(super) driver_version: u32,
    pub(super) cache_uuid: [u8; 16],
    /// Nanoseconds per timestamp tick.
    pub(super) timestamp_period: f32,
    /// Valid bits of the compute queue's timestamps (0: it has none).
    pub(super) timestamp_bits: u32,
}

impl Props {
    /// `vulkan:N (model)`, for messages.
    pub(super) fn label(&self) -> String {
        format!("vulkan:{} ({})", self.ordinal, self.model)
    }
}

impl Core {
    /// Creates the logical device for physical device `ordinal`: checks what qd needs, enables the
    /// optional features that exist, and makes the queue's command buffer, fence and pools.
    pub(super) fn create(v: &instance::Vk, ordinal: u32) -> std::result::Result<Core, String> {
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
        let mut float_controls = vk::PhysicalDeviceFloatControlsProperties::default();
        let has_float_controls = v12 || has(ash::khr::shader_float_controls::NAME);
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
            if has_float_controls {
                p2 = p2.push_next(&mut float_controls);
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
        let mut fatf2 = vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default();
        let mut fext = vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures::default();
        let mut fsize = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
        let ext8 = !v12 && has(ash::khr::_8bit_storage::NAME);
        let ext16i8 = !v12 && has(ash::khr::shader_float16_int8::NAME);
        let extat64 = !v12 && has(ash::khr::shader_atomic_int64::NAME);
        let extmm = !v12 && has(ash::khr::vulkan_memory_model::NAME);
        let extsgt = !v12 && has(ash::khr::shader_subgroup_extended_types::NAME);
        let extsize = !v13 && has(ash::ext::subgroup_size_control::NAME);
        let extatf = has(ash::ext::shader_atomic_float::NAME);
        let extatf2 = has(ash::ext::shader_atomic_float2::NAME);
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
            if extatf2 {
                f2 = f2.push_next(&mut fatf2);
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
            buffer_f64_atomic_add: on(fatf.shader_buffer_float64_atomic_add),
            // VK_EXT_shader_atomic_float2 depends on VK_EXT_shader_atomic_float.
            buffer_f16_atomic_add: extatf && on(fatf2.shader_buffer_float16_atomic_add),
            signed_zeros32: has_float_controls && on(float_controls.shader_signed_zero_inf_nan_preserve_float32),
            signed_zeros64: has_float_controls && on(float_controls.shader_signed_zero_inf_nan_preserve_float64),
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
            .shader_shared_float32_atomic_add(f.shared_f32_atomic_add)
            .shader_buffer_float64_atomic_add(f.buffer_f64_atomic_add);
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
        let any_float_atomic = f.buffer_f32_atomics || f.shared_f32_atomics || f.buffer_f64_atomic_add;
        if extatf && (any_float_atomic || f.buffer_f16_atomic_add) {
            e2 = e2.push_next(&mut eatf);
            ext_names.push(ash::ext::shader_atomic_float::NAME);
        }
        let mut eatf2 =
            vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default().shader_buffer_float16_atomic_add(true);
        if extatf2 && f.buffer_f16_atomic_add {
            e2 = e2.push_next(&mut eatf2);
            ext_names.push(ash::ext::shader_atomic_float2::NAME);
        }
        // SPIR-V 1.4 on a Vulkan 1.1 device.
        let spirv14 = !v12 && has(ash::khr::spirv_1_4::NAME) && has(ash::khr::shader_float_controls::NAME);
        if spirv14 {
            ext_names.push(ash::khr::spirv_1_4::NAME);
        }
        // The float controls (signed zeros) on a Vulkan 1.1 device; SPIR-V 1.4 needs them too.
        if !v12 && has_float_controls {
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
        let mem_props = unsafe { inst.get_physical_device_memory_properties(pd) };
        let memory_bytes = mem_props.memory_heaps[..mem_props.memory_heap_count as usize]
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
            vendor_id: base.vendor_id,
            device_id: base.device_id,
            driver_version: base.driver_version,
            cache_uuid: base.pipeline_cache_uuid,
            timestamp_period: l.timestamp_period,
            // Timestamps need `timestampComputeAndGraphics` or a queue that says it has them.
            timestamp_bits: families[queue_family as usize].timestamp_valid_bits,
        };
        // SAFETY: a queue this device was created with.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        let allocator = match memory::allocator(inst, &device, pd) {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: nothing was made on the device yet.
                unsafe { device.destroy_device(None) };
                return Err(format!("{label}: {e}"));
            }
        };
        let core = Core {
            device,
            props,
            features,
            queue_family,
            pipeline_cache: vk::PipelineCache::null(),
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            subgroup: OnceLock::new(),
            loop_limit: OnceLock::new(),
            submit: Mutex::new(Submit {
                queue,
                pool: vk::CommandPool::null(),
                cmd: vk::CommandBuffer::null(),
                fence: vk::Fence::null(),
                timestamps: vk::QueryPool::null(),
                staging: None,
                wedged: None,
            }),
            launches: AtomicU64::new(0),
            recordings: AtomicU64::new(0),
            staged_copies: AtomicU64::new(0),
        };
        core.init_submit().map_err(|e| format!("{label}: {} failed: {}", e.call, e.message))
    }

    /// Creates the in-memory pipeline cache, the command pool and the copies' command buffer, the
    /// fence and the timestamp queries. On failure the `Core` is dropped, which destroys what was
    /// made.
    pub(super) fn init_submit(mut self) -> std::result::Result<Core, VkFailure> {
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
            if self.props.timestamp_bits > 0 && self.props.timestamp_period > 0.0 {
                let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
                s.timestamps = check("vkCreateQueryPool", d.create_query_pool(&info, None))?;
            }
        }
        Ok(self)
    }
}

/// Subgroup operation classes by name: the five qd needs first.
pub(super) const SUBGROUP_OPS: [(vk::SubgroupFeatureFlags, &str); 8] = [
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
pub(super) fn device_type_text(t: vk::PhysicalDeviceType) -> &'static str {
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
