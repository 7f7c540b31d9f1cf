//! The `qd` binary's command line: output shapes and exit statuses of D10.

use std::path::PathBuf;
use std::process::{Command, Output};

fn qd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qd")).args(args).output().expect("the qd binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `N passed, 0 failed, K skipped` with N > 0, or None.
fn clean_totals(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_suffix(" skipped")?;
    let (passed, rest) = rest.split_once(" passed, 0 failed, ")?;
    let passed: usize = passed.parse().ok()?;
    let skipped: usize = rest.parse().ok()?;
    (passed > 0).then_some((passed, skipped))
}

#[test]
fn list_prints_case_ids() {
    let o = qd(&["conformance", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert!(!ids.is_empty());
    assert!(ids.iter().any(|id| id == "examples/broadcast_lane0/f32"));
    assert!(ids.iter().any(|id| id == "atomic/add/i32"));
    assert!(ids.iter().any(|id| id == "block/sync_count_nonzero"));
}

#[test]
fn examples_pass_on_sg8_with_the_exact_last_line() {
    let o = qd(&["conformance", "--backend", "cpu:sg8", "--filter", "examples", "--seed", "42"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let last = out.lines().last().unwrap_or("");
    assert!(clean_totals(last).is_some(), "last line: {last:?}");
    assert!(stderr(&o).starts_with("seed: 42\n"), "{}", stderr(&o));
}

#[test]
fn the_seed_is_printed_when_random() {
    let o = qd(&["conformance", "--backend", "cpu:sg4", "--filter", "examples/reduce4/i32"]);
    assert!(o.status.success());
    let err = stderr(&o);
    let seed = err.lines().next().and_then(|l| l.strip_prefix("seed: ")).unwrap_or("");
    assert!(seed.parse::<u64>().is_ok(), "{err}");
}

#[test]
fn a_filter_matching_nothing_fails() {
    let o = qd(&["conformance", "--backend", "cpu", "--filter", "nomatch"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nomatch"));
}

#[test]
fn an_unavailable_backend_fails() {
    // No CUDA driver on CI; no 100th Vulkan device anywhere; metal has no runtime here; no ROCm on CI
    // (or no `amdgpu` feature).
    for backend in ["cuda", "vulkan:99", "metal", "amdgpu", "cpu:sg3", "nonsense"] {
        let o = qd(&["conformance", "--backend", backend]);
        assert!(!o.status.success(), "{backend}");
        assert!(stderr(&o).contains("not available"), "{backend}: {}", stderr(&o));
    }
}

#[test]
fn memory_weak_runs_the_emulator_weakly_and_only_the_emulator() {
    // D26: the run's seed seeds the weak memory; the device name says so.
    let o = qd(&[
        "conformance",
        "--backend",
        "cpu:sg32",
        "--memory",
        "weak",
        "--filter",
        "grid/lookback_scan/i64/n2^12",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("1 passed, 0 failed, 0 skipped"));
    let o = qd(&[
        "bench",
        "reduce",
        "--backend",
        "cpu:sg8",
        "--memory",
        "weak",
        "--seed",
        "5",
        "--log2n",
        "12",
        "--reps",
        "1",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("device=cpu:sg8+weak=5 "), "{}", stdout(&o));
    let o = qd(&["conformance", "--backend", "vulkan:99", "--memory", "weak", "--filter", "grid/"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("only the emulator"), "{}", stderr(&o));
}

#[test]
fn tour_passes() {
    let o = qd(&["tour"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    for name in ["broadcast_lane0", "ballot_count_positive", "reduce4", "producer_consumer/same_subgroup"] {
        assert!(out.contains(name), "{name} missing from the tour");
    }
    assert!(!out.contains("MISMATCH"));
}

#[test]
fn tour_on_a_64_lane_subgroup() {
    let o = qd(&["tour", "--backend", "cpu:sg64"]);
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn info_lists_backends() {
    let o = qd(&["info"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.contains(env!("CARGO_PKG_VERSION")));
    for name in ["cpu:sg4", "cpu:sg64", "cuda", "vulkan"] {
        assert!(out.contains(name), "{name} missing from qd info");
    }
}

/// Without ROCm (CI), `qd info` says amdgpu is not available and why: HIP not found with the
/// `amdgpu` feature, the missing feature without it.
#[test]
fn info_says_why_amdgpu_is_not_available() {
    let o = qd(&["info"]);
    assert!(o.status.success());
    let out = stdout(&o);
    let line = out.lines().find(|l| l.trim_start().starts_with("amdgpu ")).expect("an amdgpu line");
    if line.contains(" available  ") && !line.contains("not available") {
        return; // a machine with ROCm and an AMD GPU
    }
    assert!(line.contains("not available"), "{line}");
    if cfg!(feature = "amdgpu") {
        assert!(line.contains("ROCm/HIP was not found") || line.contains("llc"), "{line}");
    } else {
        assert!(line.contains("`amdgpu` cargo feature"), "{line}");
    }
}

#[test]
fn emit_ir_writes_one_file_per_kernel() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emit_ir");
    let _ = std::fs::remove_dir_all(&dir);
    let o = qd(&["emit", "--target", "ir", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.len() > 20, "{} files", files.len());
    assert!(files.iter().all(|f| f.extension().is_some_and(|e| e == "ir")));
    let text = std::fs::read_to_string(dir.join("broadcast_lane0_f32.ir")).unwrap();
    assert!(text.starts_with("kernel broadcast_lane0_f32("), "{text}");
}

#[test]
fn emit_ptx_writes_modules_that_name_their_target() {
    for sm in ["sm_80", "sm_90"] {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("emit_{sm}"));
        let _ = std::fs::remove_dir_all(&dir);
        let o = qd(&["emit", "--target", &format!("ptx:{sm}"), "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let text = std::fs::read_to_string(dir.join("warp_reduce_add_i32.ptx")).unwrap();
        assert!(text.contains(&format!(".target {sm}")), "{text}");
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert!(files > 20, "{files} files");
    }
}

#[test]
fn emit_spirv_writes_modules_spirv_val_accepts() {
    for sg in [8, 32] {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("emit_spirv_sg{sg}"));
        let _ = std::fs::remove_dir_all(&dir);
        let o = qd(&["emit", "--target", &format!("spirv:sg{sg}"), "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        // A kernel the target cannot express is one line naming it; the rest are files.
        let skipped: Vec<&str> = out.lines().filter(|l| l.contains("not emitted for")).collect();
        assert!(skipped.iter().all(|l| l.starts_with("kernel `") && l.contains("vulkan")), "{out}");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(files.len() > 20, "{} files", files.len());
        assert!(out.ends_with(&format!("wrote {} spv files to {}\n", files.len(), dir.display())), "{out}");
        let bytes = std::fs::read(dir.join("warp_reduce_add_i32.spv")).unwrap();
        assert_eq!(&bytes[..4], &0x0723_0203u32.to_le_bytes(), "the SPIR-V magic number");
        let Some(val) = qd_testkit::SpirvVal::find() else { continue };
        let rejected: Vec<String> = qd_testkit::par_map(&files, |f| {
            assert_eq!(f.extension().unwrap(), "spv");
            val.validate_bytes(&f.display().to_string(), &std::fs::read(f).unwrap(), "vulkan1.1").err()
        })
        .into_iter()
        .flatten()
        .collect();
        assert!(rejected.is_empty(), "{}", rejected.join("\n"));
    }
}

#[test]
fn emit_msl_writes_metal_files_and_names_each_refusal() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emit_msl");
    let _ = std::fs::remove_dir_all(&dir);
    let o = qd(&["emit", "--target", "msl", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    // One line per kernel Metal cannot run, naming it and why (f64 here).
    let refused: Vec<&str> = out.lines().filter(|l| l.contains("not emitted for msl")).collect();
    assert!(refused.iter().all(|l| l.starts_with("kernel `")), "{out}");
    assert!(refused.iter().any(|l| l.contains("Metal has no double-precision type")), "{out}");
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert!(files > 1000, "{files} files");
    assert!(out.ends_with(&format!("wrote {files} metal files to {}\n", dir.display())), "{out}");
    let text = std::fs::read_to_string(dir.join("warp_reduce_add_i32.metal")).unwrap();
    assert!(text.contains("kernel void qd_warp_reduce_add_i32("), "{text}");
    if let Some(check) = qd_testkit::MslCheck::find() {
        check.check_source("warp_reduce_add_i32", &text).unwrap();
    }
}

#[test]
fn emit_amdgpu_writes_llvm_ir_and_unknown_targets_fail() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emit_amdgpu");
    let o = qd(&["emit", "--target", "amdgpu:gfx1100", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("warp_reduce_add_i32.ll")).unwrap();
    assert!(text.contains("define amdgpu_kernel void @qd_warp_reduce_add_i32("), "{text}");
    assert!(text.contains("llvm.amdgcn.permlane64"), "{text}");
    let o = qd(&["emit", "--target", "llvm", "--out", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown target `llvm`"));
}

/// A file the command cannot write is an error naming its path (issue 12), with exit status 1.
#[test]
fn file_errors_name_the_path() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = tmp.join("cli_not_a_dir");
    std::fs::write(&file, "a file, not a folder").unwrap();
    let out = file.join("emit");
    let o = qd(&["emit", "--target", "ir", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("qd: {}: ", out.display())), "{}", stderr(&o));
    let report = file.join("report.tsv");
    let o = qd(&["conformance", "--filter", "examples/reduce4/i32", "--report", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("qd: {}: ", report.display())), "{}", stderr(&o));
}

/// `key=value` fields of a `qd bench` summary line.
fn bench_fields(line: &str) -> std::collections::HashMap<String, String> {
    line.split_whitespace().filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn bench_runs_on_the_emulator_and_checks_its_results() {
    for (args, prefix) in [
        (&["bench", "reduce", "--log2n", "13", "--seed", "7"][..], "bench reduce i32 n=2^13 device=cpu "),
        (
            &["bench", "reduce", "--dtype", "f32", "--log2n", "13", "--seed", "7"][..],
            "bench reduce f32 n=2^13 device=cpu ",
        ),
        (
            &["bench", "scan", "--backend", "cpu:sg8", "--log2n", "14", "--reps", "2"][..],
            "bench scan i32 n=2^14 device=cpu:sg8 ",
        ),
        (&["bench", "copy", "--log2n", "12", "--reps", "1", "--warmup", "0"][..], "bench copy i32 n=2^12 device=cpu "),
        (
            &["bench", "reduce-by-key", "--dtype", "f64", "--log2n", "12", "--tile-order", "reversed"][..],
            "bench reduce-by-key f64 n=2^12 device=cpu ",
        ),
    ] {
        let o = qd(args);
        let out = stdout(&o);
        assert!(o.status.success(), "{args:?}: {out}{}", stderr(&o));
        let line = out.lines().last().unwrap_or("");
        assert!(line.starts_with(prefix), "{line}");
        let f = bench_fields(line);
        assert_eq!(f.get("check").map(String::as_str), Some("ok"), "{line}");
        for key in ["median_ms", "min_ms"] {
            let v: f64 = f.get(key).and_then(|v| v.parse().ok()).unwrap_or(-1.0);
            assert!(v > 0.0, "{key} in {line}");
        }
        // Printed to 3 decimals: a loaded machine can round the emulator's rate down to 0.000.
        let gbps: f64 = f.get("gbps").and_then(|v| v.parse().ok()).unwrap_or(-1.0);
        assert!(gbps >= 0.0, "gbps in {line}");
        assert!(stderr(&o).starts_with("seed: "), "{}", stderr(&o));
    }
}

#[test]
fn bench_sweeps_sizes_as_json_records_that_plot_draws() {
    let o = qd(&["bench", "select", "--dtype", "u64", "--log2n", "10..12:2", "--reps", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let records = qd_cli::plot::read_records(&out);
    assert_eq!(records.iter().map(|r| r.log2n).collect::<Vec<_>>(), [10, 12], "{out}");
    assert!(records.iter().all(|r| r.check == "ok" && r.implementation == "qd" && r.algo == "select"), "{out}");
    let dir = std::env::temp_dir().join(format!("qd-cli-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("qd.jsonl"), &out).unwrap();
    let o = qd(&["plot", dir.join("qd.jsonl").to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("select_u64.svg").exists() && dir.join("table.md").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_rejects_what_it_cannot_run() {
    let o = qd(&["bench", "scan", "--items", "0", "--log2n", "10"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("items per thread"), "{}", stderr(&o));
    let o = qd(&["bench", "scan", "--log2n", "8..31"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = qd(&["bench", "reduce", "--backend", "cuda:99"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not available"), "{}", stderr(&o));
    // The sort bench takes one --log2n (several sizes go through --sizes).
    let o = qd(&["bench", "sort", "--log2n", "8..10"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--log2n takes one N"), "{}", stderr(&o));
}
