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
