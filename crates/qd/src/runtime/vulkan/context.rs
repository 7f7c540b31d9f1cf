//! The logical device and what every kernel and array on it shares (`Core`: the queue, its
//! submission state, the allocator, the measured subgroup size), the device handle the runtime
//! holds ([`VulkanDevice`]) and how one submission runs ([`Submit`]).

use super::device::{Features, Props};
use super::launch::VulkanKernel;
use super::memory::{Memory, VulkanBuffer};
use super::{instance, probe, SpirvCode, VulkanOptions, DEFAULT_LAUNCH_TIMEOUT};
use crate::backend::spirv;
use crate::ir::{self, DType};
use crate::runtime::cache::{lock, CodeOverrides};
use crate::runtime::disk_cache::DiskCache;
use crate::runtime::{CompileStats, Error, Result, RuntimeCounters};
use ash::vk;
use gpu_allocator::vulkan::Allocator;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// A failed Vulkan call: its name and the result.
#[derive(Clone, Debug)]
pub(crate) struct VkFailure {
    pub(super) call: &'static str,
    pub(super) message: String,
}

impl VkFailure {
    pub(super) fn new(call: &'static str, r: vk::Result) -> VkFailure {
        VkFailure { call, message: format!("{r:?}: {r}") }
    }

    /// As an [`Error::Driver`] for `kernel` (or an operation like `<host copy>`).
    pub(crate) fn into_error(self, kernel: &str) -> Error {
        Error::Driver { kernel: kernel.to_string(), call: self.call.to_string(), message: self.message }
    }
}

/// `r` with a failure named after `call`.
pub(super) fn check<T>(call: &'static str, r: ash::prelude::VkResult<T>) -> std::result::Result<T, VkFailure> {
    r.map_err(|e| VkFailure::new(call, e))
}

/// The subgroup width kernels are traced for, and how it was found.
#[derive(Clone, Debug)]
pub(crate) struct SubgroupChoice {
    /// The width.
    pub(crate) size: u32,
    /// How it was found (`measured`, or why the property is trusted).
    pub(crate) note: String,
    /// `requiredSubgroupSize` for pipelines, with size control.
    pub(super) required: Option<u32>,
}

/// What one submission at a time uses: the queue, the command buffer of host copies, the fence,
/// the timestamp queries and the staging buffer. Behind the device's mutex, which also orders host
/// copies with launches: every submission is waited for before the lock is released.
pub(super) struct Submit {
    pub(super) queue: vk::Queue,
    pub(super) pool: vk::CommandPool,
    /// The command buffer of copies and fills (kernels record their own).
    pub(super) cmd: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    /// Two timestamps, written around every dispatch; null when the queue has no timestamps.
    pub(super) timestamps: vk::QueryPool,
    /// The staging buffer of host copies ([`memory::STAGING_BYTES`](super::memory::STAGING_BYTES)),
    /// made on first use.
    pub(super) staging: Option<Memory>,
    /// Why the queue can no longer be used (a launch that timed out, a lost device).
    pub(super) wedged: Option<String>,
}

impl Submit {
    /// An error when the queue can no longer be used.
    pub(super) fn usable(&self, props: &Props) -> std::result::Result<(), VkFailure> {
        match &self.wedged {
            Some(why) => {
                Err(VkFailure { call: "vkQueueSubmit", message: format!("{} is unusable: {why}", props.label()) })
            }
            None => Ok(()),
        }
    }

    /// Records `record` into the copy command buffer, followed by the barrier every submission ends
    /// with, then submits it and waits. `what` names the work in a timeout's message.
    pub(super) fn run(
        &mut self,
        core: &Core,
        what: &str,
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> std::result::Result<(), VkFailure> {
        let d = &core.device;
        let cmd = self.cmd;
        // SAFETY: the command buffer is not pending (every submission is waited for under the lock).
        unsafe {
            check("vkResetCommandBuffer", d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()))?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            check("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &begin))?;
            record(d, cmd);
            end_barrier(d, cmd);
            check("vkEndCommandBuffer", d.end_command_buffer(cmd))?;
        }
        self.submit_wait(d, cmd, what)
    }

    /// Submits a recorded command buffer and waits for it (at most `QD_VULKAN_TIMEOUT_S` seconds: a
    /// submission still running then cannot be stopped, so the device is marked unusable).
    pub(super) fn submit_wait(
        &mut self,
        d: &ash::Device,
        cmd: vk::CommandBuffer,
        what: &str,
    ) -> std::result::Result<(), VkFailure> {
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        // SAFETY: the fence is not in use (the last submission was waited for); `cmd` is
        // recorded and not pending. Host writes made before the submission are visible to it
        // (coherent memory).
        unsafe {
            check("vkResetFences", d.reset_fences(&[self.fence]))?;
            check("vkQueueSubmit", d.queue_submit(self.queue, &submit, self.fence)).inspect_err(|e| {
                if e.message.starts_with("ERROR_DEVICE_LOST") {
                    self.wedged = Some("the device was lost".into());
                }
            })?;
            let timeout = launch_timeout();
            match d.wait_for_fences(&[self.fence], true, timeout.as_nanos().min(u64::MAX as u128) as u64) {
                Ok(()) => Ok(()),
                Err(vk::Result::TIMEOUT) => {
                    let why = format!(
                        "{what} did not finish within {} s (QD_VULKAN_TIMEOUT_S); a running kernel cannot be stopped, \
                         so the device is unusable for the rest of this process",
                        timeout.as_secs()
                    );
                    self.wedged = Some(why.clone());
                    Err(VkFailure { call: "vkWaitForFences", message: format!("TIMEOUT: {why}") })
                }
                Err(e) => {
                    if e == vk::Result::ERROR_DEVICE_LOST {
                        self.wedged = Some(format!("the device was lost while {what} ran"));
                    }
                    Err(VkFailure::new("vkWaitForFences", e))
                }
            }
        }
    }
}

/// The barrier every submission ends with: what it wrote (shaders or copies) is available and
/// visible to what comes next, later submissions (kernels, copies) and the host alike, and later
/// writes wait for its reads.
pub(super) unsafe fn end_barrier(d: &ash::Device, cmd: vk::CommandBuffer) {
    // SAFETY: the caller upholds this function's contract (its doc comment).
    unsafe {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(
                vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::SHADER_WRITE
                    | vk::AccessFlags::TRANSFER_READ
                    | vk::AccessFlags::TRANSFER_WRITE
                    | vk::AccessFlags::HOST_READ,
            );
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        );
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

/// A logical device and what every kernel and array on it shares.
pub(super) struct Core {
    pub(super) device: ash::Device,
    pub(super) props: Props,
    pub(super) features: Features,
    pub(super) queue_family: u32,
    /// The in-memory pipeline cache of kernels loaded without the disk cache.
    pub(super) pipeline_cache: vk::PipelineCache,
    /// Device memory. Dropped by hand before the device (or leaked with it, when wedged).
    pub(super) allocator: ManuallyDrop<Mutex<Allocator>>,
    pub(super) subgroup: OnceLock<SubgroupChoice>,
    /// What the loop probe found: the iterations after which loops end, if they do.
    pub(super) loop_limit: OnceLock<std::result::Result<Option<u64>, String>>,
    pub(super) submit: Mutex<Submit>,
    /// Launches and recordings so far, for [`Device::counters`](crate::runtime::Device::counters).
    pub(super) launches: AtomicU64,
    pub(super) recordings: AtomicU64,
    pub(super) staged_copies: AtomicU64,
}

impl Drop for Core {
    fn drop(&mut self) {
        let s = self.submit.get_mut().unwrap_or_else(|p| p.into_inner());
        if s.wedged.is_some() {
            // A kernel may still be running: leak everything rather than free memory it uses.
            return;
        }
        // SAFETY: every array and kernel holds an `Arc<Core>`, so none is left; the queue is idle
        // after the wait; destroying null handles is allowed; the allocator frees its blocks
        // before the device goes.
        unsafe {
            let _ = self.device.device_wait_idle();
            let mut staging = s.staging.take();
            self.device.destroy_query_pool(s.timestamps, None);
            self.device.destroy_fence(s.fence, None);
            self.device.destroy_command_pool(s.pool, None);
            if let Some(m) = staging.as_mut() {
                self.free_memory(m);
            }
            ManuallyDrop::drop(&mut self.allocator);
            self.device.destroy_pipeline_cache(self.pipeline_cache, None);
            self.device.destroy_device(None);
        }
    }
}

/// The logical devices of this process, one per ordinal, while something uses them.
static OPEN: Mutex<Vec<(u32, Weak<Core>)>> = Mutex::new(Vec::new());

/// One Vulkan device.
pub(crate) struct VulkanDevice {
    pub(super) core: Arc<Core>,
    /// SPIR-V given through `Device::override_spirv`, by kernel name. Per `VulkanDevice`, so per
    /// `Device`, though the logical device is shared.
    pub(super) spirv_overrides: CodeOverrides<SpirvCode>,
    pub(super) options: VulkanOptions,
    /// The pipeline cache on disk, unless turned off.
    pub(super) disk: Option<DiskCache>,
}

impl VulkanDevice {
    /// Opens device `ordinal` (or reuses this process's logical device for it), or says why it
    /// cannot be used.
    pub(crate) fn open(ordinal: u32, options: &VulkanOptions) -> std::result::Result<VulkanDevice, String> {
        let v = instance::vk()?;
        let count = v.physical.len() as u32;
        if ordinal >= count {
            return Err(format!(
                "there is no Vulkan device {ordinal}; this machine has {count} (vulkan:0 to vulkan:{})",
                count - 1
            ));
        }
        let disk = options.cache_dir.clone().filter(|_| options.disk_cache).map(DiskCache::new);
        let dev = |core| VulkanDevice {
            core,
            spirv_overrides: CodeOverrides::new(),
            options: options.clone(),
            disk: disk.clone(),
        };
        let mut open = lock(&OPEN);
        if let Some(core) = open.iter().find(|(o, _)| *o == ordinal).and_then(|(_, w)| w.upgrade()) {
            return Ok(dev(core));
        }
        let core = Arc::new(Core::create(v, ordinal)?);
        let choice = probe::measure(&core);
        let _ = core.subgroup.set(choice);
        let _ = core.loop_limit.set(probe::loop_limit(&core));
        open.retain(|(_, w)| w.strong_count() > 0);
        open.push((ordinal, Arc::downgrade(&core)));
        Ok(dev(core))
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

    /// What the SPIR-V lowering targets on this device: the traced subgroup width and the features.
    pub(super) fn spirv_target(&self) -> spirv::SpirvTarget {
        spirv::SpirvTarget { subgroup_size: self.subgroup().size, caps: self.core.features.spirv_caps(&self.core) }
    }

    /// Whether `b` lives on this device.
    pub(crate) fn holds(&self, b: &VulkanBuffer) -> bool {
        Arc::ptr_eq(&self.core, &b.core)
    }

    /// A new array of `len` elements of `dtype` in device memory: zeroed, or copied from `init`
    /// (`len` elements).
    pub(crate) fn alloc_buffer(
        &self,
        dtype: DType,
        len: usize,
        init: Option<&[u8]>,
    ) -> std::result::Result<VulkanBuffer, VkFailure> {
        self.core.alloc_array(dtype, len, init, self.options.staging)
    }

    /// Loads a kernel: checks the module against the kernel and the device's limits, then creates
    /// its shader module, layouts and compute pipeline (through the disk cache when it is on) and
    /// its launch resources. Fills the load and disk parts of `stats`.
    pub(crate) fn load(&self, kernel: ir::Kernel, code: SpirvCode, stats: &mut CompileStats) -> Result<VulkanKernel> {
        let start = Instant::now();
        let k = self.core.load(kernel, code, &self.subgroup(), self.disk.as_ref(), &mut stats.disk)?;
        stats.load = start.elapsed();
        Ok(k)
    }

    /// Launches `k` on `grid` workgroups with already checked `args` and waits for it; with
    /// `timed`, returns the time between the timestamps around its dispatch (when the queue has
    /// timestamps).
    pub(crate) fn run(&self, k: &VulkanKernel, grid: u32, args: &[Bound<'_>], timed: bool) -> Result<Option<Duration>> {
        self.core.launch(k, grid, args, timed)
    }

    /// What this logical device has done and holds so far.
    pub(crate) fn counters(&self) -> RuntimeCounters {
        let c = &self.core;
        RuntimeCounters {
            launches: c.launches.load(Ordering::Relaxed),
            recordings: c.recordings.load(Ordering::Relaxed),
            staged_copies: c.staged_copies.load(Ordering::Relaxed),
            reserved_bytes: c.reserved_bytes(),
        }
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
    pub(super) fn subgroup(&self) -> SubgroupChoice {
        self.subgroup.get().cloned().unwrap_or_else(|| SubgroupChoice {
            size: self.props.reported_subgroup_size,
            note: "reported by the driver".into(),
            required: None,
        })
    }

    /// The subgroup choice that trusts the property: pipelines require that size when the device
    /// allows it.
    pub(super) fn reported_choice(&self, note: String) -> SubgroupChoice {
        let sg = self.props.reported_subgroup_size;
        SubgroupChoice { size: sg, note, required: self.required_size(sg) }
    }

    /// `sg` as a `requiredSubgroupSize`, when subgroup size control allows it for compute shaders.
    pub(super) fn required_size(&self, sg: u32) -> Option<u32> {
        let c = self.props.size_control?;
        (self.features.size_control && c.compute && c.min <= sg && sg <= c.max).then_some(sg)
    }
}
