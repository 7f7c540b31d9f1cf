//! Device arrays: copies in, zeroed arrays, and the allocation check every allocation passes.

use super::Device;
use crate::ir::DType;
use crate::runtime::array::DeviceArray;
use crate::runtime::errors::{Error, Result};
use crate::trace::Scalar;

impl Device {
    /// Copies `data` to a new device array (checked first by
    /// [`check_allocation`](Device::check_allocation)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1.5f64, -2.0]).unwrap();
    /// assert_eq!((a.len(), a.to_vec().unwrap()), (2, vec![1.5, -2.0]));
    /// let flags = d.array_from(&[true, false]).unwrap(); // bool: one byte per element
    /// assert_eq!(flags.to_vec().unwrap(), [true, false]);
    /// ```
    pub fn array_from<T: Scalar>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        self.check_allocation(T::DTYPE, data.len())?;
        let bits: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
        Ok(DeviceArray::from_storage(self.inner.runtime.alloc(T::DTYPE, data.len(), Some(&bits))?))
    }

    /// A new zero-filled device array (checked first by [`check_allocation`](Device::check_allocation)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let a = d.zeros::<i16>(1000).unwrap();
    /// assert!(a.to_vec().unwrap().iter().all(|&x| x == 0));
    /// // More than the machine can hold is an error, not an abort.
    /// assert!(matches!(d.zeros::<f64>(1 << 60), Err(QdError::Allocation { .. })));
    /// ```
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceArray<T>> {
        self.check_allocation(T::DTYPE, len)?;
        Ok(DeviceArray::from_storage(self.inner.runtime.alloc(T::DTYPE, len, None)?))
    }

    /// Whether this device can hold an array of `len` elements of `dtype`, checked before any
    /// driver sees the request (every allocation of [`zeros`](Device::zeros) and
    /// [`array_from`](Device::array_from) goes through it): its size in bytes must not overflow,
    /// nor exceed the largest array the device can address (the target's
    /// [`max_buffer_bytes`](crate::target::Limits::max_buffer_bytes)) or the memory it has (on the
    /// emulator, its memory budget, half the available memory: reserving alone does not stop the
    /// OOM killer). Otherwise [`Error::Allocation`], naming the array, its size and the limit.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// assert!(d.check_allocation(qd::ir::DType::F32, 1024).is_ok());
    /// let e = d.check_allocation(qd::ir::DType::F64, usize::MAX).unwrap_err();
    /// assert!(e.to_string().contains("overflows"), "{e}");
    /// ```
    pub fn check_allocation(&self, dtype: DType, len: usize) -> Result<()> {
        let err = |message: String| Err(Error::Allocation { dtype, len, message });
        let runtime = &self.inner.runtime;
        // What a kernel addresses (the target's element size), and what the runtime's memory holds
        // (the emulator keeps 8 bytes per element).
        let addressed = (len as u64).checked_mul(dtype.size_bytes() as u64);
        let (Some(addressed), Some(held)) = (addressed, runtime.array_bytes(dtype, len)) else {
            return err(format!("its size in bytes ({len} × {}) overflows", dtype.size_bytes()));
        };
        let device = &self.inner.name;
        if let Some(max) = self.inner.target.limits().max_buffer_bytes.filter(|max| addressed > *max) {
            return err(format!("its {addressed} bytes are over the {max} bytes one array may take on {device}"));
        }
        if let Some((limit, what)) = runtime.memory_limit().filter(|(limit, _)| held > *limit) {
            return err(format!("it needs {held} bytes, over {what} of {limit} bytes on {device}"));
        }
        Ok(())
    }
}
