//! Opening a CUDA device (its primary context, properties and disk cache) and its arrays.

use super::driver::{check, device_count, driver, Context, DriverFailure};
use super::{CudaOptions, PtxCode};
use crate::ir::DType;
use crate::runtime::cache::CodeOverrides;
use crate::runtime::disk_cache::{self, DiskCache, Fnv128};
use cudarc::driver::sys;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::null_mut;
use std::sync::Arc;

/// Shared memory a kernel may use without opting in (`cuFuncSetAttribute`).
pub(super) const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;
/// What the driver says about a device.
#[derive(Clone, Debug)]
pub(crate) struct Props {
    pub(crate) ordinal: u32,
    pub(crate) model: String,
    pub(crate) cc: (u32, u32),
    pub(crate) sm_count: u32,
    pub(crate) warp_size: u32,
    pub(crate) max_shared_optin: u32,
    pub(crate) total_mem: u64,
    pub(crate) driver_version: u32,
}

impl Props {
    /// Compute capability as `sm_XY`'s number (90 for 9.0).
    pub(crate) fn sm(&self) -> u32 {
        self.cc.0 * 10 + self.cc.1
    }
}

/// A `ptxas` and what identifies it in cache keys.
pub(super) struct Ptxas {
    pub(super) path: std::path::PathBuf,
    pub(super) identity: Vec<u8>,
}

/// One CUDA device: its primary context, properties and disk cache.
pub(crate) struct CudaDevice {
    pub(super) ctx: Arc<Context>,
    pub(crate) props: Props,
    pub(super) disk: Option<DiskCache>,
    /// The `ptxas` that compiles the disk cache's cubins (`None`: the link API does).
    pub(super) ptxas: Option<Ptxas>,
    /// PTX given through `Device::override_ptx`, by kernel name.
    pub(super) ptx_overrides: CodeOverrides<PtxCode>,
    /// The device's part of every IR key (`ir_cache.rs`), when the disk cache is on and the
    /// program's build is known: then a kernel whose sidecar is on disk loads without lowering.
    pub(super) ir_seed: Option<Fnv128>,
}

impl CudaDevice {
    /// Opens device `ordinal`, or says why it cannot be used.
    pub(crate) fn open(ordinal: u32, options: &CudaOptions) -> std::result::Result<CudaDevice, String> {
        let drv = driver()?;
        let count = device_count();
        if ordinal >= count {
            return Err(match count {
                0 => "the CUDA driver found no device".to_string(),
                n => format!("there is no CUDA device {ordinal}; this machine has {n} (cuda:0 to cuda:{})", n - 1),
            });
        }
        let fail = |e: DriverFailure| format!("{} failed: {}", e.call, e.message);
        let mut dev: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = null_mut();
        // SAFETY: the driver is initialised and `ordinal` is in range; valid out-pointers.
        unsafe {
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal as c_int)).map_err(fail)?;
            check("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)).map_err(fail)?;
        }
        let ctx = Arc::new(Context { dev, ctx });
        ctx.bind().map_err(fail)?;
        let attr = |a: sys::CUdevice_attribute| -> std::result::Result<u32, String> {
            let mut v: c_int = 0;
            // SAFETY: valid device and out-pointer.
            check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) }).map_err(fail)?;
            Ok(v.max(0) as u32)
        };
        use sys::CUdevice_attribute as A;
        let mut name = [0 as c_char; 256];
        let mut total_mem = 0usize;
        // SAFETY: buffer of the given length; valid out-pointer.
        unsafe {
            check("cuDeviceGetName", sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev))
                .map_err(fail)?;
            check("cuDeviceTotalMem_v2", sys::cuDeviceTotalMem_v2(&mut total_mem, dev)).map_err(fail)?;
        }
        // SAFETY: the driver NUL-terminates the name within the buffer.
        let model = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let props = Props {
            ordinal,
            model,
            cc: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_shared_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            total_mem: total_mem as u64,
            driver_version: drv.version,
        };
        let disk = match (&options.cache_dir, options.disk_cache) {
            (Some(dir), true) => Some(DiskCache::new(dir.clone())),
            _ => None,
        };
        let ptxas =
            options.ptxas.as_ref().map(|path| Ptxas { identity: super::ptxas::identity(path), path: path.clone() });
        let mut dev = CudaDevice { ctx, props, disk, ptxas, ptx_overrides: CodeOverrides::new(), ir_seed: None };
        if dev.disk.is_some()
            && let Some(build) = disk_cache::build_identity()
        {
            let target = crate::runtime::device::Runtime::target(&dev);
            let compiler = dev.compiler_identity();
            dev.ir_seed =
                Some(super::ir_cache::seed(dev.props.sm(), dev.props.driver_version, compiler, build, &target));
        }
        Ok(dev)
    }

    /// What compiles the disk cache's cubins, as their keys name it: the `ptxas`'s identity, or
    /// the link API.
    pub(super) fn compiler_identity(&self) -> &[u8] {
        self.ptxas.as_ref().map(|p| p.identity.as_slice()).unwrap_or(b"link-api")
    }

    /// The disk cache's folder, when it is on.
    pub(crate) fn cache_dir(&self) -> Option<&std::path::Path> {
        self.disk.as_ref().map(|d| d.root())
    }

    /// A new array of `len` elements of `dtype`: zeroed, or copied from `init` (`len` elements).
    pub(crate) fn alloc_buffer(
        &self,
        dtype: DType,
        len: usize,
        init: Option<&[u8]>,
    ) -> std::result::Result<CudaBuffer, DriverFailure> {
        let bytes = len * dtype.size_bytes();
        let mut buf = CudaBuffer { ctx: self.ctx.clone(), ordinal: self.props.ordinal, ptr: 0, len, dtype };
        if bytes == 0 {
            return Ok(buf);
        }
        self.ctx.bind()?;
        // SAFETY: valid out-pointer; the context is current.
        check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut buf.ptr, bytes) })?;
        match init {
            Some(data) => buf.write(data)?,
            // SAFETY: `ptr` holds `bytes` bytes.
            None => check("cuMemsetD8_v2", unsafe { sys::cuMemsetD8_v2(buf.ptr, 0, bytes) })?,
        }
        Ok(buf)
    }
}

/// An array in GPU memory.
pub(crate) struct CudaBuffer {
    ctx: Arc<Context>,
    pub(crate) ordinal: u32,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
}

// SAFETY: see `Context`.
unsafe impl Send for CudaBuffer {}
// SAFETY: see `Context`; copies go through the driver, which orders them.
unsafe impl Sync for CudaBuffer {}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBuffer(cuda:{}, {}[{}] at {:#x})", self.ordinal, self.dtype, self.len, self.ptr)
    }
}

impl CudaBuffer {
    fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    /// Copies the contents to the host.
    pub(crate) fn read(&self) -> std::result::Result<Vec<u8>, DriverFailure> {
        let mut out = vec![0u8; self.bytes()];
        if out.is_empty() {
            return Ok(out);
        }
        self.ctx.bind()?;
        // SAFETY: `out` and the allocation both hold `bytes()` bytes.
        check("cuMemcpyDtoH_v2", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, self.ptr, out.len())
        })?;
        Ok(out)
    }

    /// Overwrites the contents; `data` has `bytes()` bytes.
    pub(crate) fn write(&self, data: &[u8]) -> std::result::Result<(), DriverFailure> {
        assert_eq!(data.len(), self.bytes(), "host copy of the wrong size");
        if data.is_empty() {
            return Ok(());
        }
        self.ctx.bind()?;
        // SAFETY: `data` and the allocation both hold `bytes()` bytes.
        check("cuMemcpyHtoD_v2", unsafe { sys::cuMemcpyHtoD_v2(self.ptr, data.as_ptr() as *const c_void, data.len()) })
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 && self.ctx.bind().is_ok() {
            // SAFETY: allocated by `cuMemAlloc_v2` in this context, no longer referenced.
            unsafe {
                sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}
