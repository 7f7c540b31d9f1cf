//! The Metal device as the runtime's `Runtime` (macOS, feature `metal`).

use crate::backend::metal::{BufferAbi, Metal, MslModule, MslVersion};
use crate::backend::Backend;
use crate::ir::{self, DType};
use crate::runtime::array::{decode, encode, RuntimeArray};
use crate::runtime::cache::lock;
use crate::runtime::device::{downcast_kernel, Runtime, RuntimeKernel};
use crate::runtime::{Arg, CompileStats, DeviceInfo, Error, Result};
use crate::target::{BackendKind, Target};
use objc2::rc::Retained;
use objc2::runtime::ProtocolObject;
use objc2_foundation::{NSError, NSString};
use objc2_metal::{
    MTLBuffer, MTLCommandBuffer, MTLCommandBufferStatus, MTLCommandEncoder, MTLCommandQueue, MTLCompileOptions,
    MTLComputeCommandEncoder, MTLComputePipelineState, MTLCreateSystemDefaultDevice, MTLDevice, MTLLanguageVersion,
    MTLLibrary, MTLResourceOptions, MTLSize,
};
use std::any::Any;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The SIMD-group width kernels are traced for ([`Target::metal`]).
const SIMD_WIDTH: usize = 32;

/// A buffer shared between threads. objc2-metal marks `MTLBuffer` neither `Send` nor `Sync`
/// because its contents are raw memory; qd touches the contents only under the device's queue lock
/// (`MetalBuffer::copy_in`/`copy_out`, and launches, which wait for completion under it), and
/// Metal lets any thread reference the buffer object itself.
struct SharedBuffer(Retained<ProtocolObject<dyn MTLBuffer>>);
// SAFETY: see above: the contents are only accessed under the queue lock.
unsafe impl Send for SharedBuffer {}
// SAFETY: as for `Send`.
unsafe impl Sync for SharedBuffer {}

type Object<P> = Retained<ProtocolObject<P>>;

pub(crate) struct MetalDevice {
    core: Arc<Core>,
    target: Target,
}

/// What the device and its arrays share: the device, and the queue whose lock orders host copies
/// with launches.
struct Core {
    device: Object<dyn MTLDevice>,
    queue: Mutex<Object<dyn MTLCommandQueue>>,
}

/// One array: a shared-storage buffer.
pub(crate) struct MetalBuffer {
    buffer: SharedBuffer,
    dtype: DType,
    len: usize,
    /// The device that made it (arrays of another `MetalDevice` are refused).
    core: Arc<Core>,
}

impl std::fmt::Debug for MetalBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "metal buffer of {} x {}", self.len, self.dtype)
    }
}

/// A compiled kernel: its IR, its MSL and its pipeline.
pub(crate) struct MetalKernel {
    kernel: ir::Kernel,
    module: MslModule,
    pipeline: Object<dyn MTLComputePipelineState>,
}

impl std::fmt::Debug for MetalKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "metal kernel `{}`", self.kernel.name)
    }
}

/// One device: the system default.
pub(crate) fn device_count() -> u32 {
    u32::from(MTLCreateSystemDefaultDevice().is_some())
}

/// Opens the system default device for the `Device` called `name` (`ordinal` 0 only).
pub(crate) fn open(ordinal: u32, name: &str) -> Result<Arc<dyn Runtime>> {
    let unavailable = |reason: String| Error::Unavailable { backend: name.to_string(), reason };
    if ordinal != 0 {
        return Err(unavailable(format!("only metal:0, the system default device, exists (asked for {ordinal})")));
    }
    let device = MTLCreateSystemDefaultDevice().ok_or_else(|| unavailable("this Mac has no Metal device".into()))?;
    let queue = device.newCommandQueue().ok_or_else(|| unavailable("newCommandQueue returned nil".into()))?;
    let core = Core { device, queue: Mutex::new(queue) };
    Ok(Arc::new(MetalDevice { core: Arc::new(core), target: Target::metal() }))
}

fn driver(kernel: &str, call: &str, message: impl Into<String>) -> Error {
    Error::Driver { kernel: kernel.to_string(), call: call.to_string(), message: message.into() }
}

fn describe(e: &NSError) -> String {
    e.localizedDescription().to_string()
}

fn language_version(v: MslVersion) -> MTLLanguageVersion {
    match v {
        MslVersion::V3_0 => MTLLanguageVersion::Version3_0,
        MslVersion::V3_1 => MTLLanguageVersion::Version3_1,
        MslVersion::V3_2 => MTLLanguageVersion::Version3_2,
    }
}

impl MetalDevice {
    /// The library, function and pipeline of `module`, checking the SIMD width and group size.
    fn pipeline(&self, name: &str, module: &MslModule) -> Result<Object<dyn MTLComputePipelineState>> {
        let options = MTLCompileOptions::new();
        options.setLanguageVersion(language_version(module.version));
        // D5 float semantics: no fast math. `setFastMathEnabled` exists on every macOS that has
        // MSL 3.0 (its successor `mathMode` needs macOS 15).
        #[allow(deprecated)]
        options.setFastMathEnabled(false);
        let source = NSString::from_str(&module.source);
        let library = self
            .core
            .device
            .newLibraryWithSource_options_error(&source, Some(&options))
            .map_err(|e| driver(name, "newLibraryWithSource", describe(&e)))?;
        let function = library
            .newFunctionWithName(&NSString::from_str(&module.entry))
            .ok_or_else(|| driver(name, "newFunctionWithName", format!("no function `{}`", module.entry)))?;
        let pipeline = self
            .core
            .device
            .newComputePipelineStateWithFunction_error(&function)
            .map_err(|e| driver(name, "newComputePipelineStateWithFunction", describe(&e)))?;
        let width = pipeline.threadExecutionWidth();
        if width != SIMD_WIDTH {
            return Err(driver(
                name,
                "threadExecutionWidth",
                format!("the pipeline runs {width}-wide SIMD groups; kernels for metal are traced for {SIMD_WIDTH}"),
            ));
        }
        let most = pipeline.maxTotalThreadsPerThreadgroup();
        if most < module.threadgroup_size as usize {
            return Err(driver(
                name,
                "maxTotalThreadsPerThreadgroup",
                format!(
                    "the pipeline allows {most} threads per threadgroup; the kernel's block_dim is {}",
                    module.threadgroup_size
                ),
            ));
        }
        Ok(pipeline)
    }
}

impl Runtime for MetalDevice {
    fn target(&self) -> Target {
        self.target.clone()
    }

    fn info(&self, name: &str, t: &Target) -> DeviceInfo {
        DeviceInfo {
            name: name.to_string(),
            backend: BackendKind::Metal.name(),
            model: self.core.device.name().to_string(),
            api_version: None,
            driver: None,
            notes: vec![format!("MSL up to {} assumed (macOS 15)", MslVersion::LATEST)],
            loop_iteration_limit: None,
            device_timer: false,
            compute_capability: None,
            driver_version: None,
            multiprocessors: None,
            memory_bytes: None,
            subgroup_size: t.subgroup_size(),
            max_shared_bytes: t.limits().max_shared_bytes,
            cache_dir: None,
        }
    }

    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>> {
        // Metal refuses zero-length buffers: the smallest is one 16-byte line.
        let bytes = (len * dtype.size_bytes()).max(16);
        let buffer = self
            .core
            .device
            .newBufferWithLength_options(bytes, MTLResourceOptions::StorageModeShared)
            .ok_or_else(|| driver("<alloc>", "newBufferWithLength", format!("no buffer of {bytes} bytes")))?;
        let buf = MetalBuffer { buffer: SharedBuffer(buffer), dtype, len, core: self.core.clone() };
        let data = init.map(|bits| encode(dtype, bits)).unwrap_or_else(|| vec![0; len * dtype.size_bytes()]);
        buf.copy_in(&data);
        Ok(Arc::new(buf))
    }

    fn owns(&self, array: &dyn RuntimeArray) -> bool {
        (array as &dyn Any).downcast_ref::<MetalBuffer>().is_some_and(|b| Arc::ptr_eq(&b.core, &self.core))
    }

    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>> {
        let t = Instant::now();
        let module = Metal::lower(&ir, &self.target)?;
        stats.lower = t.elapsed();
        let t = Instant::now();
        let pipeline = self.pipeline(&ir.name, &module)?;
        stats.load = t.elapsed();
        Ok(Arc::new(MetalKernel { kernel: ir, module, pipeline }))
    }

    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()> {
        let k: &MetalKernel = downcast_kernel(kernel);
        let name = &k.kernel.name;
        if grid == 0 {
            // An empty range: nothing to dispatch.
            return Ok(());
        }
        // The parameter block: an array's length or a scalar's bits, one u64 per parameter (at
        // least one, so buffer(0) is always bound).
        let mut block: Vec<u64> = args
            .iter()
            .map(|a| match a {
                Arg::Array(h) => h.len() as u64,
                Arg::Scalar(_, bits) => *bits,
            })
            .collect();
        if block.is_empty() {
            block.push(0);
        }
        let queue = lock(&self.core.queue);
        let cb = queue.commandBuffer().ok_or_else(|| driver(name, "commandBuffer", "returned nil"))?;
        let enc = cb.computeCommandEncoder().ok_or_else(|| driver(name, "computeCommandEncoder", "returned nil"))?;
        enc.setComputePipelineState(&k.pipeline);
        let ptr = NonNull::new(block.as_mut_ptr().cast::<c_void>()).expect("a Vec's pointer is not null");
        // SAFETY: `block` outlives the call, which copies its `len * 8` bytes; index 0 is the
        // parameter block of the ABI.
        unsafe { enc.setBytes_length_atIndex(ptr, block.len() * 8, 0) };
        for (arg, abi) in args.iter().zip(&k.module.params) {
            if let (Arg::Array(h), BufferAbi::Array { index, .. }) = (arg, abi) {
                let b = h.storage_as::<MetalBuffer>().expect("checked: arrays live on this device");
                // SAFETY: the buffer is retained by its array, which the caller holds until the
                // launch returns (we wait for completion below); the index is the ABI's.
                unsafe { enc.setBuffer_offset_atIndex(Some(&b.buffer.0), 0, *index as usize) };
            }
        }
        let size = |width: usize| MTLSize { width, height: 1, depth: 1 };
        enc.dispatchThreadgroups_threadsPerThreadgroup(size(grid as usize), size(k.module.threadgroup_size as usize));
        enc.endEncoding();
        cb.commit();
        cb.waitUntilCompleted();
        if cb.status() == MTLCommandBufferStatus::Error {
            let message = cb.error().map_or_else(|| "the command buffer failed".to_string(), |e| describe(&e));
            return Err(driver(name, "MTLCommandBuffer", message));
        }
        Ok(())
    }
}

impl MetalBuffer {
    /// The buffer's bytes as a slice of `len` elements (bytes beyond them are padding).
    fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    fn copy_in(&self, data: &[u8]) {
        let n = self.bytes().min(data.len());
        let _queue = lock(&self.core.queue);
        // SAFETY: `contents` points at the buffer's shared storage of at least `bytes()` bytes;
        // the queue lock is held, so no kernel runs on it meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buffer.0.contents().as_ptr().cast::<u8>(), n) };
    }

    fn copy_out(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.bytes()];
        let _queue = lock(&self.core.queue);
        // SAFETY: as in `copy_in`.
        unsafe {
            std::ptr::copy_nonoverlapping(self.buffer.0.contents().as_ptr().cast::<u8>(), out.as_mut_ptr(), out.len())
        };
        out
    }
}

impl RuntimeKernel for MetalKernel {
    fn kernel(&self) -> &ir::Kernel {
        &self.kernel
    }
}

impl RuntimeArray for MetalBuffer {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn len(&self) -> usize {
        self.len
    }

    fn device(&self) -> String {
        "metal:0".into()
    }

    fn read_bits(&self) -> Result<Vec<u64>> {
        Ok(decode(self.dtype, &self.copy_out()))
    }

    fn write_bits(&self, bits: &[u64]) -> Result<()> {
        self.copy_in(&encode(self.dtype, bits));
        Ok(())
    }
}
