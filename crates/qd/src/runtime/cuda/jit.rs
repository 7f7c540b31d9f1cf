//! PTX to a loaded module through the driver's JIT: straight through `cuModuleLoadDataEx`, or
//! through the link API to a cubin the disk cache can store, with the JIT's logs and wall time.

use super::driver::{check, DriverFailure};
use cudarc::driver::sys;
use std::ffi::{c_uint, c_void, CStr, CString};
use std::ptr::null_mut;
use std::time::Duration;

/// Size of each JIT log buffer.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// JIT options asking for the error and info logs and the JIT's wall time. The buffers live on the
/// heap, so the pointers stay valid while this value moves.
struct JitLogs {
    error: Vec<u8>,
    info: Vec<u8>,
    options: Vec<sys::CUjit_option>,
    values: Vec<*mut c_void>,
}

impl JitLogs {
    fn new() -> JitLogs {
        use sys::CUjit_option as O;
        let mut error = vec![0u8; JIT_LOG_BYTES];
        let mut info = vec![0u8; JIT_LOG_BYTES];
        let values = vec![
            error.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
            info.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
            null_mut(),
        ];
        let options = vec![
            O::CU_JIT_ERROR_LOG_BUFFER,
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_INFO_LOG_BUFFER,
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_WALL_TIME,
        ];
        JitLogs { error, info, options, values }
    }

    fn count(&self) -> c_uint {
        self.options.len() as c_uint
    }

    fn text(buf: &[u8]) -> String {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// The error log, followed by the info log when it says anything.
    fn log(&self) -> String {
        let (e, i) = (Self::text(&self.error), Self::text(&self.info));
        match (e.trim().is_empty(), i.trim().is_empty()) {
            (_, true) => e,
            (true, false) => i,
            (false, false) => format!("{e}\n{i}"),
        }
    }

    /// `CU_JIT_WALL_TIME`: the driver writes an f32 of milliseconds into the option's slot.
    fn wall_time(&self) -> Option<Duration> {
        let bits = self.values[4] as usize as u64 as u32;
        let ms = f32::from_bits(bits);
        (ms.is_finite() && ms > 0.0).then(|| Duration::from_secs_f64(ms as f64 / 1000.0))
    }
}

/// PTX straight through `cuModuleLoadDataEx` (no disk cache). The context must be current.
pub(super) fn jit_load(text: &CStr) -> std::result::Result<(sys::CUmodule, Option<Duration>), DriverFailure> {
    let mut logs = JitLogs::new();
    let mut module: sys::CUmodule = null_mut();
    // SAFETY: NUL-terminated PTX; option arrays of `count()` entries whose buffers outlive the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            text.as_ptr() as *const c_void,
            logs.count(),
            logs.options.as_mut_ptr(),
            logs.values.as_mut_ptr(),
        )
    };
    check("cuModuleLoadDataEx", r).map_err(|e| e.with_log(&logs.log()))?;
    Ok((module, logs.wall_time()))
}

/// Destroys a link state on every path.
struct LinkState(sys::CUlinkState);

impl Drop for LinkState {
    fn drop(&mut self) {
        // SAFETY: created by cuLinkCreate_v2 and destroyed once.
        unsafe {
            sys::cuLinkDestroy(self.0);
        }
    }
}

/// PTX to a cubin through the link API (for qd's cubin cache). The context must be current.
///
/// The link API compiles PTX as relocatable code, which costs registers against the whole-program
/// JIT of [`jit_load`] (the look-back scan: 64 against 48 on sm_90, 4-6% slower; asking for code
/// that is not position-independent changes nothing): why this route is opt-in (D23).
pub(super) fn jit_link(text: &CStr, kernel: &str) -> std::result::Result<(Vec<u8>, Option<Duration>), DriverFailure> {
    let mut logs = JitLogs::new();
    let mut state: sys::CUlinkState = null_mut();
    // SAFETY: option arrays of `count()` entries whose buffers outlive the link state (`logs` is
    // dropped after `state`, declared later and so dropped first).
    check("cuLinkCreate_v2", unsafe {
        sys::cuLinkCreate_v2(logs.count(), logs.options.as_mut_ptr(), logs.values.as_mut_ptr(), &mut state)
    })?;
    let state = LinkState(state);
    let name = CString::new(format!("{kernel}.ptx")).unwrap_or_else(|_| c"kernel.ptx".to_owned());
    let bytes = text.to_bytes_with_nul();
    // SAFETY: the PTX bytes (with their NUL) and the name outlive the call; no per-input options.
    let r = unsafe {
        sys::cuLinkAddData_v2(
            state.0,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            bytes.as_ptr() as *mut c_void,
            bytes.len(),
            name.as_ptr(),
            0,
            null_mut(),
            null_mut(),
        )
    };
    check("cuLinkAddData_v2", r).map_err(|e| e.with_log(&logs.log()))?;
    let mut cubin: *mut c_void = null_mut();
    let mut size = 0usize;
    // SAFETY: valid link state and out-pointers.
    let r = unsafe { sys::cuLinkComplete(state.0, &mut cubin, &mut size) };
    check("cuLinkComplete", r).map_err(|e| e.with_log(&logs.log()))?;
    // SAFETY: the driver owns `size` bytes at `cubin` until the state is destroyed; copy them first.
    let image = unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec();
    drop(state);
    Ok((image, logs.wall_time()))
}

/// Loads a cubin image. The context must be current.
pub(super) fn load_image(image: &[u8]) -> std::result::Result<sys::CUmodule, DriverFailure> {
    let mut module: sys::CUmodule = null_mut();
    // SAFETY: a complete ELF image in memory for the duration of the call.
    check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void) })?;
    Ok(module)
}
