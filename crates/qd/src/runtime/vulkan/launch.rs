//! Kernels and launches: checking a SPIR-V module against its kernel and the device, building its
//! compute pipeline, and running it (the parameter block, descriptors, dispatch, fence wait).

use super::device::Props;
use super::instance::version_text;
use super::{
    check, free_host_buffer, lock, Bound, Core, SpirvCode, SpirvParam, SubgroupChoice, VkFailure,
    DEFAULT_LAUNCH_TIMEOUT, SPIRV_MAGIC,
};
use crate::ir::{self, Param};
use crate::runtime::{Error, Result};
use ash::vk;
use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

impl Core {
    /// Checks `code` against the kernel and this device, then builds its pipeline.
    pub(super) fn load(
        self: &Arc<Self>,
        kernel: ir::Kernel,
        code: SpirvCode,
        sg: &SubgroupChoice,
    ) -> Result<VulkanKernel> {
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
    pub(super) fn launch(&self, k: &VulkanKernel, grid: u32, args: &[Bound<'_>]) -> Result<()> {
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
pub(super) unsafe fn create_descriptor_pool(
    d: &ash::Device,
    capacity: u32,
) -> std::result::Result<(vk::DescriptorPool, u32), VkFailure> {
    let capacity = capacity.max(16);
    let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: capacity }];
    let info = vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes);
    // SAFETY: the caller guarantees `d` is a live device (this function's contract).
    let pool = check("vkCreateDescriptorPool", unsafe { d.create_descriptor_pool(&info, None) })?;
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
                let v = crate::runtime::launch::scalar_slot(*dtype, *bits)
                    .ok_or_else(|| err(format!("a {}-bit scalar cannot be passed to a Vulkan kernel", dtype.bits())))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Block, DType, LaunchKind, ValueId};

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
