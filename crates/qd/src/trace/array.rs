//! Arrays in global, shared and local memory, and their elements as atomic targets.

use super::scalar::Scalar;
use super::value::{new_value, IntoIndex, IntoVal, Val};
use super::{current_loc, emit_at, with};
use crate::ir::{ArrayDecl, ArrayRef, DType, InstKind, LoadKind, Place, StoreKind};
use std::marker::PhantomData;

/// An array of `T`: a kernel parameter (global memory), a shared array or a per-thread array.
pub struct Array<T> {
    pub(crate) array: ArrayRef,
    /// The trace that declared it: an array handle kept past its trace is a trace error, not a panic.
    generation: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for Array<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Array<T> {}

/// Shared arrays are ordinary [`Array`]s living in block memory.
pub type SharedArray<T> = Array<T>;

/// One element of an array: the writable target of atomics and [`volatile_load`].
pub struct Elem<T> {
    pub(crate) place: Place,
    _t: PhantomData<T>,
}

impl<T> Clone for Elem<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Elem<T> {}

impl<T: Scalar> Array<T> {
    pub(crate) fn from_ref(array: ArrayRef) -> Array<T> {
        Array { array, generation: with(|s| s.generation), _t: PhantomData }
    }

    /// Records an error when this handle belongs to another kernel's trace.
    #[track_caller]
    fn check_trace(self) {
        let loc = crate::ir::SrcLoc::caller();
        with(|s| {
            if s.generation != self.generation {
                s.fail("array", loc, "uses an array declared by another kernel's trace".into());
            }
        });
    }

    /// The IR reference.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::ArrayRef;
    /// let k = Kernel::explicit("refs", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let s = block::shared_array::<i32>(32);
    ///     assert_eq!(a.array_ref(), ArrayRef::Param(0)); // the first parameter
    ///     assert!(matches!(s.array_ref(), ArrayRef::Shared(_)));
    /// });
    /// Device::cpu().trace(&k).unwrap();
    /// ```
    pub fn array_ref(self) -> ArrayRef {
        self.array
    }

    /// Element `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // An element as a location: for atomics and volatile loads.
    /// let k = Kernel::range("hist", 32, |k| {
    ///     let v = k.array::<u32>("v");
    ///     let bins = k.array::<u32>("bins");
    ///     k.parallel_for(0, v.len(), |i| {
    ///         atomic_add(bins.at(v.get(i) % 4), 1u32);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&(0..64).collect::<Vec<u32>>()).unwrap();
    /// let bins = d.zeros::<u32>(4).unwrap();
    /// d.launch(&k, &[v.arg(), bins.arg()]).unwrap();
    /// assert_eq!(bins.to_vec().unwrap(), [16; 4]);
    /// ```
    #[track_caller]
    pub fn at(self, i: impl IntoIndex) -> Elem<T> {
        self.check_trace();
        Elem { place: Place { array: self.array, index: i.into_index() }, _t: PhantomData }
    }

    /// Loads element `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("gather", 32, |k| {
    ///     let src = k.array::<f32>("src");
    ///     let idx = k.array::<i32>("idx");
    ///     let out = k.array::<f32>("out");
    ///     k.parallel_for(0, out.len(), |i| out.set(i, src.get(idx.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let src = d.array_from(&[10.0f32, 20.0, 30.0]).unwrap();
    /// let idx = d.array_from(&[2i32, 0, 1, 2]).unwrap();
    /// let out = d.zeros::<f32>(4).unwrap();
    /// d.launch(&k, &[src.arg(), idx.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [30.0, 10.0, 20.0, 30.0]);
    /// ```
    #[track_caller]
    pub fn get(self, i: impl IntoIndex) -> Val<T> {
        self.at(i).get()
    }

    /// Stores `v` into element `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("scatter", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, out.len(), |i| out.set(out.len() - 1 - i, i)); // index from the end
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(4).unwrap();
    /// d.launch(&k, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [3, 2, 1, 0]);
    /// ```
    #[track_caller]
    pub fn set(self, i: impl IntoIndex, v: impl IntoVal<T>) {
        self.at(i).set(v)
    }

    /// Number of elements, as i32.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The launch argument's length, read on the device.
    /// let k = Kernel::range("lens", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let b = k.array::<i32>("b");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, b.len()));
    /// });
    /// let d = Device::cpu();
    /// let (a, b) = (d.zeros::<i32>(2).unwrap(), d.zeros::<i32>(7).unwrap());
    /// d.launch(&k, &[a.arg(), b.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [7, 7]);
    /// ```
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.check_trace();
        let loc = current_loc();
        let dst = new_value(DType::U32);
        emit_at(InstKind::ArrayLen { dst, array: self.array }, loc);
        Val::<u32>::from_id(dst).cast()
    }

    /// True when the array has no elements.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("empty", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let b = k.array::<f32>("b");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, b.is_empty().to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let (a, b) = (d.zeros::<i32>(1).unwrap(), d.zeros::<f32>(0).unwrap());
    /// d.launch(&k, &[a.arg(), b.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1]);
    /// ```
    #[track_caller]
    pub fn is_empty(self) -> Val<bool> {
        self.len().eq(0)
    }
}

impl<T: Scalar> Elem<T> {
    /// The IR place.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::ArrayRef;
    /// let k = Kernel::explicit("place", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let p = a.at(3).place();
    ///     assert_eq!(p.array, ArrayRef::Param(0)); // the array and the index value it names
    /// });
    /// Device::cpu().trace(&k).unwrap();
    /// ```
    pub fn place(self) -> Place {
        self.place
    }

    /// Ordinary load.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("elem_get", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         let first = a.at(0);
    ///         a.set(i, first.get() + i);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[100i32, 0, 0]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap()[2], 102);
    /// ```
    #[track_caller]
    pub fn get(self) -> Val<T> {
        load(self.place, LoadKind::Plain)
    }

    /// Ordinary store.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("elem_set", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.at(i).set(i * i));
    /// });
    /// let d = Device::cpu();
    /// let a = d.zeros::<i32>(4).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 1, 4, 9]);
    /// ```
    #[track_caller]
    pub fn set(self, v: impl IntoVal<T>) {
        let loc = current_loc();
        let value = v.into_val().id();
        emit_at(InstKind::Store { place: self.place, value, kind: StoreKind::Plain }, loc);
    }

    /// Load with an explicit kind (volatile, acquire, relaxed atomic).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::{LoadKind, Ordering, Scope};
    /// // An acquiring load: what was written before the matching release is visible after it.
    /// let k = Kernel::explicit("acquire", 32, |k| {
    ///     let data = k.array::<i32>("data");
    ///     let flag = k.array::<i32>("flag");
    ///     let out = k.array::<i32>("out");
    ///     let t = block::thread_idx();
    ///     if_else(
    ///         block::block_idx().eq(0),
    ///         || {
    ///             data.set(t, t + 1);
    ///             block::sync();
    ///             if_(t.eq(0), || flag.at(0).store_with(1, qd::ir::StoreKind::Ordered(Ordering::Release, Scope::Device)));
    ///         },
    ///         || {
    ///             while_(|| flag.at(0).load_with(LoadKind::Ordered(Ordering::Acquire, Scope::Device)).eq(0), || {});
    ///             out.set(t, data.get(t));
    ///         },
    ///     );
    /// });
    /// let d = Device::cpu();
    /// let (data, flag, out) = (d.zeros::<i32>(32).unwrap(), d.zeros::<i32>(1).unwrap(), d.zeros::<i32>(32).unwrap());
    /// d.launch_grid(&k, 2, &[data.arg(), flag.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[31], 32);
    /// ```
    #[track_caller]
    pub fn load_with(self, kind: LoadKind) -> Val<T> {
        load(self.place, kind)
    }

    /// Store with an explicit kind (volatile, release, relaxed atomic).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::StoreKind;
    /// // A volatile store: never merged with another or removed.
    /// let k = Kernel::range("beacon", 32, |k| {
    ///     let a = k.array::<u32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.at(i).store_with(7u32, StoreKind::Volatile));
    /// });
    /// let d = Device::cpu();
    /// let a = d.zeros::<u32>(3).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [7; 3]);
    /// ```
    #[track_caller]
    pub fn store_with(self, v: impl IntoVal<T>, kind: StoreKind) {
        let loc = current_loc();
        let value = v.into_val().id();
        emit_at(InstKind::Store { place: self.place, value, kind }, loc);
    }
}

#[track_caller]
fn load<T: Scalar>(place: Place, kind: LoadKind) -> Val<T> {
    let loc = current_loc();
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Load { dst, place, kind }, loc);
    Val::from_id(dst)
}

/// Reads `target` from memory on every call: never cached, hoisted or merged (seed 003, D6).
///
/// `target` must be an element of a global or shared array; a per-thread array is rejected while
/// tracing because no other thread can change it.
///
/// ```
/// use qd::prelude::*;
/// // Wait for lane 0's flag in shared memory: the load really happens on every iteration.
/// let k = Kernel::explicit("wait", 32, |k| {
///     let out = k.array::<i32>("out");
///     let flag = block::shared_array::<i32>(1);
///     let t = block::thread_idx();
///     if_(t.eq(0), || flag.set(0, 0));
///     block::sync();
///     if_else(t.eq(0), || { atomic_exchange(flag.at(0), 5); }, || while_(|| volatile_load(flag.at(0)).eq(0), || {}));
///     out.set(t, volatile_load(flag.at(0)));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<i32>(32).unwrap();
/// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [5; 32]);
/// ```
#[track_caller]
pub fn volatile_load<T: Scalar>(target: Elem<T>) -> Val<T> {
    if let ArrayRef::Local(i) = target.place.array {
        let name = with(|s| s.kernel.local_arrays.get(i as usize).map(|a| a.name.clone())).unwrap_or_default();
        super::trace_error(
            "volatile_load",
            format!(
                "`{name}` is a per-thread array (local_array), which no other thread can change: volatile_load \
                 reads an element of a device array (a kernel parameter) or a shared array"
            ),
        );
    }
    load(target.place, LoadKind::Volatile)
}

/// Allocates a block-shared array of `len` elements (one allocation per call site while tracing).
#[track_caller]
pub(crate) fn shared_array<T: Scalar>(name: &str, len: u32) -> Array<T> {
    let loc = super::current_loc();
    let idx = with(|s| {
        s.kernel.shared.push(ArrayDecl { name: name.to_string(), dtype: T::DTYPE, len, loc });
        s.kernel.shared.len() as u32 - 1
    });
    Array::from_ref(ArrayRef::Shared(idx))
}

/// Allocates a per-thread array of `len` elements.
///
/// ```
/// use qd::prelude::*;
/// // A per-thread scratch array: each thread reverses its 4 values.
/// let k = Kernel::range("rev4", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len() / 4, |r| {
///         let tmp = local_array::<i32>(4);
///         for_range(0, 4, |j| tmp.set(j, a.get(r * 4 + j)));
///         for_range(0, 4, |j| a.set(r * 4 + j, tmp.get(3 - j)));
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&(0..8).collect::<Vec<i32>>()).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [3, 2, 1, 0, 7, 6, 5, 4]);
/// ```
#[track_caller]
pub fn local_array<T: Scalar>(len: u32) -> Array<T> {
    let n = with(|s| s.kernel.local_arrays.len());
    local_array_named(&format!("local{n}"), len)
}

/// Allocates a per-thread array of `len` elements called `name` (in the emulator's messages).
#[track_caller]
pub(crate) fn local_array_named<T: Scalar>(name: &str, len: u32) -> Array<T> {
    let loc = super::current_loc();
    let idx = with(|s| {
        s.kernel.local_arrays.push(ArrayDecl { name: name.to_string(), dtype: T::DTYPE, len, loc });
        s.kernel.local_arrays.len() as u32 - 1
    });
    Array::from_ref(ArrayRef::Local(idx))
}
