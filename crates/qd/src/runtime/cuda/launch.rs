//! Launching a loaded kernel: parameters marshalled per [`PtxParam`], `cuLaunchKernel` on the legacy
//! default stream, `cuCtxSynchronize`; timed launches between two events; the occupancy query.

use super::device::CudaDevice;
use super::driver::{check, DriverFailure};
use super::module::CudaKernel;
use super::PtxParam;
use crate::ir;
use crate::runtime::{Error, Result};
use cudarc::driver::sys;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::time::Duration;

impl CudaDevice {
    /// Launches `k` on `grid` blocks with already checked `args` and waits for it.
    pub(crate) fn run(&self, k: &CudaKernel, grid: u32, args: &[Bound]) -> Result<()> {
        self.launch_with(k, grid, args, None)
    }

    /// As [`run`](CudaDevice::run), timing the kernel alone with two events recorded on the
    /// launch's stream (the legacy default stream) around `cuLaunchKernel`.
    pub(crate) fn run_timed(&self, k: &CudaKernel, grid: u32, args: &[Bound]) -> Result<Duration> {
        let name = &k.kernel.name;
        let drv = |e: DriverFailure| e.into_error(name);
        if grid == 0 {
            marshal(&k.kernel, &k.shape.params, args)?;
            return Ok(Duration::ZERO);
        }
        self.ctx.bind().map_err(drv)?;
        let (start, stop) = (Event::new().map_err(drv)?, Event::new().map_err(drv)?);
        self.launch_with(k, grid, args, Some((&start, &stop)))?;
        stop.elapsed_since(&start).map_err(drv)
    }

    /// Launches and waits; with `events`, records the first just before the launch and the second
    /// just after it, on the same stream.
    fn launch_with(&self, k: &CudaKernel, grid: u32, args: &[Bound], events: Option<(&Event, &Event)>) -> Result<()> {
        let name = &k.kernel.name;
        let mut slots = marshal(&k.kernel, &k.shape.params, args)?;
        if grid == 0 {
            return Ok(());
        }
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        let drv = |e: DriverFailure| e.into_error(name);
        self.ctx.bind().map_err(drv)?;
        if let Some((start, _)) = events {
            start.record().map_err(drv)?;
        }
        // SAFETY: `func` belongs to this context; `ptrs` has one pointer per PTX parameter, each to
        // a u64 slot whose low bytes (little-endian) hold the value at the parameter's width; the
        // slots and the arrays they point into outlive the synchronous launch.
        unsafe {
            check(
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    k.func,
                    grid,
                    1,
                    1,
                    k.kernel.block_dim,
                    1,
                    1,
                    k.dynamic_shared,
                    null_mut(),
                    ptrs.as_mut_ptr(),
                    null_mut(),
                ),
            )
            .map_err(drv)?;
        }
        if let Some((_, stop)) = events {
            stop.record().map_err(drv)?;
        }
        // SAFETY: plain driver call; the context is current.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }).map_err(drv)?;
        Ok(())
    }

    /// Launches `k` on `grid` blocks in clusters of `cluster` (`cuLaunchKernelEx` with
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, sm_90) on the legacy default stream, and waits.
    pub(crate) fn run_cluster(&self, k: &CudaKernel, grid: u32, cluster: u32, args: &[Bound]) -> Result<()> {
        let name = &k.kernel.name;
        let mut slots = marshal(&k.kernel, &k.shape.params, args)?;
        if grid == 0 {
            return Ok(());
        }
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        let drv = |e: DriverFailure| e.into_error(name);
        self.ctx.bind().map_err(drv)?;
        // SAFETY: an all-zero attribute value is a valid (empty) union; its cluster dimension is set below.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x: cluster, y: 1, z: 1 };
        let mut attr = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        };
        let config = sys::CUlaunchConfig {
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: k.kernel.block_dim,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: k.dynamic_shared,
            hStream: null_mut(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // cudarc loads the entry point on first use and panics when the driver lacks it (before
        // CUDA 12.0): report that as a failed call instead.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: as in `launch_with`: `func` belongs to this context, `ptrs` has one pointer per
            // PTX parameter into slots that outlive the synchronous launch; `config` and its one
            // attribute live until the call returns.
            unsafe { sys::cuLaunchKernelEx(&config, k.func, ptrs.as_mut_ptr(), null_mut()) }
        }))
        .map_err(|_| {
            drv(DriverFailure {
                call: "cuLaunchKernelEx",
                message: "the CUDA driver library lacks this entry point (driver older than CUDA 12.0?)".into(),
            })
        })?;
        check("cuLaunchKernelEx", r).map_err(drv)?;
        // SAFETY: plain driver call; the context is current.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }).map_err(drv)?;
        Ok(())
    }

    /// How many blocks of `k` fit on one multiprocessor at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`
    /// with the kernel's block size and dynamic shared memory).
    pub(crate) fn occupancy(&self, k: &CudaKernel) -> Result<u32> {
        let drv = |e: DriverFailure| e.into_error(&k.kernel.name);
        self.ctx.bind().map_err(drv)?;
        let mut blocks: c_int = 0;
        // SAFETY: `func` belongs to this context; valid out-pointer.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                k.func,
                k.kernel.block_dim as c_int,
                k.dynamic_shared as usize,
            )
        })
        .map_err(drv)?;
        Ok(blocks.max(0) as u32)
    }
}

/// A CUDA event (with timing) of the current context, destroyed on drop.
struct Event(sys::CUevent);

impl Event {
    /// A new event; the context must be current.
    fn new() -> std::result::Result<Event, DriverFailure> {
        let mut ev: sys::CUevent = null_mut();
        // SAFETY: valid out-pointer; flags 0 (CU_EVENT_DEFAULT) keep timing on.
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut ev, 0) })?;
        Ok(Event(ev))
    }

    /// Records the event on the legacy default stream, the one launches use.
    fn record(&self) -> std::result::Result<(), DriverFailure> {
        // SAFETY: a live event of the current context; the null stream.
        check("cuEventRecord", unsafe { sys::cuEventRecord(self.0, null_mut()) })
    }

    /// Time from `start` to this event, both recorded and this one complete.
    fn elapsed_since(&self, start: &Event) -> std::result::Result<Duration, DriverFailure> {
        // SAFETY: a live, recorded event.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.0) })?;
        let mut ms = 0f32;
        // cudarc loads the entry point on first use and panics when the driver lacks it (older than
        // CUDA 12.8): report that as a failed call instead.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: both events recorded and complete; valid out-pointer.
            unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.0, self.0) }
        }))
        .map_err(|_| DriverFailure {
            call: "cuEventElapsedTime_v2",
            message: "the CUDA driver library lacks this entry point (driver older than CUDA 12.8?)".into(),
        })?;
        check("cuEventElapsedTime_v2", r)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate and destroyed once.
        unsafe {
            sys::cuEventDestroy_v2(self.0);
        }
    }
}

/// An argument after checking, as the launch passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// A device array: its pointer and element count.
    Array {
        /// Device address.
        ptr: u64,
        /// Elements.
        len: usize,
    },
    /// A scalar's bits (zero-extended).
    Scalar(u64),
}

/// One u64 slot per PTX parameter, the value in its low bytes: an array is (pointer, u32 length), a
/// scalar is masked to its width (bool to one byte).
pub(crate) fn marshal(k: &ir::Kernel, params: &[PtxParam], args: &[Bound]) -> Result<Vec<u64>> {
    let mut slots = Vec::with_capacity(params.len() * 2);
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let err = |message: String| Error::Argument {
            kernel: k.name.clone(),
            index: i,
            param: k.params.get(i).map(|p| p.name().to_string()).unwrap_or_default(),
            message,
        };
        match (p, a) {
            (PtxParam::Array { .. }, Bound::Array { ptr, len }) => {
                let len = u32::try_from(*len)
                    .map_err(|_| err(format!("has {len} elements; CUDA kernels take at most {}", u32::MAX)))?;
                slots.push(*ptr);
                slots.push(len as u64);
            }
            (PtxParam::Scalar { dtype }, Bound::Scalar(bits)) => {
                let v = crate::runtime::launch::scalar_slot(*dtype, *bits)
                    .ok_or_else(|| err(format!("a {}-bit scalar cannot be passed to a CUDA kernel", dtype.bits())))?;
                slots.push(v);
            }
            _ => return Err(err("an array where a scalar was expected, or the reverse".into())),
        }
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::super::module::check_abi;
    use super::*;
    use crate::ir::{Block, DType, LaunchKind, Param, ValueId};

    fn kernel(params: Vec<Param>) -> ir::Kernel {
        ir::Kernel {
            name: "k".into(),
            launch: LaunchKind::Explicit,
            block_dim: 32,
            subgroup_size: 32,
            min_blocks_per_sm: None,
            params,
            values: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            body: Block::default(),
        }
    }

    #[test]
    fn marshal_passes_arrays_as_pointer_and_length_and_masks_scalars() {
        let k = kernel(vec![
            Param::Array { name: "a".into(), dtype: DType::F32 },
            Param::Scalar { name: "b".into(), dtype: DType::Bool, value: ValueId(0) },
            Param::Scalar { name: "s".into(), dtype: DType::I16, value: ValueId(1) },
            Param::Scalar { name: "x".into(), dtype: DType::U64, value: ValueId(2) },
        ]);
        let params = [
            PtxParam::Array { dtype: DType::F32 },
            PtxParam::Scalar { dtype: DType::Bool },
            PtxParam::Scalar { dtype: DType::I16 },
            PtxParam::Scalar { dtype: DType::U64 },
        ];
        check_abi(&k, &params).unwrap();
        let slots = marshal(
            &k,
            &params,
            &[
                Bound::Array { ptr: 0x7f00_0000_1000, len: 77 },
                Bound::Scalar(0xff),
                Bound::Scalar(0xffff_ffff_ffff_fffe),
                Bound::Scalar(u64::MAX),
            ],
        )
        .unwrap();
        assert_eq!(slots, vec![0x7f00_0000_1000, 77, 1, 0xfffe, u64::MAX]);
    }

    #[test]
    fn marshal_rejects_arrays_past_u32_lengths() {
        let k = kernel(vec![Param::Array { name: "a".into(), dtype: DType::U8 }]);
        let params = [PtxParam::Array { dtype: DType::U8 }];
        let e = marshal(&k, &params, &[Bound::Array { ptr: 1, len: 1 << 32 }]).unwrap_err();
        assert!(matches!(e, Error::Argument { index: 0, .. }), "{e}");
    }

    #[test]
    fn abi_mismatch_is_a_launch_error() {
        let k = kernel(vec![Param::Array { name: "a".into(), dtype: DType::F32 }]);
        let e = check_abi(&k, &[PtxParam::Array { dtype: DType::F64 }]).unwrap_err();
        assert!(e.to_string().contains("parameter 0 (`a`)"), "{e}");
        assert!(check_abi(&k, &[]).is_err());
    }
}
