//! Launching kernels: argument checks, the D1 grid of range kernels, the user's launch line in
//! errors (D30), timed and cluster launches, occupancy.

use super::Device;
use crate::runtime::errors::{Error, Result};
use crate::runtime::info::RuntimeCounters;
use crate::runtime::{launch, Arg, Grid};
use crate::trace::Kernel;
use std::time::Duration;

impl Device {
    /// Launches a range kernel: the grid comes from its `parallel_for` bounds (D1).
    ///
    /// A launch or argument error ([`Error::Launch`], [`Error::Argument`]) ends with the caller's
    /// line, `(the launch at file:line:col)`; so do those of the other launch calls.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("axpy", 64, |k| {
    ///     let a = k.scalar::<f32>("a");
    ///     let x = k.array::<f32>("x");
    ///     let y = k.array::<f32>("y");
    ///     k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let (x, y) = (d.array_from(&[1.0f32, 2.0]).unwrap(), d.array_from(&[0.5f32, 0.5]).unwrap());
    /// d.launch(&k, &[Arg::scalar(3.0f32), x.arg(), y.arg()]).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [3.5, 6.5]);
    /// // A missing argument is an error naming it.
    /// let err = d.launch(&k, &[Arg::scalar(3.0f32), x.arg()]).unwrap_err();
    /// assert!(matches!(err, QdError::Argument { .. } | QdError::Launch { .. }), "{err}");
    /// ```
    #[track_caller]
    pub fn launch(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_unsited(kernel, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_unsited(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        if k.launch != crate::ir::LaunchKind::Range {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "an explicit kernel is launched with launch_grid(kernel, blocks, args)".into(),
            });
        }
        self.check_args(k, args)?;
        let grid = launch::range_grid(k, args)?;
        self.inner.runtime.launch(compiled.exec.as_ref(), grid, args)
    }

    /// Launches an explicit kernel on `grid` blocks of its `block_dim` threads.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("blocks", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     if_(block::thread_idx().eq(0), || out.set(block::block_idx(), block::grid_dim()));
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(5).unwrap();
    /// d.launch_grid(&k, 5, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5; 5]);
    /// ```
    #[track_caller]
    pub fn launch_grid(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_grid_unsited(kernel, grid, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_grid_unsited(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "a range kernel is launched with launch(kernel, args); its grid comes from its range".into(),
            });
        }
        self.check_args(k, args)?;
        self.inner.runtime.launch(compiled.exec.as_ref(), grid, args)
    }

    /// Launches an explicit kernel on `grid` blocks grouped in thread-block clusters of `cluster`
    /// consecutive blocks (CUDA, sm_90: `cuLaunchKernelEx` with the cluster-dimension attribute),
    /// which the cluster forms of `qd::nv` (`cluster_sync`, `mbarrier_arrive_cluster`, ...) need.
    /// `grid` must be a multiple of `cluster`, and `cluster` at most 8 (the portable cluster size);
    /// other devices have no clusters. Errors are those of [`launch_grid`](Device::launch_grid),
    /// plus [`Error::Launch`] for a cluster size that does not fit.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Clusters exist on CUDA (sm_90) only: other devices refuse a cluster launch.
    /// let k = Kernel::explicit("clustered", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     out.set(block::global_thread_idx(), 1);
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(128).unwrap();
    /// assert!(d.launch_cluster(&k, 4, 2, &[out.arg()]).is_err());
    /// d.launch_grid(&k, 4, &[out.arg()]).unwrap(); // the same grid without clusters
    /// ```
    #[track_caller]
    pub fn launch_cluster(&self, kernel: &Kernel, grid: Grid, cluster: u32, args: &[Arg]) -> Result<()> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_cluster_unsited(kernel, grid, cluster, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_cluster_unsited(&self, kernel: &Kernel, grid: Grid, cluster: u32, args: &[Arg]) -> Result<()> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        let fail = |message: String| Error::Launch { kernel: k.name.clone(), message };
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(fail("a cluster launch takes an explicit kernel (Kernel::explicit)".into()));
        }
        if !(1..=8).contains(&cluster) || !grid.is_multiple_of(cluster) {
            return Err(fail(format!(
                "clusters of {cluster} blocks: the size must be 1 to 8 and divide the grid of {grid} blocks"
            )));
        }
        self.check_args(k, args)?;
        self.inner.runtime.launch_cluster(compiled.exec.as_ref(), grid, cluster, args)
    }

    /// Launches `kernel` once, waits for it, and returns how long it ran: a range kernel with
    /// `grid == None` (its grid comes from its range, as in [`launch`](Device::launch)), an explicit
    /// kernel with `Some(blocks)` (as in [`launch_grid`](Device::launch_grid)); the other pairings
    /// are an [`Error::Launch`].
    ///
    /// What the time covers depends on the backend:
    ///
    /// * CUDA: the kernel alone, from two events recorded on the launch's stream just before and
    ///   just after `cuLaunchKernel` (`cuEventElapsedTime`, about half a microsecond of
    ///   resolution). Argument marshalling, the host's launch call overhead before the first event
    ///   and the wait after the second are outside it.
    /// * Vulkan: the dispatch alone, from two timestamps written just before and just after it in
    ///   the kernel's command buffer (`vkCmdWriteTimestamp`, the device's `timestampPeriod` of
    ///   resolution). On a queue without timestamps ([`DeviceInfo::device_timer`](crate::runtime::DeviceInfo::device_timer) false), the host
    ///   clock around the whole launch.
    /// * AMDGPU: the host clock around `hipModuleLaunchKernel` and `hipDeviceSynchronize`.
    /// * CPU emulator: the host clock around the emulated launch (the emulator's speed, not a GPU's).
    ///
    /// Compiling is never timed: the first call compiles (or finds the kernel in the caches) before
    /// the clock starts. Errors are those of [`launch`](Device::launch) and
    /// [`launch_grid`](Device::launch_grid), plus [`Error::Driver`] for a failed event call.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("busy", 64, |k| {
    ///     let a = k.array::<f32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i).sqrt()));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&vec![4.0f32; 1024]).unwrap();
    /// let took = d.launch_timed(&k, None, &[a.arg()]).unwrap(); // `None`: a range kernel's own grid
    /// assert!(took.as_nanos() > 0);
    /// assert_eq!(a.to_vec().unwrap()[0], 2.0);
    /// ```
    #[track_caller]
    pub fn launch_timed(&self, kernel: &Kernel, grid: Option<Grid>, args: &[Arg]) -> Result<Duration> {
        let site = crate::ir::SrcLoc::caller();
        self.launch_timed_unsited(kernel, grid, args).map_err(|e| e.at_launch_site(site))
    }

    #[track_caller]
    fn launch_timed_unsited(&self, kernel: &Kernel, grid: Option<Grid>, args: &[Arg]) -> Result<Duration> {
        let compiled = self.compile(kernel)?;
        let k = compiled.kernel();
        use crate::ir::LaunchKind;
        let mismatch = |message: &str| Error::Launch { kernel: k.name.clone(), message: message.into() };
        let grid = match (k.launch, grid) {
            (LaunchKind::Range, None) => {
                self.check_args(k, args)?;
                launch::range_grid(k, args)?
            }
            (LaunchKind::Explicit, Some(g)) => {
                self.check_args(k, args)?;
                g
            }
            (LaunchKind::Range, Some(_)) => {
                return Err(mismatch("a range kernel is timed with launch_timed(kernel, None, args)"));
            }
            (LaunchKind::Explicit, None) => {
                return Err(mismatch("an explicit kernel is timed with launch_timed(kernel, Some(blocks), args)"));
            }
        };
        self.inner.runtime.launch_timed(compiled.exec.as_ref(), grid, args)
    }

    /// How many blocks of `kernel` run at once on one multiprocessor, as the driver computes it from
    /// the compiled kernel's registers, shared memory and block size (CUDA); `None` on backends that
    /// do not say (the CPU emulator, Vulkan). Compiles the kernel first, like a launch. For sizing
    /// grids that should fill the device in one wave.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("k", 256, |k| {
    ///     let a = k.array::<i32>("a");
    ///     a.set(block::global_thread_idx(), 0);
    /// });
    /// // The CUDA driver answers from registers and shared memory; the emulator does not say.
    /// assert_eq!(Device::cpu().max_active_blocks_per_multiprocessor(&k).unwrap(), None);
    /// ```
    pub fn max_active_blocks_per_multiprocessor(&self, kernel: &Kernel) -> Result<Option<u32>> {
        let compiled = self.compile(kernel)?;
        self.inner.runtime.max_active_blocks(compiled.exec.as_ref())
    }

    /// What this device's runtime has done and holds so far (launches submitted, command buffers
    /// recorded, staged copies, device memory reserved), to check that repeated launches reuse what
    /// they made; `None` on runtimes that do not count (all but Vulkan). Every [`Device`] naming
    /// the same Vulkan ordinal shares one logical device, so they share the counts.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::from_name("vulkan").unwrap_or_else(|_| Device::cpu());
    /// match d.counters() {
    ///     Some(c) => println!("{} launches so far: {c:?}", d.name()),
    ///     None => assert_eq!(d.name(), "cpu"), // the emulator does not count
    /// }
    /// ```
    pub fn counters(&self) -> Option<RuntimeCounters> {
        self.inner.runtime.counters()
    }

    /// Checks `args` against the parameters, and that every array lives on this device.
    fn check_args(&self, k: &crate::ir::Kernel, args: &[Arg]) -> Result<()> {
        launch::check_args(k, args)?;
        for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
            if let Arg::Array(h) = a
                && !self.inner.runtime.owns(h.storage())
            {
                return Err(Error::Argument {
                    kernel: k.name.clone(),
                    index: i,
                    param: p.name().to_string(),
                    message: format!(
                        "the array lives on {}, the kernel runs on {}; arrays do not move between devices",
                        h.device(),
                        self.inner.name
                    ),
                });
            }
        }
        Ok(())
    }
}
