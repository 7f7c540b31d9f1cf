//! Kernels and launches: checking a SPIR-V module against its kernel and the device, building its
//! compute pipeline (through the disk cache, `pipeline_cache.rs`), and running it.
//!
//! Each kernel owns what its launches need, made once when it is loaded: a parameter block in
//! host-visible memory, a descriptor set and a command buffer. A launch writes the parameter block
//! and submits the recorded command buffer; it records again (descriptors and commands) only when
//! its arrays or its grid differ from the kernel's last launch. So a repeated launch allocates no
//! Vulkan object and records nothing.

use super::context::end_barrier;
use super::device::Props;
use super::instance::version_text;
use super::memory::Memory;
use super::{check, lock, Bound, Core, SpirvCode, SpirvParam, SubgroupChoice, VkFailure, SPIRV_MAGIC};
use crate::ir::{self, Param};
use crate::runtime::disk_cache::DiskCache;
use crate::runtime::{DiskCacheUse, Error, Result};
use ash::vk;
use gpu_allocator::MemoryLocation;
use std::ffi::CString;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

impl Core {
    /// Checks `code` against the kernel and this device, then builds its pipeline.
    pub(super) fn load(
        self: &Arc<Self>,
        kernel: ir::Kernel,
        code: SpirvCode,
        sg: &SubgroupChoice,
        disk: Option<&DiskCache>,
        disk_use: &mut DiskCacheUse,
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
        // The launch resources first: the kernel's drop frees whatever was made if a later step fails.
        let params = self
            .alloc_memory(8 * code.params.len().max(1) as u64, MemoryLocation::CpuToGpu, "qd parameter block")
            .map_err(drv)?;
        let cmd = {
            let s = lock(&self.submit);
            // SAFETY: the pool is only used under the submission lock.
            unsafe {
                check(
                    "vkAllocateCommandBuffers",
                    d.allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(s.pool)
                            .level(vk::CommandBufferLevel::PRIMARY)
                            .command_buffer_count(1),
                    ),
                )
            }
        };
        let mut k = VulkanKernel {
            kernel,
            code,
            core: self.clone(),
            shader: vk::ShaderModule::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            slot: Mutex::new(LaunchSlot {
                params,
                desc_pool: vk::DescriptorPool::null(),
                set: vk::DescriptorSet::null(),
                cmd: vk::CommandBuffer::null(),
                recorded: None,
                arrays: Vec::new(),
                slots: Vec::new(),
            }),
        };
        let slot = k.slot.get_mut().unwrap_or_else(|p| p.into_inner());
        slot.cmd = cmd.map_err(drv)?[0];
        // SAFETY: valid create infos on a live device; `k` destroys what was made if a later step
        // fails.
        unsafe {
            slot.desc_pool = create_descriptor_pool(d, buffers).map_err(drv)?;
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
            slot.set = check(
                "vkAllocateDescriptorSets",
                d.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default().descriptor_pool(slot.desc_pool).set_layouts(&set_layouts),
                ),
            )
            .map_err(drv)?[0];
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
            let key = [required.unwrap_or(0), full as u32];
            k.pipeline = self.create_pipeline(&k.code, &key, &info, disk, disk_use).map_err(drv)?;
        }
        Ok(k)
    }

    /// Writes the parameter block, re-records the kernel's command buffer when its arrays or grid
    /// changed since its last launch, submits it and waits. With `timed`, returns the time between
    /// the timestamps around the dispatch (`None` when the queue has no timestamps).
    pub(super) fn launch(
        &self,
        k: &VulkanKernel,
        grid: u32,
        args: &[Bound<'_>],
        timed: bool,
    ) -> Result<Option<Duration>> {
        let name = &k.kernel.name;
        if grid == 0 {
            marshal(&k.kernel, &k.code.params, args, &self.props, &mut Vec::new())?;
            return Ok(timed.then_some(Duration::ZERO));
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
        let mut s = lock(&self.submit);
        s.usable(&self.props).map_err(drv)?;
        let mut slot = lock(&k.slot);
        let slot = &mut *slot;
        slot.slots.clear();
        marshal(&k.kernel, &k.code.params, args, &self.props, &mut slot.slots)?;
        let ptr = slot.params.mapped().ok_or_else(|| {
            drv(VkFailure { call: "vkMapMemory", message: "the parameter block is not host-visible".into() })
        })?;
        // SAFETY: the block holds one u64 per parameter (made for this kernel); no submission is
        // pending (every one is waited for under the lock).
        unsafe { std::ptr::copy_nonoverlapping(slot.slots.as_ptr() as *const u8, ptr, slot.slots.len() * 8) };
        let same = slot.recorded == Some(grid)
            && slot.arrays.iter().copied().eq(args.iter().filter_map(|a| match a {
                Bound::Array(b) => Some(b.id),
                Bound::Scalar(_) => None,
            }));
        if !same {
            slot.recorded = None;
            // SAFETY: the set and command buffer are not in use (no submission is pending); the
            // arrays belong to this device and outlive the wait below (`args` borrows them).
            unsafe { self.record(k, slot, grid, args, s.timestamps) }.map_err(drv)?;
            slot.recorded = Some(grid);
            slot.arrays.clear();
            slot.arrays.extend(args.iter().filter_map(|a| match a {
                Bound::Array(b) => Some(b.id),
                Bound::Scalar(_) => None,
            }));
            self.recordings.fetch_add(1, Ordering::Relaxed);
        }
        self.launches.fetch_add(1, Ordering::Relaxed);
        s.submit_wait(&self.device, slot.cmd, &format!("kernel `{name}`")).map_err(drv)?;
        if !timed || s.timestamps == vk::QueryPool::null() {
            return Ok(None);
        }
        let mut ticks = [0u64; 2];
        // SAFETY: both queries were written by the submission just waited for.
        unsafe {
            check(
                "vkGetQueryPoolResults",
                self.device.get_query_pool_results(
                    s.timestamps,
                    0,
                    &mut ticks,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                ),
            )
        }
        .map_err(drv)?;
        let mask = match self.props.timestamp_bits {
            64.. => u64::MAX,
            b => (1u64 << b) - 1,
        };
        let elapsed = ticks[1].wrapping_sub(ticks[0]) & mask;
        Ok(Some(Duration::from_nanos((elapsed as f64 * self.props.timestamp_period as f64).round() as u64)))
    }

    /// Points the kernel's descriptor set at the parameter block and `args`' arrays and records its
    /// command buffer: the timestamps (when `timestamps` is not null), the dispatch of `grid`
    /// workgroups, and the barrier every submission ends with.
    unsafe fn record(
        &self,
        k: &VulkanKernel,
        slot: &LaunchSlot,
        grid: u32,
        args: &[Bound<'_>],
        timestamps: vk::QueryPool,
    ) -> std::result::Result<(), VkFailure> {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let d = &self.device;
            let mut infos: Vec<[vk::DescriptorBufferInfo; 1]> =
                vec![[vk::DescriptorBufferInfo { buffer: slot.params.buffer, offset: 0, range: vk::WHOLE_SIZE }]];
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
                        .dst_set(slot.set)
                        .dst_binding(binding)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            let cmd = slot.cmd;
            d.update_descriptor_sets(&writes, &[]);
            check("vkResetCommandBuffer", d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()))?;
            check("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()))?;
            if timestamps != vk::QueryPool::null() {
                d.cmd_reset_query_pool(cmd, timestamps, 0, 2);
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, timestamps, 0);
            }
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, k.pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, k.layout, 0, &[slot.set], &[]);
            d.cmd_dispatch(cmd, grid, 1, 1);
            if timestamps != vk::QueryPool::null() {
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, timestamps, 1);
            }
            end_barrier(d, cmd);
            check("vkEndCommandBuffer", d.end_command_buffer(cmd))
        }
    }
}

/// A descriptor pool for one set of `buffers` storage buffers.
unsafe fn create_descriptor_pool(d: &ash::Device, buffers: u32) -> std::result::Result<vk::DescriptorPool, VkFailure> {
    // SAFETY: the caller upholds this function's contract (its doc comment).
    unsafe {
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: buffers }];
        check(
            "vkCreateDescriptorPool",
            d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None),
        )
    }
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
fn marshal(
    k: &ir::Kernel,
    params: &[SpirvParam],
    args: &[Bound<'_>],
    props: &Props,
    slots: &mut Vec<u64>,
) -> Result<()> {
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
    Ok(())
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
    /// What its launches use; locked only while the device's submission lock is held.
    slot: Mutex<LaunchSlot>,
}

/// A kernel's own launch resources.
struct LaunchSlot {
    /// The parameter block: one u64 per parameter.
    params: Memory,
    desc_pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    cmd: vk::CommandBuffer,
    /// The grid `cmd` was recorded for, if it holds a recording.
    recorded: Option<u32>,
    /// The ids of the arrays `set` points at, in binding order.
    arrays: Vec<u64>,
    /// The parameter block's values of the launch being made (kept to reuse its allocation).
    slots: Vec<u64>,
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
        let s = lock(&self.core.submit);
        if s.wedged.is_some() {
            return;
        }
        let slot = self.slot.get_mut().unwrap_or_else(|p| p.into_inner());
        let d = &self.core.device;
        // SAFETY: every submission is waited for, so nothing pending uses these; the command pool
        // is used under the submission lock, held here; null handles are allowed.
        unsafe {
            if slot.cmd != vk::CommandBuffer::null() {
                d.free_command_buffers(s.pool, &[slot.cmd]);
            }
            d.destroy_descriptor_pool(slot.desc_pool, None);
            self.core.free_memory(&mut slot.params);
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
            min_blocks_per_sm: None,
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
