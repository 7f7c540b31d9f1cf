//! The logical device and what every kernel and array on it shares (`Core`: the queue, its
//! submission state, the pipeline cache, the measured subgroup size), host-visible buffers, the
//! device handle the runtime holds ([`VulkanDevice`]) and arrays ([`VulkanBuffer`]).

use super::device::{Features, Props};
use super::launch::VulkanKernel;
use super::{instance, probe, SpirvCode};
use crate::backend::spirv;
use crate::ir::{self, DType};
use crate::runtime::cache::{lock, CodeOverrides};
use crate::runtime::{CompileStats, Error, Result};
use ash::vk;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

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

/// Host-visible memory holding one buffer, mapped for its life.
pub(super) struct HostBuffer {
    pub(super) buffer: vk::Buffer,
    pub(super) memory: vk::DeviceMemory,
    pub(super) ptr: *mut u8,
    /// Bytes allocated (at least the bytes asked for).
    pub(super) size: u64,
}

/// What one submission at a time uses: the queue and its command buffer, fence, descriptor pool and
/// parameter block. Behind the device's mutex, which also orders host copies with launches.
pub(super) struct Submit {
    pub(super) queue: vk::Queue,
    pub(super) pool: vk::CommandPool,
    pub(super) cmd: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    pub(super) desc_pool: vk::DescriptorPool,
    /// Storage-buffer descriptors `desc_pool` holds (one set at a time).
    pub(super) desc_capacity: u32,
    pub(super) params: Option<HostBuffer>,
    /// Why the queue can no longer be used (a launch that timed out, a lost device).
    pub(super) wedged: Option<String>,
}

// SAFETY: the mapped pointer is only used under the device's mutex; handles may move threads.
unsafe impl Send for Submit {}

/// A logical device and what every kernel and array on it shares.
pub(super) struct Core {
    pub(super) device: ash::Device,
    pub(super) props: Props,
    pub(super) features: Features,
    pub(super) memory: vk::PhysicalDeviceMemoryProperties,
    pub(super) queue_family: u32,
    pub(super) pipeline_cache: vk::PipelineCache,
    pub(super) subgroup: OnceLock<SubgroupChoice>,
    /// What the loop probe found: the iterations after which loops end, if they do.
    pub(super) loop_limit: OnceLock<std::result::Result<Option<u64>, String>>,
    pub(super) submit: Mutex<Submit>,
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
pub(super) unsafe fn free_host_buffer(device: &ash::Device, b: &HostBuffer) {
    // SAFETY: the caller guarantees the buffer is idle (this function's contract).
    unsafe {
        device.destroy_buffer(b.buffer, None);
        device.free_memory(b.memory, None);
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
            return Ok(VulkanDevice { core, spirv_overrides: CodeOverrides::new() });
        }
        let core = Arc::new(Core::create(v, ordinal)?);
        let choice = probe::measure(&core);
        let _ = core.subgroup.set(choice);
        let _ = core.loop_limit.set(probe::loop_limit(&core));
        open.retain(|(_, w)| w.strong_count() > 0);
        open.push((ordinal, Arc::downgrade(&core)));
        Ok(VulkanDevice { core, spirv_overrides: CodeOverrides::new() })
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

    /// A new array of `len` elements of `dtype`: zeroed, or copied from `init` (`len` elements).
    pub(crate) fn alloc_buffer(
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
    pub(crate) fn run(&self, k: &VulkanKernel, grid: u32, args: &[Bound<'_>]) -> Result<()> {
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

    /// A host-visible, coherent, mapped and zeroed buffer of at least `bytes` bytes (16 at least, a
    /// multiple of 16). Device-local memory types are tried first.
    pub(super) fn alloc_host_buffer(&self, bytes: u64) -> std::result::Result<HostBuffer, VkFailure> {
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
}

/// An array in host-visible device memory.
pub(crate) struct VulkanBuffer {
    pub(super) core: Arc<Core>,
    pub(super) mem: HostBuffer,
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

    pub(super) fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    pub(super) fn usable(&self, s: &Submit) -> std::result::Result<(), VkFailure> {
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
