//! A CUDA device as the runtime's `Runtime`: what `Device` asks of it, in terms of `device.rs`,
//! `module.rs` and `launch.rs`.

use super::device::{CudaBuffer, CudaDevice, DEFAULT_SHARED_LIMIT};
use super::launch::Bound;
use super::module::CudaKernel;
use super::{CudaOptions, PtxCode};
use crate::ir::{self, DType};
use crate::runtime::array::{decode, encode, RuntimeArray};
use crate::runtime::cache::CodeOverrides;
use crate::runtime::device::{downcast_kernel, Runtime, RuntimeKernel};
use crate::runtime::{Arg, CompileStats, DeviceInfo, Error, Result};
use crate::target::{BackendKind, Target};
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

/// Opens CUDA device `ordinal` for the `Device` called `name`.
pub(crate) fn open(ordinal: u32, options: &CudaOptions, name: &str) -> Result<Arc<dyn Runtime>> {
    let dev = CudaDevice::open(ordinal, options)
        .map_err(|reason| Error::Unavailable { backend: name.to_string(), reason })?;
    Ok(Arc::new(dev))
}

impl Runtime for CudaDevice {
    /// CUDA caps for this compute capability, with the device's own shared-memory limit.
    fn target(&self) -> Target {
        Target::cuda(self.props.sm())
            .with_max_shared_bytes(self.props.max_shared_optin.max(DEFAULT_SHARED_LIMIT))
            .with_subgroup_size(self.props.warp_size)
            .with_max_buffer_bytes(self.props.total_mem)
    }

    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        Some((self.props.total_mem, "the device's memory"))
    }

    fn info(&self, name: &str, t: &Target) -> DeviceInfo {
        DeviceInfo {
            name: name.to_string(),
            backend: BackendKind::Cuda.name(),
            model: self.props.model.clone(),
            api_version: None,
            driver: None,
            notes: Vec::new(),
            loop_iteration_limit: None,
            device_timer: true,
            compute_capability: Some(self.props.cc),
            driver_version: Some((self.props.driver_version / 1000, self.props.driver_version % 1000 / 10)),
            multiprocessors: Some(self.props.sm_count),
            memory_bytes: Some(self.props.total_mem),
            subgroup_size: t.subgroup_size(),
            max_shared_bytes: t.limits().max_shared_bytes,
            cache_dir: self.cache_dir().map(|p| p.to_path_buf()),
        }
    }

    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>> {
        let bytes = init.map(|bits| encode(dtype, bits));
        let buf = self.alloc_buffer(dtype, len, bytes.as_deref()).map_err(|e| e.into_error("<alloc>"))?;
        Ok(Arc::new(buf))
    }

    fn owns(&self, array: &dyn RuntimeArray) -> bool {
        (array as &dyn Any).downcast_ref::<CudaBuffer>().is_some_and(|b| b.ordinal == self.props.ordinal)
    }

    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>> {
        Ok(Arc::new(self.compile_kernel(ir, stats)?))
    }

    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()> {
        self.run(downcast_kernel(kernel), grid, &bind(args))
    }

    /// The kernel alone, between two events around `cuLaunchKernel`.
    fn launch_timed(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<Duration> {
        self.run_timed(downcast_kernel(kernel), grid, &bind(args))
    }

    /// `cuLaunchKernelEx` with the cluster-dimension attribute.
    fn launch_cluster(&self, kernel: &dyn RuntimeKernel, grid: u32, cluster: u32, args: &[Arg]) -> Result<()> {
        self.run_cluster(downcast_kernel(kernel), grid, cluster, &bind(args))
    }

    fn max_active_blocks(&self, kernel: &dyn RuntimeKernel) -> Result<Option<u32>> {
        self.occupancy(downcast_kernel(kernel)).map(Some)
    }

    fn ptx_overrides(&self) -> Option<&CodeOverrides<PtxCode>> {
        Some(&self.ptx_overrides)
    }
}

/// Checked arguments as the launch passes them.
fn bind(args: &[Arg]) -> Vec<Bound> {
    args.iter()
        .map(|a| match a {
            Arg::Array(h) => {
                let b = h.storage_as::<CudaBuffer>().expect("checked: arrays live on this device");
                Bound::Array { ptr: b.ptr, len: b.len }
            }
            Arg::Scalar(_, bits) => Bound::Scalar(*bits),
        })
        .collect()
}

impl RuntimeKernel for CudaKernel {
    fn kernel(&self) -> &ir::Kernel {
        &self.kernel
    }

    fn ptx(&self) -> Option<&PtxCode> {
        CudaKernel::ptx(self)
    }

    fn registers(&self) -> Option<u32> {
        CudaKernel::registers(self)
    }
}

impl RuntimeArray for CudaBuffer {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn len(&self) -> usize {
        self.len
    }

    fn device(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    fn read_bits(&self) -> Result<Vec<u64>> {
        Ok(decode(self.dtype, &self.read().map_err(|e| e.into_error("<host copy>"))?))
    }

    fn write_bits(&self, bits: &[u64]) -> Result<()> {
        self.write(&encode(self.dtype, bits)).map_err(|e| e.into_error("<host copy>"))
    }
}
