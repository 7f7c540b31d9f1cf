//! The misuse catalogue (issue 12): each case is a mistake a new user makes, run in a child process
//! with a timeout, so a panic, an abort or a hang fails its case instead of the whole run. A case
//! passes when the mistake comes back as the expected typed error, naming what was wrong, the op,
//! the kernel and the user's line where there is one.
//!
//! What each case covers (the items, then the errors the seeds and the other issues name):
//!
//! - Issue 12, wrong answers, panics, aborts, hangs: `range_near_i32_max_counts_exactly`,
//!   `return_inside_parallel_for`, `radix_bit_start_overflow`, `zeros_usize_max`,
//!   `zeros_over_memory_budget`, `local_array_u32_max`, `shared_array_over_budget`,
//!   `twenty_thousand_nested_ifs`, `time_limit_over_many_blocks`, `counting_loop_is_a_hang_naming_the_loop`
//!   (the counting spin-wait that ran to the 120 s cap), `strict_broadcast_out_of_range`,
//!   `shuffle_outside_kernel`, `block_sync_outside_kernel_then_cached_launch`, `val_kept_from_a_trace`,
//!   `many_ops_outside_a_kernel`. (Quadratic compile time: the timed tests of `tests/ir.rs`;
//!   `qd emit --target ptx:sm_10`: `crates/qd-cli/tests/cli.rs`.)
//! - Issue 12, unclear messages: `host_write_of_the_wrong_length`, `range_end_divides_by_zero`,
//!   `range_end_from_a_device_only_value`, `index_u64_max_printed_unsigned`, `block_dim_zero_and_2000`,
//!   `shared_array_over_budget` (the array's own line), `partial_subgroup_reduce_add_names_the_library_op`,
//!   `range_not_a_multiple_of_block_dim_names_the_library_op`, `volatile_load_of_a_per_thread_array`,
//!   `radix_bit_start_30_plus_4`, `time_limit_names_the_loop`, `launch_errors_name_the_launch_line`,
//!   `kernel_launched_inside_a_kernel_body`. (CLI file errors naming the path:
//!   `file_errors_name_the_path` in `crates/qd-cli/tests/cli.rs`.)
//! - Issue 12 and issue 13, allocations past the device's limits: `arrays_over_the_devices_buffer_limit`
//!   (and `arrays_past_the_buffer_limit_are_allocation_errors` in `tests/vulkan_runtime.rs`, lavapipe).
//! - Seed 000 (block): `block_sync_under_thread_idx_0` (a barrier a divergent branch deadlocks on),
//!   `block_reduce_block_dim_not_a_multiple_of_the_subgroup`, `block_reduce_block_dim_differs_from_the_kernels`,
//!   `radix_block_dim_not_1_shl_radix_bits`, `radix_num_bits_over_radix_bits`,
//!   `radix_bit_start_overflow`, `radix_bit_start_30_plus_4`, `shared_array_over_budget`.
//! - Seed 002 (subgroup): `tiled_log2_size_over_the_subgroup`, `broadcast_varying_lane_where_uniform_is_needed`,
//!   `shuffle_under_divergent_control_flow`, `subgroup_sync_under_divergent_control_flow`,
//!   `ballot_under_divergent_control_flow`, `strict_shuffle_source_out_of_range`,
//!   `strict_broadcast_out_of_range`, `lanemask_lane_32`, `ballot_first_n_outside_1_to_32`,
//!   `partial_subgroup_reduce_add_names_the_library_op` (a collective without every lane).
//! - Seed 003 (atomics, volatile_load): `volatile_load_of_a_per_thread_array`,
//!   `sixty_four_bit_atomics_on_metal`, `bitwise_atomic_on_a_float_through_atomic_rmw`; float
//!   `atomic_cas`, float bitwise atomics and an atomic on a value are Rust type errors
//!   (`compile_fail` examples in `simt/atomic.rs`).
//! - Seed 004 (PTX, `qd::nv`): `nv_redux_below_sm_80`, `nv_redux_under_divergent_control_flow`,
//!   `nv_float_redux_below_sm_100a`, `nv_fence_relaxed` (the fence ordering must be acquire,
//!   release, acq_rel or seq_cst), `nv_mbarrier_in_global_memory`, `nv_b128_atomic_on_the_emulator`.
//! - Issue 2 (the emulator's run-time errors): `index_u64_max_printed_unsigned` (an out-of-bounds
//!   store names the array and index), `integer_division_by_zero_at_run_time`,
//!   `spin_wait_on_a_flag_nobody_sets`, `partial_subgroup_reduce_add_names_the_library_op`,
//!   `block_sync_under_thread_idx_0`; D1 and D2: `parallel_for_in_an_explicit_kernel`,
//!   `range_kernel_without_parallel_for`, `return_inside_parallel_for`, `break_outside_a_loop`.
//! - Issues 10 and 11 (Metal, shaped arrays): `f64_on_metal`, `sixty_four_bit_atomics_on_metal`,
//!   `metal_more_than_30_arrays`, `metal_threadgroup_memory_over_32_kib`, `metal_fence_below_msl_3_2`,
//!   `shaped_index_outside_its_dimension`.

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
    ("counting_loop_is_a_hang_naming_the_loop", counting_loop_hangs),
    ("spin_wait_on_a_flag_nobody_sets", spin_on_flag),
    ("integer_division_by_zero_at_run_time", division_by_zero),
    ("kernel_launched_inside_a_kernel_body", nested_launch),
    ("block_sync_under_thread_idx_0", block_sync_divergent),
    ("block_reduce_block_dim_not_a_multiple_of_the_subgroup", block_reduce_partial),
    ("block_reduce_block_dim_differs_from_the_kernels", block_reduce_mismatch),
    ("radix_block_dim_not_1_shl_radix_bits", radix_block_dim),
    ("radix_num_bits_over_radix_bits", radix_num_bits),
    ("tiled_log2_size_over_the_subgroup", tiled_log2_size),
    ("broadcast_varying_lane_where_uniform_is_needed", broadcast_varying),
    ("shuffle_under_divergent_control_flow", shuffle_divergent),
    ("subgroup_sync_under_divergent_control_flow", subgroup_sync_divergent),
    ("ballot_under_divergent_control_flow", ballot_divergent),
    ("strict_shuffle_source_out_of_range", strict_shuffle),
    ("lanemask_lane_32", lanemask_32),
    ("ballot_first_n_outside_1_to_32", ballot_first_n),
    ("sixty_four_bit_atomics_on_metal", metal_atomic64),
    ("f64_on_metal", metal_f64),
    ("metal_more_than_30_arrays", metal_buffers),
    ("metal_threadgroup_memory_over_32_kib", metal_shared),
    ("metal_fence_below_msl_3_2", metal_version),
    ("nv_redux_below_sm_80", redux_sm70),
    ("nv_redux_under_divergent_control_flow", redux_divergent),
    ("nv_float_redux_below_sm_100a", redux_float_sm90),
    ("nv_fence_relaxed", nv_fence_relaxed),
    ("nv_mbarrier_in_global_memory", mbarrier_global),
    ("nv_b128_atomic_on_the_emulator", b128_on_emulator),
    ("shaped_index_outside_its_dimension", shaped_dimension),
    ("parallel_for_in_an_explicit_kernel", range_in_explicit),
    ("range_kernel_without_parallel_for", range_without_parallel_for),
    ("break_outside_a_loop", break_outside_loop),
    ("bitwise_atomic_on_a_float_through_atomic_rmw", float_and_rmw),
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

/// A trace error of `k` for `target`, naming `op` at `line` of this file and the kernel, whose
/// message says each of `wants`.
fn trace_error_at(
    k: &Kernel,
    target: &Target,
    op: &str,
    line: u32,
    wants: &[&str],
) -> Result<qd::trace::TraceError, String> {
    let e =
        k.trace(target).err().ok_or_else(|| format!("`{}` traced for {} without an error", k.name(), target.name()))?;
    if e.kernel != k.name() || e.op != op || e.loc.file != file!() || e.loc.line != line {
        return Err(format!("expected `{op}` of `{}` at line {line}, got: {e}", k.name()));
    }
    mentions(&e.to_string(), wants)?;
    Ok(e)
}

/// `k`'s refusal by `target`'s capability check: a trace error marked unsupported.
fn refused_at(k: &Kernel, target: &Target, op: &str, line: u32, wants: &[&str]) -> Result<(), String> {
    let e = trace_error_at(k, target, op, line, wants)?;
    match e.unsupported {
        Some(_) => Ok(()),
        None => Err(format!("expected a capability refusal (unsupported), got: {e}")),
    }
}

fn counting_loop_hangs() -> Result<(), String> {
    // Only a loop variable changes: no thread makes progress anyone could see, so it is a hang
    // (within the hang timeout), not a run to the time limit.
    let line = line!() + 4;
    let k = Kernel::explicit("counting", 32, |k| {
        let a = k.array::<i32>("a");
        let v = var(0i32);
        while_(|| v.get().lt(i32::MAX), || v.set(v.get() + 1));
        a.set(block::thread_idx(), v.get());
    });
    let opts = Options { hang_timeout: Duration::from_millis(300), ..Options::default() };
    let d = Device::cpu_with(32, opts).map_err(|e| e.to_string())?;
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let e = failed(d.launch_grid(&k, 1, &[a.arg()]))?;
    if start.elapsed() > Duration::from_secs(10) {
        return Err(format!("a 300 ms hang timeout ended the launch after {:?}", start.elapsed()));
    }
    let emu = emu_error(&e, "counting", line, &["no thread made progress", "`loop`"])?;
    match emu.kind {
        EmuErrorKind::Hang { .. } => Ok(()),
        other => Err(format!("expected a hang, got {other:?}")),
    }
}

fn spin_on_flag() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("spin_flag", 32, |k| {
        let flag = k.array::<i32>("flag");
        while_(|| volatile_load(flag.at(0)).eq(0), || {});
    });
    let opts = Options { hang_timeout: Duration::from_millis(300), ..Options::default() };
    let d = Device::cpu_with(32, opts).map_err(|e| e.to_string())?;
    let flag = d.zeros::<i32>(1).map_err(|e| e.to_string())?;
    let e = failed(d.launch_grid(&k, 1, &[flag.arg()]))?;
    let emu = emu_error(&e, "spin_flag", line, &["spin-wait that never ends", "`volatile_load`"])?;
    match emu.kind {
        EmuErrorKind::Hang { op, .. } if op == "volatile_load" => Ok(()),
        other => Err(format!("expected a hang on volatile_load, got {other:?}")),
    }
}

fn division_by_zero() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("div_zero", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, t / a.get(t));
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let e = failed(d.launch_grid(&k, 1, &[a.arg()]))?;
    let emu = emu_error(&e, "div_zero", line, &["integer division by zero", "`div`"])?;
    match emu.kind {
        EmuErrorKind::DivisionByZero { .. } => Ok(()),
        other => Err(format!("expected a division by zero, got {other:?}")),
    }
}

fn nested_launch() -> Result<(), String> {
    use std::sync::Mutex;
    // The inner launch's result, and the line of that launch.
    static INNER: Mutex<Option<(Result<(), QdError>, u32)>> = Mutex::new(None);
    let inner = Kernel::explicit("inner", 32, |_k| {});
    let outer = Kernel::explicit("outer", 32, move |_k| {
        let line = line!() + 1;
        let r = Device::cpu().launch_grid(&inner, 1, &[]);
        *INNER.lock().unwrap() = Some((r, line));
    });
    outer.trace(&Target::cpu(32)).map_err(|e| format!("the outer trace failed: {e}"))?;
    let (r, line) = INNER.lock().unwrap().take().ok_or("the body did not run")?;
    match failed(r)? {
        QdError::Trace(e) if e.op == "trace" && e.loc.file == file!() && e.loc.line == line => {
            mentions(&e.to_string(), &["inner", "cannot be traced from inside another kernel's trace"])
        }
        other => Err(format!("expected the nested trace refused at line {line}, got: {other}")),
    }
}

fn block_sync_divergent() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("sync_in_if", 64, |k| {
        let a = k.array::<i32>("a");
        if_(block::thread_idx().eq(0), block::sync);
        a.set(block::thread_idx(), 1);
    });
    trace_error_at(&k, &Target::cpu(32), "block.sync", line, &["block barrier under control flow", "deadlocks"])
        .map(|_| ())
}

fn block_reduce_partial() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("reduce48", 48, |k| {
        let a = k.array::<i32>("a");
        let s = block::reduce_add(a.get(block::thread_idx()), 48);
        a.set(block::thread_idx(), s);
    });
    let wants = ["block_dim must be a positive multiple of subgroup size (32), got 48"];
    trace_error_at(&k, &Target::cpu(32), "block.reduce_add", line, &wants).map(|_| ())
}

fn block_reduce_mismatch() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("reduce_mismatch", 128, |k| {
        let a = k.array::<i32>("a");
        let s = block::reduce_add(a.get(block::thread_idx()), 64);
        a.set(block::thread_idx(), s);
    });
    let wants = ["block_dim 64 differs from the kernel's block_dim 128"];
    trace_error_at(&k, &Target::cpu(32), "block.reduce_add", line, &wants).map(|_| ())
}

fn radix_block_dim() -> Result<(), String> {
    let line = line!() + 5;
    let k = Kernel::explicit("radix_bd", 128, |k| {
        let a = k.array::<u32>("a");
        let bins = block::shared_array::<i32>(256);
        let excl = block::shared_array::<i32>(256);
        block::radix_rank_match_atomic_or(a.get(0), 128, 8, 0, 8, bins, excl);
    });
    let op = "block.radix_rank_match_atomic_or";
    trace_error_at(&k, &Target::cpu(32), op, line, &["block_dim must equal RADIX_DIGITS", "128", "radix_bits 8"])
        .map(|_| ())
}

fn radix_num_bits() -> Result<(), String> {
    let line = line!() + 5;
    let k = Kernel::explicit("radix_bits", 256, |k| {
        let a = k.array::<u32>("a");
        let bins = block::shared_array::<i32>(256);
        let excl = block::shared_array::<i32>(256);
        block::radix_rank_match_atomic_or(a.get(0), 256, 8, 0, 9, bins, excl);
    });
    let op = "block.radix_rank_match_atomic_or";
    trace_error_at(&k, &Target::cpu(32), op, line, &["num_bits 9 must be <= radix_bits 8"]).map(|_| ())
}

fn tiled_log2_size() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("tiled6", 64, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_add_tiled(a.get(i), 6)));
    });
    let wants = ["log2_size 6 exceeds log2_group_size() = 5"];
    trace_error_at(&k, &Target::cpu(32), "subgroup.reduce_add_tiled", line, &wants).map(|_| ())
}

fn broadcast_varying() -> Result<(), String> {
    // A target whose broadcast lane must be subgroup-uniform (SPIR-V's OpGroupNonUniformBroadcast,
    // seed 002); every lowering qd has today shuffles instead, so the answer is set by hand.
    let uniform_only = Target::cpu(32).with_support(
        qd::target::Feature::DynamicBroadcastLane,
        qd::target::Support::unsupported("uniform lanes only"),
    );
    let line = line!() + 4;
    let k = Kernel::range("varying_lane", 32, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::broadcast(a.get(i), subgroup::invocation_id().cast::<u32>() ^ 1u32))
        });
    });
    trace_error_at(&k, &uniform_only, "subgroup.broadcast", line, &["subgroup-uniform lane"]).map(|_| ())
}

/// A subgroup collective under a lane-varying condition, refused at `line`.
fn collective_divergent(k: &Kernel, op: &str, line: u32) -> Result<(), String> {
    let wants = ["subgroup collective under control flow that varies within the subgroup"];
    trace_error_at(k, &Target::cpu(32), op, line, &wants).map(|_| ())
}

fn shuffle_divergent() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("shuffle_in_if", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.lt(16), || a.set(t, subgroup::shuffle(t, 0u32)));
    });
    collective_divergent(&k, "subgroup.shuffle", line)
}

fn subgroup_sync_divergent() -> Result<(), String> {
    let line = line!() + 2;
    let k = Kernel::explicit("sg_sync_in_if", 32, |_k| {
        if_(block::thread_idx().lt(16), subgroup::sync);
    });
    collective_divergent(&k, "subgroup.sync", line)
}

fn ballot_divergent() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("ballot_in_if", 32, |k| {
        let a = k.array::<u64>("a");
        let t = block::thread_idx();
        if_(t.lt(16), || a.set(t, subgroup::ballot(t.eq(3))));
    });
    collective_divergent(&k, "subgroup.ballot", line)
}

fn strict_shuffle() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::range("far_shuffle", 32, |k| {
        let a = k.array::<i32>("a");
        let lane = k.scalar::<u32>("lane");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::shuffle(i, lane)));
    });
    let d = Device::cpu_with(32, Options { strict: true, ..Options::default() }).map_err(|e| e.to_string())?;
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let e = failed(d.launch(&k, &[a.arg(), Arg::scalar(40u32)]))?;
    let emu = emu_error(&e, "far_shuffle", line, &["strict mode", "implementation-defined value"])?;
    match emu.kind {
        EmuErrorKind::Poison { .. } => Ok(()),
        other => Err(format!("expected a strict-mode poison error, got {other:?}")),
    }
}

fn lanemask_32() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("lanemask32", 32, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::lanemask_lt(32u32)));
    });
    trace_error_at(&k, &Target::cpu(32), "subgroup.lanemask_lt", line, &["32"]).map(|_| ())
}

fn ballot_first_n() -> Result<(), String> {
    for n in [0, 33] {
        let line = line!() + 3;
        let k = Kernel::range("ballot_n", 32, move |k| {
            let a = k.array::<u32>("a");
            k.parallel_for(0, a.len(), |i| a.set(i, subgroup::ballot_first_n(i.lt(5), n)));
        });
        let wants = [format!("n must be a compile-time value in 1..=32, got {n}")];
        trace_error_at(&k, &Target::cpu(32), "subgroup.ballot_first_n", line, &[&wants[0]])?;
    }
    Ok(())
}

fn metal_atomic64() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::range("atomic64_metal", 32, |k| {
        let a = k.array::<u64>("a");
        k.parallel_for(0, a.len(), |i| {
            atomic_add(a.at(0), i.cast::<u64>());
        });
    });
    refused_at(&k, &Target::metal(), "atomic_add", line, &["not supported on metal", "64-bit atomics"])
}

fn metal_f64() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("f64_metal", 32, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, (a.get(i).cast::<f64>() * 2.0).cast::<f32>()));
    });
    refused_at(&k, &Target::metal(), "cast", line, &["f64", "not supported on metal"])
}

fn metal_buffers() -> Result<(), String> {
    let line = line!() + 2;
    let k = Kernel::explicit("many_arrays", 32, |k| {
        let arrays: Vec<Array<u32>> = (0..31).map(|j| k.array::<u32>(&format!("a{j}"))).collect();
        let t = block::thread_idx();
        for a in &arrays {
            a.set(t, 0u32);
        }
    });
    trace_error_at(&k, &Target::metal(), "array", line, &["`a30` is one too many", "at most 30 array parameters"])
        .map(|_| ())
}

fn metal_shared() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("big_tile", 64, |k| {
        let a = k.array::<u32>("a");
        let s = block::shared_array::<u32>(8 * 1024 + 1);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        a.set(t, s.get(t));
    });
    refused_at(&k, &Target::metal(), "block.shared_array", line, &["32772 bytes", "over the 32768 bytes"])
}

fn metal_version() -> Result<(), String> {
    use qd::backend::metal::MslVersion;
    let line = line!() + 4;
    let k = Kernel::range("fenced", 32, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            grid::mem_fence();
            a.set(i, 1u32);
        });
    });
    let old = Target::metal_msl(MslVersion::V3_1);
    let ir = k.trace(&old).map_err(|e| e.to_string())?;
    use qd::backend::Backend;
    match qd::backend::metal::Metal::lower(&ir, &old) {
        Err(e) if e.op == "grid.mem_fence" && e.loc.file == file!() && e.loc.line == line => {
            mentions(&e.to_string(), &["fenced", "needs MSL 3.2"])
        }
        other => Err(format!("expected grid.mem_fence refused below MSL 3.2 at line {line}, got {:?}", other.err())),
    }
}

fn redux_sm70() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("redux70", 32, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_add(a.get(i))));
    });
    refused_at(&k, &Target::cuda(70), "nv.redux_add", line, &["not supported on cuda:sm_70"])
}

fn redux_divergent() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("redux_in_if", 32, |k| {
        let a = k.array::<u32>("a");
        let t = block::thread_idx();
        if_(t.lt(16), || a.set(t, qd::nv::redux_add(a.get(t))));
    });
    let wants = ["subgroup collective under control flow that varies within the subgroup"];
    trace_error_at(&k, &Target::cuda(80), "nv.redux_add", line, &wants).map(|_| ())
}

fn redux_float_sm90() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::range("fredux90", 32, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_min_f32(a.get(i))));
    });
    refused_at(&k, &Target::cuda(90), "nv.redux_min_f32", line, &["not supported on cuda:sm_90"])
}

fn nv_fence_relaxed() -> Result<(), String> {
    let line = line!() + 2;
    let k = Kernel::explicit("relaxed_fence", 32, |_k| {
        qd::nv::fence(qd::ir::Ordering::Relaxed, qd::ir::Scope::Block);
    });
    let wants = ["fence ordering must be acquire, release, acq_rel, or seq_cst"];
    trace_error_at(&k, &Target::cuda(90), "nv.fence", line, &wants).map(|_| ())
}

fn mbarrier_global() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("global_mbarrier", 32, |k| {
        let a = k.array::<u64>("a");
        qd::nv::mbarrier_init(a.at(0), 1u32);
    });
    trace_error_at(&k, &Target::cuda(90), "nv.mbarrier_init", line, &["shared memory"]).map(|_| ())
}

fn b128_on_emulator() -> Result<(), String> {
    let line = line!() + 4;
    let k = Kernel::explicit("swap128", 32, |k| {
        let a = k.array::<u64>("a");
        let t = block::thread_idx().cast::<u64>();
        let _ = qd::nv::atomic_exch_b128(a, 0u32, t, t);
    });
    let d = Device::cpu();
    let a = d.zeros::<u64>(2).map_err(|e| e.to_string())?;
    match failed(d.launch_grid(&k, 1, &[a.arg()]))? {
        QdError::Trace(e) if e.op == "nv.atomic_exch_b128" && e.loc.file == file!() && e.loc.line == line => {
            mentions(&e.to_string(), &["swap128", "not supported on"])
        }
        other => Err(format!("expected nv.atomic_exch_b128 refused at line {line}, got {other}")),
    }
}

fn shaped_dimension() -> Result<(), String> {
    let line = line!() + 5;
    let k = Kernel::explicit("shaped_oob", 32, |k| {
        let a = k.array::<i32>("a");
        let tile = block::shared_array_shaped::<i32, 2>([4, 8]);
        let t = block::thread_idx();
        tile.set([Val::constant(0), t], 1);
        a.set(t, 1);
    });
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).map_err(|e| e.to_string())?;
    let e = failed(d.launch_grid(&k, 1, &[a.arg()]))?;
    emu_error(&e, "shaped_oob", line, &["out of bounds", "dimension 1 of [4, 8]"]).map(|_| ())
}

fn range_in_explicit() -> Result<(), String> {
    let line = line!() + 3;
    let k = Kernel::explicit("range_in_explicit", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, 1));
    });
    trace_error_at(&k, &Target::cpu(32), "range", line, &["only allowed in a range kernel"]).map(|_| ())
}

fn range_without_parallel_for() -> Result<(), String> {
    let k = Kernel::range("no_range", 32, |k| {
        let a = k.array::<i32>("a");
        a.set(block::thread_idx(), 1);
    });
    let e = trace_err(&k)?;
    if e.kernel == "no_range" && e.loc.file == file!() {
        mentions(&e.to_string(), &["exactly one parallel range"])
    } else {
        Err(format!("expected the range kernel refused in this file, got: {e}"))
    }
}

fn break_outside_loop() -> Result<(), String> {
    let line = line!() + 2;
    let k = Kernel::explicit("stray_break", 32, |_k| {
        if_(block::thread_idx().lt(3), break_);
    });
    trace_error_at(&k, &Target::cpu(32), "break_", line, &["loop"]).map(|_| ())
}

fn float_and_rmw() -> Result<(), String> {
    use qd::ir::{AtomicOp, Ordering, Scope};
    let line = line!() + 4;
    let k = Kernel::range("float_and", 32, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            atomic_rmw(a.at(i), AtomicOp::And, 1.0f32, Ordering::Relaxed, Scope::Device);
        });
    });
    trace_error_at(&k, &Target::cpu(32), "atomic_and", line, &["requires integer operands, got 'f32'"]).map(|_| ())
}
