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
//! #[qd::kernel]
//! fn broadcast(a: &mut [f32]) {
//!     qd::loop_config(block_dim = 32);
//!     for i in range(a.len()) {
//!         a[i] = subgroup::shuffle(a[i], 0u32);
//!     }
//! }
//!
//! let device = Device::cpu();
//! let mut a = device.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
//! broadcast().launch(&device, (&mut a,)).unwrap();
//! let out = a.to_vec().unwrap();
//! assert_eq!(out[5], 0.0);
//! assert_eq!(out[40], 32.0);
//! ```
//!
//! Kernels are written in plain Rust with [`kernel`] and [`func`] (the language: [`lang`]). Under
//! them is the tracing builder ([`trace`]), which library code uses and which works on its own:
//! the same kernel as a closure of builder calls traces to the same IR.
//!
//! ```
//! use qd::prelude::*;
//!
//! let kernel = Kernel::range("broadcast", 32, |k| {
//!     let a = k.array::<f32>("a");
//!     k.parallel_for(0, a.len(), |i| {
//!         a.set(i, subgroup::shuffle(a.get(i), 0u32));
//!     });
//! });
//! let device = Device::cpu();
//! let a = device.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
//! device.launch(&kernel, &[a.arg()]).unwrap();
//! assert_eq!(a.to_vec().unwrap()[40], 32.0);
//! ```

pub mod algorithms;
pub mod backend;
pub mod ir;
pub mod lang;
pub mod nv;
pub mod runtime;
pub mod simt;
pub mod target;
pub mod trace;

// The macros' expansions name `::qd`, which inside this crate is the crate itself.
extern crate self as qd;

pub use lang::unroll;

/// A kernel written in plain Rust: the function becomes one returning a typed
/// [`lang::KernelFn`], launched with a tuple whose types the parameters fix. The language is
/// described in [`lang`].
///
/// ```
/// use qd::prelude::*;
///
/// #[qd::kernel(block_dim = 64)]
/// fn clamp_copy(src: &[f32], dst: &mut [f32], n: i32, hi: f32) {
///     let i = block::global_thread_idx();
///     if i < n {
///         dst[i] = if src[i] > hi { hi } else { src[i] };
///     }
/// }
///
/// let device = Device::cpu();
/// let src = device.array_from(&[1.0f32, 5.0, 2.0]).unwrap();
/// let mut dst = device.zeros::<f32>(3).unwrap();
/// clamp_copy().launch_grid(&device, 1, (&src, &mut dst, 3, 2.5)).unwrap();
/// assert_eq!(dst.to_vec().unwrap(), [1.0, 2.5, 2.0]);
/// ```
pub use qd_macros::kernel;

/// A device function called from kernel code, traced where it is called (always inlined). See
/// [`lang`] for what its parameters and result become.
///
/// ```
/// use qd::prelude::*;
///
/// #[qd::func]
/// fn segment_sum<T: Shuffle>(v: T, #[comptime] log2_size: u32) -> T {
///     let mut v = v;
///     for k in qd::unroll(0..log2_size) {
///         v = v + subgroup::shuffle_xor(v, 1u32 << k);
///     }
///     v
/// }
///
/// #[qd::kernel]
/// fn sums_of_eight(a: &mut [i32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(a.len()) {
///         a[i] = segment_sum(a[i], 3);
///     }
/// }
///
/// let device = Device::cpu();
/// let mut a = device.array_from(&[1i32; 32]).unwrap();
/// sums_of_eight().launch(&device, (&mut a,)).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [8; 32]);
/// ```
pub use qd_macros::func;

/// Everything a kernel author needs.
pub mod prelude {
    pub use crate::runtime::{Arg, Device, DeviceArray, Error as QdError, Grid};
    pub use crate::simt::{atomic::*, block, grid, subgroup};
    pub use crate::trace::{
        bit_cast, break_, cast, continue_, fma, for_range, if_, if_else, local_array, loop_, return_, select, var,
        volatile_load, while_, Array, Elem, Float, Int, Kernel, KernelBuilder, Num, Scalar, SharedArray, Shuffle, Val,
        Var, BF16, F16,
    };
}
