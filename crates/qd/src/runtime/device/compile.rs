//! Tracing and compiling kernels through the device's in-memory cache, and code overrides.

use super::{CompiledKernel, Device};
use crate::runtime::cache::lock;
use crate::runtime::errors::{Error, Result};
use crate::runtime::info::CompileStats;
use crate::runtime::{PtxCode, SpirvCode};
use crate::trace::Kernel;
use std::sync::Arc;
use std::time::Instant;

impl Device {
    /// Traces (once per kernel definition and device), lowers and loads `kernel`.
    ///
    /// The in-memory cache is keyed by the closure's identity, the name and the block size; a miss
    /// records its [`CompileStats`] (see [`compile_stats`](Device::compile_stats)).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Compile ahead of the first launch (launch would do it too); a second call hits the cache.
    /// let k = Kernel::range("inc", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + 1));
    /// });
    /// let d = Device::cpu();
    /// let first = d.compile(&k).unwrap();
    /// let again = d.compile(&k).unwrap();
    /// assert!(std::sync::Arc::ptr_eq(&first, &again));
    /// assert_eq!(first.kernel().name, "inc");
    /// ```
    #[track_caller]
    pub fn compile(&self, kernel: &Kernel) -> Result<Arc<CompiledKernel>> {
        let start = Instant::now();
        // A traced op called outside a kernel body earlier on this thread (crate::trace docs).
        if !crate::trace::is_tracing()
            && let Some(e) = crate::trace::take_misuse()
        {
            return Err(e.into());
        }
        if let Some(p) = self.inner.cache.get(kernel) {
            return Ok(p);
        }
        let mut stats = CompileStats { kernel: kernel.name().to_string(), ..CompileStats::default() };
        let t = Instant::now();
        let ir = kernel.trace(&self.inner.target)?;
        stats.trace = t.elapsed();
        let exec = self.inner.runtime.compile(ir, &mut stats)?;
        let compiled = Arc::new(CompiledKernel { exec });
        self.inner.cache.insert(kernel, compiled.clone());
        stats.total = start.elapsed();
        *lock(&self.inner.last_compile) = Some(stats);
        Ok(compiled)
    }

    /// Where the time of this device's last compile went (the last in-memory cache miss).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("timed", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, 0));
    /// });
    /// let d = Device::cpu();
    /// assert!(d.compile_stats().is_none());
    /// d.compile(&k).unwrap();
    /// let stats = d.compile_stats().unwrap();
    /// assert_eq!(stats.kernel, "timed");
    /// assert!(stats.total >= stats.trace);
    /// ```
    pub fn compile_stats(&self) -> Option<CompileStats> {
        lock(&self.inner.last_compile).clone()
    }

    /// Forgets every compiled kernel of this device (the disk cache stays), so the next launch
    /// compiles again: for measuring compile latency.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("again", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, 1));
    /// });
    /// let d = Device::cpu();
    /// let first = d.compile(&k).unwrap();
    /// d.clear_cache();
    /// let second = d.compile(&k).unwrap(); // traced and lowered again
    /// assert!(!std::sync::Arc::ptr_eq(&first, &second));
    /// ```
    pub fn clear_cache(&self) {
        self.inner.cache.clear();
    }

    /// Runs `code` instead of the NVPTX lowering's output for kernels named `kernel_name` on this
    /// CUDA device: for debugging the lowering and for testing the runtime with hand-written PTX.
    /// Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::PtxCode;
    /// // Only a CUDA device runs PTX: elsewhere the override is refused.
    /// let code = PtxCode { text: String::new(), entry: "k".into(), shared_bytes: 0, params: vec![] };
    /// let err = Device::cpu().override_ptx("k", code).unwrap_err();
    /// assert!(matches!(err, QdError::Launch { .. }), "{err}");
    /// ```
    pub fn override_ptx(&self, kernel_name: &str, code: PtxCode) -> Result<()> {
        let Some(overrides) = self.inner.runtime.ptx_overrides() else {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("PTX overrides apply to CUDA devices; this is {}", self.inner.name),
            });
        };
        overrides.insert(kernel_name, code);
        self.inner.cache.forget_name(kernel_name);
        Ok(())
    }

    /// Runs `code` instead of the SPIR-V lowering's output for kernels named `kernel_name` on this
    /// Vulkan device: for debugging the lowering and for testing the runtime with hand-written
    /// SPIR-V. Compiled kernels of that name are dropped from the in-memory cache.
    ///
    /// On a device of another backend this is an [`Error::Launch`].
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::runtime::SpirvCode;
    /// // Only a Vulkan device runs SPIR-V: elsewhere the override is refused.
    /// let code = SpirvCode { words: vec![], entry: "main".into(), workgroup_size: 32, params: vec![], shared_bytes: 0 };
    /// let err = Device::cpu().override_spirv("k", code).unwrap_err();
    /// assert!(matches!(err, QdError::Launch { .. }), "{err}");
    /// ```
    pub fn override_spirv(&self, kernel_name: &str, code: SpirvCode) -> Result<()> {
        let Some(overrides) = self.inner.runtime.spirv_overrides() else {
            return Err(Error::Launch {
                kernel: kernel_name.to_string(),
                message: format!("SPIR-V overrides apply to Vulkan devices; this is {}", self.inner.name),
            });
        };
        overrides.insert(kernel_name, code);
        self.inner.cache.forget_name(kernel_name);
        Ok(())
    }

    /// Traces `kernel` for this device and returns the IR (for dumps and tests).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The IR this device would run, without running it; trace errors come back as `Error::Trace`.
    /// let k = Kernel::range("tiles", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_all_add_tiled(a.get(i), 5)));
    /// });
    /// assert!(Device::from_name("cpu:sg32").unwrap().trace(&k).is_ok());
    /// let err = Device::from_name("cpu:sg16").unwrap().trace(&k).unwrap_err();
    /// assert!(matches!(err, QdError::Trace(_)), "{err}"); // a 32-lane tile on 16-lane subgroups
    /// ```
    #[track_caller]
    pub fn trace(&self, kernel: &Kernel) -> Result<crate::ir::Kernel> {
        Ok(kernel.trace(&self.inner.target)?)
    }
}
