//! The AMDGPU runtime: AMD GPUs through HIP (`libamdhip64`, loaded at run time), built with the
//! `amdgpu` cargo feature. **It has not been run on AMD hardware by this project**: what is tested
//! is that without ROCm every entry point is a typed [`Error::Unavailable`](crate::runtime::Error::Unavailable)
//! (`tests/amdgpu_runtime.rs`), the kernel-argument packing and the mapping from a device's
//! `gcnArchName` to an [`AmdgpuArch`](crate::backend::amdgpu::AmdgpuArch) (unit tests), and the
//! whole runtime against a stand-in for HIP written in C with Debian's LLVM 19 in place of ROCm's
//! (`tests/amdgpu_fake_hip.rs`: properties, refusals, arrays, code objects on disk, the kernarg
//! buffer a launch hands over; no kernel runs there). The code it loads is the `.ll` that
//! `scripts/test-amdgpu.sh` assembles and links with llc-19 / ld.lld-19 and checks instruction by
//! instruction (crates/qd/tests/amdgpu_isa.rs).
//!
//! * Library (`hip.rs`): `libamdhip64.so` is opened with `libloading` from `$ROCM_PATH/lib`, then
//!   `/opt/rocm/lib`, then the loader's own search path; only the functions qd calls are resolved.
//!   Not a `-sys` binding crate: those either link against `libamdhip64` at build time (so qd would
//!   not build, or not start, without ROCm) or resolve symbols lazily and panic on the first call
//!   when the library is absent. With `libloading` a missing library or symbol is an
//!   [`Error::Unavailable`](crate::runtime::Error::Unavailable) naming where we looked, and the
//!   build needs nothing from ROCm.
//! * Device (`amdgpu`, `amdgpu:N`): `hipSetDevice(N)` before every sequence of calls, so a
//!   [`Device`](super::Device) works from any thread. The architecture comes from the device
//!   properties' `gcnArchName` (`gfx90a:sramecc+:xnack-` → gfx90a); one the code generator does not
//!   know is [`Error::Unavailable`](crate::runtime::Error::Unavailable). Kernels are traced for
//!   [`Target::amdgpu`](crate::target::Target::amdgpu) of that architecture (wave64 everywhere).
//! * Wave size: CDNA parts (gfx90a, gfx942) must report a 64-wide wavefront; RDNA parts
//!   (gfx1100, gfx1201) report their native 32 but run the wave64 code objects qd builds
//!   (`+wavefrontsize64`), so 32 or 64 is accepted there. Anything else is refused.
//! * Code objects (`compile.rs`): the `.ll` from `backend::amdgpu` goes through ROCm's own
//!   `$ROCM_PATH/llvm/bin/llc -mtriple=amdgcn-amd-amdhsa -mcpu=<gfx> -mattr=+wavefrontsize64
//!   -filetype=obj` and `ld.lld -shared` (a missing toolchain makes the device unavailable, with
//!   the paths tried). The code object is cached on disk like the CUDA cubins
//!   (`$QD_CACHE_DIR/amdgpu/<gfx>/<key>.hsaco`, keyed by the `.ll`, the architecture and `llc
//!   --version`; `QD_CACHE_DISABLE=1` turns it off), then loaded with `hipModuleLoadData`.
//! * Memory: `hipMalloc` (coarse-grained, which `"amdgpu-unsafe-fp-atomics"` relies on),
//!   synchronous `hipMemcpyHtoD`/`hipMemcpyDtoH`.
//! * Launch (the ABI of `backend::amdgpu`, D19): every kernel argument is 8 bytes: an array is its
//!   device pointer then its element count as an `i64`, a scalar one `i64` of its bits; the buffer
//!   goes to `hipModuleLaunchKernel` through `HIP_LAUNCH_PARAM_BUFFER_POINTER`, grid = the D1 grid
//!   in workgroups, block = `block_dim`, on the null stream, then `hipDeviceSynchronize`: a fault is
//!   an [`Error::Driver`](crate::runtime::Error::Driver) naming the kernel and the call.
//!
//! Without the feature `amdgpu` is [`Error::BackendNotBuilt`](crate::runtime::Error::BackendNotBuilt)
//! and no AMD device is listed.

#[cfg(any(feature = "amdgpu", test))]
mod abi;
#[cfg(feature = "amdgpu")]
mod compile;
#[cfg(feature = "amdgpu")]
mod hip;
#[cfg(feature = "amdgpu")]
mod runtime;

#[cfg(feature = "amdgpu")]
pub(super) use runtime::{device_count, open};

#[cfg(not(feature = "amdgpu"))]
use {super::device::Runtime, super::Error, super::Result, std::sync::Arc};

/// Without the `amdgpu` feature there is no AMDGPU runtime to open.
#[cfg(not(feature = "amdgpu"))]
pub(super) fn open(_ordinal: u32, _name: &str) -> Result<Arc<dyn Runtime>> {
    Err(Error::BackendNotBuilt { backend: "amdgpu", feature: "amdgpu" })
}

/// Without the `amdgpu` feature no AMD device is listed.
#[cfg(not(feature = "amdgpu"))]
pub(super) fn device_count() -> u32 {
    0
}

/// This runtime in the table of runtimes ([`super::RUNTIMES`]).
pub(super) const FAMILY: super::RuntimeFamily = super::RuntimeFamily {
    name: "amdgpu",
    about: "AMD GPUs through HIP and LLVM IR for amdgcn",
    name_hint: "expected amdgpu or amdgpu:N with N a device index (see `qd info`); amdgpu:gfxNNN names a target, for `qd emit` and `cpu@amdgpu:gfxNNN`",
    device_count,
    open,
};

impl super::Device {
    /// AMD GPU `ordinal` (`amdgpu:N`, in HIP's order) through HIP, with the `amdgpu` cargo feature.
    /// Kernels are traced for [`Target::amdgpu`](crate::backend::Target::amdgpu) of the device's architecture (from its
    /// `gcnArchName`) and made into code objects by ROCm's own `llc` and `ld.lld`, cached on disk.
    ///
    /// Without ROCm (no `libamdhip64` under `$ROCM_PATH/lib`, `/opt/rocm/lib` or the loader's
    /// path), without its LLVM, with no such device, with an architecture the code generator does
    /// not know, or with a wavefront size it cannot run, this is [`Error::Unavailable`](super::Error::Unavailable) with the
    /// reason; in a build without the feature [`Error::BackendNotBuilt`](super::Error::BackendNotBuilt). Not yet run on AMD
    /// hardware by this project.
    ///
    /// ```
    /// use qd::prelude::*;
    /// match Device::amdgpu(0) {
    ///     Ok(gpu) => assert_eq!(gpu.subgroup_size(), 64), // wave64
    ///     Err(e) => println!("{e}"), // without ROCm: where it looked for libamdhip64
    /// }
    /// ```
    pub fn amdgpu(ordinal: u32) -> super::Result<super::Device> {
        let name = format!("amdgpu:{ordinal}");
        let runtime = open(ordinal, &name)?;
        Ok(super::Device::new(name, runtime))
    }
}
