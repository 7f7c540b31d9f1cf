//! Writes the PTX (sm_90) of the sort's kernels for one shape, to read with `ptxas -v`:
//! `cargo run --release -p qd-cli --example sort_ptx -- OUT_DIR BLOCK KEYS_PER_THREAD [pairs]`.
use qd::algorithms::sort::{sort_kernels, SortTuning};
use qd_cli::emit::{emit_kernel, EmitTarget};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let block: u32 = args[2].parse().unwrap();
    let k: u32 = args[3].parse().unwrap();
    let pairs = args.get(4).is_some_and(|a| a == "pairs");
    let tuning = SortTuning { block, keys_per_thread: k, hist_items: 16, fallback_spins: 128 };
    let target: EmitTarget = "ptx:sm_90".parse().unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    for kernel in sort_kernels::<u32, u32>(tuning, pairs) {
        let text = emit_kernel(&kernel, &target).unwrap();
        std::fs::write(dir.join(format!("{}.ptx", kernel.name())), text).unwrap();
    }
}
