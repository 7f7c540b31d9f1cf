//! The CUDA driver library: loaded once per process (never panicking when it is missing or too old),
//! its failures as [`DriverFailure`]s, and a device's retained primary context.

use crate::runtime::Error;
use cudarc::driver::sys;
use std::ffi::{c_char, c_int, CStr};
use std::ptr::null;
use std::sync::OnceLock;

/// A failed driver call: its name and the driver's message.
#[derive(Clone, Debug)]
pub(crate) struct DriverFailure {
    pub(super) call: &'static str,
    pub(super) message: String,
}

impl DriverFailure {
    /// As an [`Error::Driver`] for `kernel` (or an operation like `<host copy>`).
    pub(crate) fn into_error(self, kernel: &str) -> Error {
        Error::Driver { kernel: kernel.to_string(), call: self.call.to_string(), message: self.message }
    }

    pub(super) fn with_log(mut self, log: &str) -> DriverFailure {
        let log = log.trim();
        if !log.is_empty() {
            self.message = format!("{}\nJIT log:\n{log}", self.message);
        }
        self
    }
}

/// `CUDA_ERROR_NAME: the driver's description`.
fn describe_result(r: sys::CUresult) -> String {
    let mut text: *const c_char = null();
    // SAFETY: cuGetErrorString writes a pointer to a static string or fails.
    let ok = unsafe { sys::cuGetErrorString(r, &mut text) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !text.is_null() {
        // SAFETY: non-null and NUL-terminated, owned by the driver for the process's life.
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        format!("{r:?}: {text}")
    } else {
        format!("{r:?}")
    }
}

pub(super) fn check(call: &'static str, r: sys::CUresult) -> std::result::Result<(), DriverFailure> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverFailure { call, message: describe_result(r) })
    }
}

/// What `Device::from_name("cuda")` reports on a machine without the driver's library.
const NO_DRIVER: &str = "the CUDA driver library (libcuda.so / libcuda.so.1, installed with the NVIDIA driver) \
     was not found on the library search path; this machine has no usable NVIDIA driver";

/// The driver, initialised once per process.
pub(super) struct Driver {
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor.
    pub(super) version: u32,
}

static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();

/// The initialised driver, or why there is none. Never panics: the library's presence is checked
/// before the first call (cudarc panics otherwise).
pub(super) fn driver() -> std::result::Result<&'static Driver, String> {
    DRIVER
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the library.
            if !unsafe { sys::is_culib_present() } {
                return Err(NO_DRIVER.to_string());
            }
            let init = || -> std::result::Result<Driver, DriverFailure> {
                // SAFETY: plain driver calls with valid out-pointers.
                unsafe {
                    check("cuInit", sys::cuInit(0))?;
                    let mut v: c_int = 0;
                    check("cuDriverGetVersion", sys::cuDriverGetVersion(&mut v))?;
                    Ok(Driver { version: v as u32 })
                }
            };
            // A driver too old to have an entry point makes cudarc panic; report it instead.
            match std::panic::catch_unwind(init) {
                Ok(Ok(d)) => Ok(d),
                Ok(Err(e)) => Err(format!("the CUDA driver did not start: {} failed: {}", e.call, e.message)),
                Err(_) => Err("the CUDA driver library lacks an entry point qd needs (driver too old?)".to_string()),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Number of CUDA devices (0 without a driver).
pub(crate) fn device_count() -> u32 {
    if driver().is_err() {
        return 0;
    }
    let mut n: c_int = 0;
    // SAFETY: the driver is initialised; valid out-pointer.
    match check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) }) {
        Ok(()) => n.max(0) as u32,
        Err(_) => 0,
    }
}

/// A retained primary context. Released when the last device, array and kernel using it are gone.
pub(super) struct Context {
    pub(super) dev: sys::CUdevice,
    pub(super) ctx: sys::CUcontext,
}

// SAFETY: driver API handles may be used from any thread; every use makes the context current on
// the calling thread first (`bind`).
unsafe impl Send for Context {}
// SAFETY: as above; the handles are never mutated after creation.
unsafe impl Sync for Context {}

impl Context {
    /// Makes this context current on the calling thread.
    pub(super) fn bind(&self) -> std::result::Result<(), DriverFailure> {
        // SAFETY: `ctx` is a retained primary context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `CudaDevice::open`.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}
