//! # qd: portable SIMT kernels in Rust
//!
//! Write a GPU kernel once in Rust; it is traced into a typed IR and run on CUDA, Vulkan, Metal,
//! AMDGPU, or the lane-exact CPU emulator. The SIMT primitive set (subgroup, block, grid, atomics)
//! follows the seed documents; see `ARCHITECTURE.md` for the map. Comments cite the design
//! decisions as D1–D14: each is written down, with its reason, in `docs/decisions.md`.
//!
//! ```
//! use qd::prelude::*;
//!
//! // Every lane reads lane 0's value.
//! let kernel = Kernel::range("broadcast", 32, |k| {
//!     let a = k.array::<f32>("a");
//!     k.parallel_for(0, a.len(), |i| {
//!         a.set(i, subgroup::shuffle(a.get(i), 0u32));
//!     });
//! });
//! let device = Device::cpu();
//! let a = device.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
//! device.launch(&kernel, &[a.arg()]).unwrap();
//! let out = a.to_vec().unwrap();
//! assert_eq!(out[5], 0.0);
//! assert_eq!(out[40], 32.0);
//! ```

pub mod algorithms;
pub mod backend;
pub mod ir;
pub mod nv;
pub mod runtime;
pub mod simt;
pub mod target;
pub mod trace;

/// Everything a kernel author needs.
pub mod prelude {
    pub use crate::runtime::{Arg, Device, DeviceArray, Error as QdError, Grid};
    pub use crate::simt::{atomic::*, block, grid, subgroup};
    pub use crate::trace::{
        bit_cast, break_, cast, continue_, fma, for_range, if_, if_else, local_array, loop_, return_, select, var,
        volatile_load, while_, Array, Elem, Float, Int, Kernel, KernelBuilder, Num, Scalar, SharedArray, Val, Var,
        BF16, F16,
    };
}
