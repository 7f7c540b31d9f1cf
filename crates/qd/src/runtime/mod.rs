//! The runtime: device selection, typed device arrays, launches, the compiled-kernel cache, errors.
//!
//! User code is the same for every backend: pick a [`Device`], make [`DeviceArray`]s, launch
//! [`Kernel`]s with [`Arg`]s. Every mistake comes back as an [`Error`], never a panic.

mod launch;

pub use launch::{range_bounds, RANGE_GRID_CAP};

use crate::backend::cpu::{self, Buffer, CpuArg};
use crate::backend::Target;
use crate::ir::DType;
use crate::trace::{Kernel, Scalar, TraceError};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// Everything that can go wrong between a kernel definition and its results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A mistake seen while tracing or verifying (wrong dtype, bad `log2_size`, divergent barrier...).
    #[error("trace error: {0}")]
    Trace(#[from] TraceError),
    /// A mistake the emulator caught at run time (out of bounds, partial mask, hang...).
    #[error("emulator error: {0}")]
    Emulator(#[from] cpu::EmuError),
    /// The arguments do not fit the kernel's parameters.
    #[error("kernel `{kernel}`: argument {index} (`{param}`): {message}")]
    Argument {
        /// Kernel name.
        kernel: String,
        /// Parameter position.
        index: usize,
        /// Parameter name.
        param: String,
        /// What is wrong.
        message: String,
    },
    /// The launch itself is invalid (bounds, grid, D1 rules).
    #[error("kernel `{kernel}`: launch error: {message}")]
    Launch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The backend cannot be used on this machine.
    #[error("backend `{backend}` is not available: {reason}")]
    Unavailable {
        /// Backend name as given.
        backend: String,
        /// Why.
        reason: String,
    },
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Launch grid for explicit kernels: the number of blocks.
pub type Grid = u32;

/// A compute device.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct DeviceInner {
    name: String,
    target: Target,
    cpu_options: cpu::Options,
    cache: Mutex<HashMap<CacheKey, Arc<cpu::Program>>>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    body: usize,
    name: String,
    block_dim: u32,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.inner.name)
    }
}

impl Device {
    /// The CPU emulator with 32-lane subgroups.
    pub fn cpu() -> Device {
        Device::cpu_with(32, cpu::Options::default()).expect("32 is a valid subgroup size")
    }

    /// The CPU emulator with `subgroup_size` lanes (4, 8, 16, 32 or 64) and the given options.
    pub fn cpu_with(subgroup_size: u32, options: cpu::Options) -> Result<Device> {
        if !(4..=64).contains(&subgroup_size) || !subgroup_size.is_power_of_two() {
            return Err(Error::Unavailable {
                backend: format!("cpu:sg{subgroup_size}"),
                reason: "the emulator's subgroup size is one of 4, 8, 16, 32, 64".into(),
            });
        }
        Ok(Device {
            inner: Arc::new(DeviceInner {
                name: if subgroup_size == 32 { "cpu".into() } else { format!("cpu:sg{subgroup_size}") },
                target: Target::cpu(subgroup_size),
                cpu_options: options,
                cache: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// A device by its command-line name (D10): `cpu`, `cpu:sgN`, `cuda[:N]`, `vulkan[:N]`, `amdgpu`.
    pub fn from_name(name: &str) -> Result<Device> {
        let unavailable = |reason: &str| Error::Unavailable { backend: name.to_string(), reason: reason.to_string() };
        match name {
            "cpu" => Ok(Device::cpu()),
            n if n.starts_with("cpu:sg") => {
                let sg: u32 = n["cpu:sg".len()..].parse().map_err(|_| unavailable("expected cpu:sgN with N in 4, 8, 16, 32, 64"))?;
                Device::cpu_with(sg, cpu::Options::default())
            }
            n if n == "cuda" || n.starts_with("cuda:") => {
                Err(unavailable("this build has no CUDA runtime yet (the NVPTX backend is the next milestone)"))
            }
            n if n == "vulkan" || n.starts_with("vulkan:") => Err(unavailable("this build has no Vulkan runtime yet")),
            "amdgpu" | "metal" => Err(unavailable("this build has no runtime for it")),
            _ => Err(unavailable("unknown backend; expected cpu, cpu:sgN, cuda[:N], vulkan[:N], amdgpu")),
        }
    }

    /// The device's name (`cpu`, `cpu:sg8`, ...).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The target kernels are traced for.
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Subgroup width (usable on the host to size blocks).
    pub fn subgroup_size(&self) -> u32 {
        self.inner.target.subgroup_size
    }

    /// Copies `data` to a new device array.
    pub fn array_from<T: Scalar>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        let bits: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
        Ok(DeviceArray { buf: Arc::new(Buffer::from_bits(T::DTYPE, &bits)), _t: PhantomData })
    }

    /// A new zero-filled device array.
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceArray<T>> {
        Ok(DeviceArray { buf: Arc::new(Buffer::zeroed(T::DTYPE, len)), _t: PhantomData })
    }

    /// Traces (once per kernel definition and device) and lowers `kernel`.
    pub fn compile(&self, kernel: &Kernel) -> Result<Arc<cpu::Program>> {
        let key = CacheKey { body: kernel_identity(kernel), name: kernel.name().to_string(), block_dim: kernel.block_dim() };
        if let Some(p) = self.inner.cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let ir = kernel.trace(&self.inner.target)?;
        let prog = Arc::new(cpu::compile(&ir)?);
        self.inner.cache.lock().unwrap_or_else(|p| p.into_inner()).insert(key, prog.clone());
        Ok(prog)
    }

    /// Traces `kernel` for this device and returns the IR (for dumps and tests).
    pub fn trace(&self, kernel: &Kernel) -> Result<crate::ir::Kernel> {
        Ok(kernel.trace(&self.inner.target)?)
    }

    /// Launches a range kernel: the grid comes from its `parallel_for` bounds (D1).
    pub fn launch(&self, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        let prog = self.compile(kernel)?;
        let k = &prog.kernel;
        if k.launch != crate::ir::LaunchKind::Range {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "an explicit kernel is launched with launch_grid(kernel, blocks, args)".into(),
            });
        }
        let cpu_args = bind_args(k, args)?;
        let grid = launch::range_grid(k, &cpu_args)?;
        self.run(&prog, grid, &cpu_args)
    }

    /// Launches an explicit kernel on `grid` blocks of its `block_dim` threads.
    pub fn launch_grid(&self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> Result<()> {
        let prog = self.compile(kernel)?;
        let k = &prog.kernel;
        if k.launch != crate::ir::LaunchKind::Explicit {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: "a range kernel is launched with launch(kernel, args); its grid comes from its range".into(),
            });
        }
        let cpu_args = bind_args(k, args)?;
        self.run(&prog, grid, &cpu_args)
    }

    fn run(&self, prog: &cpu::Program, grid: u32, args: &[CpuArg]) -> Result<()> {
        let geo = cpu::LaunchGeometry { grid, block_dim: prog.kernel.block_dim, subgroup_size: self.subgroup_size() };
        cpu::launch(prog, geo, args, &self.inner.cpu_options)?;
        Ok(())
    }
}

fn kernel_identity(k: &Kernel) -> usize {
    k.body_ptr()
}

fn bind_args(k: &crate::ir::Kernel, args: &[Arg]) -> Result<Vec<CpuArg>> {
    if args.len() != k.params.len() {
        return Err(Error::Launch {
            kernel: k.name.clone(),
            message: format!("expects {} arguments ({}), got {}", k.params.len(), param_list(k), args.len()),
        });
    }
    k.params
        .iter()
        .zip(args)
        .enumerate()
        .map(|(i, (p, a))| {
            let err = |message: String| Error::Argument { kernel: k.name.clone(), index: i, param: p.name().to_string(), message };
            match (p, a) {
                (crate::ir::Param::Array { dtype, .. }, Arg::Array(buf)) => {
                    if buf.dtype != *dtype {
                        return Err(err(format!("expects an array of {dtype}, got an array of {}", buf.dtype)));
                    }
                    Ok(CpuArg::Array(buf.clone()))
                }
                (crate::ir::Param::Scalar { dtype, .. }, Arg::Scalar(d, bits)) => {
                    if d != dtype {
                        return Err(err(format!("expects a {dtype} scalar, got {d}")));
                    }
                    Ok(CpuArg::Scalar(*bits))
                }
                (crate::ir::Param::Array { dtype, .. }, Arg::Scalar(d, _)) => {
                    Err(err(format!("expects an array of {dtype}, got a {d} scalar")))
                }
                (crate::ir::Param::Scalar { dtype, .. }, Arg::Array(b)) => {
                    Err(err(format!("expects a {dtype} scalar, got an array of {}", b.dtype)))
                }
            }
        })
        .collect()
}

fn param_list(k: &crate::ir::Kernel) -> String {
    k.params.iter().map(|p| format!("{}: {}", p.name(), p.dtype())).collect::<Vec<_>>().join(", ")
}

/// A kernel argument: a device array or a scalar.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A device array.
    Array(Arc<Buffer>),
    /// A scalar: its type and bits.
    Scalar(DType, u64),
}

impl Arg {
    /// A scalar argument.
    pub fn scalar<T: Scalar>(x: T) -> Arg {
        Arg::Scalar(T::DTYPE, x.to_bits())
    }
}

/// A typed array in device memory.
#[derive(Clone, Debug)]
pub struct DeviceArray<T> {
    buf: Arc<Buffer>,
    _t: PhantomData<T>,
}

impl<T: Scalar> DeviceArray<T> {
    /// Copies the contents back to the host.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.buf.to_bits().into_iter().map(T::from_bits).collect())
    }

    /// Overwrites the contents; `data` must have the array's length.
    pub fn write(&self, data: &[T]) -> Result<()> {
        if data.len() != self.buf.len() {
            return Err(Error::Launch {
                kernel: "<host copy>".into(),
                message: format!("writes {} elements into an array of {}", data.len(), self.buf.len()),
            });
        }
        self.buf.write_bits(&data.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        Ok(())
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// This array as a kernel argument.
    pub fn arg(&self) -> Arg {
        Arg::Array(self.buf.clone())
    }
}
