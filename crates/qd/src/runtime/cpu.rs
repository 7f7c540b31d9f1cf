//! The CPU emulator as a runtime (`cpu`, `cpu:sgN`): arrays are emulator [`Buffer`]s, kernels are
//! [`cpu::Program`]s run lane by lane, so every mistake the emulator catches (out of bounds, partial
//! masks, hangs) is an [`Error::Emulator`].

use super::array::{ArrayHandle, RuntimeArray};
use super::device::{downcast_kernel, Runtime, RuntimeKernel};
use super::errors::{Error, Result};
use super::info::{CompileStats, DeviceInfo};
use super::Arg;
use crate::backend::cpu::{self, Buffer, CpuArg};
use crate::backend::Backend;
use crate::ir::{self, DType};
use crate::target::{BackendKind, Target};
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The subgroup sizes of the CPU emulator.
pub(crate) const SUBGROUP_SIZES: [u32; 5] = [4, 8, 16, 32, 64];

/// One emulated device: its target (the emulator's own, or another's it wears) and options.
pub(crate) struct CpuRuntime {
    target: Target,
    options: cpu::Options,
    /// Launches so far: in weak mode the k-th launch draws from its own stream of the seed.
    launches: AtomicU64,
}

impl CpuRuntime {
    /// An emulator for `target`, whose subgroup width is one of [`SUBGROUP_SIZES`] (checked by
    /// the caller).
    pub(crate) fn new(target: Target, options: cpu::Options) -> CpuRuntime {
        CpuRuntime { target, options, launches: AtomicU64::new(0) }
    }

    /// The options of the next launch: in weak mode (D26) the device's seed for its first launch,
    /// then one derived from it and the launch's number, so repeated launches explore different
    /// interleavings while a device made with the same seed repeats the same ones.
    fn next_launch_options(&self) -> cpu::Options {
        let k = self.launches.fetch_add(1, Ordering::Relaxed);
        let mut options = self.options.clone();
        if let cpu::Memory::Weak { seed } = &mut options.memory {
            *seed ^= k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        options
    }
}

/// An emulator array. Every emulator device shares the host's memory, so an array made on `cpu`
/// can be passed to a kernel on `cpu:sg8`.
#[derive(Debug)]
pub(crate) struct CpuArray(pub(crate) Arc<Buffer>);

impl RuntimeArray for CpuArray {
    fn dtype(&self) -> DType {
        self.0.dtype
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn device(&self) -> String {
        "cpu".into()
    }

    fn read_bits(&self) -> Result<Vec<u64>> {
        Ok(self.0.to_bits())
    }

    fn write_bits(&self, bits: &[u64]) -> Result<()> {
        self.0.write_bits(bits);
        Ok(())
    }
}

/// A kernel compiled for the emulator.
struct CpuKernel(cpu::Program);

impl std::fmt::Debug for CpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cpu, `{}`", self.0.kernel.name)
    }
}

impl RuntimeKernel for CpuKernel {
    fn kernel(&self) -> &ir::Kernel {
        &self.0.kernel
    }

    fn cpu_program(&self) -> Option<&cpu::Program> {
        Some(&self.0)
    }
}

impl Runtime for CpuRuntime {
    fn target(&self) -> Target {
        self.target.clone()
    }

    fn info(&self, name: &str, t: &Target) -> DeviceInfo {
        DeviceInfo {
            name: name.to_string(),
            backend: BackendKind::Cpu.name(),
            model: "CPU SIMT emulator".into(),
            api_version: None,
            driver: None,
            notes: match self.options.memory {
                cpu::Memory::Sequential => Vec::new(),
                cpu::Memory::Weak { seed } => vec![format!("weak memory (D26), seed {seed}")],
            },
            loop_iteration_limit: None,
            device_timer: false,
            compute_capability: None,
            driver_version: None,
            multiprocessors: None,
            memory_bytes: None,
            subgroup_size: t.subgroup_size(),
            max_shared_bytes: t.limits().max_shared_bytes,
            cache_dir: None,
        }
    }

    /// 8 bytes per element: every element is an atomic cell.
    fn array_bytes(&self, _dtype: DType, len: usize) -> Option<u64> {
        cpu::memory::buffer_bytes(len)
    }

    fn memory_limit(&self) -> Option<(u64, &'static str)> {
        Some((cpu::memory::memory_budget()?, "the emulator's memory budget (half the available memory)"))
    }

    /// Checked by [`Device::check_allocation`](super::Device::check_allocation) first.
    fn alloc(&self, dtype: DType, len: usize, init: Option<&[u64]>) -> Result<Arc<dyn RuntimeArray>> {
        let buf = match init {
            Some(bits) => Buffer::from_bits(dtype, bits),
            None => Buffer::zeroed(dtype, len),
        };
        Ok(Arc::new(CpuArray(Arc::new(buf))))
    }

    fn owns(&self, array: &dyn RuntimeArray) -> bool {
        (array as &dyn Any).is::<CpuArray>()
    }

    fn compile(&self, ir: ir::Kernel, stats: &mut CompileStats) -> Result<Arc<dyn RuntimeKernel>> {
        let t = Instant::now();
        let prog = cpu::Emulator::lower(&ir, &self.target)?;
        stats.lower = t.elapsed();
        Ok(Arc::new(CpuKernel(prog)))
    }

    fn launch(&self, kernel: &dyn RuntimeKernel, grid: u32, args: &[Arg]) -> Result<()> {
        let prog = &downcast_kernel::<CpuKernel>(kernel).0;
        let cpu_args: Vec<CpuArg> = args
            .iter()
            .map(|a| match a {
                Arg::Array(h) => CpuArg::Array(cpu_buffer(h).clone()),
                Arg::Scalar(_, bits) => CpuArg::Scalar(*bits),
            })
            .collect();
        let geo =
            cpu::LaunchGeometry { grid, block_dim: prog.kernel.block_dim, subgroup_size: self.target.subgroup_size() };
        cpu::launch(prog, geo, &cpu_args, &self.next_launch_options()).map_err(Error::from)
    }
}

/// The emulator buffer of an array the launch's checks placed on this device.
fn cpu_buffer(h: &ArrayHandle) -> &Arc<Buffer> {
    &h.storage_as::<CpuArray>().expect("checked: arrays live on this device").0
}

#[cfg(test)]
mod tests {
    use super::super::{available_devices, Device};
    use super::*;
    use crate::trace::Kernel;
    use std::time::Duration;

    #[test]
    fn launch_timed_runs_the_kernel_and_checks_the_grid_kind() {
        let d = Device::cpu();
        let range = Kernel::range("timed_inc", 32, |k| {
            let a = k.array::<i32>("a");
            k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + 1));
        });
        let explicit = Kernel::explicit("timed_twice", 32, |k| {
            let a = k.array::<i32>("a");
            let i = crate::simt::block::global_thread_idx();
            a.set(i, a.get(i) * 2);
        });
        let a = d.array_from(&[1i32; 64]).unwrap();
        let t = d.launch_timed(&range, None, &[a.arg()]).unwrap();
        assert!(t > Duration::ZERO);
        d.launch_timed(&explicit, Some(2), &[a.arg()]).unwrap();
        assert_eq!(a.to_vec().unwrap(), vec![4; 64]);
        let e = d.launch_timed(&range, Some(2), &[a.arg()]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        let e = d.launch_timed(&explicit, None, &[a.arg()]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        let e = d.launch_timed(&explicit, Some(1), &[]).unwrap_err();
        assert!(matches!(e, Error::Launch { .. }), "{e}");
        assert_eq!(a.to_vec().unwrap(), vec![4; 64]);
        assert_eq!(d.max_active_blocks_per_multiprocessor(&explicit).unwrap(), None);
    }

    #[test]
    fn cpu_info_and_device_list() {
        let d = Device::cpu_with(8, cpu::Options::default()).unwrap();
        let info = d.info();
        assert_eq!(info.name, "cpu:sg8");
        assert_eq!(info.subgroup_size, 8);
        assert!(d.describe().starts_with("cpu:sg8: CPU SIMT emulator"), "{}", d.describe());
        let names = available_devices();
        assert_eq!(&names[..5], ["cpu", "cpu:sg4", "cpu:sg8", "cpu:sg16", "cpu:sg64"]);
        for n in &names {
            assert_eq!(Device::from_name(n).unwrap().name(), n);
        }
    }

    #[test]
    fn weak_memory_names_round_trip_and_only_the_emulator_has_them() {
        for (name, seed) in [("cpu+weak", 0), ("cpu:sg8+weak=7", 7), ("cpu:sg32@metal+weak=3", 3)] {
            let d = Device::from_name(name).unwrap();
            assert_eq!(d.name(), name);
            assert!(d.info().notes.contains(&format!("weak memory (D26), seed {seed}")), "{:?}", d.info().notes);
        }
        let weak = cpu::Options { memory: cpu::Memory::Weak { seed: 9 }, ..Default::default() };
        assert_eq!(Device::cpu_with(16, weak).unwrap().name(), "cpu:sg16+weak=9");
        assert_eq!(Device::from_name("cpu:sg32+weak=0").unwrap().name(), "cpu+weak");
        for (name, says) in [
            ("cuda+weak", "only the emulator"),
            ("vulkan:0+weak=1", "only the emulator"),
            ("cpu+strong", "unknown memory mode `+strong`"),
            ("cpu+weak=x", "is a number"),
            ("cpu+weakly", "is a number"),
        ] {
            let e = Device::from_name(name).unwrap_err();
            assert!(matches!(&e, Error::Unavailable { backend, .. } if backend == name), "{e}");
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
    }
}
