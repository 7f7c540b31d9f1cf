//! Writes the PTX (sm_90) of the sort's kernels for one shape, to read with `ptxas -v`:
//! `cargo run --release -p qd-cli --example sort_ptx -- OUT_DIR BLOCK KEYS_PER_THREAD [pairs]`
//! (u32 keys; `pairs` adds u32 values).
use qd::algorithms::sort::{sort_kernels, SortTuning};
use qd_cli::emit::{emit_kernel, EmitTarget};
use std::process::ExitCode;

const USAGE: &str = "usage: sort_ptx OUT_DIR BLOCK KEYS_PER_THREAD [pairs]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(Ok(block)), Some(Ok(k))) =
        (args.first(), args.get(1).map(|a| a.parse::<u32>()), args.get(2).map(|a| a.parse::<u32>()))
    else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let pairs = args.get(3).is_some_and(|a| a == "pairs");
    let tuning = SortTuning { block, keys_per_thread: k, hist_items: 16, fallback_spins: 128 };
    let target: EmitTarget = "ptx:sm_90".parse().expect("a built-in target name");
    let dir = std::path::Path::new(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("sort_ptx: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for kernel in sort_kernels::<u32, u32>(tuning, pairs) {
        let path = dir.join(format!("{}.ptx", kernel.name()));
        let written = emit_kernel(&kernel, &target)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display())));
        if let Err(e) = written {
            eprintln!("sort_ptx: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
