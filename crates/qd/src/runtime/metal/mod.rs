//! The Metal runtime: Apple GPUs through the Metal framework, with `objc2-metal` bindings, built
//! only on macOS with the `metal` cargo feature. **It has not been run on Apple hardware by this
//! project**: CI type-checks it for `aarch64-apple-darwin` (`scripts/test-metal.sh`); the MSL it
//! compiles is pinned and syntax-checked on Linux (docs/metal.md).
//!
//! * Device (`metal`, `metal:0`): the system default device (`MTLCreateSystemDefaultDevice`), one
//!   command queue. Kernels are traced for [`Target::metal`](crate::target::Target::metal)
//!   (32-wide SIMD groups, 32 KiB of threadgroup memory, MSL up to 3.2: macOS 15).
//! * Memory: one `MTLStorageModeShared` buffer per array (the CPU and GPU share it on Apple
//!   silicon), read and written with `memcpy` under the queue lock, so copies are ordered with
//!   launches.
//! * Kernels: MSL from `backend::metal`, compiled with `newLibraryWithSource:options:error:` at the
//!   version the source states and fast math off, then a compute pipeline per kernel; a pipeline
//!   whose `threadExecutionWidth` is not 32, or whose `maxTotalThreadsPerThreadgroup` is below the
//!   kernel's `block_dim`, is an [`Error::Driver`](crate::runtime::Error::Driver) naming the kernel.
//! * Launch (the ABI of `backend::metal`): `[[buffer(0)]]` is the parameter block (one u64 per
//!   parameter, set with `setBytes`), array `j` is `[[buffer(1 + j)]]`; `dispatchThreadgroups` of
//!   the D1 grid, then `waitUntilCompleted`; a command buffer that ends in error is an
//!   [`Error::Driver`](crate::runtime::Error::Driver) with Metal's description.
//!
//! On any other OS (and without the feature) `metal` is [`Error::Unavailable`](crate::runtime::Error::Unavailable)
//! (not this OS) or [`Error::BackendNotBuilt`](crate::runtime::Error::BackendNotBuilt), and no
//! Metal device is listed.

#[cfg(all(feature = "metal", target_os = "macos"))]
mod runtime;

#[cfg(all(feature = "metal", target_os = "macos"))]
pub(super) use runtime::{device_count, open};

#[cfg(not(all(feature = "metal", target_os = "macos")))]
use {super::device::Runtime, super::Error, super::Result, std::sync::Arc};

/// Metal exists on macOS only: elsewhere the device is unavailable, feature or not.
#[cfg(not(all(feature = "metal", target_os = "macos")))]
pub(super) fn open(_ordinal: u32, name: &str) -> Result<Arc<dyn Runtime>> {
    if cfg!(target_os = "macos") {
        Err(Error::BackendNotBuilt { backend: "metal", feature: "metal" })
    } else {
        Err(Error::Unavailable {
            backend: name.to_string(),
            reason: format!("Metal runs on macOS only, and this is {}", std::env::consts::OS),
        })
    }
}

/// Without the runtime no Metal device is listed.
#[cfg(not(all(feature = "metal", target_os = "macos")))]
pub(super) fn device_count() -> u32 {
    0
}

/// This runtime in the table of runtimes ([`super::RUNTIMES`]).
pub(super) const FAMILY: super::RuntimeFamily = super::RuntimeFamily {
    name: "metal",
    about: "Apple GPUs through Metal (macOS)",
    name_hint: "expected metal or metal:0",
    device_count,
    open,
};

impl super::Device {
    /// The Metal device (`metal:0`, the system default): macOS with the `metal` cargo feature only.
    /// Elsewhere [`Error::Unavailable`](super::Error::Unavailable) (Metal runs on macOS only); on macOS without the feature
    /// [`Error::BackendNotBuilt`](super::Error::BackendNotBuilt). Not yet run on Apple hardware by this project.
    ///
    /// ```
    /// use qd::prelude::*;
    /// match Device::metal(0) {
    ///     Ok(mac) => assert_eq!(mac.subgroup_size(), 32),
    ///     Err(e) => println!("{e}"), // "Metal runs on macOS only" elsewhere
    /// }
    /// ```
    pub fn metal(ordinal: u32) -> super::Result<super::Device> {
        let name = format!("metal:{ordinal}");
        let runtime = open(ordinal, &name)?;
        Ok(super::Device::new(name, runtime))
    }
}
