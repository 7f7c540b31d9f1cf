//! Loading a kernel: PTX from the NVPTX lowering (or an override), through the disk cache or the
//! JIT, then its entry function and shared-memory attributes; or, warm, the cubin an IR key's
//! sidecar names, with no lowering at all (`ir_cache.rs`, D23).

use super::device::{CudaDevice, Ptxas, DEFAULT_SHARED_LIMIT};
use super::driver::{check, Context, DriverFailure};
use super::ir_cache::{self, IrMeta};
use super::jit::{jit_link, jit_load, load_image};
use super::{PtxCode, PtxParam};
use crate::backend::ptx::{ParamAbi, Ptx, PtxModule};
use crate::backend::Backend;
use crate::ir::{self, Param};
use crate::runtime::device::Runtime;
use crate::runtime::disk_cache;
use crate::runtime::disk_cache::DiskCache;
use crate::runtime::{CompileStats, DiskCacheUse, Error, Result};
use crate::target::Target;
use crate::trace::TraceError;
use cudarc::driver::sys;
use std::ffi::{c_int, CStr, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Lowers `kernel` (traced for `target`) to PTX through the NVPTX backend's face.
pub(crate) fn lower(kernel: &ir::Kernel, target: &Target) -> std::result::Result<PtxCode, TraceError> {
    let m: PtxModule = Ptx::lower(kernel, target)?;
    Ok(PtxCode {
        text: m.text,
        entry: m.entry,
        shared_bytes: m.shared_bytes,
        params: m
            .params
            .into_iter()
            .map(|p| match p {
                ParamAbi::Array { dtype } => PtxParam::Array { dtype },
                ParamAbi::Scalar { dtype } => PtxParam::Scalar { dtype },
            })
            .collect(),
    })
}

impl CudaDevice {
    /// Compiles a traced kernel: its PTX override, else, with the disk cache on, the cubin its IR
    /// key's sidecar names (no lowering), else the lowering's PTX through [`CudaDevice::load`]
    /// (writing the sidecar). Fills `stats`.
    pub(crate) fn compile_kernel(&self, kernel: ir::Kernel, stats: &mut CompileStats) -> Result<CudaKernel> {
        let t = Instant::now();
        if let Some(code) = self.ptx_overrides.get(&kernel.name) {
            stats.lower = t.elapsed();
            return self.load(kernel, code, None, stats);
        }
        let ir_key = self.ir_seed.as_ref().map(|seed| ir_cache::key(seed, &kernel));
        if let Some(key) = &ir_key
            && let Some((shape, module, func, dynamic_shared)) = self.load_by_ir(&kernel, key, t, stats)
        {
            let target = Some(self.target());
            return Ok(CudaKernel { kernel, code: OnceLock::new(), target, shape, module, func, dynamic_shared });
        }
        let code = lower(&kernel, &self.target())?;
        stats.lower = t.elapsed();
        self.load(kernel, code, ir_key.as_deref(), stats)
    }

    /// The warm path: the sidecar of IR key `key` and the cubin it names, loaded without lowering
    /// (`stats.disk` says `IrHit`): the kernel's shape, module, function and dynamic shared bytes.
    /// `None` (the kernel is to be lowered) when anything is missing, malformed or refused.
    fn load_by_ir(
        &self,
        kernel: &ir::Kernel,
        key: &str,
        start: Instant,
        stats: &mut CompileStats,
    ) -> Option<(Shape, Module, sys::CUfunction, u32)> {
        let disk = self.disk.as_ref()?;
        let sm = self.props.sm();
        let text = std::fs::read_to_string(ir_cache::meta_path(disk, key, sm)).ok()?;
        let meta = IrMeta::parse(&text).filter(|m| check_abi(kernel, &m.params).is_ok())?;
        stats.lower = start.elapsed();
        let t = Instant::now();
        let path = disk.path(&meta.ptx_key, sm);
        let entry = CString::new(meta.entry.as_str()).ok()?;
        self.ctx.bind().ok()?;
        let module = Module { ctx: self.ctx.clone(), module: load_image(&disk.load(&path)?).ok()? };
        let shape = Shape { entry: meta.entry, shared_bytes: meta.shared_bytes, params: meta.params };
        let (func, dynamic_shared) = self.finish(&kernel.name, &module, &entry, &shape).ok()?;
        stats.disk = DiskCacheUse::IrHit(path);
        stats.jit = None;
        stats.load = t.elapsed();
        Some((shape, module, func, dynamic_shared))
    }

    /// Loads a kernel: PTX through the disk cache or the JIT, then its entry function and
    /// shared-memory attributes. Fills the load part of `stats`. With `ir_key`, a cubin on disk gets
    /// that IR key's sidecar (best effort).
    pub(crate) fn load(
        &self,
        kernel: ir::Kernel,
        code: PtxCode,
        ir_key: Option<&str>,
        stats: &mut CompileStats,
    ) -> Result<CudaKernel> {
        let name = kernel.name.clone();
        check_abi(&kernel, &code.params)?;
        let drv = |e: DriverFailure| e.into_error(&name);
        let bad =
            |what: &str| Error::Launch { kernel: name.clone(), message: format!("the PTX {what} contains a NUL byte") };
        let text = CString::new(code.text.as_str()).map_err(|_| bad("text"))?;
        let entry = CString::new(code.entry.as_str()).map_err(|_| bad("entry name"))?;
        let start = Instant::now();
        self.ctx.bind().map_err(drv)?;
        let sm = self.props.sm();
        let mut cubin_key = None;
        let module = match &self.disk {
            None => {
                // The driver's JIT cache keeps the code unless `CUDA_CACHE_DISABLE` turns it off
                // (any value but 0, as the driver reads it).
                let off = std::env::var_os("CUDA_CACHE_DISABLE").is_some_and(|v| !v.is_empty() && v != "0");
                stats.disk = if off { DiskCacheUse::Disabled } else { DiskCacheUse::Driver };
                let (module, wall) = jit_load(&text).map_err(drv)?;
                stats.jit = wall;
                module
            }
            Some(disk) => {
                let key = disk_cache::key(&code.text, sm, self.props.driver_version, self.compiler_identity());
                let path = disk.path(&key, sm);
                let cached = disk.load(&path).and_then(|cubin| load_image(&cubin).ok());
                let module = match cached {
                    Some(module) => {
                        stats.disk = DiskCacheUse::Hit(path);
                        module
                    }
                    None => self.compile_to_cache(disk, &path, &code.text, &text, &name, stats).map_err(drv)?,
                };
                cubin_key = Some(key);
                module
            }
        };
        let module = Module { ctx: self.ctx.clone(), module };
        let shape = Shape { entry: code.entry.clone(), shared_bytes: code.shared_bytes, params: code.params.clone() };
        let (func, dynamic_shared) = self.finish(&name, &module, &entry, &shape)?;
        stats.load = start.elapsed();
        // With an IR key, a cubin on disk gets its sidecar. Best effort: one that cannot be
        // written only means lowering next time.
        if let (Some(disk), Some(ir_key), Some(cubin_key)) = (&self.disk, ir_key, cubin_key)
            && matches!(stats.disk, DiskCacheUse::Hit(_) | DiskCacheUse::Stored(_))
            && let Some(text) = (IrMeta {
                ptx_key: cubin_key,
                entry: shape.entry.clone(),
                shared_bytes: shape.shared_bytes,
                params: shape.params.clone(),
            })
            .to_text()
        {
            let _ = disk.store(&ir_cache::meta_path(disk, ir_key, sm), text.as_bytes());
        }
        Ok(CudaKernel { kernel, code: OnceLock::from(Some(code)), target: None, shape, module, func, dynamic_shared })
    }

    /// The entry function of a loaded module and its shared-memory attributes: the function and its
    /// dynamic shared bytes.
    fn finish(&self, name: &str, module: &Module, entry: &CStr, shape: &Shape) -> Result<(sys::CUfunction, u32)> {
        let drv = |e: DriverFailure| e.into_error(name);
        let mut func: sys::CUfunction = null_mut();
        // SAFETY: loaded module, NUL-terminated name, valid out-pointer.
        check("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut func, module.module, entry.as_ptr()) })
            .map_err(|e| drv(DriverFailure { message: format!("{} (entry `{}`)", e.message, shape.entry), ..e }))?;
        let mut static_shared: c_int = 0;
        // SAFETY: valid function and out-pointer.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(
                &mut static_shared,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                func,
            )
        })
        .map_err(drv)?;
        let static_shared = static_shared.max(0) as u32;
        let dynamic_shared = shape.shared_bytes.saturating_sub(static_shared);
        let total = static_shared + dynamic_shared;
        let limit = self.props.max_shared_optin.max(DEFAULT_SHARED_LIMIT);
        if total > limit {
            return Err(Error::Launch {
                kernel: name.to_string(),
                message: format!(
                    "uses {total} bytes of shared memory per block; cuda:{} allows {limit}",
                    self.props.ordinal
                ),
            });
        }
        if dynamic_shared > 0 && total > DEFAULT_SHARED_LIMIT {
            // SAFETY: valid function; the value is within the device's opt-in limit.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    func,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as c_int,
                )
            })
            .map_err(drv)?;
        }
        Ok((func, dynamic_shared))
    }
}

impl CudaDevice {
    /// A cache miss: compiles the PTX to a cubin (`ptxas` when there is one, else the link API),
    /// loads it and stores it at `path`. When `ptxas` fails or the driver refuses its cubin, the
    /// driver's JIT compiles the PTX instead (its error log is the one a bad PTX reports), nothing
    /// is stored, and `stats.disk` says why.
    fn compile_to_cache(
        &self,
        disk: &DiskCache,
        path: &Path,
        ptx: &str,
        text: &CStr,
        name: &str,
        stats: &mut CompileStats,
    ) -> std::result::Result<sys::CUmodule, DriverFailure> {
        let (module, cubin, wall) = match self.ptxas.as_ref().map(|p| self.ptxas_module(p, path, ptx)) {
            Some(Ok(done)) => done,
            Some(Err(why)) => {
                let (module, wall) = jit_load(text)?;
                stats.jit = wall;
                stats.disk = DiskCacheUse::StoreFailed(format!("{why}; compiled by the driver's JIT instead"));
                return Ok(module);
            }
            None => {
                let (cubin, wall) = jit_link(text, name)?;
                (load_image(&cubin)?, cubin, wall)
            }
        };
        stats.jit = wall;
        stats.disk = match disk.store(path, &cubin) {
            Ok(()) => DiskCacheUse::Stored(path.to_path_buf()),
            Err(e) => DiskCacheUse::StoreFailed(format!("{}: {e}", path.display())),
        };
        Ok(module)
    }

    /// `ptxas`'s cubin for `ptx`, loaded (its scratch files beside `path`), or why not.
    fn ptxas_module(
        &self,
        ptxas: &Ptxas,
        path: &Path,
        ptx: &str,
    ) -> std::result::Result<(sys::CUmodule, Vec<u8>, Option<Duration>), String> {
        let scratch = path.parent().ok_or("the cache path has no folder")?;
        std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        let (cubin, wall) = super::ptxas::compile(&ptxas.path, ptx, self.props.sm(), scratch)?;
        let module = load_image(&cubin)
            .map_err(|e| format!("the driver refused the cubin of {}: {}", ptxas.path.display(), e.message))?;
        Ok((module, cubin, Some(wall)))
    }
}

/// The parameter passing must match the kernel's parameters one to one.
pub(super) fn check_abi(k: &ir::Kernel, params: &[PtxParam]) -> Result<()> {
    let mismatch = |message: String| Error::Launch {
        kernel: k.name.clone(),
        message: format!("the PTX module's parameters do not match the kernel's: {message}"),
    };
    if params.len() != k.params.len() {
        return Err(mismatch(format!("{} PTX parameters for {} kernel parameters", params.len(), k.params.len())));
    }
    for (i, (p, abi)) in k.params.iter().zip(params).enumerate() {
        let ok = match (p, abi) {
            (Param::Array { dtype, .. }, PtxParam::Array { dtype: d }) => dtype == d,
            (Param::Scalar { dtype, .. }, PtxParam::Scalar { dtype: d }) => dtype == d,
            _ => false,
        };
        if !ok {
            return Err(mismatch(format!("parameter {i} (`{}`) is {abi:?}", p.name())));
        }
    }
    Ok(())
}

/// A loaded module, unloaded on drop.
pub(super) struct Module {
    ctx: Arc<Context>,
    module: sys::CUmodule,
}

// SAFETY: see `Context`.
unsafe impl Send for Module {}
// SAFETY: see `Context`.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: loaded in this context and no longer referenced.
            unsafe {
                sys::cuModuleUnload(self.module);
            }
        }
    }
}

/// What loading and launching a kernel needs of its PTX besides the text.
#[derive(Clone, Debug)]
pub(super) struct Shape {
    /// The `.entry` name.
    pub(super) entry: String,
    /// `PtxCode::shared_bytes`.
    pub(super) shared_bytes: u32,
    /// How each parameter is passed.
    pub(super) params: Vec<PtxParam>,
}

/// A kernel ready to launch.
pub(crate) struct CudaKernel {
    pub(crate) kernel: ir::Kernel,
    /// The PTX: set at load when the kernel was lowered (or overridden); after a load that skipped
    /// the lowering (an IR hit), lowered for `target` on the first request (`None` if that fails).
    code: OnceLock<Option<PtxCode>>,
    /// The target to lower for on request (IR hits only).
    target: Option<Target>,
    pub(super) shape: Shape,
    module: Module,
    pub(super) func: sys::CUfunction,
    pub(super) dynamic_shared: u32,
}

// SAFETY: see `Context`; `func` lives as long as `module`.
unsafe impl Send for CudaKernel {}
// SAFETY: see `Context`.
unsafe impl Sync for CudaKernel {}

impl CudaKernel {
    /// The kernel's PTX: the code it was loaded from, or, when the load skipped the lowering, the
    /// lowering's output made now (once).
    pub(super) fn ptx(&self) -> Option<&PtxCode> {
        self.code.get_or_init(|| self.target.as_ref().and_then(|t| lower(&self.kernel, t).ok())).as_ref()
    }

    /// Registers per thread of the loaded code (`CU_FUNC_ATTRIBUTE_NUM_REGS`), asked when wanted
    /// rather than at every load; `None` when the driver does not answer.
    pub(super) fn registers(&self) -> Option<u32> {
        self.module.ctx.bind().ok()?;
        let mut regs: c_int = 0;
        // SAFETY: a function of this context's loaded module; valid out-pointer.
        let r = unsafe {
            sys::cuFuncGetAttribute(&mut regs, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS, self.func)
        };
        check("cuFuncGetAttribute", r).ok()?;
        Some(regs.max(0) as u32)
    }
}

impl std::fmt::Debug for CudaKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaKernel")
            .field("kernel", &self.kernel.name)
            .field("entry", &self.shape.entry)
            .field("dynamic_shared", &self.dynamic_shared)
            .field("module", &self.module.module)
            .finish()
    }
}
