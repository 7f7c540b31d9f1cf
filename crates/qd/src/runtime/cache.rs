//! The in-memory compiled-kernel cache of a [`Device`](super::Device), and the per-device maps of
//! hand-given code (PTX, SPIR-V) that replace a lowering's output. The cubin cache shared between
//! processes is `disk_cache.rs`.

use super::device::CompiledKernel;
use crate::trace::Kernel;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (the maps stay consistent: entries are inserted whole).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What identifies a kernel definition on one device: the closure's identity (so two kernels of
/// the same name from different closures never share an entry), the name and the block size.
#[derive(Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    body: usize,
    name: String,
    block_dim: u32,
}

impl CacheKey {
    fn of(k: &Kernel) -> CacheKey {
        CacheKey { body: k.body_ptr(), name: k.name().to_string(), block_dim: k.block_dim() }
    }
}

/// Compiled kernels of one device, by kernel definition.
#[derive(Default)]
pub(crate) struct KernelCache {
    map: Mutex<HashMap<CacheKey, Arc<CompiledKernel>>>,
}

impl KernelCache {
    /// The compiled `kernel`, when this device has compiled it.
    pub(crate) fn get(&self, kernel: &Kernel) -> Option<Arc<CompiledKernel>> {
        lock(&self.map).get(&CacheKey::of(kernel)).cloned()
    }

    /// Remembers the compiled `kernel`.
    pub(crate) fn insert(&self, kernel: &Kernel, compiled: Arc<CompiledKernel>) {
        lock(&self.map).insert(CacheKey::of(kernel), compiled);
    }

    /// Forgets every compiled kernel.
    pub(crate) fn clear(&self) {
        lock(&self.map).clear();
    }

    /// Forgets the compiled kernels named `name` (whatever their closure or block size).
    pub(crate) fn forget_name(&self, name: &str) {
        lock(&self.map).retain(|k, _| k.name != name);
    }
}

/// Code to load instead of the lowering's output, by kernel name: what
/// [`Device::override_ptx`](super::Device::override_ptx) and
/// [`Device::override_spirv`](super::Device::override_spirv) store, held by the runtime that loads
/// that kind of code.
pub(crate) struct CodeOverrides<C> {
    map: Mutex<HashMap<String, C>>,
}

impl<C: Clone> CodeOverrides<C> {
    /// No overrides.
    #[cfg(any(feature = "cuda", feature = "vulkan"))]
    pub(crate) fn new() -> CodeOverrides<C> {
        CodeOverrides { map: Mutex::new(HashMap::new()) }
    }

    /// Runs `code` for kernels named `kernel_name` from now on.
    pub(crate) fn insert(&self, kernel_name: &str, code: C) {
        lock(&self.map).insert(kernel_name.to_string(), code);
    }

    /// The code given for `kernel_name`, if any.
    #[cfg(any(feature = "cuda", feature = "vulkan"))]
    pub(crate) fn get(&self, kernel_name: &str) -> Option<C> {
        lock(&self.map).get(kernel_name).cloned()
    }
}
