//! Writes the PTX (sm_90) of one device-wide algorithm's kernel on i32 (u32 keys for
//! reduce-by-key) for one shape, to read with `ptxas -v`:
//! `cargo run --release -p qd-cli --example algo_ptx -- OUT_DIR ALGO BLOCK ITEMS`
//! (ALGO: reduce, scan, exclusive-scan, select or reduce-by-key).
use qd::algorithms::{kernels, Operator, Tuning};
use qd_cli::emit::{emit_kernel, EmitTarget};
use std::process::ExitCode;

const USAGE: &str = "usage: algo_ptx OUT_DIR reduce|scan|exclusive-scan|select|reduce-by-key BLOCK ITEMS";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(algo), Some(Ok(block)), Some(Ok(items))) =
        (args.first(), args.get(1), args.get(2).map(|a| a.parse::<u32>()), args.get(3).map(|a| a.parse::<u32>()))
    else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let tuning = Tuning { block: Some(block), items: Some(items), ..Tuning::default() };
    let add = Operator::<i32>::add();
    let kernel = match algo.as_str() {
        "reduce" => kernels::reduce(&add, &tuning),
        "scan" => kernels::scan(&add, true, &tuning),
        "exclusive-scan" => kernels::scan(&add, false, &tuning),
        "select" => kernels::select_flagged::<i32, u8>(&tuning),
        "reduce-by-key" => kernels::reduce_by_key::<u32, i32>(&add, &tuning),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let target: EmitTarget = "ptx:sm_90".parse().expect("a built-in target name");
    let dir = std::path::Path::new(dir);
    let path = dir.join(format!("{}.ptx", kernel.name()));
    let written = std::fs::create_dir_all(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
        .and_then(|()| emit_kernel(&kernel, &target).map_err(|e| e.to_string()))
        .and_then(|text| std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display())));
    match written {
        Ok(()) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("algo_ptx: {e}");
            ExitCode::FAILURE
        }
    }
}
