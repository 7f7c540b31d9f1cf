//! `libamdhip64` opened at run time with `libloading`, with only the functions qd calls (see the
//! module docs of `amdgpu` for why not a `-sys` crate). Every call's status becomes a typed error
//! with HIP's own description (`hipGetErrorString`).

use crate::runtime::{Error, Result};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// `hipError_t`; 0 is `hipSuccess`.
pub(super) type HipError = c_int;
/// `hipErrorNoDevice`.
const HIP_ERROR_NO_DEVICE: HipError = 100;

/// `hipDeviceAttribute_t` values (HIP 5 and 6 numbering).
pub(super) const ATTR_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
pub(super) const ATTR_WARP_SIZE: c_int = 87;

/// `hipModuleLaunchKernel`'s `extra` keys.
pub(super) const LAUNCH_PARAM_BUFFER_POINTER: usize = 0x01;
pub(super) const LAUNCH_PARAM_BUFFER_SIZE: usize = 0x02;
pub(super) const LAUNCH_PARAM_END: usize = 0x03;

/// Bytes reserved for `hipDeviceProp_t` (about 1.5 KiB in ROCm 6; its layout changed between
/// ROCm 5 and 6, so only its first field, `name`, is read at a fixed place: see [`Hip::gcn_arch_name`]).
const PROPS_BYTES: usize = 16 * 1024;

type Fn0 = unsafe extern "C" fn() -> HipError;

/// The resolved functions. The `Library` is kept alive as long as they are.
pub(super) struct Hip {
    _lib: Library,
    /// Where the library was found.
    pub(super) path: String,
    init: unsafe extern "C" fn(c_uint) -> HipError,
    get_device_count: unsafe extern "C" fn(*mut c_int) -> HipError,
    get_device_properties: unsafe extern "C" fn(*mut c_void, c_int) -> HipError,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipError,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipError,
    device_total_mem: unsafe extern "C" fn(*mut usize, c_int) -> HipError,
    set_device: unsafe extern "C" fn(c_int) -> HipError,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipError,
    free: unsafe extern "C" fn(*mut c_void) -> HipError,
    memcpy_htod: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> HipError,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> HipError,
    module_load_data: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> HipError,
    module_unload: unsafe extern "C" fn(*mut c_void) -> HipError,
    module_get_function: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> HipError,
    #[allow(clippy::type_complexity)]
    module_launch_kernel: unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> HipError,
    device_synchronize: Fn0,
    get_error_string: unsafe extern "C" fn(HipError) -> *const c_char,
}

/// Where `libamdhip64` is looked for, in order: `$ROCM_PATH/lib`, `/opt/rocm/lib`, then the bare
/// names for the loader's search path (`LD_LIBRARY_PATH`, `ld.so.cache`).
pub(super) fn candidates() -> Vec<PathBuf> {
    let names = ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"];
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(r) = std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
        dirs.push(PathBuf::from(r).join("lib"));
    }
    dirs.push(PathBuf::from("/opt/rocm/lib"));
    let mut out: Vec<PathBuf> = dirs.iter().flat_map(|d| names.iter().map(move |n| d.join(n))).collect();
    out.extend(names.iter().map(PathBuf::from));
    out
}

/// The library, opened and initialised once per process; the error is the reason HIP cannot be
/// used, for [`Error::Unavailable`].
pub(super) fn library() -> std::result::Result<Arc<Hip>, String> {
    static HIP: OnceLock<std::result::Result<Arc<Hip>, String>> = OnceLock::new();
    HIP.get_or_init(|| {
        let hip = Arc::new(open()?);
        // SAFETY: hipInit takes flags (0) and returns a status.
        match unsafe { (hip.init)(0) } {
            0 => Ok(hip),
            HIP_ERROR_NO_DEVICE => Err(format!("HIP ({}) found no AMD GPU (hipInit: hipErrorNoDevice)", hip.path)),
            e => Err(format!("hipInit failed: {}", hip.describe(e))),
        }
    })
    .clone()
}

fn open() -> std::result::Result<Hip, String> {
    let tried = candidates();
    let mut found = None;
    for c in &tried {
        // SAFETY: loading libamdhip64 runs its initialisers, which is what using HIP means.
        if let Ok(lib) = unsafe { Library::new(c) } {
            found = Some((lib, c.display().to_string()));
            break;
        }
    }
    let Some((lib, path)) = found else {
        let list: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "ROCm/HIP was not found: no libamdhip64 in $ROCM_PATH/lib, /opt/rocm/lib or the loader's path \
             (tried {}); install ROCm or set ROCM_PATH",
            list.join(", ")
        ));
    };
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol is HIP's function of that name; its type is the one its header gives.
            let s = unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{path} has no `{}` ({e}); is this ROCm too old?", $name))?;
            *s
        }};
    }
    // ROCm 6 renamed the properties entry point (the old name keeps the ROCm 5 layout).
    // SAFETY: as in `sym!`.
    let get_device_properties = match unsafe { lib.get(b"hipGetDevicePropertiesR0600\0") } {
        Ok(s) => *s,
        Err(_) => sym!("hipGetDeviceProperties"),
    };
    Ok(Hip {
        init: sym!("hipInit"),
        get_device_count: sym!("hipGetDeviceCount"),
        get_device_properties,
        device_get_attribute: sym!("hipDeviceGetAttribute"),
        device_get_name: sym!("hipDeviceGetName"),
        device_total_mem: sym!("hipDeviceTotalMem"),
        set_device: sym!("hipSetDevice"),
        malloc: sym!("hipMalloc"),
        free: sym!("hipFree"),
        memcpy_htod: sym!("hipMemcpyHtoD"),
        memcpy_dtoh: sym!("hipMemcpyDtoH"),
        module_load_data: sym!("hipModuleLoadData"),
        module_unload: sym!("hipModuleUnload"),
        module_get_function: sym!("hipModuleGetFunction"),
        module_launch_kernel: sym!("hipModuleLaunchKernel"),
        device_synchronize: sym!("hipDeviceSynchronize"),
        get_error_string: sym!("hipGetErrorString"),
        path,
        _lib: lib,
    })
}

/// A device pointer or module handle, kept as an address so the types holding it are `Send`.
pub(super) type Handle = usize;

impl Hip {
    /// `e` as HIP describes it.
    pub(super) fn describe(&self, e: HipError) -> String {
        // SAFETY: hipGetErrorString returns a static NUL-terminated string (or null).
        let p = unsafe { (self.get_error_string)(e) };
        if p.is_null() {
            return format!("hipError_t {e}");
        }
        // SAFETY: non-null, static, NUL-terminated.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
        format!("{s} (hipError_t {e})")
    }

    /// `Err(Error::Driver)` for a failed call.
    pub(super) fn check(&self, e: HipError, kernel: &str, call: &str) -> Result<()> {
        if e == 0 {
            Ok(())
        } else {
            Err(Error::Driver { kernel: kernel.to_string(), call: call.to_string(), message: self.describe(e) })
        }
    }

    pub(super) fn device_count(&self) -> std::result::Result<i32, String> {
        let mut n = 0;
        // SAFETY: writes one int.
        let e = unsafe { (self.get_device_count)(&mut n) };
        if e == 0 || e == HIP_ERROR_NO_DEVICE {
            Ok(if e == 0 { n } else { 0 })
        } else {
            Err(format!("hipGetDeviceCount failed: {}", self.describe(e)))
        }
    }

    pub(super) fn set_device(&self, ordinal: i32, kernel: &str) -> Result<()> {
        // SAFETY: takes an ordinal below the device count (checked when the device was opened).
        self.check(unsafe { (self.set_device)(ordinal) }, kernel, "hipSetDevice")
    }

    pub(super) fn attribute(&self, attr: c_int, ordinal: i32) -> std::result::Result<i32, String> {
        let mut v = 0;
        // SAFETY: writes one int.
        let e = unsafe { (self.device_get_attribute)(&mut v, attr, ordinal) };
        if e == 0 {
            Ok(v)
        } else {
            Err(format!("hipDeviceGetAttribute({attr}) failed: {}", self.describe(e)))
        }
    }

    pub(super) fn name(&self, ordinal: i32) -> std::result::Result<String, String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: writes at most `len` bytes, NUL-terminated.
        let e = unsafe { (self.device_get_name)(buf.as_mut_ptr(), buf.len() as c_int, ordinal) };
        if e != 0 {
            return Err(format!("hipDeviceGetName failed: {}", self.describe(e)));
        }
        buf[buf.len() - 1] = 0;
        // SAFETY: NUL-terminated above.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    pub(super) fn total_mem(&self, ordinal: i32) -> std::result::Result<u64, String> {
        let mut v = 0usize;
        // SAFETY: writes one size_t.
        let e = unsafe { (self.device_total_mem)(&mut v, ordinal) };
        if e == 0 {
            Ok(v as u64)
        } else {
            Err(format!("hipDeviceTotalMem failed: {}", self.describe(e)))
        }
    }

    /// The device's `gcnArchName` (`gfx942:sramecc+:xnack-`). `hipDeviceProp_t` changed layout
    /// between ROCm 5 and 6, so rather than pin one, the properties are read into a buffer far
    /// larger than either and the field is found by its content: the first NUL-terminated string
    /// that starts with `gfx` after the 256-byte `name`.
    pub(super) fn gcn_arch_name(&self, ordinal: i32) -> std::result::Result<String, String> {
        let mut props = vec![0u8; PROPS_BYTES];
        // SAFETY: the buffer is larger than any hipDeviceProp_t.
        let e = unsafe { (self.get_device_properties)(props.as_mut_ptr().cast(), ordinal) };
        if e != 0 {
            return Err(format!("hipGetDeviceProperties failed: {}", self.describe(e)));
        }
        find_gcn_arch_name(&props).ok_or_else(|| "the device properties hold no gcnArchName (`gfx...`)".to_string())
    }

    pub(super) fn malloc(&self, bytes: usize) -> Result<Handle> {
        let mut p = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        self.check(unsafe { (self.malloc)(&mut p, bytes) }, "<alloc>", "hipMalloc")?;
        Ok(p as Handle)
    }

    pub(super) fn free(&self, p: Handle) {
        // SAFETY: `p` came from hipMalloc and is freed once (by its array's Drop).
        let _ = unsafe { (self.free)(p as *mut c_void) };
    }

    pub(super) fn copy_to_device(&self, dst: Handle, src: &[u8]) -> Result<()> {
        // SAFETY: `dst` holds at least `src.len()` bytes (its array's size).
        self.check(
            unsafe { (self.memcpy_htod)(dst as *mut c_void, src.as_ptr().cast(), src.len()) },
            "<host copy>",
            "hipMemcpyHtoD",
        )
    }

    pub(super) fn copy_to_host(&self, dst: &mut [u8], src: Handle) -> Result<()> {
        // SAFETY: `src` holds at least `dst.len()` bytes (its array's size).
        self.check(
            unsafe { (self.memcpy_dtoh)(dst.as_mut_ptr().cast(), src as *mut c_void, dst.len()) },
            "<host copy>",
            "hipMemcpyDtoH",
        )
    }

    /// Loads a code object and finds `entry` in it: (module, function).
    pub(super) fn load(&self, image: &[u8], entry: &str, kernel: &str) -> Result<(Handle, Handle)> {
        let mut module = std::ptr::null_mut();
        // SAFETY: `image` is a whole ELF code object; HIP copies what it needs.
        self.check(
            unsafe { (self.module_load_data)(&mut module, image.as_ptr().cast()) },
            kernel,
            "hipModuleLoadData",
        )?;
        let name = std::ffi::CString::new(entry).expect("kernel symbols have no NUL");
        let mut function = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; `name` is NUL-terminated.
        let e = unsafe { (self.module_get_function)(&mut function, module, name.as_ptr()) };
        if let Err(err) = self.check(e, kernel, "hipModuleGetFunction") {
            self.unload(module as Handle);
            return Err(err);
        }
        Ok((module as Handle, function as Handle))
    }

    pub(super) fn unload(&self, module: Handle) {
        // SAFETY: `module` came from hipModuleLoadData and is unloaded once.
        let _ = unsafe { (self.module_unload)(module as *mut c_void) };
    }

    /// Launches `function` on `grid` workgroups of `block` threads with the kernarg buffer `args`
    /// (8 bytes per slot), then waits for the device.
    pub(super) fn launch(&self, function: Handle, grid: u32, block: u32, args: &mut [u64], kernel: &str) -> Result<()> {
        let mut size: usize = std::mem::size_of_val(args);
        let mut extra: [*mut c_void; 5] = [
            LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            args.as_mut_ptr().cast(),
            LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
            (&mut size as *mut usize).cast(),
            LAUNCH_PARAM_END as *mut c_void,
        ];
        let extra_ptr = if args.is_empty() { std::ptr::null_mut() } else { extra.as_mut_ptr() };
        // SAFETY: `function` is a loaded kernel whose kernarg segment is `args` (the D19 ABI);
        // `extra` and what it points at outlive the call, which copies them.
        let e = unsafe {
            (self.module_launch_kernel)(
                function as *mut c_void,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                extra_ptr,
            )
        };
        self.check(e, kernel, "hipModuleLaunchKernel")?;
        // SAFETY: no arguments.
        self.check(unsafe { (self.device_synchronize)() }, kernel, "hipDeviceSynchronize")
    }
}

/// The first NUL-terminated `gfx...` string after the 256-byte `name` of a `hipDeviceProp_t`.
fn find_gcn_arch_name(props: &[u8]) -> Option<String> {
    let start = 256.min(props.len());
    (start..props.len().saturating_sub(4)).find_map(|i| {
        let at_field_start = props[i - 1] == 0;
        if !at_field_start || !props[i..].starts_with(b"gfx") {
            return None;
        }
        let end = props[i..].iter().position(|&b| b == 0)? + i;
        let s = std::str::from_utf8(&props[i..end]).ok()?;
        let ok = s.len() > 3 && s[3..].chars().next().is_some_and(|c| c.is_ascii_hexdigit());
        ok.then(|| s.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcn_arch_name_is_found_by_its_content() {
        let mut props = vec![0u8; 2048];
        props[..14].copy_from_slice(b"AMD gfx Radeon");
        let at = 1160;
        props[at..at + 22].copy_from_slice(b"gfx942:sramecc+:xnack-");
        assert_eq!(find_gcn_arch_name(&props).as_deref(), Some("gfx942:sramecc+:xnack-"));
        assert_eq!(find_gcn_arch_name(&vec![0u8; 2048]), None);
    }

    #[test]
    fn the_search_path_has_opt_rocm_then_the_loader() {
        let c = candidates();
        assert!(c.iter().any(|p| p == std::path::Path::new("/opt/rocm/lib/libamdhip64.so")));
        assert!(c.last().is_some_and(|p| p.parent() == Some(std::path::Path::new(""))));
    }
}
