//! Measurements: `qd latency`, `qd bench`, and the warp kernels of the SASS table.
//!
//! * `qd latency`: the first-launch latency of a small kernel in this process, split into our part
//!   (trace, lowering, cache lookups, launch) and the driver's JIT. Cold latency is measured in a
//!   process with `QD_CACHE_DISABLE=1` and `CUDA_CACHE_DISABLE=1`; warm latency in a new process
//!   that finds the cubin in the disk cache. Run it several times and take the median: one process
//!   gives one first launch.
//! * `qd bench ALGO`: the device-wide algorithms of `qd::algorithms` (reduce, the scans, select,
//!   reduce-by-key, histogram) and [`copy_kernel`] (the bandwidth ceiling), timed with
//!   [`Device::launch_timed`] (CUDA events around the kernel; the host clock on the CPU emulator
//!   and Vulkan) and checked against the host. `bench/cub_bench.cu` prints the same lines (and JSON
//!   records) for NVIDIA's CUB; `qd plot` draws both (`plot.rs`).

use qd::algorithms::{self, Operator, TileOrder, Tuning, Workspace};
use qd::prelude::*;
use qd::runtime::DiskCacheUse;
use qd::trace::Shuffle;
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

/// The kernels of this module that `qd emit` writes (so the snapshot tests pin their code and ptxas and
/// spirv-val check it): the warp primitives of issue 4's SASS table (`warp_*`, see [`warp_primitives`]),
/// then the device-wide kernels of `qd bench` (`bench_*`, see [`device_kernels`]).
pub fn warp_kernels() -> Vec<Kernel> {
    let mut kernels = warp_primitives();
    kernels.extend(device_kernels());
    kernels
}

/// The warp primitives of issue 4's SASS table, one full-warp operation per kernel on values loaded
/// from memory, in the same shape as `bench/warp_baselines.cu`: an explicit kernel, one element per
/// thread and no loop, so the counts are the primitive's alone (a grid-stride loop gets rotated by
/// ptxas, which copies its body).
pub fn warp_primitives() -> Vec<Kernel> {
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

// ---------------------------------------------------------------------------------------------
// Device-wide algorithms (`qd bench`): the library's (`qd::algorithms`), timed against the host's
// answer; `bench/cub_bench.cu` prints the same lines for NVIDIA's CUB.
// ---------------------------------------------------------------------------------------------

/// Threads per block of [`copy_kernel`].
pub const BLOCK: u32 = 256;
/// Items per thread of [`copy_kernel`].
pub const COPY_ITEMS: u32 = 8;

/// A copy `output[i] = input[i]` with striped loads and stores (`items` per thread, one tile per
/// block, launch `ceil(n / (block * items))` blocks): the bandwidth ceiling of this IR's accesses,
/// to compare with `cudaMemcpy`.
pub fn copy_kernel<T: Scalar>(block: u32, items: u32) -> Kernel {
    Kernel::explicit(&format!("bench_copy_{}", T::DTYPE), block, move |k| {
        let input = k.array::<T>("input");
        let output = k.array::<T>("output");
        let n = input.len();
        let tile_len = (block * items) as i32;
        let first = block::block_idx() * tile_len + block::thread_idx();
        if_else(
            (block::block_idx() * tile_len + tile_len).le(n),
            || {
                let vals: Vec<Val<T>> = (0..items).map(|j| input.get(first + (j * block) as i32)).collect();
                for (j, v) in vals.into_iter().enumerate() {
                    output.set(first + (j as u32 * block) as i32, v);
                }
            },
            || {
                for j in 0..items {
                    let i = first + (j * block) as i32;
                    if_(i.lt(n), || output.set(i, input.get(i)));
                }
            },
        );
    })
}

/// The bench's own kernels (the algorithms' are `qd::algorithms::kernels`, listed by the
/// conformance cases).
pub fn device_kernels() -> Vec<Kernel> {
    vec![copy_kernel::<i32>(BLOCK, COPY_ITEMS)]
}

/// The algorithm `qd bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    /// [`Workspace::reduce`] with add.
    Reduce,
    /// [`Workspace::inclusive_scan`] with add.
    Scan,
    /// [`Workspace::exclusive_scan`] with add.
    ExclusiveScan,
    /// [`Workspace::select_flagged`] with u8 flags, half of them set.
    Select,
    /// [`Workspace::reduce_by_key`]: u32 keys in runs of 1 to 16, add.
    ReduceByKey,
    /// [`Workspace::histogram_even`]: 256 bins.
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

/// The inputs of every benchmark, from the conformance suite's splitmix64 stream (what
/// `bench/cub_bench.cu` draws too): integers are the top bits of a draw (`r >> 32` for 32-bit
/// types, all 64 for 64-bit); floats are `(r >> 40) * 2^-24`, uniform in [0, 1) on a grid whose sums
/// are exact in f64.
trait BenchType: Shuffle + algorithms::Sample {
    fn draw(r: u64) -> Self;
    /// Histogram samples: integers in [0, 2^16) (`r >> 48`), floats as `draw`.
    fn sample(r: u64) -> Self;
    /// `[lower, upper)` of the 256 histogram bins.
    fn hist_bounds() -> (Self, Self);
    /// Small values for reduce-by-key (`r >> 61`, 0 to 7: float run sums stay exact).
    fn small(r: u64) -> Self;
    /// The value as an exact multiple of 2^-24 (floats) or its bits (integers), for references.
    fn grid(self) -> i128;
    fn wrapping_add(self, other: Self) -> Self;
    /// Relative rounding of one operation (0 for integers).
    const EPS: f64;
}

macro_rules! bench_int {
    ($($t:ty: $shift:expr),*) => {$(
        impl BenchType for $t {
            fn draw(r: u64) -> Self { (r >> $shift) as $t }
            fn sample(r: u64) -> Self { (r >> 48) as $t }
            fn hist_bounds() -> (Self, Self) { (0, 1 << 16) }
            fn small(r: u64) -> Self { (r >> 61) as $t }
            fn grid(self) -> i128 { self as i128 }
            fn wrapping_add(self, other: Self) -> Self { <$t>::wrapping_add(self, other) }
            const EPS: f64 = 0.0;
        }
    )*};
}
bench_int!(i32: 32, u32: 32, i64: 0, u64: 0);

macro_rules! bench_float {
    ($($t:ty: $eps:expr),*) => {$(
        impl BenchType for $t {
            fn draw(r: u64) -> Self { (r >> 40) as $t / (1u32 << 24) as $t }
            fn sample(r: u64) -> Self { Self::draw(r) }
            fn hist_bounds() -> (Self, Self) { (0.0, 1.0) }
            fn small(r: u64) -> Self { (r >> 61) as $t }
            fn grid(self) -> i128 { (self as f64 * (1u32 << 24) as f64) as i128 }
            fn wrapping_add(self, other: Self) -> Self { self + other }
            const EPS: f64 = $eps;
        }
    )*};
}
bench_float!(f32: f32::EPSILON as f64 / 2.0, f64: f64::EPSILON / 2.0);

/// `n` draws from the stream of `seed`.
fn draws(seed: u64, n: usize) -> impl Iterator<Item = u64> {
    let mut rng = crate::conformance::Rng::new(seed);
    (0..n).map(move |_| rng.next_u64())
}

/// Whether `got` is within the rounding bound of the exact `want` (a multiple of 2^-24 for floats,
/// the value for integers) after a chain of `depth` dependent operations on non-negative values.
fn close<T: BenchType>(got: T, want: i128, depth: f64) -> bool {
    if T::EPS == 0.0 {
        return got.grid() == want;
    }
    let exact = want as f64 / (1u32 << 24) as f64;
    let g = got.grid() as f64 / (1u32 << 24) as f64;
    (g - exact).abs() <= depth * T::EPS * exact + 1e-30
}

/// The first element where `ok` fails, as a message.
fn check_all<T: std::fmt::Debug>(what: &str, got: &[T], ok: impl Fn(usize, &T) -> bool) -> Result<(), String> {
    match got.iter().enumerate().find(|(i, g)| !ok(*i, g)) {
        None => Ok(()),
        Some((i, g)) => Err(format!("{what}[{i}] = {g:?} is wrong")),
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

fn run_typed<T: BenchType>(device: &Device, cfg: &BenchConfig, tick: &dyn Fn()) -> Result<BenchResult, String> {
    let n = 1usize << cfg.log2n;
    let size = T::DTYPE.size_bytes() as u64;
    let e = |e: QdError| e.to_string();
    let a = |e: algorithms::Error| e.to_string();
    let mut ws = Workspace::with_tuning(device, cfg.tuning);
    ws.set_timing(true);
    let poison = T::from_bits(0x5A5A_5A5A_5A5A_5A5A);
    // Runs `launch` warmup + reps times, keeping the timed launches' device time.
    let timed = |ws: &mut Workspace, launch: &mut dyn FnMut(&mut Workspace) -> Result<(), String>| {
        let mut times = Vec::new();
        for i in 0..cfg.warmup + cfg.reps {
            launch(ws)?;
            if i >= cfg.warmup {
                times.push(ws.last_device_time());
            }
            tick();
        }
        Ok::<_, String>(times)
    };
    let (times, bytes, check) = match cfg.algo {
        Algo::Copy => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let (input, output) = (device.array_from(&x).map_err(e)?, device.array_from(&vec![poison; n]).map_err(e)?);
            let kernel = copy_kernel::<T>(BLOCK, COPY_ITEMS);
            let grid = n.div_ceil((BLOCK * COPY_ITEMS) as usize) as u32;
            let mut times = Vec::new();
            for i in 0..cfg.warmup + cfg.reps {
                let t = device.launch_timed(&kernel, Some(grid), &[input.arg(), output.arg()]).map_err(e)?;
                if i >= cfg.warmup {
                    times.push(t);
                }
                tick();
            }
            let got = output.to_vec().map_err(e)?;
            (times, 2 * n as u64 * size, check_all("copy", &got, |i, g| *g == x[i]))
        }
        Algo::Reduce => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let input = device.array_from(&x).map_err(e)?;
            let out = device.array_from(&[poison]).map_err(e)?;
            let want = x.iter().fold(0i128, |acc, v| acc + v.grid());
            let want_int = x.iter().fold(T::ZERO, |acc, &v| acc.wrapping_add(v));
            let times = timed(&mut ws, &mut |ws| ws.reduce(&input, &out, &Operator::add()).map_err(a))?;
            let got = out.to_vec().map_err(e)?[0];
            // Blocks of at least 2^15 threads each fold n / 2^15 values, then trees of 64 levels at most.
            let depth = n.div_ceil(1 << 15) as f64 + 64.0;
            let ok = if T::EPS == 0.0 { got == want_int } else { close(got, want, depth) };
            (times, n as u64 * size, if ok { Ok(()) } else { Err(format!("sum = {got:?}")) })
        }
        Algo::Scan | Algo::ExclusiveScan => {
            let inclusive = cfg.algo == Algo::Scan;
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let input = device.array_from(&x).map_err(e)?;
            let output = device.array_from(&vec![poison; n]).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| {
                if inclusive {
                    ws.inclusive_scan(&input, &output, &Operator::add()).map_err(a)
                } else {
                    ws.exclusive_scan(&input, &output, &Operator::add()).map_err(a)
                }
            })?;
            let got = output.to_vec().map_err(e)?;
            // A prefix is a chain through every tile before it, the tile's items and trees.
            let depth = n.div_ceil(256 * 9) as f64 + 128.0;
            let (mut exact, mut acc) = (0i128, T::ZERO);
            let mut want = Vec::with_capacity(n);
            for &v in &x {
                if inclusive {
                    exact += v.grid();
                    acc = acc.wrapping_add(v);
                }
                want.push((exact, acc));
                if !inclusive {
                    exact += v.grid();
                    acc = acc.wrapping_add(v);
                }
            }
            let check =
                check_all(
                    "scan",
                    &got,
                    |i, g| if T::EPS == 0.0 { *g == want[i].1 } else { close(*g, want[i].0, depth) },
                );
            (times, 2 * n as u64 * size, check)
        }
        Algo::Select => {
            let mut r = draws(cfg.seed, 2 * n);
            let x: Vec<T> = r.by_ref().take(n).map(T::draw).collect();
            let flags: Vec<u8> = r.map(|v| (v >> 63) as u8).collect();
            let want: Vec<T> = x.iter().zip(&flags).filter(|(_, &f)| f != 0).map(|(&v, _)| v).collect();
            let (input, fa) = (device.array_from(&x).map_err(e)?, device.array_from(&flags).map_err(e)?);
            let output = device.array_from(&vec![poison; n]).map_err(e)?;
            let count = device.zeros::<u32>(1).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| ws.select_flagged(&input, &fa, &output, &count).map_err(a))?;
            let got_count = count.to_vec().map_err(e)?[0] as usize;
            let got = output.to_vec().map_err(e)?;
            let check = if got_count != want.len() {
                Err(format!("count = {got_count}, expected {}", want.len()))
            } else {
                check_all("selected", &got[..got_count], |i, g| *g == want[i])
            };
            (times, n as u64 * (size + 1) + want.len() as u64 * size, check)
        }
        Algo::ReduceByKey => {
            let mut r = draws(cfg.seed, 2 * n);
            let (mut key, mut left) = (0u32, 0u64);
            let keys: Vec<u32> = r
                .by_ref()
                .take(n)
                .map(|v| {
                    if left == 0 {
                        key = key.wrapping_add(1 + (v >> 62) as u32 % 2);
                        left = 1 + (v & 15);
                    }
                    left -= 1;
                    key
                })
                .collect();
            let vals: Vec<T> = r.map(T::small).collect();
            let (mut wk, mut wv) = (Vec::new(), Vec::<T>::new());
            for (i, (&k, &v)) in keys.iter().zip(&vals).enumerate() {
                if i == 0 || keys[i - 1] != k {
                    wk.push(k);
                    wv.push(v);
                } else if let Some(last) = wv.last_mut() {
                    *last = last.wrapping_add(v);
                }
            }
            let (ka, va) = (device.array_from(&keys).map_err(e)?, device.array_from(&vals).map_err(e)?);
            let uk = device.zeros::<u32>(n).map_err(e)?;
            let agg = device.array_from(&vec![poison; n]).map_err(e)?;
            let runs = device.zeros::<u32>(1).map_err(e)?;
            let times =
                timed(&mut ws, &mut |ws| ws.reduce_by_key(&ka, &va, &uk, &agg, &runs, &Operator::add()).map_err(a))?;
            let r = runs.to_vec().map_err(e)?[0] as usize;
            let check = if r != wk.len() {
                Err(format!("runs = {r}, expected {}", wk.len()))
            } else {
                let (gk, gv) = (uk.to_vec().map_err(e)?, agg.to_vec().map_err(e)?);
                check_all("unique keys", &gk[..r], |i, g| *g == wk[i])
                    .and_then(|()| check_all("aggregates", &gv[..r], |i, g| *g == wv[i]))
            };
            (times, n as u64 * (4 + size) + wk.len() as u64 * (4 + size), check)
        }
        Algo::Histogram => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::sample).collect();
            let (lo, hi) = T::hist_bounds();
            let mut want = vec![0u32; 256];
            for &v in &x {
                if let Some(b) = v.bin_even(256, lo, hi) {
                    want[b as usize] += 1;
                }
            }
            let input = device.array_from(&x).map_err(e)?;
            let h = device.array_from(&[0x5A5A_5A5Au32; 256]).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| ws.histogram_even(&input, &h, 256, lo, hi).map_err(a))?;
            let got = h.to_vec().map_err(e)?;
            (times, n as u64 * size, check_all("histogram", &got, |i, g| *g == want[i]))
        }
    };
    let registers = main_kernel::<T>(cfg).and_then(|k| device.compile(&k).ok()?.registers());
    Ok(BenchResult { config: cfg.clone(), device: device.name().to_string(), times, bytes, check, registers })
}

/// The kernel that does the work of `cfg.algo` (the one whose registers the summary line shows);
/// the library builds each kernel once per shape, so compiling it again finds the loaded code.
fn main_kernel<T: BenchType>(cfg: &BenchConfig) -> Option<Kernel> {
    use algorithms::kernels;
    let t = &cfg.tuning;
    Some(match cfg.algo {
        Algo::Copy => copy_kernel::<T>(BLOCK, COPY_ITEMS),
        Algo::Reduce => kernels::reduce(&Operator::<T>::add(), t),
        Algo::Scan => kernels::scan(&Operator::<T>::add(), true, t),
        Algo::ExclusiveScan => kernels::scan(&Operator::<T>::add(), false, t),
        Algo::Select => kernels::select_flagged::<T, u8>(t),
        Algo::ReduceByKey => kernels::reduce_by_key::<u32, T>(&Operator::add(), t),
        Algo::Histogram => {
            let (lo, hi) = T::hist_bounds();
            kernels::histogram_even(256, lo, hi, t)?
        }
    })
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
