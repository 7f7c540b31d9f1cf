//! Launches from many host threads at once, and memory over many launches (issue 12), on the
//! emulator, on Vulkan (lavapipe in CI) and on CUDA.
//!
//! Vulkan tests print `skipped` and pass without a Vulkan device unless `QD_REQUIRE_VULKAN=1`;
//! CUDA tests likewise unless `QD_REQUIRE_CUDA=1` (the GPU record's setting), as in
//! `vulkan_runtime.rs` and `cuda_gpu.rs`.

use qd::prelude::*;

const THREADS: usize = 8;
const ROUNDS: usize = 12;
const LAUNCHES: usize = 10_000;
/// Allowed growth of the resident set over [`LAUNCHES`] launches after a warm-up.
const SLACK_BYTES: u64 = 64 << 20;

/// `a[i] = a[i] * 2 + s`.
fn axpb_kernel(name: &str) -> Kernel {
    Kernel::range(name, 64, |k| {
        let a = k.array::<i32>("a");
        let s = k.scalar::<i32>("s");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2 + s));
    })
}

/// Every thread launches the same kernel (compiled by whichever thread gets there first) and a
/// kernel of its own, on arrays of its own sizes, checking every result.
fn launch_from_threads(d: &Device) {
    let shared = axpb_kernel("conc_shared");
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let shared = &shared;
                scope.spawn(move || {
                    let own = axpb_kernel(&format!("conc_own_{t}"));
                    for round in 0..ROUNDS {
                        let n = 1000 + 257 * t + 31 * round;
                        let host: Vec<i32> = (0..n as i32).map(|i| i ^ (t as i32)).collect();
                        let a = d.array_from(&host).unwrap();
                        let s = (t * 1000 + round) as i32;
                        let kernel = if round % 2 == 0 { shared } else { &own };
                        d.launch(kernel, &[a.arg(), Arg::scalar(s)]).unwrap();
                        d.launch(kernel, &[a.arg(), Arg::scalar(-s)]).unwrap();
                        let want: Vec<i32> = host.iter().map(|x| (x * 2 + s) * 2 - s).collect();
                        assert_eq!(a.to_vec().unwrap(), want, "thread {t}, round {round}, n {n}");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a launching thread failed");
        }
    });
}

/// The resident set size of this process, from `/proc/self/status`.
fn vm_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|x| x.parse().ok()).expect("VmRSS in kB");
    kib * 1024
}

/// [`LAUNCHES`] launches of a small kernel after a warm-up grow the resident set by less than
/// [`SLACK_BYTES`], and the last result is right (each launch adds one to every element). On the
/// emulator and lavapipe arrays live in host memory, so this covers device memory too; on CUDA it
/// covers the host side of a launch only (qd has no query of free device memory).
fn launches_do_not_grow_memory(d: &Device) {
    let k = Kernel::range("conc_increment", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + 1));
    });
    let a = d.zeros::<u32>(64).unwrap();
    let warm_up = 200;
    for _ in 0..warm_up {
        d.launch(&k, &[a.arg()]).unwrap();
    }
    let before = vm_rss_bytes();
    for _ in 0..LAUNCHES {
        d.launch(&k, &[a.arg()]).unwrap();
    }
    let after = vm_rss_bytes();
    assert_eq!(a.to_vec().unwrap(), vec![(warm_up + LAUNCHES) as u32; 64]);
    let growth = after.saturating_sub(before);
    assert!(
        growth < SLACK_BYTES,
        "{}: the resident set grew by {} KiB over {LAUNCHES} launches ({} -> {} KiB)",
        d.name(),
        growth >> 10,
        before >> 10,
        after >> 10
    );
}

/// Only this file's memory test measures at a time: the other tests' threads allocate too.
static MEASURE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measure<R>(f: impl FnOnce() -> R) -> R {
    let _g = MEASURE.lock().unwrap_or_else(|e| e.into_inner());
    f()
}

#[test]
fn emulator_launches_from_eight_threads() {
    measure(|| launch_from_threads(&Device::cpu()));
}

#[test]
fn emulator_launches_do_not_grow_memory() {
    measure(|| launches_do_not_grow_memory(&Device::cpu()));
}

#[cfg(feature = "vulkan")]
mod vulkan {
    use super::*;

    /// Vulkan device 0, or `None` (and a `skipped` line) when this machine has none.
    fn vulkan() -> Option<Device> {
        match Device::from_name("vulkan") {
            Ok(d) => Some(d),
            Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_VULKAN").as_deref() != Ok("1") => {
                eprintln!("skipped: no Vulkan device ({reason}); QD_REQUIRE_VULKAN=1 makes this a failure");
                None
            }
            Err(e) => panic!("Vulkan required (QD_REQUIRE_VULKAN=1) but unavailable: {e}"),
        }
    }

    #[test]
    fn vulkan_launches_from_eight_threads() {
        if let Some(d) = vulkan() {
            measure(|| launch_from_threads(&d));
        }
    }

    #[test]
    fn vulkan_launches_do_not_grow_memory() {
        if let Some(d) = vulkan() {
            measure(|| launches_do_not_grow_memory(&d));
        }
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;

    /// CUDA device 0, or `None` (and a `skipped` line) when there is no driver.
    fn gpu() -> Option<Device> {
        match Device::cuda(0) {
            Ok(d) => Some(d),
            Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_CUDA").as_deref() != Ok("1") => {
                eprintln!("skipped: no CUDA device ({reason}); QD_REQUIRE_CUDA=1 makes this a failure");
                None
            }
            Err(e) => panic!("CUDA required (QD_REQUIRE_CUDA=1) but unavailable: {e}"),
        }
    }

    #[test]
    fn cuda_launches_from_eight_threads() {
        if let Some(d) = gpu() {
            measure(|| launch_from_threads(&d));
        }
    }

    #[test]
    fn cuda_launches_do_not_grow_memory() {
        if let Some(d) = gpu() {
            measure(|| launches_do_not_grow_memory(&d));
        }
    }
}
