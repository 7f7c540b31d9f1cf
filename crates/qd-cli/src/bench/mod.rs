//! Measurements: `qd latency`, `qd bench`, and the warp kernels of the SASS table.
//!
//! * `qd latency` (`latency.rs`): the first-launch latency of a small kernel in one process.
//! * `qd bench ALGO`: the device-wide algorithms of `qd::algorithms` (reduce, the scans, select,
//!   reduce-by-key, histogram) and [`copy_kernel`] (the bandwidth ceiling), timed with
//!   [`Device::launch_timed`] (CUDA events around the kernel; the host clock on the CPU emulator
//!   and Vulkan) and checked against the host (`inputs.rs`, `run.rs`). `bench/cub_bench.cu` prints
//!   the same lines (and JSON records) for NVIDIA's CUB; `qd plot` draws both (`plot.rs`).

mod inputs;
mod kernels;
mod latency;
mod run;

use run::run_typed;

pub use kernels::{copy_kernel, device_kernels, warp_kernels, warp_primitives, BLOCK, COPY_ITEMS};
pub use latency::{measure, report, saxpy, Latency, REPEATS};

use qd::algorithms::{TileOrder, Tuning};
use qd::prelude::*;
use std::time::Duration;

/// The algorithm `qd bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    /// [`Workspace::reduce`](qd::algorithms::Workspace::reduce) with add.
    Reduce,
    /// [`Workspace::inclusive_scan`](qd::algorithms::Workspace::inclusive_scan) with add.
    Scan,
    /// [`Workspace::exclusive_scan`](qd::algorithms::Workspace::exclusive_scan) with add.
    ExclusiveScan,
    /// [`Workspace::select_flagged`](qd::algorithms::Workspace::select_flagged) with u8 flags, half of them set.
    Select,
    /// [`Workspace::reduce_by_key`](qd::algorithms::Workspace::reduce_by_key): u32 keys in runs of 1 to 16, add.
    ReduceByKey,
    /// [`Workspace::histogram_even`](qd::algorithms::Workspace::histogram_even): 256 bins.
    Histogram,
    /// [`copy_kernel`]: the bandwidth ceiling.
    Copy,
}

impl Algo {
    /// Every algorithm, in table order.
    pub const ALL: [Algo; 7] =
        [Algo::Copy, Algo::Reduce, Algo::Scan, Algo::ExclusiveScan, Algo::Select, Algo::ReduceByKey, Algo::Histogram];

    /// The name on the command line and in the summary line.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Reduce => "reduce",
            Algo::Scan => "scan",
            Algo::ExclusiveScan => "exclusive-scan",
            Algo::Select => "select",
            Algo::ReduceByKey => "reduce-by-key",
            Algo::Histogram => "histogram",
            Algo::Copy => "copy",
        }
    }

    /// The algorithm named `name`.
    pub fn from_name(name: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// The element type of a benchmark (keys of reduce-by-key are u32 whatever it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the dtypes' names say it
pub enum BenchDtype {
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl BenchDtype {
    /// Every dtype.
    pub const ALL: [BenchDtype; 6] =
        [BenchDtype::I32, BenchDtype::U32, BenchDtype::I64, BenchDtype::U64, BenchDtype::F32, BenchDtype::F64];

    /// `i32`, `f64`, ...
    pub fn name(self) -> &'static str {
        match self {
            BenchDtype::I32 => "i32",
            BenchDtype::U32 => "u32",
            BenchDtype::I64 => "i64",
            BenchDtype::U64 => "u64",
            BenchDtype::F32 => "f32",
            BenchDtype::F64 => "f64",
        }
    }

    /// The dtype named `name`.
    pub fn from_name(name: &str) -> Option<BenchDtype> {
        BenchDtype::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// One `qd bench` measurement.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// What is measured.
    pub algo: Algo,
    /// Element type.
    pub dtype: BenchDtype,
    /// `n = 2^log2n` elements (at most 30).
    pub log2n: u32,
    /// Timed launches (at least 1).
    pub reps: u32,
    /// Untimed launches before them (the first also compiles).
    pub warmup: u32,
    /// Seed of the random input.
    pub seed: u64,
    /// Launch shapes (`items`, `block`, tile order, forced fallback).
    pub tuning: Tuning,
}

impl BenchConfig {
    /// The defaults on `device`: `(log2n, reps, warmup)`: 2^26 elements, 20 timed launches after 3
    /// where the device has a timer (CUDA events); 2^20, 5 after 1 on Vulkan (a host clock: a smoke
    /// test, not a measurement); 2^16, 3 after 1 on the CPU emulator.
    pub fn defaults_for(device: &Device) -> (u32, u32, u32) {
        if device.target().is_emulated() {
            (16, 3, 1)
        } else if device.info().device_timer {
            (26, 20, 3)
        } else {
            (20, 5, 1)
        }
    }
}

/// The outcome of one measurement.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// What was run.
    pub config: BenchConfig,
    /// The device's name.
    pub device: String,
    /// Each timed launch.
    pub times: Vec<Duration>,
    /// Bytes one launch reads and writes (inputs once, outputs once).
    pub bytes: u64,
    /// `Ok` when every checked result matched the host's, else what differed.
    pub check: Result<(), String>,
    /// Registers per thread of the kernel, when the device says (CUDA).
    pub registers: Option<u32>,
}

/// One line of `qd bench --json` (and of `bench/cub_bench.cu --json`): what `qd plot` reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// `reduce`, `scan`, ...
    pub algo: String,
    /// `i32`, ...
    pub dtype: String,
    /// log2 of the element count.
    pub log2n: u32,
    /// `qd`, `cub` or `memcpy`.
    pub implementation: String,
    /// The device's name.
    pub device: String,
    /// Median launch time.
    pub median_ms: f64,
    /// Fastest launch.
    pub min_ms: f64,
    /// Bytes moved per second at the median, 10^9.
    pub gbps: f64,
    /// Elements per second at the median, 10^9.
    pub gelems: f64,
    /// Timed launches.
    pub reps: u32,
    /// `ok` or what differed.
    pub check: String,
}

impl BenchResult {
    /// The median launch time (the mean of the middle two for an even count).
    pub fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        match t.len() {
            0 => Duration::ZERO,
            l if l % 2 == 1 => t[l / 2],
            l => (t[l / 2 - 1] + t[l / 2]) / 2,
        }
    }

    /// The fastest launch.
    pub fn min(&self) -> Duration {
        self.times.iter().min().copied().unwrap_or_default()
    }

    /// Bytes moved per second at the median time, in GB/s (10^9 bytes).
    pub fn gbps(&self) -> f64 {
        per_second(self.bytes as f64, self.median()) / 1e9
    }

    /// The JSON record.
    pub fn record(&self) -> Record {
        let c = &self.config;
        Record {
            algo: c.algo.name().into(),
            dtype: c.dtype.name().into(),
            log2n: c.log2n,
            implementation: "qd".into(),
            device: self.device.clone(),
            median_ms: self.median().as_secs_f64() * 1e3,
            min_ms: self.min().as_secs_f64() * 1e3,
            gbps: self.gbps(),
            gelems: per_second((1u64 << c.log2n) as f64, self.median()) / 1e9,
            reps: self.times.len() as u32,
            check: match &self.check {
                Ok(()) => "ok".into(),
                Err(why) => why.clone(),
            },
        }
    }

    /// The summary line: `bench scan i32 n=2^26 device=cuda:0 median_ms=… min_ms=… gbps=…
    /// check=ok`, then `items=`, `block=`, `order=` and `fallback` when not the defaults. Times in
    /// milliseconds with four decimals; GB/s with one decimal (three below 10, an exponent below 0.01).
    pub fn line(&self) -> String {
        let c = &self.config;
        let ms = |d: Duration| format!("{:.4}", d.as_secs_f64() * 1e3);
        let mut line = format!(
            "bench {} {} n=2^{} device={} median_ms={} min_ms={} gbps={} check={}",
            c.algo.name(),
            c.dtype.name(),
            c.log2n,
            self.device,
            ms(self.median()),
            ms(self.min()),
            match self.gbps() {
                g if g < 0.01 => format!("{g:.3e}"),
                g if g < 10.0 => format!("{g:.3}"),
                g => format!("{g:.1}"),
            },
            if self.check.is_ok() { "ok" } else { "fail" }
        );
        if let Some(items) = c.tuning.items {
            line.push_str(&format!(" items={items}"));
        }
        if let Some(block) = c.tuning.block {
            line.push_str(&format!(" block={block}"));
        }
        if c.tuning.order != TileOrder::Ticket {
            line.push_str(&format!(" order={}", format!("{:?}", c.tuning.order).to_lowercase()));
        }
        if c.tuning.force_fallback {
            line.push_str(" fallback");
        }
        if let Some(r) = self.registers {
            line.push_str(&format!(" regs={r}"));
        }
        line
    }
}

fn per_second(x: f64, d: Duration) -> f64 {
    match d.as_secs_f64() {
        s if s > 0.0 => x / s,
        _ => 0.0,
    }
}

/// Runs one benchmark on `device`: fresh inputs from `cfg.seed`, `cfg.warmup` untimed launches,
/// `cfg.reps` timed ones (the workspace's device time: CUDA events where the device has them, the
/// host clock elsewhere), the result checked against the host after the timed launches (outputs
/// start poisoned, so an element no launch wrote shows). `tick` is called after every launch.
/// `Err` is a device error or a configuration it cannot run; a wrong result is an `Ok` whose
/// `check` is `Err`.
pub fn run_bench(device: &Device, cfg: &BenchConfig, tick: &dyn Fn()) -> Result<BenchResult, String> {
    if cfg.log2n > 30 {
        return Err(format!("--log2n {} is over 30", cfg.log2n));
    }
    if cfg.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    match cfg.dtype {
        BenchDtype::I32 => run_typed::<i32>(device, cfg, tick),
        BenchDtype::U32 => run_typed::<u32>(device, cfg, tick),
        BenchDtype::I64 => run_typed::<i64>(device, cfg, tick),
        BenchDtype::U64 => run_typed::<u64>(device, cfg, tick),
        BenchDtype::F32 => run_typed::<f32>(device, cfg, tick),
        BenchDtype::F64 => run_typed::<f64>(device, cfg, tick),
    }
}

/// The line comparing `other`'s times with `base`'s (same algorithm, type and size, another
/// device): `compare scan i32 n=2^26 vulkan:0/cuda:0 median=1.204 min=1.188`, time ratios (above 1:
/// `other` is slower).
pub fn compare_line(base: &BenchResult, other: &BenchResult) -> String {
    let ratio = |a: Duration, b: Duration| match b.as_secs_f64() {
        s if s > 0.0 => format!("{:.3}", a.as_secs_f64() / s),
        _ => "n/a".into(),
    };
    let c = &base.config;
    format!(
        "compare {} {} n=2^{} {}/{} median={} min={}",
        c.algo.name(),
        c.dtype.name(),
        c.log2n,
        other.device,
        base.device,
        ratio(other.median(), base.median()),
        ratio(other.min(), base.min())
    )
}

#[cfg(test)]
mod tests {
    use super::inputs::close;
    use super::*;

    fn config(algo: Algo, dtype: BenchDtype, log2n: u32) -> BenchConfig {
        BenchConfig { algo, dtype, log2n, reps: 2, warmup: 1, seed: 11, tuning: Tuning::default() }
    }

    #[test]
    fn every_algorithm_is_right_on_the_emulator() {
        let d = Device::from_name("cpu:sg16").unwrap();
        // Every algorithm on a 4- and an 8-byte type (the conformance suite covers every dtype).
        for algo in Algo::ALL {
            for dtype in [BenchDtype::U32, BenchDtype::F64] {
                let r = run_bench(&d, &config(algo, dtype, 12), &|| {}).unwrap();
                assert_eq!(r.check, Ok(()), "{}", r.line());
                assert_eq!(r.times.len(), 2);
            }
        }
    }

    #[test]
    fn a_wrong_result_is_reported() {
        // The float tolerance is tight enough to see one unit too many.
        let x = 0.5f32;
        assert!(close(x, (0.5 * (1u32 << 24) as f64) as i128, 4.0));
        assert!(!close(x + 1e-3, (0.5 * (1u32 << 24) as f64) as i128, 4.0));
        assert!(!close(3i32, 4, 0.0));
    }

    #[test]
    fn summary_line_and_record() {
        let r = BenchResult {
            config: config(Algo::Scan, BenchDtype::I32, 20),
            device: "cpu".into(),
            times: [4, 1, 3, 2].map(Duration::from_millis).to_vec(),
            bytes: 8 << 20,
            check: Ok(()),
            registers: None,
        };
        assert_eq!(r.median(), Duration::from_micros(2500));
        assert_eq!(r.min(), Duration::from_millis(1));
        assert!((r.gbps() - 8.0 * 1048576.0 / 2.5e-3 / 1e9).abs() < 1e-9);
        assert_eq!(r.line(), "bench scan i32 n=2^20 device=cpu median_ms=2.5000 min_ms=1.0000 gbps=3.355 check=ok");
        let rec = r.record();
        assert_eq!((rec.algo.as_str(), rec.implementation.as_str(), rec.check.as_str()), ("scan", "qd", "ok"));
        let json = serde_json::to_string(&rec).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), rec);
        let variant = BenchResult {
            config: BenchConfig {
                tuning: Tuning {
                    items: Some(7),
                    order: TileOrder::BlockIdx,
                    force_fallback: true,
                    ..Tuning::default()
                },
                ..r.config.clone()
            },
            check: Err("no".into()),
            ..r.clone()
        };
        assert!(variant.line().ends_with("check=fail items=7 order=blockidx fallback"), "{}", variant.line());
        let slower = BenchResult {
            device: "vulkan:0".into(),
            times: [5, 2, 6, 8].map(Duration::from_millis).to_vec(),
            ..r.clone()
        };
        assert_eq!(compare_line(&r, &slower), "compare scan i32 n=2^20 vulkan:0/cpu median=2.200 min=2.000");
    }

    #[test]
    fn bad_configurations_are_errors() {
        let d = Device::cpu();
        assert!(run_bench(&d, &config(Algo::Copy, BenchDtype::I32, 31), &|| {}).is_err());
        let cfg = BenchConfig { reps: 0, ..config(Algo::Copy, BenchDtype::I32, 8) };
        assert!(run_bench(&d, &cfg, &|| {}).is_err());
        let cfg = BenchConfig {
            tuning: Tuning { items: Some(0), ..Tuning::default() },
            ..config(Algo::Scan, BenchDtype::I32, 8)
        };
        assert!(run_bench(&d, &cfg, &|| {}).unwrap_err().contains("items per thread"));
    }
}
