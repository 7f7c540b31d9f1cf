//! `qd latency`: the first-launch latency of a small kernel in this process, split into our part
//! (trace, lowering, cache lookups, launch) and the driver's compile. Cold latency is measured in a
//! process with `QD_CACHE_DISABLE=1` and `CUDA_CACHE_DISABLE=1`; warm latency in a new process that
//! finds the code in a disk cache. Run it several times and take the median: one process gives one
//! first launch.

use qd::prelude::*;
use qd::runtime::DiskCacheUse;
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// The small kernel measured: `y[i] = a * x[i] + y[i]` over 1024 elements.
pub fn saxpy() -> Kernel {
    Kernel::range("latency_saxpy", 256, |k| {
        let a = k.scalar::<f32>("a");
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    })
}

/// One measurement of a first launch.
#[derive(Clone, Debug)]
pub struct Latency {
    /// Device name.
    pub device: String,
    /// The first launch, wall time, compile included.
    pub first_launch: Duration,
    /// A second launch of the compiled kernel.
    pub second_launch: Duration,
    /// The median of [`REPEATS`] more launches of the compiled kernel (same arrays; 5 on the
    /// emulator): the host's cost of a repeated, synchronous launch of a small kernel.
    pub repeat_launch: Duration,
    /// Tracing.
    pub trace: Duration,
    /// Lowering (PTX generation); on an IR hit (`disk=ir-hit`, D23) only the IR key and the lookup.
    pub lower: Duration,
    /// Loading the module (JIT or cubin load).
    pub load: Duration,
    /// The driver's JIT time, when it ran.
    pub jit: Option<Duration>,
    /// How the disk cache took part.
    pub disk: DiskCacheUse,
}

impl Latency {
    /// The first launch minus the driver's JIT: the part this project controls.
    pub fn ours(&self) -> Duration {
        self.first_launch.saturating_sub(self.jit.unwrap_or_default())
    }
}

/// Launches after the second one that `qd latency` times (their median is `repeat_launch`).
pub const REPEATS: usize = 201;

/// Measures one first launch (and a second, and [`REPEATS`] more) of [`saxpy`] on `device`,
/// checking the result.
pub fn measure(device: &Device) -> Result<Latency, String> {
    let n = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let xa = device.array_from(&x).map_err(|e| e.to_string())?;
    let ya = device.array_from(&vec![1.0f32; n]).map_err(|e| e.to_string())?;
    let k = saxpy();
    let args = [Arg::scalar(2.0f32), xa.arg(), ya.arg()];
    let t0 = Instant::now();
    device.launch(&k, &args).map_err(|e| e.to_string())?;
    let first_launch = t0.elapsed();
    let stats = device.compile_stats().ok_or("no compile statistics were recorded")?;
    let t1 = Instant::now();
    device.launch(&k, &args).map_err(|e| e.to_string())?;
    let second_launch = t1.elapsed();
    let y = ya.to_vec().map_err(|e| e.to_string())?;
    if let Some(i) = (0..n).find(|&i| y[i] != 4.0 * i as f32 + 1.0) {
        return Err(format!("y[{i}] = {}, expected {}", y[i], 4.0 * i as f32 + 1.0));
    }
    // y = 2x + y again and again: the values grow, the launches do not change.
    // A few on the emulator, where a launch is the emulator's work, not the host's overhead.
    let count = if device.target().is_emulated() { 5 } else { REPEATS };
    let mut repeats = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        device.launch(&k, &args).map_err(|e| e.to_string())?;
        repeats.push(t.elapsed());
    }
    repeats.sort();
    Ok(Latency {
        device: device.name().to_string(),
        first_launch,
        second_launch,
        repeat_launch: repeats[count / 2],
        trace: stats.trace,
        lower: stats.lower,
        load: stats.load,
        jit: stats.jit,
        disk: stats.disk,
    })
}

/// Prints one measurement as a line of `key=value` fields (milliseconds).
pub fn report(l: &Latency, out: &mut dyn Write) -> io::Result<()> {
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    let disk = match &l.disk {
        DiskCacheUse::NotApplicable => "n/a".to_string(),
        DiskCacheUse::Disabled => "disabled".to_string(),
        DiskCacheUse::Driver => "driver".to_string(),
        DiskCacheUse::Hit(_) => "hit".to_string(),
        // The IR key found the cubin: no lowering (lower_ms is the key and the lookup).
        DiskCacheUse::IrHit(_) => "ir-hit".to_string(),
        DiskCacheUse::Stored(_) => "stored".to_string(),
        DiskCacheUse::StoreFailed(why) => format!("store-failed({why})"),
    };
    writeln!(
        out,
        "latency device={} disk={disk} first_launch_ms={} ours_ms={} jit_ms={} trace_ms={} lower_ms={} load_ms={} second_launch_ms={} repeat_launch_us={:.2}",
        l.device,
        ms(l.first_launch),
        ms(l.ours()),
        l.jit.map(ms).unwrap_or_else(|| "none".into()),
        ms(l.trace),
        ms(l.lower),
        ms(l.load),
        ms(l.second_launch),
        l.repeat_launch.as_secs_f64() * 1e6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_on_the_emulator() {
        let l = measure(&Device::cpu()).unwrap();
        let mut out = Vec::new();
        report(&l, &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("latency device=cpu disk=n/a"), "{line}");
        assert!(l.first_launch >= l.trace);
    }
}
