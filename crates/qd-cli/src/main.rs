//! The `qd` command (D10): `info`, `tour`, `conformance`, `emit`, `latency`, `bench` and `difftest` (D27).
//!
//! Exit status: 0 on success; 1 when a case or example fails, a backend or target is not
//! available, or `--filter` matches nothing; 2 for a malformed command line (clap's status).

use clap::{Parser, Subcommand, ValueEnum};
use qd::algorithms::{TileOrder, Tuning};
use qd::prelude::{Device, QdError};
use qd_cli::emit::{self, EmitTarget};
use qd_cli::{bench, bench_sort, conformance, plot, runner, tour};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Portable SIMT kernels: backends, the tour of examples, the conformance suite, code emission.
#[derive(Parser)]
#[command(name = "qd", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the backends (devices) and emit targets of this build, and the version.
    Info {
        /// Print the support table instead: each op × target, native, a polyfill with its cost, or
        /// unsupported and why (the same table as docs/support.md).
        #[arg(long)]
        support: bool,
        /// With --support: only the column of this target (cpu, cuda:sm_80, cuda:sm_90, vulkan,
        /// amdgpu, metal).
        #[arg(long, requires = "support")]
        backend: Option<String>,
        /// Instead: rewrite the "What's available" tables of the guide's family pages in this
        /// folder (docs/guide), between their markers, from the capability model.
        #[arg(long, conflicts_with = "support")]
        guide_tables: Option<PathBuf>,
    },
    /// Run every example on a device, print its documented result, check it against the host.
    Tour {
        /// Device to run on: cpu, cpu:sgN (N = 4, 8, 16, 32, 64), cuda[:N], vulkan[:N].
        #[arg(long, default_value = "cpu")]
        backend: String,
        /// The emulator's memory model: sequential, or weak (D26; seed 0).
        #[arg(long, value_enum, default_value = "sequential")]
        memory: MemoryModel,
    },
    /// Run the conformance suite on a device.
    Conformance {
        /// Device to run on: cpu, cpu:sgN (N = 4, 8, 16, 32, 64), cuda[:N], vulkan[:N].
        #[arg(long, default_value = "cpu")]
        backend: String,
        /// Run only the cases whose id contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Print the case ids (those the backend would skip included) and exit.
        #[arg(long)]
        list: bool,
        /// Seed of the random inputs (random when not given; printed to stderr either way).
        #[arg(long)]
        seed: Option<u64>,
        /// Also write `id<TAB>pass|fail|skip<TAB>detail` for every case to this file.
        #[arg(long)]
        report: Option<PathBuf>,
        /// The emulator's memory model: sequential, or weak (D26: plain stores buffered and loads
        /// possibly stale, so a missing fence can fail; its random choices follow the seed).
        #[arg(long, value_enum, default_value = "sequential")]
        memory: MemoryModel,
    },
    /// Measure the first-launch latency of a small kernel in this process (run it in a fresh
    /// process each time; set QD_CACHE_DISABLE=1 CUDA_CACHE_DISABLE=1 for a cold start).
    Latency {
        /// Device to run on.
        #[arg(long, default_value = "cpu")]
        backend: String,
    },
    /// Time a device-wide algorithm of `qd::algorithms` (CUDA: events around the kernel; CPU and
    /// Vulkan: the host clock around launch and wait), check it against the host, and print one
    /// summary line per size: `bench reduce i32 n=2^26 device=cuda:0 median_ms=… min_ms=… gbps=…
    /// check=ok` (or with --json one JSON record per line, what `qd plot` reads). A progress bar
    /// shows on a terminal.
    Bench {
        /// reduce, scan (inclusive), exclusive-scan (sums), select (u8 flags, half set),
        /// reduce-by-key (u32 keys in runs of 1 to 16, sums), histogram (256 bins), copy (the
        /// bandwidth ceiling of striped loads and stores) or sort (the radix sort: one line per
        /// size, entropy and tile shape, see --keys, --values, --sizes, --entropy, --tunings).
        #[arg(value_enum)]
        algo: BenchAlgo,
        /// Device to run on, or several separated by commas (`cuda,vulkan`).
        #[arg(long, default_value = "cpu")]
        backend: String,
        /// Sizes n = 2^N: `N`, a list `16,20,24`, or a range `16..28` or `16..28:2` (default: 26
        /// on CUDA, 20 on Vulkan, 16 on the CPU emulator).
        #[arg(long)]
        log2n: Option<String>,
        /// Element type (reduce-by-key: of the values).
        #[arg(long, value_enum, default_value = "i32")]
        dtype: BenchType,
        /// Timed launches per size (default: 20 on CUDA, 5 on Vulkan, 3 on the CPU emulator).
        #[arg(long)]
        reps: Option<u32>,
        /// Untimed launches first, the first of them compiling (default: 3 on CUDA, else 1).
        #[arg(long)]
        warmup: Option<u32>,
        /// Seed of the random input (random when not given; printed to stderr either way).
        #[arg(long)]
        seed: Option<u64>,
        /// Items per thread (default: the algorithm's for the dtype).
        #[arg(long)]
        items: Option<u32>,
        /// Threads per block, a multiple of the subgroup size (default: 256).
        #[arg(long)]
        block_dim: Option<u32>,
        /// How single-pass blocks pick their tile: ticket (an atomic counter, the default),
        /// blockidx, or reversed (only the decoupled fallback finishes).
        #[arg(long, value_enum, default_value = "ticket")]
        tile_order: BenchTileOrder,
        /// sort: the key type.
        #[arg(long, value_enum, default_value = "u32")]
        keys: BenchKeys,
        /// sort: the value type (none: keys only).
        #[arg(long, value_enum, default_value = "none")]
        values: BenchValues,
        /// sort: key counts, comma-separated N, 2^A, 2^A-2^B or 2^A..2^B (default: 2^log2n).
        #[arg(long)]
        sizes: Option<String>,
        /// sort: key entropies, comma-separated of 1.0, 0.811, 0.544, 0.337, 0.201.
        #[arg(long, default_value = "1.0")]
        entropy: String,
        /// sort: tile shapes, comma-separated BLOCKxKEYS or default (default: --block-dim x
        /// --items when given, else the device's).
        #[arg(long)]
        tunings: Option<String>,
        /// The emulator's memory model: sequential, or weak (D26; its random choices follow the seed).
        #[arg(long, value_enum, default_value = "sequential")]
        memory: MemoryModel,
        /// Take the decoupled fallback even where the device guarantees forward progress.
        #[arg(long)]
        fallback: bool,
        /// Print JSON records (one per line) instead of summary lines.
        #[arg(long)]
        json: bool,
    },
    /// Draw `qd bench --json` and `cub_bench --json` records: an SVG of throughput against n per
    /// algorithm and dtype, and a markdown table of qd's throughput over the anchor's.
    Plot {
        /// Files of JSON records (one per line; other lines are ignored).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Folder for the SVGs and `table.md` (created when missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Write every built-in kernel for a target into a folder.
    Emit {
        /// ir, ptx[:sm_XX], spirv[:sgN], msl or amdgpu:gfxNNN.
        #[arg(long)]
        target: String,
        /// Output folder (created when missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Differential testing (D27): random valid kernels run on the emulator at several widths and
    /// on each device, compared bit for bit; a mismatch is shrunk and printed as IR with its seed.
    Difftest {
        /// Devices, comma-separated (`emulators` = every emulator width and worn profile, `gpus` =
        /// this machine's GPUs); the emulator of each width is added as the reference.
        #[arg(long)]
        backend: Option<String>,
        /// Stop starting cases after this many seconds (default 30).
        #[arg(long)]
        seconds: Option<u64>,
        /// Stop after this many cases.
        #[arg(long)]
        cases: Option<u64>,
        /// Seed of the run (random when not given; printed either way).
        #[arg(long)]
        seed: Option<u64>,
        /// Run only this case seed, as a failure report prints it (with the same --backend).
        #[arg(long)]
        replay: Option<u64>,
        /// Longest time spent shrinking one mismatch, in seconds.
        #[arg(long, default_value_t = 120)]
        shrink_seconds: u64,
        /// Folder each shrunk mismatch is saved in as a regression case (JSON; created when
        /// missing), replayed by the crate's `regressions` test.
        #[arg(long, default_value = qd_difftest::regress::DEFAULT_DIR)]
        save: PathBuf,
        /// Instead of generating cases, replay every saved regression case in this folder on the
        /// devices (a case marked as a known driver bug must still differ on that driver).
        #[arg(long)]
        regressions: Option<PathBuf>,
    },
}

/// The emulator's memory model (D26), for `--memory`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MemoryModel {
    /// Every access sequentially consistent (the default).
    Sequential,
    /// Weak: the `+weak=SEED` suffix of the device name.
    Weak,
}

/// The device `backend`, in the weak-memory mode seeded with `seed` when `memory` asks for it
/// (only the emulator has one: another backend is an `Unavailable` error saying so).
fn open_device(backend: &str, memory: MemoryModel, seed: u64) -> Result<Device, QdError> {
    match memory {
        MemoryModel::Sequential => Device::from_name(backend),
        MemoryModel::Weak => Device::from_name(&format!("{backend}+weak={seed}")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum BenchAlgo {
    Reduce,
    Scan,
    ExclusiveScan,
    Select,
    ReduceByKey,
    Histogram,
    Copy,
    Sort,
}

#[derive(Clone, Copy, ValueEnum)]
enum BenchKeys {
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

#[derive(Clone, Copy, ValueEnum)]
enum BenchValues {
    None,
    U32,
    U64,
}

#[derive(Clone, Copy, ValueEnum)]
enum BenchType {
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

#[derive(Clone, Copy, ValueEnum)]
enum BenchTileOrder {
    Ticket,
    Blockidx,
    Reversed,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Info { guide_tables: Some(dir), .. } => match qd_cli::guide::write_tables(&dir) {
            Ok(changed) => {
                changed.iter().for_each(|p| println!("rewrote {p}"));
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("qd: {e}");
                Ok(ExitCode::from(2))
            }
        },
        Command::Info { support: true, backend, .. } => {
            let columns: Vec<String> = qd::target::table::columns().into_iter().map(|c| c.name).collect();
            match backend {
                Some(b) if !columns.iter().any(|c| c.starts_with(&b)) => {
                    eprintln!("qd: no support column for `{b}`; expected one of {}", columns.join(", "));
                    Ok(ExitCode::from(2))
                }
                b => {
                    print!("{}", qd::target::table::markdown(b.as_deref()));
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        Command::Info { .. } => info(),
        Command::Tour { backend, memory } => run_tour(&backend, memory),
        Command::Conformance { backend, filter, list, seed, report, memory } => {
            run_conformance(&backend, filter.as_deref(), list, seed, report.as_deref(), memory)
        }
        Command::Emit { target, out } => run_emit(&target, &out),
        Command::Difftest { backend, regressions: Some(dir), .. } => {
            qd_difftest::cli::regressions(backend.as_deref(), &dir, &mut io::stdout().lock()).map(|ok| {
                if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            })
        }
        Command::Difftest { backend, seconds, cases, seed, replay, shrink_seconds, save, regressions: None } => {
            let opts = qd_difftest::cli::options(
                seed.unwrap_or_else(runner::random_seed),
                seconds,
                cases,
                replay,
                shrink_seconds,
                Some(save),
            );
            qd_difftest::cli::run(backend.as_deref(), &opts, &mut io::stdout().lock()).map(|ok| {
                if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            })
        }
        Command::Latency { backend } => run_latency(&backend),
        Command::Bench {
            algo: BenchAlgo::Sort,
            backend,
            log2n,
            reps,
            warmup,
            seed,
            items,
            block_dim,
            keys,
            values,
            sizes,
            entropy,
            tunings,
            ..
        } => {
            // The sort takes one size here; --sizes gives it several.
            match log2n.map(|n| n.parse::<u32>()).transpose() {
                Ok(log2n) => {
                    let options =
                        SortCli { log2n, reps, warmup, seed, items, block_dim, keys, values, sizes, entropy, tunings };
                    run_bench_sort(&backend, options)
                }
                Err(_) => {
                    eprintln!("qd: bench sort: --log2n takes one N (give several sizes with --sizes)");
                    Ok(ExitCode::from(2))
                }
            }
        }
        Command::Bench {
            algo,
            backend,
            log2n,
            dtype,
            reps,
            warmup,
            seed,
            items,
            block_dim,
            tile_order,
            fallback,
            json,
            memory,
            ..
        } => {
            let algo = match algo {
                BenchAlgo::Reduce => bench::Algo::Reduce,
                BenchAlgo::Scan => bench::Algo::Scan,
                BenchAlgo::ExclusiveScan => bench::Algo::ExclusiveScan,
                BenchAlgo::Select => bench::Algo::Select,
                BenchAlgo::ReduceByKey => bench::Algo::ReduceByKey,
                BenchAlgo::Histogram => bench::Algo::Histogram,
                BenchAlgo::Copy => bench::Algo::Copy,
                BenchAlgo::Sort => unreachable!("matched above"),
            };
            let dtype = match dtype {
                BenchType::I32 => bench::BenchDtype::I32,
                BenchType::U32 => bench::BenchDtype::U32,
                BenchType::I64 => bench::BenchDtype::I64,
                BenchType::U64 => bench::BenchDtype::U64,
                BenchType::F32 => bench::BenchDtype::F32,
                BenchType::F64 => bench::BenchDtype::F64,
            };
            let order = match tile_order {
                BenchTileOrder::Ticket => TileOrder::Ticket,
                BenchTileOrder::Blockidx => TileOrder::BlockIdx,
                BenchTileOrder::Reversed => TileOrder::Reversed,
            };
            let tuning = Tuning { block: block_dim, items, order, force_fallback: fallback };
            let partial = bench::BenchConfig { algo, dtype, log2n: 0, reps: 0, warmup: 0, seed: 0, tuning };
            let partial = bench::BenchConfig { seed: seed.unwrap_or_else(runner::random_seed), ..partial };
            run_bench(&backend, memory, partial, log2n.as_deref(), reps, warmup, json)
        }
        Command::Plot { inputs, out } => run_plot(&inputs, &out),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`qd conformance --list | head`): stop quietly, as a tool killed by
        // SIGPIPE would, without claiming success for output nobody read.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("qd: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The emulator's names `qd info` asks about, with a description of each; the GPU runtimes come
/// from the runtime table ([`qd::runtime::runtime_families`]).
const EMULATORS: [(&str, &str); 6] = [
    ("cpu", "CPU SIMT emulator, the default (same as cpu:sg32)"),
    ("cpu:sg4", "CPU SIMT emulator"),
    ("cpu:sg8", "CPU SIMT emulator (lavapipe's width)"),
    ("cpu:sg16", "CPU SIMT emulator"),
    ("cpu:sg32", "CPU SIMT emulator (NVIDIA warp width)"),
    ("cpu:sg64", "CPU SIMT emulator (AMD wave64 width)"),
];

fn info() -> io::Result<ExitCode> {
    let mut out = io::stdout().lock();
    writeln!(out, "qd {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out)?;
    writeln!(out, "backends:")?;
    for (name, what) in EMULATORS.into_iter().chain(qd::runtime::runtime_families()) {
        // Ask the runtime rather than hard-coding: the list stays true as backends land.
        match Device::from_name(name) {
            Ok(d) => writeln!(out, "  {name:<10} available      subgroup size {:<3} {what}", d.subgroup_size())?,
            Err(QdError::Unavailable { reason, .. }) => writeln!(out, "  {name:<10} not available  {what}: {reason}")?,
            Err(e) => writeln!(out, "  {name:<10} not available  {what}: {e}")?,
        }
    }
    // Every GPU found, with what it is (model, compute capability, driver, subgroup size).
    let gpus: Vec<String> = qd::runtime::available_devices().into_iter().filter(|n| !n.starts_with("cpu")).collect();
    if !gpus.is_empty() {
        writeln!(out)?;
        writeln!(out, "devices:")?;
        for name in gpus {
            match Device::from_name(&name) {
                Ok(d) => writeln!(out, "  {}", d.describe())?,
                Err(e) => writeln!(out, "  {name}: {e}")?,
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "emit targets:")?;
    for name in EmitTarget::examples() {
        let target: EmitTarget = name.parse().expect("built-in target names parse");
        writeln!(out, "  {name:<14} available (.{})", target.extension())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_tour(backend: &str, memory: MemoryModel) -> io::Result<ExitCode> {
    let device = match open_device(backend, memory, 0) {
        Ok(d) => d,
        Err(e) => return Ok(unavailable(e)),
    };
    let failures = tour::run(&device, &mut io::stdout().lock())?;
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn run_conformance(
    backend: &str,
    filter: Option<&str>,
    list: bool,
    seed: Option<u64>,
    report: Option<&std::path::Path>,
    memory: MemoryModel,
) -> io::Result<ExitCode> {
    if list {
        let mut out = io::stdout().lock();
        let mut any = false;
        for case in conformance::all_cases().iter().filter(|c| filter.is_none_or(|f| c.id.contains(f))) {
            writeln!(out, "{}", case.id)?;
            any = true;
        }
        return Ok(if any { ExitCode::SUCCESS } else { no_match(filter) });
    }
    let seed = seed.unwrap_or_else(runner::random_seed);
    eprintln!("seed: {seed}");
    let device = match open_device(backend, memory, seed) {
        Ok(d) => d,
        Err(e) => return Ok(unavailable(e)),
    };
    let cases = runner::select(runner::with_streams(conformance::all_cases(), seed), filter);
    if cases.is_empty() {
        return Ok(no_match(filter));
    }
    let create = |p: &std::path::Path| std::fs::File::create(p).map_err(|e| qd_cli::io_error_at(p, e));
    let mut report_file = report.map(create).transpose()?.map(io::BufWriter::new);
    let tally =
        runner::run(&device, cases, &mut io::stdout().lock(), report_file.as_mut().map(|f| f as &mut dyn Write))?;
    if let (Some(f), Some(path)) = (report_file.as_mut(), report) {
        f.flush().map_err(|e| qd_cli::io_error_at(path, e))?;
    }
    if tally.failed > 0 {
        eprintln!("qd: reproduce with --seed {seed}");
    } else if tally.passed == 0 {
        eprintln!("qd: every case was skipped on {}", device.name());
    }
    Ok(if tally.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn run_emit(target: &str, out: &std::path::Path) -> io::Result<ExitCode> {
    let target: EmitTarget = match target.parse() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("qd: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let report = emit::emit_all(&target, out, &mut io::stdout().lock())?;
    println!("wrote {} {} files to {}", report.written, target.extension(), out.display());
    Ok(ExitCode::SUCCESS)
}

fn run_latency(backend: &str) -> io::Result<ExitCode> {
    let device = match Device::from_name(backend) {
        Ok(d) => d,
        Err(e) => return Ok(unavailable(e)),
    };
    match bench::measure(&device) {
        Ok(l) => {
            bench::report(&l, &mut io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("qd: latency: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn run_bench(
    backends: &str,
    memory: MemoryModel,
    mut cfg: bench::BenchConfig,
    log2n: Option<&str>,
    reps: Option<u32>,
    warmup: Option<u32>,
    json: bool,
) -> io::Result<ExitCode> {
    // `cfg.seed` is the one given or a random one; printed so a run can be repeated.
    eprintln!("seed: {}", cfg.seed);
    // Several devices (`cuda,vulkan`) run the same configurations in turn; the first is the base
    // the others are compared with (D22: Vulkan against CUDA on the same GPU).
    let mut devices = Vec::new();
    for name in backends.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match open_device(name, memory, cfg.seed) {
            Ok(d) => devices.push(d),
            Err(e) => return Ok(unavailable(e)),
        }
    }
    let Some(first) = devices.first() else {
        eprintln!("qd: bench: --backend names no device");
        return Ok(ExitCode::from(2));
    };
    let (default_log2n, default_reps, default_warmup) = bench::BenchConfig::defaults_for(first);
    let sizes = match log2n.map(plot::parse_sizes).unwrap_or(Ok(vec![default_log2n])) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("qd: bench: --log2n {why}");
            return Ok(ExitCode::from(2));
        }
    };
    cfg.reps = reps.unwrap_or(default_reps);
    cfg.warmup = warmup.unwrap_or(default_warmup);
    let launches = (sizes.len() * devices.len()) as u64 * u64::from(cfg.warmup + cfg.reps);
    let bar = indicatif::ProgressBar::new(launches);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} launches, {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut code = ExitCode::SUCCESS;
    for log2n in sizes {
        cfg.log2n = log2n;
        let mut results: Vec<bench::BenchResult> = Vec::new();
        for device in &devices {
            bar.set_message(format!("{} {} n=2^{log2n} on {}", cfg.algo.name(), cfg.dtype.name(), device.name()));
            match bench::run_bench(device, &cfg, &|| bar.inc(1)) {
                Ok(result) => {
                    let text = if json {
                        serde_json::to_string(&result.record()).map_err(io::Error::other)?
                    } else {
                        result.line()
                    };
                    bar.suspend(|| writeln!(io::stdout().lock(), "{text}"))?;
                    match &result.check {
                        Err(why) => {
                            bar.suspend(|| {
                                eprintln!(
                                    "qd: bench {} on {}: wrong result: {why} (reproduce with --seed {})",
                                    cfg.algo.name(),
                                    device.name(),
                                    cfg.seed
                                )
                            });
                            code = ExitCode::FAILURE;
                        }
                        Ok(()) => results.push(result),
                    }
                }
                Err(e) => {
                    bar.suspend(|| eprintln!("qd: bench {} on {}: {e}", cfg.algo.name(), device.name()));
                    code = ExitCode::FAILURE;
                }
            }
        }
        // Only checked results are compared, and only in text mode (JSON records carry the times).
        if let (false, Some((base, others))) = (json, results.split_first()) {
            for other in others {
                bar.suspend(|| writeln!(io::stdout().lock(), "{}", bench::compare_line(base, other)))?;
            }
        }
    }
    bar.finish_and_clear();
    Ok(code)
}

fn run_plot(inputs: &[PathBuf], out: &Path) -> io::Result<ExitCode> {
    let mut records = Vec::new();
    for path in inputs {
        records.extend(plot::read_records(&std::fs::read_to_string(path)?));
    }
    if records.is_empty() {
        eprintln!(
            "qd: plot: no JSON records in {}",
            inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    std::fs::create_dir_all(out)?;
    let written = plot::write_all(&records, out).map_err(io::Error::other)?;
    println!("wrote {} plots and table.md to {}", written, out.display());
    Ok(ExitCode::SUCCESS)
}

/// The command line of `qd bench sort`.
struct SortCli {
    log2n: Option<u32>,
    reps: Option<u32>,
    warmup: Option<u32>,
    seed: Option<u64>,
    items: Option<u32>,
    block_dim: Option<u32>,
    keys: BenchKeys,
    values: BenchValues,
    sizes: Option<String>,
    entropy: String,
    tunings: Option<String>,
}

fn run_bench_sort(backend: &str, o: SortCli) -> io::Result<ExitCode> {
    let seed = o.seed.unwrap_or_else(runner::random_seed);
    eprintln!("seed: {seed}");
    let device = match Device::from_name(backend) {
        Ok(d) => d,
        Err(e) => return Ok(unavailable(e)),
    };
    let (default_log2n, default_reps, default_warmup) = bench::BenchConfig::defaults_for(&device);
    let parsed = (|| -> Result<bench_sort::SortBench, String> {
        let sizes = match &o.sizes {
            Some(s) => bench_sort::parse_sizes(s)?,
            None => vec![1usize << o.log2n.unwrap_or(default_log2n).min(30)],
        };
        let tunings = match (&o.tunings, o.block_dim, o.items) {
            (Some(t), _, _) => bench_sort::parse_tunings(t, 128)?,
            (None, None, None) => vec![None],
            (None, b, k) => bench_sort::parse_tunings(&format!("{}x{}", b.unwrap_or(384), k.unwrap_or(20)), 128)?,
        };
        Ok(bench_sort::SortBench {
            keys: match o.keys {
                BenchKeys::U32 => bench_sort::KeyType::U32,
                BenchKeys::I32 => bench_sort::KeyType::I32,
                BenchKeys::F32 => bench_sort::KeyType::F32,
                BenchKeys::U64 => bench_sort::KeyType::U64,
                BenchKeys::I64 => bench_sort::KeyType::I64,
                BenchKeys::F64 => bench_sort::KeyType::F64,
            },
            values: match o.values {
                BenchValues::None => bench_sort::ValueType::None,
                BenchValues::U32 => bench_sort::ValueType::U32,
                BenchValues::U64 => bench_sort::ValueType::U64,
            },
            sizes,
            ands: bench_sort::parse_entropies(&o.entropy)?,
            tunings,
            reps: o.reps.unwrap_or(default_reps),
            warmup: o.warmup.unwrap_or(default_warmup),
            seed,
        })
    })();
    let b = match parsed {
        Ok(b) => b,
        Err(e) => {
            eprintln!("qd: bench sort: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut failed = false;
    let mut out = io::stdout().lock();
    let mut write_err = None;
    let result = bench_sort::run(&device, &b, &mut |r| {
        if let Err(why) = &r.check {
            eprintln!("qd: bench sort: wrong result: {why} (reproduce with --seed {seed})");
            failed = true;
        }
        if let Err(e) = writeln!(out, "{}", r.line).and_then(|_| out.flush()) {
            write_err.get_or_insert(e);
        }
    });
    if let Some(e) = write_err {
        return Err(e);
    }
    match result {
        Ok(()) if failed => Ok(ExitCode::FAILURE),
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("qd: bench sort: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn unavailable(e: QdError) -> ExitCode {
    eprintln!("qd: {e}");
    ExitCode::FAILURE
}

fn no_match(filter: Option<&str>) -> ExitCode {
    eprintln!("qd: no case id contains `{}` (see --list)", filter.unwrap_or(""));
    ExitCode::FAILURE
}
