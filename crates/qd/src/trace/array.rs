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
    pub fn array_ref(self) -> ArrayRef {
        self.array
    }

    /// Element `i`.
    #[track_caller]
    pub fn at(self, i: impl IntoIndex) -> Elem<T> {
        self.check_trace();
        Elem { place: Place { array: self.array, index: i.into_index() }, _t: PhantomData }
    }

    /// Loads element `i`.
    #[track_caller]
    pub fn get(self, i: impl IntoIndex) -> Val<T> {
        self.at(i).get()
    }

    /// Stores `v` into element `i`.
    #[track_caller]
    pub fn set(self, i: impl IntoIndex, v: impl IntoVal<T>) {
        self.at(i).set(v)
    }

    /// Number of elements, as i32.
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.check_trace();
        let loc = current_loc();
        let dst = new_value(DType::U32);
        emit_at(InstKind::ArrayLen { dst, array: self.array }, loc);
        Val::<u32>::from_id(dst).cast()
    }

    /// True when the array has no elements.
    #[track_caller]
    pub fn is_empty(self) -> Val<bool> {
        self.len().eq(0)
    }
}

impl<T: Scalar> Elem<T> {
    /// The IR place.
    pub fn place(self) -> Place {
        self.place
    }

    /// Ordinary load.
    #[track_caller]
    pub fn get(self) -> Val<T> {
        load(self.place, LoadKind::Plain)
    }

    /// Ordinary store.
    #[track_caller]
    pub fn set(self, v: impl IntoVal<T>) {
        let loc = current_loc();
        let value = v.into_val().id();
        emit_at(InstKind::Store { place: self.place, value, kind: StoreKind::Plain }, loc);
    }

    /// Load with an explicit kind (volatile, acquire, relaxed atomic).
    #[track_caller]
    pub fn load_with(self, kind: LoadKind) -> Val<T> {
        load(self.place, kind)
    }

    /// Store with an explicit kind (volatile, release, relaxed atomic).
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
