//! `qd bench latency`: the first-launch latency of a small kernel in this process, split into our
//! part (trace, lowering, cache lookups, launch) and the driver's JIT.
//!
//! Cold latency is measured in a process with `QD_CACHE_DISABLE=1` and `CUDA_CACHE_DISABLE=1`;
//! warm latency in a new process that finds the cubin in the disk cache. Run it several times and
//! take the median: one process gives one first launch.

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
    /// Tracing.
    pub trace: Duration,
    /// Lowering (PTX generation).
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

/// Measures one first launch (and a second) of [`saxpy`] on `device`, checking the result.
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
    Ok(Latency {
        device: device.name().to_string(),
        first_launch,
        second_launch,
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
        DiskCacheUse::Hit(_) => "hit".to_string(),
        DiskCacheUse::Stored(_) => "stored".to_string(),
        DiskCacheUse::StoreFailed(why) => format!("store-failed({why})"),
    };
    writeln!(
        out,
        "latency device={} disk={disk} first_launch_ms={} ours_ms={} jit_ms={} trace_ms={} lower_ms={} load_ms={} second_launch_ms={}",
        l.device,
        ms(l.first_launch),
        ms(l.ours()),
        l.jit.map(ms).unwrap_or_else(|| "none".into()),
        ms(l.trace),
        ms(l.lower),
        ms(l.load),
        ms(l.second_launch),
    )
}

/// The warp primitives of issue 4's SASS table, one full-warp operation per kernel on values loaded
/// from memory, in the same shape as `bench/warp_baselines.cu`: an explicit kernel, one element per
/// thread and no loop, so the counts are the primitive's alone (a grid-stride loop gets rotated by
/// ptxas, which copies its body).
pub fn warp_kernels() -> Vec<Kernel> {
    use qd::simt::subgroup;
    fn unary<T: Scalar>(name: &str, f: fn(Val<T>) -> Val<T>) -> Kernel {
        Kernel::explicit(name, 32, move |k| {
            let a = k.array::<T>("a");
            let out = k.array::<T>("out");
            let i = block::global_thread_idx();
            out.set(i, f(a.get(i)));
        })
    }
    vec![
        unary::<i32>("warp_reduce_add_i32", |v| subgroup::reduce_add(v)),
        unary::<f32>("warp_reduce_add_f32", |v| subgroup::reduce_add(v)),
        unary::<i32>("warp_reduce_all_add_i32", |v| subgroup::reduce_all_add(v)),
        unary::<f32>("warp_reduce_all_add_f32", |v| subgroup::reduce_all_add(v)),
        unary::<i32>("warp_inclusive_add_i32", |v| subgroup::inclusive_add(v)),
        unary::<i32>("warp_segmented_reduce_add_i32", |v| subgroup::segmented_reduce_add(v, (v & 7).eq(0))),
        Kernel::explicit("warp_bitonic_sort_kv_i32", 32, |k| {
            let keys = k.array::<i32>("keys");
            let vals = k.array::<i32>("vals");
            let i = block::global_thread_idx();
            let (key, val) = subgroup::bitonic_sort_kv(keys.get(i), vals.get(i));
            keys.set(i, key);
            vals.set(i, val);
        }),
    ]
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
