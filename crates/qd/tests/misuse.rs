//! The misuse catalogue (issue 12): each case is a mistake a new user makes, run in a child process
//! with a timeout, so a panic, an abort or a hang fails its case instead of the whole run. A case
//! passes when the mistake comes back as the expected typed error, naming what was wrong, the op,
//! the kernel and the user's line where there is one.

use qd::backend::cpu::{EmuErrorKind, Options};
use qd::backend::Target;
use qd::prelude::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each case: its name and a check returning what was wrong with the outcome.
type Check = fn() -> Result<(), String>;

const CASES: &[(&str, Check)] = &[
    ("range_near_i32_max_counts_exactly", range_near_i32_max),
    ("return_inside_parallel_for", return_in_range),
    ("radix_bit_start_overflow", radix_bit_start),
    ("zeros_usize_max", zeros_usize_max),
    ("zeros_over_memory_budget", zeros_over_budget),
    ("twenty_thousand_nested_ifs", deep_nesting),
    ("time_limit_over_many_blocks", time_limit_many_blocks),
    ("strict_broadcast_out_of_range", strict_broadcast),
    ("shuffle_outside_kernel", shuffle_outside),
    ("block_sync_outside_kernel_then_cached_launch", sync_outside),
    ("val_kept_from_a_trace", val_kept),
    ("many_ops_outside_a_kernel", many_outside),
    ("local_array_u32_max", local_array_huge),
    ("shared_array_over_budget", shared_array_huge),
    ("host_write_of_the_wrong_length", host_write_wrong_length),
    ("range_end_divides_by_zero", range_end_div_zero),
    ("range_end_from_a_device_only_value", range_end_device_only),
    ("index_u64_max_printed_unsigned", index_u64_max),
    ("block_dim_zero_and_2000", block_dim_out_of_range),
    ("partial_subgroup_reduce_add_names_the_library_op", partial_subgroup_reduce),
    ("range_not_a_multiple_of_block_dim_names_the_library_op", range_partial_collective),
    ("volatile_load_of_a_per_thread_array", volatile_load_local),
    ("radix_bit_start_30_plus_4", radix_bit_start_30),
    ("time_limit_names_the_loop", time_limit_loop),
    ("launch_errors_name_the_launch_line", launch_errors_sited),
    ("arrays_over_the_devices_buffer_limit", over_max_buffer),
];

/// The child side: runs the case named by `QD_MISUSE_CASE` (ignored in a normal run).
#[test]
fn misuse_child() {
    let Ok(name) = std::env::var("QD_MISUSE_CASE") else { return };
    let (_, check) = CASES.iter().find(|(n, _)| *n == name).expect("a known case");
    match check() {
        Ok(()) => println!("QD_MISUSE_OK"),
        Err(e) => println!("QD_MISUSE_FAIL: {e}"),
    }
}

#[test]
fn every_misuse_is_a_typed_error_in_a_child_process() {
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for (name, _) in CASES {
        let mut child = Command::new(&exe)
            .args(["--exact", "misuse_child", "--nocapture", "--test-threads=1"])
            .env("QD_MISUSE_CASE", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        match status {
            None => failures.push(format!("{name}: hung (killed after 30 s)")),
            Some(s) if !s.success() => failures.push(format!("{name}: child died ({s}): {out}")),
            Some(_) if !out.contains("QD_MISUSE_OK") => failures.push(format!("{name}: {out}")),
            Some(_) => {}
        }
    }
    assert!(failures.is_empty(), "misuse cases failed:\n{}", failures.join("\n"));
}

fn trace_err(k: &Kernel) -> Result<qd::trace::TraceError, String> {
    k.trace(&Target::cpu(32)).err().ok_or_else(|| "traced without an error".to_string())
}

/// `op` and the user's line (this file) are named.
fn names(e: &qd::trace::TraceError, op: &str, what: &str) -> Result<(), String> {
    let text = e.to_string();
    if e.op == op && e.loc.file == file!() && !e.kernel.is_empty() && text.contains(what) && text.contains(&e.kernel) {
        Ok(())
    } else {
        Err(format!("expected op `{op}` at {} mentioning `{what}`, got: {text}", file!()))
    }
}

fn range_near_i32_max() -> Result<(), String> {
    let k = Kernel::range("near_max", 32, |k| {
        let c = k.array::<u32>("c");
        k.parallel_for(i32::MAX - 10, i32::MAX, |_| {
            atomic_add(c.at(0), 1u32);
        });
    });
    let d = Device::cpu();
    let c = d.zeros::<u32>(1).map_err(|e| e.to_string())?;
    d.launch(&k, &[c.arg()]).map_err(|e| e.to_string())?;
    match c.to_vec().map_err(|e| e.to_string())?[0] {
        10 => Ok(()),
        n => Err(format!("counted {n} iterations, expected 10")),
    }
}

fn return_in_range() -> Result<(), String> {
    let k = Kernel::range("ret_range", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| if_(i.eq(3), return_));
    });
    names(&trace_err(&k)?, "return_", "parallel_for")
}

fn radix_bit_start() -> Result<(), String> {
    let k = Kernel::explicit("radix", 256, |k| {
        let a = k.array::<u32>("a");
        let bins = block::shared_array::<i32>(256);
        let excl = block::shared_array::<i32>(256);
        block::radix_rank_match_atomic_or(a.get(0), 256, 8, u32::MAX, 4, bins, excl);
    });
    names(&trace_err(&k)?, "block.radix_rank_match_atomic_or", "bit_start 4294967295")
}

fn zeros_usize_max() -> Result<(), String> {
    match Device::cpu().zeros::<u8>(usize::MAX) {
        Err(QdError::Allocation { message, .. }) if message.contains("overflows") => Ok(()),
        other => Err(format!("expected an allocation error, got {:?}", other.map(|_| ()))),
    }
}

fn zeros_over_budget() -> Result<(), String> {
    match Device::cpu().zeros::<f64>(1 << 36) {
        Err(QdError::Allocation { message, .. }) if message.contains("budget") => Ok(()),
        other => Err(format!("expected an allocation error, got {:?}", other.map(|_| ()))),
    }
}

fn deep_nesting() -> Result<(), String> {
    fn nest(t: Val<i32>, n: u32) {
        if n > 0 {
            if_(t.lt(5), move || nest(t, n - 1));
        }
    }
    let k = Kernel::explicit("deep", 32, |_k| nest(block::thread_idx(), 20_000));
    names(&trace_err(&k)?, "nesting", "nested deeper")
}

fn time_limit_many_blocks() -> Result<(), String> {
    let k = Kernel::explicit("trivial", 32, |_k| {});
    let opts = Options { time_limit: Duration::from_millis(300), ..Options::default() };
    let d = Device::cpu_with(32, opts).map_err(|e| e.to_string())?;
    let start = Instant::now();
    match d.launch_grid(&k, 1 << 26, &[]) {
        Err(QdError::Emulator(e)) if matches!(e.kind, EmuErrorKind::TimeLimit { .. }) => {
            if start.elapsed() < Duration::from_secs(3) && e.to_string().contains("trivial") {
                Ok(())
            } else {
                Err(format!("took {:?}: {e}", start.elapsed()))
            }
        }
        other => Err(format!("expected a time-limit error, got {:?}", other.map(|_| ()))),
    }
}

fn strict_broadcast() -> Result<(), String> {
    let k = Kernel::range("far_broadcast", 32, |k| {
        let a = k.array::<i32>("a");
        let lane = k.scalar::<u32>("lane");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::broadcast(i, lane)));
    });
    let d = Device::cpu_with(32, Options { strict: true, ..Options::default() }).map_err(|e| e.to_string())?;
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    match d.launch(&k, &[a.arg(), Arg::scalar(40u32)]) {
        Err(QdError::Emulator(e)) if matches!(e.kind, EmuErrorKind::Poison { .. }) => Ok(()),
        other => Err(format!("expected a strict-mode poison error, got {:?}", other.map(|_| ()))),
    }
}

/// The pending misuse error names `op`, `line` of this file and the outside-kernel marker.
fn outside(e: &qd::trace::TraceError, op: &str, line: u32) -> Result<(), String> {
    let text = e.to_string();
    if e.op == op
        && e.loc.file == file!()
        && e.loc.line == line
        && e.kernel == qd::trace::OUTSIDE_KERNEL
        && text.contains("outside a kernel body")
    {
        Ok(())
    } else {
        Err(format!("expected op `{op}` at {}:{line} outside a kernel body, got: {text}", file!()))
    }
}

fn shuffle_outside() -> Result<(), String> {
    let line = line!() + 1;
    let _ = subgroup::shuffle(3i32, 1u32);
    let k = Kernel::explicit("after_shuffle", 32, |_k| {});
    match Device::cpu().launch_grid(&k, 1, &[]) {
        Err(QdError::Trace(e)) => outside(&e, "subgroup.shuffle", line),
        other => Err(format!("expected the pending misuse error, got {:?}", other.map(|_| ()))),
    }
}

fn sync_outside() -> Result<(), String> {
    let k = Kernel::explicit("cached", 32, |_k| {});
    let d = Device::cpu();
    d.launch_grid(&k, 1, &[]).map_err(|e| e.to_string())?;
    let line = line!() + 1;
    block::sync();
    match d.launch_grid(&k, 1, &[]) {
        Err(QdError::Trace(e)) => outside(&e, "block.sync", line)?,
        other => return Err(format!("expected the pending misuse error, got {:?}", other.map(|_| ()))),
    }
    // Reported once: the next launch runs.
    d.launch_grid(&k, 1, &[]).map_err(|e| format!("second launch after the report: {e}"))
}

fn val_kept() -> Result<(), String> {
    use std::cell::Cell;
    thread_local! { static KEPT: Cell<Option<Val<i32>>> = const { Cell::new(None) }; }
    let k = Kernel::explicit("keeps", 32, |_k| KEPT.with(|c| c.set(Some(block::thread_idx()))));
    k.trace(&Target::cpu(32)).map_err(|e| e.to_string())?;
    let kept = KEPT.with(|c| c.get()).ok_or("the body did not run")?;
    let line = line!() + 1;
    let _ = kept * 2;
    match qd::trace::take_misuse() {
        Some(e) => outside(&e, "mul", line)?,
        None => return Err("no pending misuse error".into()),
    }
    match qd::trace::take_misuse() {
        None => k.trace(&Target::cpu(32)).map(|_| ()).map_err(|e| format!("trace after the report: {e}")),
        Some(e) => Err(format!("reported twice: {e}")),
    }
}

/// A launch refused for `array` declared at `line` of this file: by the emulator's memory budget,
/// or (`by_target`) by the target's shared-memory limit while tracing.
fn over_budget(r: Result<(), QdError>, array: &str, line: u32, by_target: bool) -> Result<(), String> {
    match r {
        Err(QdError::Emulator(e)) => match &e.kind {
            EmuErrorKind::ArrayOverBudget { array: a, .. }
                if a == array
                    && e.loc.is_some_and(|l| l.file == file!() && l.line == line)
                    && e.to_string().contains("budget") =>
            {
                Ok(())
            }
            _ => Err(format!("expected `{array}` over budget at line {line}, got: {e}")),
        },
        Err(QdError::Trace(e))
            if by_target
                && e.loc.file == file!()
                && e.loc.line == line
                && e.message.contains(&format!("`{array}`")) =>
        {
            Ok(())
        }
        other => Err(format!("expected an over-budget error, got {:?}", other.map(|_| ()))),
    }
}

fn local_array_huge() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("huge_local", 32, |k| {
        let out = k.array::<f64>("out");
        let t = block::thread_idx();
        let scratch = local_array::<f64>(u32::MAX);
        scratch.set(t, 1.0);
        out.set(t, scratch.get(t));
    });
    let d = Device::cpu();
    let out = d.zeros::<f64>(32).map_err(|e| e.to_string())?;
    over_budget(d.launch_grid(&k, 1, &[out.arg()]), "local0", line, false)
}

fn shared_array_huge() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("huge_shared", 32, |k| {
        let out = k.array::<f64>("out");
        let t = block::thread_idx();
        let tile = block::shared_array::<f64>(u32::MAX);
        tile.set(t, 1.0);
        out.set(t, tile.get(t));
    });
    let d = Device::cpu();
    let out = d.zeros::<f64>(32).map_err(|e| e.to_string())?;
    over_budget(d.launch_grid(&k, 1, &[out.arg()]), "shared0", line, true)
}

/// Library ops, control flow, arrays and kept values outside a kernel body: none panics, and the
/// first one is the error reported.
fn many_outside() -> Result<(), String> {
    use std::cell::Cell;
    thread_local! { static KEPT: Cell<Option<(Val<i32>, Array<i32>)>> = const { Cell::new(None) }; }
    let k = Kernel::explicit("keeps_more", 64, |k| {
        let a = k.array::<i32>("a");
        KEPT.with(|c| c.set(Some((block::thread_idx(), a))));
    });
    k.trace(&Target::cpu(32)).map_err(|e| e.to_string())?;
    let (t, a) = KEPT.with(|c| c.get()).ok_or("the body did not run")?;
    let line = line!() + 1;
    let s = subgroup::shuffle_down(t, 1u32);
    let sum = subgroup::reduce_add(s);
    if_(t.lt(3), || a.set(t, sum));
    let l = local_array::<f32>(4);
    l.set(0, 1.0);
    let sh = block::shared_array::<i32>(64);
    sh.set(t, a.get(t));
    block::sync();
    let v = var(0i32);
    for_range(0, 4, |i| v.set(v.get() + i));
    let _ = block::reduce_add(v.get(), 64);
    match qd::trace::take_misuse() {
        Some(e) => outside(&e, "subgroup.shuffle_down", line)?,
        None => return Err("no pending misuse error".into()),
    }
    let d = Device::cpu();
    let arr = d.zeros::<i32>(64).map_err(|e| e.to_string())?;
    d.launch_grid(&k, 1, &[arr.arg()]).map_err(|e| format!("launch after the report: {e}"))
}

/// `text` contains each of `wants`, or the ones it lacks.
fn mentions(text: &str, wants: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = wants.iter().copied().filter(|w| !text.contains(w)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("the message lacks {missing:?}: {text}"))
    }
}

/// `file:line:` of this file, as messages print a user's line.
fn here(line: u32) -> String {
    format!("{}:{line}:", file!())
}

/// The error of `r`, or a complaint that it succeeded.
fn failed<T>(r: Result<T, QdError>) -> Result<QdError, String> {
    r.err().ok_or_else(|| "expected an error, got success".to_string())
}

fn host_write_wrong_length() -> Result<(), String> {
    let a = Device::cpu().zeros::<i32>(4).map_err(|e| e.to_string())?;
    let line = line!() + 1;
    let e = failed(a.write(&[1, 2, 3]))?;
    match &e {
        QdError::HostCopy { expected: 4, given: 3, at, .. } if at.file == file!() && at.line == line => {
            mentions(&e.to_string(), &["host write", "i32 array of 4 elements", "exactly 4", "3 given"])
        }
        other => Err(format!("expected Error::HostCopy at line {line}, got {other:?}")),
    }
}

/// A launch error of kernel `kernel` naming each of `wants` and the launch at `site` of this file.
fn launch_error(e: &QdError, kernel: &str, site: u32, wants: &[&str]) -> Result<(), String> {
    let text = e.to_string();
    match e {
        QdError::Launch { kernel: k, .. } | QdError::Argument { kernel: k, .. } if k == kernel => {
            mentions(&text, wants)?;
            mentions(&text, &[&format!("(the launch at {}", here(site))])
        }
        other => Err(format!("expected a launch or argument error of `{kernel}`, got {other:?}")),
    }
}

fn range_end_div_zero() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("end_div_zero", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len() / 0, |i| a.set(i, 1));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let site = line!() + 1;
    let e = failed(d.launch(&k, &[a.arg()]))?;
    launch_error(&e, "end_div_zero", site, &["range end", "`div`", "divides by zero", &here(line)])
}

fn range_end_device_only() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("end_thread_idx", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, block::thread_idx() + 1, |i| a.set(i, 1));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let site = line!() + 1;
    let e = failed(d.launch(&k, &[a.arg()]))?;
    launch_error(&e, "end_thread_idx", site, &["range end", "threadidx", "only on the device", &here(line)])
}

/// An emulator error of `kernel` at `line` of this file, its message naming each of `wants`.
fn emu_error(e: &QdError, kernel: &str, line: u32, wants: &[&str]) -> Result<qd::backend::cpu::EmuError, String> {
    match e {
        QdError::Emulator(emu)
            if emu.kernel == kernel && emu.loc.is_some_and(|l| l.file == file!() && l.line == line) =>
        {
            mentions(&e.to_string(), wants)?;
            Ok(emu.clone())
        }
        other => Err(format!("expected an emulator error of `{kernel}` at line {line}, got {other}")),
    }
}

fn index_u64_max() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("index_u64_max", 32, |k| {
        let a = k.array::<i32>("a");
        let i = k.scalar::<u64>("i");
        a.at(i).set(1);
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(4).map_err(|e| e.to_string())?;
    let e = failed(d.launch_grid(&k, 1, &[a.arg(), Arg::scalar(u64::MAX)]))?;
    let emu = emu_error(&e, "index_u64_max", line, &["index 18446744073709551615 is out of bounds", "`a`"])?;
    match emu.kind {
        EmuErrorKind::OutOfBounds { unsigned: true, len: 4, .. } => Ok(()),
        other => Err(format!("expected OutOfBounds of an unsigned index, got {other:?}")),
    }
}

fn block_dim_out_of_range() -> Result<(), String> {
    for block_dim in [0, 2000] {
        let line = line!() + 1;
        let k = Kernel::explicit("bad_block_dim", block_dim, |k| {
            let a = k.array::<i32>("a");
            a.set(block::thread_idx(), 1);
        });
        let d = Device::cpu();
        let a = d.zeros::<i32>(4).map_err(|e| e.to_string())?;
        match failed(d.launch_grid(&k, 1, &[a.arg()]))? {
            QdError::Trace(e) if e.op == "Kernel::explicit" && e.loc.file == file!() && e.loc.line == line => mentions(
                &e.to_string(),
                &["bad_block_dim", "block_dim must be in 1..=1024", &format!("got {block_dim}")],
            )?,
            other => return Err(format!("expected a trace error at line {line}, got {other}")),
        }
        if k.defined_at().line != line {
            return Err(format!("defined_at is {}", k.defined_at()));
        }
    }
    Ok(())
}

fn partial_subgroup_reduce() -> Result<(), String> {
    // 48 threads: the second subgroup has 16 lanes, so its reduction is partial (on CUDA it would
    // be one `nv.redux(add)`, which the emulator's cpu:sg32 profile emits too).
    let line = line!() + 4;
    let k = Kernel::explicit("partial_reduce", 48, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, subgroup::reduce_add(t));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(64).map_err(|e| e.to_string())?;
    let e = failed(d.launch_grid(&k, 1, &[a.arg()]))?;
    let emu = emu_error(&e, "partial_reduce", line, &["`subgroup.reduce_add`", "partial mask", "subgroup 1"])?;
    match emu.kind {
        EmuErrorKind::PartialMask { op, .. } if op == "subgroup.reduce_add" => Ok(()),
        other => Err(format!("expected a partial mask on subgroup.reduce_add, got {other:?}")),
    }
}

fn range_partial_collective() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("range_reduce", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_add(i)));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(40).map_err(|e| e.to_string())?;
    let site = line!() + 1;
    let e = failed(d.launch(&k, &[a.arg()]))?;
    launch_error(&e, "range_reduce", site, &["40 iterations", "block_dim 32", "`subgroup.reduce_add`", &here(line)])
}

fn volatile_load_local() -> Result<(), String> {
    let k = Kernel::explicit("volatile_local", 32, |k| {
        let a = k.array::<i32>("a");
        let l = local_array::<i32>(4);
        a.set(0, volatile_load(l.at(0)));
    });
    let e = trace_err(&k)?;
    names(&e, "volatile_load", "`local0` is a per-thread array")?;
    if e.message.contains("ndarray") || e.message.contains("field") {
        return Err(format!("the message speaks of another language's arrays: {e}"));
    }
    Ok(())
}

fn radix_bit_start_30() -> Result<(), String> {
    let k = Kernel::explicit("radix_30", 256, |k| {
        let a = k.array::<u32>("a");
        let bins = block::shared_array::<i32>(256);
        let excl = block::shared_array::<i32>(256);
        block::radix_rank_match_atomic_or(a.get(0), 256, 8, 30, 4, bins, excl);
    });
    let e = trace_err(&k)?;
    names(&e, "block.radix_rank_match_atomic_or", "bit_start 30 is too large")?;
    mentions(&e.message, &["30..34", "at most 28"])
}

fn time_limit_loop() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("counts_forever", 32, |k| {
        let a = k.array::<i32>("a");
        let v = var(0i32);
        while_(|| v.get().ge(0), || v.set(v.get() + 1));
        a.set(block::thread_idx(), v.get());
    });
    let opts = Options { time_limit: Duration::from_millis(300), ..Options::default() };
    let d = Device::cpu_with(32, opts).map_err(|e| e.to_string())?;
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let e = failed(d.launch_grid(&k, 1, &[a.arg()]))?;
    if start.elapsed() > Duration::from_secs(5) {
        return Err(format!("the 300 ms limit ended the launch after {:?}", start.elapsed()));
    }
    let emu = emu_error(&e, "counts_forever", line, &["300ms limit", "the loop at", &here(line), "block 0"])?;
    match emu.kind {
        EmuErrorKind::TimeLimit { running, .. } if running.contains("loop") => Ok(()),
        other => Err(format!("expected a time-limit error naming the loop, got {other:?}")),
    }
}

fn launch_errors_sited() -> Result<(), String> {
    let explicit = Kernel::explicit("sited", 32, |k| {
        let a = k.array::<i32>("a");
        a.set(block::thread_idx(), 1);
    });
    let range = Kernel::range("sited_range", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, 1));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let site = line!() + 1;
    let e = failed(d.launch_grid(&explicit, 1, &[]))?;
    launch_error(&e, "sited", site, &["expects 1 arguments (a: i32), got 0"])?;
    let site = line!() + 1;
    let e = failed(d.launch_grid(&explicit, 1, &[Arg::scalar(1u32)]))?;
    launch_error(&e, "sited", site, &["argument 0 (`a`)", "expects an array of i32, got a u32 scalar"])?;
    let site = line!() + 1;
    let e = failed(d.launch(&explicit, &[a.arg()]))?;
    launch_error(&e, "sited", site, &["launch_grid(kernel, blocks, args)"])?;
    let site = line!() + 1;
    let e = failed(d.launch_grid(&range, 1, &[a.arg()]))?;
    launch_error(&e, "sited_range", site, &["launch(kernel, args)"])?;
    let site = line!() + 1;
    let e = failed(d.launch_cluster(&explicit, 3, 2, &[a.arg()]))?;
    launch_error(&e, "sited", site, &["clusters of 2 blocks"])?;
    let site = line!() + 1;
    let e = failed(d.launch_timed(&range, Some(1), &[a.arg()]))?;
    launch_error(&e, "sited_range", site, &["launch_timed(kernel, None, args)"])
}

fn over_max_buffer() -> Result<(), String> {
    // The emulator wearing a target whose arrays may take 1 MiB: the limit a GPU runtime sets from
    // its device (Vulkan's maxStorageBufferRange, CUDA's memory) refuses larger ones, typed.
    let target = Target::cpu(32).with_max_buffer_bytes(1 << 20);
    let d = Device::cpu_wearing(&target, Options::default()).map_err(|e| e.to_string())?;
    let refused = |r: Result<DeviceArray<f32>, QdError>, len: usize| match r {
        Err(e @ QdError::Allocation { len: l, .. }) if l == len => mentions(
            &e.to_string(),
            &[&format!("{len} f32 elements"), &format!("its {} bytes", len * 4), "1048576 bytes"],
        ),
        other => Err(format!("expected an allocation error for {len} elements, got {:?}", other.map(|_| ()))),
    };
    refused(d.zeros::<f32>((1 << 18) + 1), (1 << 18) + 1)?;
    refused(d.array_from(&vec![0f32; (1 << 18) + 1]), (1 << 18) + 1)?;
    d.zeros::<f32>(1 << 18).map(|_| ()).map_err(|e| format!("exactly the limit was refused: {e}"))
}
