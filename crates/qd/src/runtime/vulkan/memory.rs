//! Device memory (D22) through `gpu-allocator` (memory types chosen from the device's properties, small
//! buffers sub-allocated from shared blocks): arrays in device-local memory, the parameter blocks and
//! the staging buffer in host-visible memory, and the host copies of arrays.
//!
//! A copy goes through the array's own mapping when its memory is host-visible and coherent (and,
//! for reads, host-cached: reading uncached device memory over the bus is slow), as on lavapipe or
//! an integrated GPU; otherwise, or when staging is forced (`QD_VULKAN_STAGING=1`,
//! [`VulkanOptions::staging`](super::VulkanOptions::staging)), it goes through the device's one
//! staging buffer, [`STAGING_BYTES`] at a time, with a copy command per piece.

use super::{check, lock, Core, Submit, VkFailure};
use crate::ir::DType;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme, Allocator, AllocatorCreateDesc};
use gpu_allocator::{AllocationSizes, AllocatorDebugSettings, MemoryLocation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The staging buffer's size: copies larger than this go in pieces.
pub(super) const STAGING_BYTES: u64 = 64 << 20;

/// The allocator of one logical device: blocks start at 8 MiB and grow to gpu-allocator's usual
/// 256 MiB (device) and 64 MiB (host), so a device that runs one small kernel does not reserve
/// hundreds of megabytes; an allocation larger than a block gets a block of its own.
pub(super) fn allocator(
    instance: &ash::Instance,
    device: &ash::Device,
    physical: vk::PhysicalDevice,
) -> std::result::Result<Allocator, String> {
    const MIB: u64 = 1 << 20;
    // Nothing leaks: every array and kernel frees its memory before the device goes.
    let mut debug_settings = AllocatorDebugSettings::default();
    debug_settings.log_leaks_on_shutdown = false;
    Allocator::new(&AllocatorCreateDesc {
        instance: instance.clone(),
        device: device.clone(),
        physical_device: physical,
        debug_settings,
        buffer_device_address: false,
        allocation_sizes: AllocationSizes::new(8 * MIB, 8 * MIB)
            .with_max_device_memblock_size(256 * MIB)
            .with_max_host_memblock_size(64 * MIB),
    })
    .map_err(|e| format!("gpu-allocator: {e}"))
}

/// One buffer and the memory bound to it.
pub(super) struct Memory {
    pub(super) buffer: vk::Buffer,
    allocation: Option<Allocation>,
    /// Bytes the buffer holds (at least the bytes asked for).
    pub(super) size: u64,
}

// SAFETY: the mapped pointer inside the allocation is only dereferenced under the device's
// submission lock; Vulkan handles may move between threads.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

impl Memory {
    /// The host mapping, when the memory is host-visible.
    pub(super) fn mapped(&self) -> Option<*mut u8> {
        self.allocation.as_ref()?.mapped_ptr().map(|p| p.as_ptr() as *mut u8)
    }

    fn flags(&self) -> vk::MemoryPropertyFlags {
        self.allocation.as_ref().map(|a| a.memory_properties()).unwrap_or_default()
    }

    /// The mapping, when the host may write through it without flushes.
    fn writable(&self) -> Option<*mut u8> {
        self.mapped().filter(|_| self.flags().contains(vk::MemoryPropertyFlags::HOST_COHERENT))
    }

    /// The mapping, when the host may also read through it quickly (coherent and cached).
    fn readable(&self) -> Option<*mut u8> {
        let want = vk::MemoryPropertyFlags::HOST_COHERENT | vk::MemoryPropertyFlags::HOST_CACHED;
        self.mapped().filter(|_| self.flags().contains(want))
    }
}

impl Core {
    /// A buffer of at least `bytes` bytes (16 at least, a multiple of 16) in memory for `location`,
    /// usable as a storage buffer and for copies both ways.
    pub(super) fn alloc_memory(
        &self,
        bytes: u64,
        location: MemoryLocation,
        name: &str,
    ) -> std::result::Result<Memory, VkFailure> {
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
        let requirements = unsafe { d.get_buffer_memory_requirements(buffer) };
        let desc = AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        };
        let allocation = match lock(&self.allocator).allocate(&desc) {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: an unused buffer of this device.
                unsafe { d.destroy_buffer(buffer, None) };
                return Err(VkFailure {
                    call: "vkAllocateMemory",
                    message: format!("{size} bytes of {location:?} memory on {}: {e}", self.props.label()),
                });
            }
        };
        let mut mem = Memory { buffer, allocation: Some(allocation), size };
        let a = mem.allocation.as_ref().expect("just set");
        // SAFETY: memory the allocator chose for these requirements, at an offset it aligned.
        if let Err(e) = check("vkBindBufferMemory", unsafe { d.bind_buffer_memory(buffer, a.memory(), a.offset()) }) {
            // SAFETY: nothing uses the buffer yet.
            unsafe { self.free_memory(&mut mem) };
            return Err(e);
        }
        Ok(mem)
    }

    /// Frees a buffer and its memory. Nothing pending may use it.
    pub(super) unsafe fn free_memory(&self, m: &mut Memory) {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            self.device.destroy_buffer(m.buffer, None);
            m.buffer = vk::Buffer::null();
            if let Some(a) = m.allocation.take() {
                // A failure here only leaks the range; there is nobody to report it to.
                let _ = lock(&self.allocator).free(a);
            }
        }
    }

    /// Bytes of device memory the allocator holds in blocks (arrays, parameter blocks, staging).
    pub(super) fn reserved_bytes(&self) -> u64 {
        lock(&self.allocator).capacity()
    }

    /// A new array of `len` elements of `dtype` in device-local memory: zeroed, or holding `init`
    /// (`len` elements' bytes). `staging` forces host copies through the staging buffer.
    pub(super) fn alloc_array(
        self: &Arc<Self>,
        dtype: DType,
        len: usize,
        init: Option<&[u8]>,
        staging: bool,
    ) -> std::result::Result<VulkanBuffer, VkFailure> {
        let bytes = (len as u64).checked_mul(dtype.size_bytes() as u64).ok_or_else(|| VkFailure {
            call: "vkCreateBuffer",
            message: format!("{len} elements of {dtype} overflow a 64-bit size"),
        })?;
        let mem = self.alloc_memory(bytes, MemoryLocation::GpuOnly, "qd array")?;
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let buf =
            VulkanBuffer { core: self.clone(), mem, len, dtype, id: NEXT_ID.fetch_add(1, Ordering::Relaxed), staging };
        match init {
            Some(data) => buf.write(data)?,
            None => buf.zero()?,
        }
        Ok(buf)
    }
}

/// An array in device memory.
pub(crate) struct VulkanBuffer {
    pub(super) core: Arc<Core>,
    pub(super) mem: Memory,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    /// Unique in the process: what a kernel's recorded launch remembers its arrays by (a freed
    /// buffer's handle may come back for a new one).
    pub(super) id: u64,
    /// Host copies always go through the staging buffer.
    staging: bool,
}

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

    /// Copies the contents to the host.
    pub(crate) fn read(&self) -> std::result::Result<Vec<u8>, VkFailure> {
        let mut s = lock(&self.core.submit);
        s.usable(&self.core.props)?;
        let mut out = vec![0u8; self.bytes()];
        match self.mem.readable().filter(|_| !self.staging) {
            // SAFETY: the mapping holds at least `bytes()` bytes; no kernel runs (the lock is held
            // and every submission is waited for under it).
            Some(ptr) => unsafe { std::ptr::copy_nonoverlapping(ptr, out.as_mut_ptr(), out.len()) },
            None => {
                for (offset, piece) in
                    (0u64..).step_by(STAGING_BYTES as usize).zip(out.chunks_mut(STAGING_BYTES as usize))
                {
                    let (sbuf, sptr) = self.core.staging(&mut s)?;
                    let region = vk::BufferCopy { src_offset: offset, dst_offset: 0, size: piece.len() as u64 };
                    // SAFETY: both buffers belong to this device and hold the region.
                    s.run(&self.core, "a copy to the host", |d, cmd| unsafe {
                        d.cmd_copy_buffer(cmd, self.mem.buffer, sbuf, &[region])
                    })?;
                    // SAFETY: the staging mapping holds STAGING_BYTES bytes, written by the copy
                    // the wait above completed.
                    unsafe { std::ptr::copy_nonoverlapping(sptr, piece.as_mut_ptr(), piece.len()) };
                }
            }
        }
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
        let mut s = lock(&self.core.submit);
        s.usable(&self.core.props)?;
        match self.mem.writable().filter(|_| !self.staging) {
            // SAFETY: as in `read`.
            Some(ptr) => unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) },
            None => {
                for (offset, piece) in (0u64..).step_by(STAGING_BYTES as usize).zip(data.chunks(STAGING_BYTES as usize))
                {
                    let (sbuf, sptr) = self.core.staging(&mut s)?;
                    // SAFETY: the staging mapping holds STAGING_BYTES bytes and no copy is pending.
                    unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), sptr, piece.len()) };
                    let region = vk::BufferCopy { src_offset: 0, dst_offset: offset, size: piece.len() as u64 };
                    // SAFETY: both buffers belong to this device and hold the region.
                    s.run(&self.core, "a copy from the host", |d, cmd| unsafe {
                        d.cmd_copy_buffer(cmd, sbuf, self.mem.buffer, &[region])
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Zeroes the whole buffer (a new array).
    fn zero(&self) -> std::result::Result<(), VkFailure> {
        let mut s = lock(&self.core.submit);
        s.usable(&self.core.props)?;
        match self.mem.writable().filter(|_| !self.staging) {
            // SAFETY: the mapping holds `mem.size` bytes; nothing uses the new buffer.
            Some(ptr) => unsafe { std::ptr::write_bytes(ptr, 0, self.mem.size as usize) },
            // SAFETY: a buffer of this device; its size is a multiple of 4.
            None => s.run(&self.core, "zeroing a new array", |d, cmd| unsafe {
                d.cmd_fill_buffer(cmd, self.mem.buffer, 0, vk::WHOLE_SIZE, 0)
            })?,
        }
        Ok(())
    }
}

impl Drop for VulkanBuffer {
    fn drop(&mut self) {
        if lock(&self.core.submit).wedged.is_some() {
            // A kernel may still be running: leak the memory rather than free what it uses.
            return;
        }
        // SAFETY: every submission is waited for, and launches hold their arrays while they run.
        unsafe { self.core.free_memory(&mut self.mem) };
    }
}

impl Core {
    /// The staging buffer and its mapping (made on first use, kept for the device's life), for one
    /// piece of a copy.
    fn staging(&self, s: &mut Submit) -> std::result::Result<(vk::Buffer, *mut u8), VkFailure> {
        if s.staging.is_none() {
            // Host-cached where the device has it: reads come back through it.
            s.staging = Some(self.alloc_memory(STAGING_BYTES, MemoryLocation::GpuToCpu, "qd staging")?);
        }
        self.staged_copies.fetch_add(1, Ordering::Relaxed);
        let m = s.staging.as_ref().filter(|m| m.mapped().is_some()).ok_or_else(|| VkFailure {
            call: "vkMapMemory",
            message: format!("{}: the staging buffer's memory is not host-visible", self.props.label()),
        })?;
        Ok((m.buffer, m.mapped().unwrap_or(std::ptr::null_mut())))
    }
}
