//! A Vulkan device as the runtime's `Runtime`: what `Device` asks of it, in terms of `context.rs`
//! and `launch.rs`.

use super::context::{Bound, VulkanBuffer, VulkanDevice};
use super::launch::VulkanKernel;
use super::{SpirvCode, SpirvParam};
use crate::backend::{spirv, Backend};
use crate::ir::{self, DType};
use crate::runtime::array::{decode, encode, RuntimeArray};
use crate::runtime::cache::CodeOverrides;
use crate::runtime::device::{downcast_kernel, Runtime, RuntimeKernel};
use crate::runtime::{Arg, CompileStats, DeviceInfo, Error, Result};
use crate::target::{BackendKind, Target};
use crate::trace::TraceError;
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

/// Opens Vulkan device `ordinal` for the `Device` called `name`.
pub(crate) fn open(ordinal: u32, name: &str) -> Result<Arc<dyn Runtime>> {
    let dev = VulkanDevice::open(ordinal).map_err(|reason| Error::Unavailable { backend: name.to_string(), reason })?;
    Ok(Arc::new(dev))
}

/// Lowers `kernel` (traced for `dev`) to SPIR-V for `dev`: its subgroup width and features.
fn lower(kernel: &ir::Kernel, dev: &VulkanDevice) -> std::result::Result<SpirvCode, TraceError> {
    let m = spirv::Spirv::lower(kernel, &dev.target())?;
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

impl Runtime for VulkanDevice {
    /// The lowering's target on this device, as the tracer sees it.
    fn target(&self) -> Target {
        let target = self.spirv_target().trace_target().with_loop_iteration_cap(self.loop_iteration_limit());
        // One array is one storage buffer in one allocation: both limits bound it (a limit of 0
        // is one the device did not report).
        let limits = &self.props().limits;
        match [limits.max_storage_range, limits.max_alloc].into_iter().filter(|&b| b > 0).min() {
            Some(max) => target.with_max_buffer_bytes(max),
            None => target,
        }
    }

    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        let bytes = self.props().memory_bytes;
        (bytes > 0).then_some((bytes, "the device's memory"))
    }

    fn info(&self, name: &str, t: &Target) -> DeviceInfo {
        let p = self.props();
        let mut notes = vec![self.subgroup().note];
        notes.push(format!("{} device", p.device_type));
        let features = self.feature_names();
        if !features.is_empty() {
            notes.push(features.join(", "));
        }
        notes.extend(self.loop_note());
        DeviceInfo {
            name: name.to_string(),
            backend: BackendKind::Vulkan.name(),
            model: p.model.clone(),
            api_version: Some(p.api()),
            driver: Some(p.driver.clone()),
            notes,
            loop_iteration_limit: self.loop_iteration_limit(),
            device_timer: false,
            compute_capability: None,
            driver_version: None,
            multiprocessors: None,
            memory_bytes: (p.memory_bytes > 0).then_some(p.memory_bytes),
            subgroup_size: t.subgroup_size(),
            max_shared_bytes: t.limits().max_shared_bytes,
            cache_dir: None,
        }
    }

    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>> {
        let bytes = init.map(|bits| encode(dtype, bits));
        let buf = self.alloc_buffer(dtype, len, bytes.as_deref()).map_err(|e| e.into_error("<alloc>"))?;
        Ok(Arc::new(buf))
    }

    fn owns(&self, array: &dyn RuntimeArray) -> bool {
        (array as &dyn Any).downcast_ref::<VulkanBuffer>().is_some_and(|b| self.holds(b))
    }

    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>> {
        let t = Instant::now();
        let code = match self.spirv_overrides.get(&ir.name) {
            Some(code) => code,
            None => lower(&ir, self)?,
        };
        stats.lower = t.elapsed();
        Ok(Arc::new(self.load(ir, code, stats)?))
    }

    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()> {
        let bound: Vec<Bound> = args
            .iter()
            .map(|a| match a {
                Arg::Array(h) => {
                    Bound::Array(h.storage_as::<VulkanBuffer>().expect("checked: arrays live on this device"))
                }
                Arg::Scalar(_, bits) => Bound::Scalar(*bits),
            })
            .collect();
        self.run(downcast_kernel(kernel), grid, &bound)
    }

    fn spirv_overrides(&self) -> Option<&CodeOverrides<SpirvCode>> {
        Some(&self.spirv_overrides)
    }
}

impl RuntimeKernel for VulkanKernel {
    fn kernel(&self) -> &ir::Kernel {
        &self.kernel
    }

    fn spirv(&self) -> Option<&SpirvCode> {
        Some(&self.code)
    }
}

impl RuntimeArray for VulkanBuffer {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn len(&self) -> usize {
        self.len
    }

    fn device(&self) -> String {
        format!("vulkan:{}", self.ordinal())
    }

    fn read_bits(&self) -> Result<Vec<u64>> {
        Ok(decode(self.dtype, &self.read().map_err(|e| e.into_error("<host copy>"))?))
    }

    fn write_bits(&self, bits: &[u64]) -> Result<()> {
        self.write(&encode(self.dtype, bits)).map_err(|e| e.into_error("<host copy>"))
    }
}
