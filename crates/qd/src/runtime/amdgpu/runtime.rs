//! An AMD GPU as the runtime's `Runtime` (feature `amdgpu`): opening a device, its arrays, compiling
//! and launching, in terms of `hip.rs`, `compile.rs` and `abi.rs`.

use super::abi::{arch_from_gcn_name, check_wave_size, pack_args};
use super::compile::Toolchain;
use super::hip::{self, Handle, Hip, ATTR_MAX_SHARED_MEMORY_PER_BLOCK, ATTR_WARP_SIZE};
use crate::backend::amdgpu::{Amdgpu, AmdgpuArch, AmdgpuModule};
use crate::backend::Backend;
use crate::ir::{self, DType};
use crate::runtime::array::{decode, encode, RuntimeArray};
use crate::runtime::device::{downcast_kernel, Runtime, RuntimeKernel};
use crate::runtime::disk_cache::{self, DiskCache};
use crate::runtime::{Arg, CompileStats, DeviceInfo, Error, Result};
use crate::target::{BackendKind, Target};
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

/// What a device and its arrays and kernels share: the library and the device's ordinal.
struct Core {
    hip: Arc<Hip>,
    ordinal: i32,
}

pub(crate) struct AmdgpuDevice {
    core: Arc<Core>,
    arch: AmdgpuArch,
    gcn_arch_name: String,
    model: String,
    memory_bytes: u64,
    wave_size: i32,
    max_shared_bytes: u32,
    toolchain: Toolchain,
    cache: Option<DiskCache>,
}

/// One array: a `hipMalloc` allocation of at least one byte.
pub(crate) struct AmdgpuBuffer {
    ptr: Handle,
    dtype: DType,
    len: usize,
    core: Arc<Core>,
}

impl std::fmt::Debug for AmdgpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "amdgpu:{} buffer of {} x {}", self.core.ordinal, self.len, self.dtype)
    }
}

impl Drop for AmdgpuBuffer {
    fn drop(&mut self) {
        if self.core.hip.set_device(self.core.ordinal, "<free>").is_ok() {
            self.core.hip.free(self.ptr);
        }
    }
}

/// A loaded kernel: its IR, its `.ll` and the HIP module and function.
pub(crate) struct AmdgpuKernel {
    kernel: ir::Kernel,
    module: AmdgpuModule,
    hip_module: Handle,
    function: Handle,
    core: Arc<Core>,
}

impl std::fmt::Debug for AmdgpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "amdgpu kernel `{}` ({})", self.kernel.name, self.module.arch)
    }
}

impl Drop for AmdgpuKernel {
    fn drop(&mut self) {
        if self.core.hip.set_device(self.core.ordinal, "<unload>").is_ok() {
            self.core.hip.unload(self.hip_module);
        }
    }
}

/// How many AMD GPUs HIP reports (0 without ROCm).
pub(crate) fn device_count() -> u32 {
    hip::library().ok().and_then(|h| h.device_count().ok()).map_or(0, |n| n.max(0) as u32)
}

/// Opens AMD GPU `ordinal` for the `Device` called `name`: every reason it cannot be used is an
/// [`Error::Unavailable`].
pub(crate) fn open(ordinal: u32, name: &str) -> Result<Arc<dyn Runtime>> {
    let dev = AmdgpuDevice::open(ordinal).map_err(|reason| Error::Unavailable { backend: name.to_string(), reason })?;
    Ok(Arc::new(dev))
}

impl AmdgpuDevice {
    fn open(ordinal: u32) -> std::result::Result<AmdgpuDevice, String> {
        let hip = hip::library()?;
        let count = hip.device_count()?;
        let ord = i32::try_from(ordinal)
            .ok()
            .filter(|&o| o < count)
            .ok_or_else(|| format!("HIP ({}) reports {count} AMD GPU(s); there is no amdgpu:{ordinal}", hip.path))?;
        hip.set_device(ord, "<open>").map_err(|e| e.to_string())?;
        let gcn_arch_name = hip.gcn_arch_name(ord)?;
        let arch = arch_from_gcn_name(&gcn_arch_name)?;
        let wave_size = hip.attribute(ATTR_WARP_SIZE, ord)?;
        check_wave_size(arch, wave_size)?;
        let shared = hip.attribute(ATTR_MAX_SHARED_MEMORY_PER_BLOCK, ord)?;
        let model = hip.name(ord)?;
        let memory_bytes = hip.total_mem(ord)?;
        let toolchain = Toolchain::find()?;
        let cache = if disk_cache::disabled_by_env() { None } else { disk_cache::dir_from_env().map(DiskCache::new) };
        let limit = Target::amdgpu(arch).limits().max_shared_bytes;
        Ok(AmdgpuDevice {
            core: Arc::new(Core { hip, ordinal: ord }),
            arch,
            gcn_arch_name,
            model,
            memory_bytes,
            wave_size,
            max_shared_bytes: u32::try_from(shared).unwrap_or(0).min(limit),
            toolchain,
            cache,
        })
    }
}

impl Runtime for AmdgpuDevice {
    fn target(&self) -> Target {
        Target::amdgpu(self.arch).with_max_buffer_bytes(self.memory_bytes)
    }

    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        Some((self.memory_bytes, "the device's memory"))
    }

    fn info(&self, name: &str, t: &Target) -> DeviceInfo {
        DeviceInfo {
            name: name.to_string(),
            backend: BackendKind::Amdgpu.name(),
            model: format!("{} ({})", self.model, self.gcn_arch_name),
            api_version: None,
            driver: Some(self.core.hip.path.clone()),
            notes: vec![
                format!("wave64 code objects; the device reports {}-wide wavefronts", self.wave_size),
                "not yet run on AMD hardware by this project".into(),
            ],
            loop_iteration_limit: None,
            device_timer: false,
            compute_capability: None,
            driver_version: None,
            multiprocessors: None,
            memory_bytes: Some(self.memory_bytes),
            subgroup_size: t.subgroup_size(),
            max_shared_bytes: self.max_shared_bytes.min(t.limits().max_shared_bytes),
            cache_dir: self.cache.as_ref().map(|c| c.root().to_path_buf()),
        }
    }

    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>> {
        let hip = &self.core.hip;
        let bytes = len * dtype.size_bytes();
        hip.set_device(self.core.ordinal, "<alloc>")?;
        let ptr = hip.malloc(bytes.max(1)).map_err(|e| Error::Allocation { dtype, len, message: e.to_string() })?;
        let buf = AmdgpuBuffer { ptr, dtype, len, core: self.core.clone() };
        let data = init.map(|bits| encode(dtype, bits)).unwrap_or_else(|| vec![0; bytes]);
        if !data.is_empty() {
            hip.copy_to_device(ptr, &data)?;
        }
        Ok(Arc::new(buf))
    }

    fn owns(&self, array: &dyn RuntimeArray) -> bool {
        (array as &dyn Any).downcast_ref::<AmdgpuBuffer>().is_some_and(|b| Arc::ptr_eq(&b.core, &self.core))
    }

    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>> {
        let t = Instant::now();
        let module = Amdgpu::lower(&ir, &self.target())?;
        stats.lower = t.elapsed();
        let t = Instant::now();
        let image = self.toolchain.code_object(&module, self.cache.as_ref(), &ir.name, stats)?;
        let hip = &self.core.hip;
        hip.set_device(self.core.ordinal, &ir.name)?;
        let (hip_module, function) = hip.load(&image, &module.entry, &ir.name)?;
        stats.load = t.elapsed();
        Ok(Arc::new(AmdgpuKernel { kernel: ir, module, hip_module, function, core: self.core.clone() }))
    }

    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()> {
        let k: &AmdgpuKernel = downcast_kernel(kernel);
        if grid == 0 {
            // An empty range: nothing to launch.
            return Ok(());
        }
        let mut slots = pack_args(args, |h| {
            h.storage_as::<AmdgpuBuffer>().expect("checked: arrays live on this device").ptr as u64
        });
        debug_assert_eq!(slots.len() * 8, k.module.kernarg_bytes as usize);
        let hip = &self.core.hip;
        hip.set_device(self.core.ordinal, &k.kernel.name)?;
        hip.launch(k.function, grid, k.module.block_dim, &mut slots, &k.kernel.name)
    }
}

impl RuntimeKernel for AmdgpuKernel {
    fn kernel(&self) -> &ir::Kernel {
        &self.kernel
    }
}

impl RuntimeArray for AmdgpuBuffer {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn len(&self) -> usize {
        self.len
    }

    fn device(&self) -> String {
        format!("amdgpu:{}", self.core.ordinal)
    }

    fn read_bits(&self) -> Result<Vec<u64>> {
        let mut out = vec![0u8; self.len * self.dtype.size_bytes()];
        if !out.is_empty() {
            self.core.hip.set_device(self.core.ordinal, "<host copy>")?;
            self.core.hip.copy_to_host(&mut out, self.ptr)?;
        }
        Ok(decode(self.dtype, &out))
    }

    fn write_bits(&self, bits: &[u64]) -> Result<()> {
        let data = encode(self.dtype, bits);
        if data.is_empty() {
            return Ok(());
        }
        self.core.hip.set_device(self.core.ordinal, "<host copy>")?;
        self.core.hip.copy_to_device(self.ptr, &data)
    }
}
