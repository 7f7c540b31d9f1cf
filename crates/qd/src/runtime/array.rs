//! Arrays and arguments: the typed [`DeviceArray`] user code holds, the untyped [`ArrayHandle`] a
//! launch takes, and the [`RuntimeArray`] trait each runtime implements for its memory.

use super::errors::{Error, Result};
use crate::ir::DType;
use crate::trace::Scalar;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

/// One runtime's array memory: an emulator buffer, a CUDA allocation, a Vulkan storage buffer.
///
/// Host copies go through element bits (each element's value zero-extended to a `u64`, as
/// [`Scalar::to_bits`] gives it), so the typed side ([`DeviceArray`]) is the same for every runtime.
/// A runtime finds its own type again by downcasting ([`ArrayHandle::storage_as`]).
pub(crate) trait RuntimeArray: Any + Send + Sync + std::fmt::Debug {
    /// Element type.
    fn dtype(&self) -> DType;
    /// Element count.
    fn len(&self) -> usize;
    /// Where the array lives: `cpu` (any emulator device), `cuda:N` or `vulkan:N`.
    fn device(&self) -> String;
    /// Copies the contents to the host, one element's bits per entry.
    fn read_bits(&self) -> Result<Vec<u64>>;
    /// Overwrites the contents from element bits; `bits` has [`len`](RuntimeArray::len) entries.
    fn write_bits(&self, bits: &[u64]) -> Result<()>;
}

/// A kernel argument: a device array or a scalar.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A device array.
    Array(ArrayHandle),
    /// A scalar: its type and bits.
    Scalar(DType, u64),
}

impl Arg {
    /// A scalar argument.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("fill", 32, |k| {
    ///     let a = k.array::<f64>("a");
    ///     let v = k.scalar::<f64>("v");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, v));
    /// });
    /// let d = Device::cpu();
    /// let a = d.zeros::<f64>(3).unwrap();
    /// d.launch(&k, &[a.arg(), Arg::scalar(0.25f64)]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0.25; 3]);
    /// // The scalar's type must match the parameter's.
    /// assert!(d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).is_err());
    /// ```
    pub fn scalar<T: Scalar>(x: T) -> Arg {
        Arg::Scalar(T::DTYPE, x.to_bits())
    }
}

/// An untyped reference to a device array (what [`DeviceArray::arg`] passes to a kernel).
#[derive(Clone, Debug)]
pub struct ArrayHandle {
    storage: Arc<dyn RuntimeArray>,
}

impl ArrayHandle {
    /// Element type.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::DType;
    /// let a = Device::cpu().zeros::<u16>(4).unwrap();
    /// let Arg::Array(handle) = a.arg() else { unreachable!() };
    /// assert_eq!(handle.dtype(), DType::U16);
    /// ```
    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    /// Element count.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Device::cpu().zeros::<i32>(9).unwrap();
    /// let Arg::Array(handle) = a.arg() else { unreachable!() };
    /// assert_eq!(handle.len(), 9);
    /// ```
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// True when empty.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Device::cpu().zeros::<i32>(0).unwrap();
    /// let Arg::Array(handle) = a.arg() else { unreachable!() };
    /// assert!(handle.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the array lives: `cpu` (any emulator device), `cuda:N` or `vulkan:N`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Device::from_name("cpu:sg8").unwrap().zeros::<i32>(1).unwrap();
    /// let Arg::Array(handle) = a.arg() else { unreachable!() };
    /// assert_eq!(handle.device(), "cpu"); // any emulator device
    /// ```
    pub fn device(&self) -> String {
        self.storage.device()
    }

    /// The emulator buffer, for arrays of the CPU backend.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Device::cpu().array_from(&[5u32, 6]).unwrap();
    /// let Arg::Array(handle) = a.arg() else { unreachable!() };
    /// let buffer = handle.cpu_buffer().unwrap(); // the emulator's cells
    /// assert_eq!(buffer.to_bits(), [5, 6]);
    /// ```
    pub fn cpu_buffer(&self) -> Option<&Arc<crate::backend::cpu::Buffer>> {
        self.storage_as::<super::cpu::CpuArray>().map(|a| &a.0)
    }

    /// The runtime's memory behind this handle.
    pub(crate) fn storage(&self) -> &dyn RuntimeArray {
        self.storage.as_ref()
    }

    /// The memory as runtime `T`'s own type, when it is one.
    pub(crate) fn storage_as<T: RuntimeArray>(&self) -> Option<&T> {
        (self.storage.as_ref() as &dyn Any).downcast_ref::<T>()
    }
}

/// A typed array in device memory.
#[derive(Clone, Debug)]
pub struct DeviceArray<T> {
    handle: ArrayHandle,
    _t: PhantomData<T>,
}

impl<T: Scalar> DeviceArray<T> {
    /// Wraps memory a runtime allocated for elements of `T`.
    pub(crate) fn from_storage(storage: Arc<dyn RuntimeArray>) -> DeviceArray<T> {
        debug_assert_eq!(storage.dtype(), T::DTYPE);
        DeviceArray { handle: ArrayHandle { storage }, _t: PhantomData }
    }

    /// Copies the contents back to the host.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Device::cpu().array_from(&[1i64, -1]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1, -1]);
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.handle.storage.read_bits()?.into_iter().map(T::from_bits).collect())
    }

    /// Overwrites the contents; `data` must have the array's length (else [`Error::HostCopy`],
    /// naming the array, both lengths and the caller's line).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let a = d.zeros::<f32>(2).unwrap();
    /// a.write(&[1.0, 2.0]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1.0, 2.0]);
    /// assert!(a.write(&[1.0]).is_err()); // the length must match
    /// ```
    #[track_caller]
    pub fn write(&self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::HostCopy {
                array: format!("the {} array of {} elements on {}", T::DTYPE, self.len(), self.handle.device()),
                expected: self.len(),
                given: data.len(),
                at: crate::ir::SrcLoc::caller(),
            });
        }
        self.handle.storage.write_bits(&data.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    }

    /// Element count.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Device::cpu().zeros::<u8>(300).unwrap().len(), 300);
    /// ```
    pub fn len(&self) -> usize {
        self.handle.len()
    }

    /// True when empty.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert!(Device::cpu().zeros::<u8>(0).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.handle.is_empty()
    }

    /// This array as a kernel argument.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("neg", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, -a.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, -2]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap(); // the array as the kernel's argument (no copy)
    /// assert_eq!(a.to_vec().unwrap(), [-1, 2]);
    /// ```
    pub fn arg(&self) -> Arg {
        Arg::Array(self.handle.clone())
    }
}

/// Element bits to device bytes: each element's low `size_bytes` bytes, little-endian (bool is one
/// byte, 0 or 1). What the GPU runtimes copy to device memory.
#[cfg_attr(not(any(feature = "cuda", feature = "vulkan", feature = "amdgpu")), allow(dead_code))]
pub(crate) fn encode(dtype: DType, bits: &[u64]) -> Vec<u8> {
    let w = dtype.size_bytes();
    let mut out = Vec::with_capacity(bits.len() * w);
    for x in bits {
        out.extend_from_slice(&x.to_le_bytes()[..w]);
    }
    out
}

/// Device bytes back to element bits (the inverse of [`encode`]).
#[cfg_attr(not(any(feature = "cuda", feature = "vulkan", feature = "amdgpu")), allow(dead_code))]
pub(crate) fn decode(dtype: DType, bytes: &[u8]) -> Vec<u64> {
    let w = dtype.size_bytes();
    bytes
        .chunks_exact(w)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{BF16, F16};

    fn enc<T: Scalar>(data: &[T]) -> Vec<u8> {
        encode(T::DTYPE, &data.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    }

    fn dec<T: Scalar>(bytes: &[u8]) -> Vec<T> {
        decode(T::DTYPE, bytes).into_iter().map(T::from_bits).collect()
    }

    #[test]
    fn encode_decode_round_trip_at_memory_width() {
        let b = [true, false, true];
        assert_eq!(enc(&b), vec![1, 0, 1]);
        assert_eq!(dec::<bool>(&enc(&b)), b);
        let i = [-2i16, 7];
        assert_eq!(enc(&i), vec![0xfe, 0xff, 7, 0]);
        assert_eq!(dec::<i16>(&enc(&i)), i);
        let f = [1.5f64, -0.0];
        assert_eq!(dec::<f64>(&enc(&f)), f);
        let h = [F16::from_f32(0.5), F16::from_f32(-3.0)];
        assert_eq!(enc(&h).len(), 4);
        assert_eq!(dec::<F16>(&enc(&h)), h);
        let bf = [BF16::from_f32(2.0)];
        assert_eq!(dec::<BF16>(&enc(&bf)), bf);
        let u = [u64::MAX, 1];
        assert_eq!(dec::<u64>(&enc(&u)), u);
    }
}
