//! What a runtime implements: [`Runtime`] for a device and [`RuntimeKernel`] for its loaded
//! kernels ([`RuntimeArray`](super::super::array::RuntimeArray), its memory, lives in `array.rs`).

use crate::backend::Target;
use crate::ir::{self, DType};
use crate::runtime::array::RuntimeArray;
use crate::runtime::cache::CodeOverrides;
use crate::runtime::errors::{Error, Result};
use crate::runtime::info::{CompileStats, DeviceInfo, RuntimeCounters};
use crate::runtime::{Arg, PtxCode, SpirvCode};
use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One device of one runtime: everything [`Device`] asks of a backend.
///
/// Arguments reaching [`launch`](Runtime::launch) are checked: their count and dtypes match the
/// kernel's parameters and every array is one this runtime [`owns`](Runtime::owns); kernels are
/// ones this runtime compiled.
pub(crate) trait Runtime: Send + Sync {
    /// The target kernels are traced for (asked once, when the [`Device`] is made).
    fn target(&self) -> Target;

    /// What this device is; `name` and `target` are the [`Device`]'s.
    fn info(&self, name: &str, target: &Target) -> DeviceInfo;

    /// A new array of `len` elements of `dtype`: zeroed, or holding `init` (`len` element bits).
    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>>;

    /// Bytes an array of `len` elements of `dtype` takes in this runtime's memory, `None` when the
    /// number overflows: `len * dtype.size_bytes()` by default (the emulator keeps 8 per element).
    fn array_bytes(&self, dtype: DType, len: usize) -> Option<u64> {
        (len as u64).checked_mul(dtype.size_bytes() as u64)
    }

    /// The memory one new array may take at most, and what that figure is (for the error), when
    /// the runtime knows it: the device's memory on a GPU, the memory budget on the emulator.
    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        None
    }

    /// Whether `array` lives on this device, so a kernel here can use it.
    fn owns(&self, array: &dyn RuntimeArray) -> bool;

    /// Lowers and loads a traced kernel, filling the `lower`, `load`, `jit` and `disk` parts of
    /// `stats` (the [`Device`] times tracing and the whole).
    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>>;

    /// Runs `kernel` on `grid` blocks with checked `args` and waits for it.
    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()>;

    /// As [`launch`](Runtime::launch), returning how long it ran. By default the host clock around
    /// the whole launch; a runtime with device timers (CUDA's events) times the kernel alone.
    fn launch_timed(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<Duration> {
        let start = Instant::now();
        self.launch(kernel, grid, args)?;
        Ok(start.elapsed())
    }

    /// Runs `kernel` on `grid` blocks grouped in thread-block clusters of `cluster` blocks (checked:
    /// `grid` a multiple of `cluster`, at most 8) and waits for it. Only CUDA has clusters.
    fn launch_cluster(&self, kernel: &dyn RuntimeKernel, _grid: u32, _cluster: u32, _args: &[Arg]) -> Result<()> {
        Err(Error::Launch {
            kernel: kernel.kernel().name.clone(),
            message: "thread-block clusters are a CUDA feature (sm_90); this device has none".into(),
        })
    }

    /// How many blocks of `kernel` run at once on one multiprocessor, when the driver says.
    fn max_active_blocks(&self, _kernel: &dyn RuntimeKernel) -> Result<Option<u32>> {
        Ok(None)
    }

    /// Where [`Device::override_ptx`] stores PTX, on a runtime that loads PTX.
    fn ptx_overrides(&self) -> Option<&CodeOverrides<PtxCode>> {
        None
    }

    /// Where [`Device::override_spirv`] stores SPIR-V, on a runtime that loads SPIR-V.
    fn spirv_overrides(&self) -> Option<&CodeOverrides<SpirvCode>> {
        None
    }

    /// What the runtime has done and holds so far, on a runtime that counts (Vulkan).
    fn counters(&self) -> Option<RuntimeCounters> {
        None
    }
}

/// A kernel one runtime loaded; the runtime finds its own type again with [`downcast_kernel`].
pub(crate) trait RuntimeKernel: Any + Send + Sync + std::fmt::Debug {
    /// The traced IR.
    fn kernel(&self) -> &ir::Kernel;

    /// The emulator's program (CPU runtime).
    fn cpu_program(&self) -> Option<&crate::backend::cpu::Program> {
        None
    }

    /// The PTX that was loaded (CUDA runtime).
    fn ptx(&self) -> Option<&PtxCode> {
        None
    }

    /// The SPIR-V that was loaded (Vulkan runtime).
    fn spirv(&self) -> Option<&SpirvCode> {
        None
    }

    /// Registers per thread of the loaded code, when the driver says (CUDA).
    fn registers(&self) -> Option<u32> {
        None
    }
}

/// `kernel` as runtime `T`'s own kernel type. A device only launches kernels it compiled, so
/// another type is a bug in the runtime.
pub(crate) fn downcast_kernel<T: RuntimeKernel>(kernel: &dyn RuntimeKernel) -> &T {
    (kernel as &dyn Any).downcast_ref::<T>().expect("a device only holds kernels it compiled")
}
