//! Typed kernels: what a `#[qd::kernel]` function returns, launched with a tuple of host values
//! whose types the kernel's parameters fix, so a wrong argument is a compile error.

use crate::runtime::{Arg, Device, DeviceArray, Error, Grid};
use crate::trace::{Kernel, Scalar};
use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

/// A kernel parameter `a: &[T]`: launched with `&DeviceArray<T>`.
pub struct Slice<T>(PhantomData<T>);
/// A kernel parameter `a: &mut [T]`: launched with `&mut DeviceArray<T>`.
pub struct SliceMut<T>(PhantomData<T>);
/// A kernel parameter `n: T`: launched with a `T`.
pub struct Value<T>(PhantomData<T>);

/// One kernel parameter: the host value that launches it.
pub trait Param {
    /// What the launch tuple holds for it.
    type Host<'a>;
    /// The untyped argument.
    fn arg(host: &Self::Host<'_>) -> Arg;
}

impl<T: Scalar> Param for Slice<T> {
    type Host<'a> = &'a DeviceArray<T>;
    fn arg(host: &&DeviceArray<T>) -> Arg {
        host.arg()
    }
}

impl<T: Scalar> Param for SliceMut<T> {
    type Host<'a> = &'a mut DeviceArray<T>;
    fn arg(host: &&mut DeviceArray<T>) -> Arg {
        host.arg()
    }
}

impl<T: Scalar> Param for Value<T> {
    type Host<'a> = T;
    fn arg(host: &T) -> Arg {
        Arg::scalar(*host)
    }
}

/// A kernel's parameter list: a tuple of [`Param`]s.
pub trait Params {
    /// The launch tuple: `(&DeviceArray<f32>, &mut DeviceArray<u32>, i32)`.
    type Host<'a>;
    /// The untyped arguments, in parameter order.
    fn args(host: Self::Host<'_>) -> Vec<Arg>;
}

macro_rules! params {
    ($(($($p:ident $i:tt),*)),*) => {$(
        impl<$($p: Param),*> Params for ($($p,)*) {
            type Host<'a> = ($($p::Host<'a>,)*);
            #[allow(unused_variables)]
            fn args(host: Self::Host<'_>) -> Vec<Arg> {
                vec![$($p::arg(&host.$i)),*]
            }
        }
    )*};
}
params!(
    (),
    (P0 0),
    (P0 0, P1 1),
    (P0 0, P1 1, P2 2),
    (P0 0, P1 1, P2 2, P3 3),
    (P0 0, P1 1, P2 2, P3 3, P4 4),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6, P7 7),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6, P7 7, P8 8),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6, P7 7, P8 8, P9 9),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6, P7 7, P8 8, P9 9, P10 10),
    (P0 0, P1 1, P2 2, P3 3, P4 4, P5 5, P6 6, P7 7, P8 8, P9 9, P10 10, P11 11)
);

/// A range kernel (its body holds the parallel loop): launched over the loop's range.
pub struct Range;
/// An explicit kernel (no parallel loop): launched on a grid of blocks.
pub struct Explicit;

/// What a `#[qd::kernel]` function returns: the [`Kernel`] with its parameter types `P` and launch
/// shape `L` ([`Range`] or [`Explicit`]).
///
/// ```
/// # use qd::prelude::*;
/// #[qd::kernel]
/// fn scale(a: &[f32], out: &mut [f32], k: f32) {
///     qd::loop_config(block_dim = 64);
///     for i in range(a.len()) {
///         out[i] = a[i] * k;
///     }
/// }
/// let device = Device::cpu();
/// let a = device.array_from(&[1.0f32, 2.0, 3.0]).unwrap();
/// let mut out = device.zeros::<f32>(3).unwrap();
/// scale().launch(&device, (&a, &mut out, 2.0)).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [2.0, 4.0, 6.0]);
/// ```
pub struct KernelFn<P, L> {
    kernel: Kernel,
    _types: PhantomData<fn() -> (P, L)>,
}

impl<P, L> Clone for KernelFn<P, L> {
    fn clone(&self) -> Self {
        KernelFn { kernel: self.kernel.clone(), _types: PhantomData }
    }
}

impl<P, L> std::fmt::Debug for KernelFn<P, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kernel.fmt(f)
    }
}

impl<P: Params, L> KernelFn<P, L> {
    /// Wraps a kernel whose parameters are `P` (what the macro expands to).
    pub fn new(kernel: Kernel) -> Self {
        KernelFn { kernel, _types: PhantomData }
    }

    /// The untyped kernel (for `qd emit`, `Device::compile` and the untyped launches).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The untyped kernel, by value.
    pub fn into_kernel(self) -> Kernel {
        self.kernel
    }
}

impl<P, L> AsRef<Kernel> for KernelFn<P, L> {
    fn as_ref(&self) -> &Kernel {
        &self.kernel
    }
}

impl<P: Params> KernelFn<P, Range> {
    /// Launches over the parallel loop's range (`Device::launch`).
    pub fn launch(&self, device: &Device, args: P::Host<'_>) -> Result<(), Error> {
        device.launch(&self.kernel, &P::args(args))
    }
}

impl<P: Params> KernelFn<P, Explicit> {
    /// Launches `grid` blocks of the kernel's `block_dim` threads (`Device::launch_grid`).
    pub fn launch_grid(&self, device: &Device, grid: Grid, args: P::Host<'_>) -> Result<(), Error> {
        device.launch_grid(&self.kernel, grid, &P::args(args))
    }
}

/// The kernels of one generic `#[qd::kernel]` function, one per instantiation (keyed by the
/// `TypeId` of its generic arguments), so calling the function again reuses the compiled kernel.
pub struct KernelCache {
    kernels: OnceLock<Mutex<HashMap<TypeId, Kernel>>>,
}

impl KernelCache {
    /// An empty cache (a `static` in the expansion).
    pub const fn new() -> Self {
        KernelCache { kernels: OnceLock::new() }
    }

    /// The kernel for the instantiation `key`, made by `make` the first time.
    pub fn get<P: Params, L>(&self, key: TypeId, make: impl FnOnce() -> Kernel) -> KernelFn<P, L> {
        let map = self.kernels.get_or_init(Default::default);
        let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
        KernelFn::new(map.entry(key).or_insert_with(make).clone())
    }
}

impl Default for KernelCache {
    fn default() -> Self {
        Self::new()
    }
}
