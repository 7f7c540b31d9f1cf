//! [`Device`], what user code holds, and the [`Runtime`] trait it dispatches to: one
//! implementation per runtime (the CPU emulator in `cpu.rs`, CUDA in `cuda/`, Vulkan in
//! `vulkan/`, Metal in `metal/`, AMDGPU in `amdgpu/`), so a new runtime is one module implementing
//! three traits: [`Runtime`] for the device, [`RuntimeArray`] for its memory, [`RuntimeKernel`] for
//! its loaded kernels.
//!
//! What is the same on every runtime lives here: the in-memory kernel cache, tracing, the argument
//! checks and the D1 grid of range kernels, so a mistake reads the same everywhere.

mod arrays;
mod compile;
mod compiled;
mod launching;
mod runtime_api;

pub use compiled::CompiledKernel;
pub(crate) use runtime_api::{downcast_kernel, Runtime, RuntimeKernel};

use super::cache::KernelCache;
use super::cpu;
use super::errors::{Error, Result};
use super::info::{CompileStats, DeviceInfo};
use crate::backend::Target;
use std::sync::{Arc, Mutex};

/// A compute device.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct DeviceInner {
    name: String,
    target: Target,
    runtime: Arc<dyn Runtime>,
    cache: KernelCache,
    last_compile: Mutex<Option<CompileStats>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.inner.name)
    }
}

impl Device {
    pub(crate) fn new(name: String, runtime: Arc<dyn Runtime>) -> Device {
        let target = runtime.target();
        Device {
            inner: Arc::new(DeviceInner {
                name,
                target,
                runtime,
                cache: KernelCache::default(),
                last_compile: Mutex::new(None),
            }),
        }
    }

    /// The CPU emulator with 32-lane subgroups.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// assert_eq!((d.name(), d.subgroup_size()), ("cpu", 32));
    /// let a = d.array_from(&[1u8, 2, 3]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1, 2, 3]);
    /// ```
    pub fn cpu() -> Device {
        Device::cpu_with(32, crate::backend::cpu::Options::default()).expect("32 is a valid subgroup size")
    }

    /// The CPU emulator with `subgroup_size` lanes (4, 8, 16, 32 or 64) and the given options.
    ///
    /// ```
    /// use qd::backend::cpu::Options;
    /// use qd::prelude::*;
    /// use std::time::Duration;
    /// // 8-lane subgroups, strict mode, a shorter hang timeout.
    /// let options = Options { strict: true, hang_timeout: Duration::from_millis(500), ..Options::default() };
    /// let d = Device::cpu_with(8, options).unwrap();
    /// assert_eq!(d.subgroup_size(), 8);
    /// assert!(Device::cpu_with(12, Options::default()).is_err()); // 4, 8, 16, 32 or 64 lanes
    /// ```
    pub fn cpu_with(subgroup_size: u32, options: crate::backend::cpu::Options) -> Result<Device> {
        if !cpu::SUBGROUP_SIZES.contains(&subgroup_size) {
            return Err(Error::Unavailable {
                backend: format!("cpu:sg{subgroup_size}"),
                reason: "the emulator's subgroup size is one of 4, 8, 16, 32, 64".into(),
            });
        }
        let base = if subgroup_size == 32 { "cpu".into() } else { format!("cpu:sg{subgroup_size}") };
        let name = base + &memory_suffix(options.memory);
        Ok(Device::new(name, Arc::new(cpu::CpuRuntime::new(Target::cpu(subgroup_size), options))))
    }

    /// The emulator wearing `target`'s features and limits (its subgroup width included): kernels
    /// take the library paths that target takes and are refused what it lacks
    /// (`cpu:sg64@amdgpu:gfx942`, `cpu:sg32@metal`; see [`Target::wearing`]). Pass
    /// `Options { strict: true, .. }` to also poison implementation-defined results.
    ///
    /// ```
    /// use qd::backend::amdgpu::AmdgpuArch;
    /// use qd::backend::cpu::Options;
    /// use qd::prelude::*;
    /// use qd::target::Target;
    /// // The emulator with an AMD GPU's features and 64-lane wavefronts.
    /// let d = Device::cpu_wearing(&Target::amdgpu(AmdgpuArch::Gfx942), Options::default()).unwrap();
    /// assert_eq!(d.name(), "cpu:sg64@amdgpu:gfx942");
    /// assert_eq!(d.subgroup_size(), 64);
    /// assert!(!d.target().limits().block_forward_progress); // as on the AMD GPU
    /// ```
    pub fn cpu_wearing(target: &Target, options: crate::backend::cpu::Options) -> Result<Device> {
        let sg = target.subgroup_size();
        if !cpu::SUBGROUP_SIZES.contains(&sg) {
            return Err(Error::Unavailable {
                backend: target.name(),
                reason: format!("the emulator cannot run {sg}-lane subgroups (4, 8, 16, 32 or 64)"),
            });
        }
        let worn = Target::cpu(sg).wearing(target);
        let name = worn.name() + &memory_suffix(options.memory);
        Ok(Device::new(name, Arc::new(cpu::CpuRuntime::new(worn, options))))
    }

    /// A device by its command-line name (D10): `cpu`, `cpu:sgN`, `cuda[:N]`, `vulkan[:N]`,
    /// `metal[:0]`, `amdgpu[:N]`, or the
    /// emulator wearing another target's features, `cpu[:sgN]@<target>` with `<target>` one of
    /// `amdgpu[:gfxN]`, `metal`, `cuda:sm_N` (see [`Device::cpu_wearing`]), in strict mode: an
    /// implementation-defined result reaching memory is an error, so a library path that leans on
    /// one GPU's behaviour shows up before that GPU is in reach.
    ///
    /// `cuda` is `cuda:0` and `vulkan` is `vulkan:0`; the device's [`name`](Device::name) is always
    /// `cuda:N` or `vulkan:N` (`amdgpu` is `amdgpu:0`).
    ///
    /// An emulator name may end in `+weak` or `+weak=SEED` (`cpu:sg32+weak`, `cpu@metal+weak=7`):
    /// the weak-memory mode of D26 ([`Memory::Weak`](crate::backend::cpu::Memory::Weak), seed 0
    /// unless given), where a kernel that leaves out a fence can fail.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Device::from_name("cpu").unwrap().subgroup_size(), 32);
    /// assert_eq!(Device::from_name("cpu:sg16").unwrap().name(), "cpu:sg16");
    /// assert_eq!(Device::from_name("cpu@metal").unwrap().name(), "cpu:sg32@metal");
    /// assert_eq!(Device::from_name("cpu:sg8+weak=3").unwrap().name(), "cpu:sg8+weak=3");
    /// // A GPU that is not there is an error, never a panic.
    /// match Device::from_name("cuda:7") {
    ///     Ok(d) => println!("{}", d.describe()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// assert!(matches!(Device::from_name("tpu"), Err(QdError::Unavailable { .. })));
    /// ```
    pub fn from_name(name: &str) -> Result<Device> {
        let unavailable = |reason: &str| Error::Unavailable { backend: name.to_string(), reason: reason.to_string() };
        let (name, memory) = split_memory(name).map_err(|reason| unavailable(&reason))?;
        let options = crate::backend::cpu::Options { memory, ..Default::default() };
        if memory != crate::backend::cpu::Memory::Sequential && !name.starts_with("cpu") {
            return Err(unavailable("only the emulator (cpu, cpu:sgN, cpu…@target) has a weak-memory mode"));
        }
        if let Some((emulator, worn)) = name.split_once('@') {
            let target = Target::from_features_name(worn).map_err(|e| unavailable(&e))?;
            let sg = target.subgroup_size();
            if emulator != "cpu" && emulator != format!("cpu:sg{sg}") {
                return Err(unavailable(&format!(
                    "only the emulator can wear another target, with that target's subgroup width: \
                     cpu@{worn} or cpu:sg{sg}@{worn}"
                )));
            }
            let strict = crate::backend::cpu::Options { strict: true, ..options };
            return Device::cpu_wearing(&target, strict);
        }
        if name == "cpu" {
            return Device::cpu_with(32, options);
        }
        if let Some(lanes) = name.strip_prefix("cpu:sg") {
            let sg: u32 = lanes.parse().map_err(|_| unavailable("expected cpu:sgN with N in 4, 8, 16, 32, 64"))?;
            return Device::cpu_with(sg, options);
        }
        for family in super::RUNTIMES {
            let ordinal = if name == family.name {
                0
            } else if let Some(n) = name.strip_prefix(family.name).and_then(|rest| rest.strip_prefix(':')) {
                n.parse().map_err(|_| unavailable(family.name_hint))?
            } else {
                continue;
            };
            // The device is always named `<family>:N`; an error keeps the name the user gave.
            let runtime = (family.open)(ordinal, &format!("{}:{ordinal}", family.name))
                .map_err(|e| rename_unavailable(e, name))?;
            return Ok(Device::new(format!("{}:{ordinal}", family.name), runtime));
        }
        let mut known = vec!["cpu".to_string(), "cpu:sgN".to_string()];
        known.extend(super::RUNTIMES.iter().map(|f| format!("{}[:N]", f.name)));
        Err(unavailable(&format!("unknown backend; expected {}", known.join(", "))))
    }

    /// The device's name (`cpu`, `cpu:sg8`, `cuda:0`, `vulkan:0`, ...).
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Device::from_name("cpu:sg64").unwrap().name(), "cpu:sg64");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The target kernels are traced for.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::target::Feature;
    /// let d = Device::from_name("cpu@metal").unwrap();
    /// let t = d.target();
    /// assert_eq!(t.name(), "cpu:sg32@metal");
    /// assert!(!t.has(Feature::BarrierReduce)); // Metal builds block::sync_*_nonzero from a counter
    /// ```
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Subgroup width (usable on the host to size blocks).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let d = Device::from_name("cpu:sg4").unwrap();
    /// assert_eq!(d.subgroup_size(), 4);
    /// ```
    pub fn subgroup_size(&self) -> u32 {
        self.inner.target.subgroup_size()
    }

    /// What this device is: model, compute capability or Vulkan version, driver, SM count, subgroup
    /// size, shared memory.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let info = Device::cpu().info();
    /// assert_eq!(info.subgroup_size, 32);
    /// assert!(!info.device_timer); // the emulator times with the host clock
    /// assert_eq!(info.loop_iteration_limit, None);
    /// println!("{info}");
    /// ```
    pub fn info(&self) -> DeviceInfo {
        self.inner.runtime.info(&self.inner.name, &self.inner.target)
    }

    /// One line for `qd info`: [`info`](Device::info) as text.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let text = Device::from_name("cpu:sg8").unwrap().describe();
    /// assert!(text.starts_with("cpu:sg8"), "{text}");
    /// ```
    pub fn describe(&self) -> String {
        self.info().to_string()
    }
}

/// The device-name suffix of an emulator memory mode (D26): none, `+weak` (seed 0), `+weak=SEED`.
fn memory_suffix(memory: crate::backend::cpu::Memory) -> String {
    match memory {
        crate::backend::cpu::Memory::Sequential => String::new(),
        crate::backend::cpu::Memory::Weak { seed: 0 } => "+weak".into(),
        crate::backend::cpu::Memory::Weak { seed } => format!("+weak={seed}"),
    }
}

/// A device name without its memory suffix, and the memory mode that suffix names.
fn split_memory(name: &str) -> std::result::Result<(&str, crate::backend::cpu::Memory), String> {
    use crate::backend::cpu::Memory;
    let Some((base, mode)) = name.rsplit_once('+') else { return Ok((name, Memory::Sequential)) };
    let seed = match mode.strip_prefix("weak") {
        Some("") => 0,
        Some(s) => s.strip_prefix('=').and_then(|s| s.parse().ok()).ok_or_else(|| {
            format!("`+{mode}`: the seed of the weak-memory mode is a number (`+weak` or `+weak=SEED`)")
        })?,
        None => return Err(format!("unknown memory mode `+{mode}`; the emulator's is `+weak` or `+weak=SEED`")),
    };
    Ok((base, Memory::Weak { seed }))
}

/// `Unavailable` errors of `Device::cuda` and `Device::vulkan` name `cuda:N` / `vulkan:N`; keep the
/// name the user gave.
fn rename_unavailable(e: Error, name: &str) -> Error {
    match e {
        Error::Unavailable { reason, .. } => Error::Unavailable { backend: name.to_string(), reason },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::super::available_devices;
    use super::*;

    /// A build without a GPU runtime's feature names the feature instead of looking for a driver.
    #[test]
    fn a_runtime_left_out_of_the_build_says_which_feature_brings_it() {
        let cases: [(&str, &str, bool); 3] = [
            ("cuda", "cuda:0", cfg!(feature = "cuda")),
            ("vulkan", "vulkan:0", cfg!(feature = "vulkan")),
            ("amdgpu", "amdgpu:0", cfg!(feature = "amdgpu")),
        ];
        for (backend, name, built) in cases {
            if built {
                continue;
            }
            let e = Device::from_name(name).unwrap_err();
            assert!(
                matches!(e, Error::BackendNotBuilt { backend: b, feature: f } if b == backend && f == backend),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("built without the `{backend}` cargo feature")), "{e}");
            assert!(available_devices().iter().all(|n| !n.starts_with(backend)));
        }
    }
}
