//! Running a program on a device and comparing what devices wrote.

use crate::at_type;
use crate::build;
use crate::dval::Pick;
use crate::program::{Data, Launch, Program, INPUT_LEN, SLOTS};
use qd::ir::DType;
use qd::prelude::{Arg, Device, DeviceArray, QdError};
use std::sync::Arc;
use std::time::Duration;

/// A device under test, opened by name.
pub struct Backend {
    /// The name it was opened with (`cpu:sg8`, `vulkan`, `cpu:sg32@metal`...).
    pub name: String,
    /// The device.
    pub device: Device,
}

impl Backend {
    /// Opens `name` as [`Device::from_name`] does, except that a plain emulator (`cpu:sgN`) runs
    /// in strict mode (D8), so an implementation-defined value that reaches memory is an error
    /// rather than a silent agreement with CUDA. (An emulator wearing a target is strict already.)
    pub fn open(name: &str) -> Result<Backend, QdError> {
        let device = match name.strip_prefix("cpu:sg").and_then(|n| n.parse::<u32>().ok()) {
            Some(width) => {
                let options = qd::backend::cpu::Options {
                    strict: true,
                    time_limit: Duration::from_secs(30),
                    ..Default::default()
                };
                Device::cpu_with(width, options)?
            }
            None => Device::from_name(name)?,
        };
        Ok(Backend { name: name.to_string(), device })
    }

    /// Lanes per subgroup.
    pub fn width(&self) -> u32 {
        self.device.subgroup_size()
    }

    /// True for the emulator (itself or wearing another target).
    pub fn is_emulator(&self) -> bool {
        self.device.target().is_emulated()
    }
}

/// What a device made of a program.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It ran; the contents of every array it may write: outputs, accumulators, per-thread arrays.
    Ran(Vec<Data>),
    /// The target refused a kernel for a feature it lacks (the check's reason).
    Unsupported(String),
    /// Any other error (or a panic while tracing).
    Failed(String),
}

/// Which written array an index of [`Outcome::Ran`] is, for messages.
pub fn array_name(p: &Program, k: usize) -> String {
    let (o, a) = (p.outputs.len(), p.accs.len());
    if k < o {
        format!("out{k}")
    } else if k < o + a {
        format!("acc{}", k - o)
    } else {
        format!("own{}", k - o - a)
    }
}

type Reader = Box<dyn Fn() -> Result<Vec<u64>, QdError>>;

fn upload<T: Pick>(device: &Device, bits: &[u64]) -> Result<(Arg, Reader), QdError> {
    let data: Vec<T> = bits.iter().map(|&b| T::from_bits(b)).collect();
    let a: DeviceArray<T> = device.array_from(&data)?;
    let arg = a.arg();
    Ok((arg, Box::new(move || Ok(a.to_vec()?.into_iter().map(|x| x.to_bits()).collect()))))
}

/// Runs `p` on `backend` (compiling it afresh: the device's cache is cleared afterwards).
pub fn run(p: &Program, backend: &Backend) -> Outcome {
    let device = &backend.device;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| launch(p, device)));
    device.clear_cache();
    match outcome {
        Ok(Ok(data)) => Outcome::Ran(data),
        Ok(Err(QdError::Trace(e))) if e.unsupported.is_some() => Outcome::Unsupported(e.to_string()),
        Ok(Err(e)) => Outcome::Failed(e.to_string()),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Outcome::Failed(format!("panicked: {what}"))
        }
    }
}

fn launch(p: &Program, device: &Device) -> Result<Vec<Data>, QdError> {
    let n = p.shape.threads() as usize;
    let kernel = build::kernel("difftest", Arc::new(p.clone()));
    let mut args: Vec<Arg> = p.params.iter().map(|&(d, bits)| Arg::Scalar(d, bits)).collect();
    let mut readers: Vec<(DType, Reader)> = Vec::new();
    for input in &p.inputs {
        let (arg, _) = at_type!(scalar input.dtype, upload [] (device, &input.bits))?;
        args.push(arg);
    }
    let written = p
        .outputs
        .iter()
        .map(|&d| (d, vec![0u64; n * SLOTS as usize]))
        .chain(p.accs.iter().map(|a| (a.dtype, a.bits.clone())))
        .chain(p.owns.iter().map(|o| (o.dtype, (0..n).map(|t| o.bits[t % INPUT_LEN as usize]).collect())));
    for (d, bits) in written {
        let (arg, read) = at_type!(scalar d, upload [] (device, &bits))?;
        args.push(arg);
        readers.push((d, read));
    }
    match p.shape.launch {
        Launch::Range { .. } => device.launch(&kernel, &args)?,
        Launch::Explicit => device.launch_grid(&kernel, p.shape.blocks, &args)?,
    }
    readers.into_iter().map(|(dtype, read)| Ok(Data { dtype, bits: read()? })).collect()
}

/// The first difference between two devices' results, in words.
pub fn first_difference(p: &Program, a: &[Data], b: &[Data]) -> Option<String> {
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        if let Some(i) = x.bits.iter().zip(&y.bits).position(|(u, v)| u != v) {
            let count = x.bits.iter().zip(&y.bits).filter(|(u, v)| u != v).count();
            let place = if k < p.outputs.len() {
                format!("[{i}] (thread {}, slot {})", i / SLOTS as usize, i % SLOTS as usize)
            } else {
                format!("[{i}]")
            };
            return Some(format!(
                "{}{place}: {} vs {} ({count} of {} elements differ)",
                array_name(p, k),
                show(x.dtype, x.bits[i]),
                show(y.dtype, y.bits[i]),
                x.bits.len()
            ));
        }
    }
    None
}

/// A value for messages: the number, and the bits of floats.
pub fn show(d: DType, bits: u64) -> String {
    fn num<T: Pick>(bits: u64) -> String {
        format!("{:?}", T::from_bits(bits))
    }
    let v = at_type!(scalar d, num [] (bits));
    if d.is_float() {
        format!("{v} ({d} {bits:#x})")
    } else {
        format!("{v} ({d})")
    }
}
