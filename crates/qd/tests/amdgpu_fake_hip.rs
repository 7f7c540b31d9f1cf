//! The AMDGPU runtime (feature `amdgpu`) against a stand-in for HIP (`tests/support/fake_hip.c`,
//! built here with `cc`) and Debian's LLVM 19 in place of ROCm's (`/usr/lib/llvm-19`): opening a
//! device, its properties, arrays and copies, the `.ll` made into a code object by `llc` and
//! `ld.lld` and cached on disk, and the kernarg buffer a launch hands to `hipModuleLaunchKernel`.
//! No kernel runs (the stand-in records launches); this is not AMD hardware. Skipped when `cc` or
//! LLVM 19 is missing.
#![cfg(feature = "amdgpu")]

use qd::prelude::*;
use qd::runtime::{Arg, Device, DiskCacheUse};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One test, so that `ROCM_PATH` is set before anything in this process loads HIP.
#[test]
fn the_runtime_against_a_stand_in_for_hip() {
    let llvm = Path::new("/usr/lib/llvm-19");
    if !llvm.join("bin/llc").is_file() || !llvm.join("bin/ld.lld").is_file() {
        eprintln!("no /usr/lib/llvm-19 with llc and ld.lld: skipped");
        return;
    }
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-rocm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("lib")).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_hip.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(root.join("lib/libamdhip64.so"))
        .arg(&source)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("cc could not build the stand-in for HIP: skipped");
        return;
    }
    std::os::unix::fs::symlink(llvm, root.join("llvm")).unwrap();
    let log = root.join("launches.log");
    env_set_var("ROCM_PATH", &root);
    env_set_var("FAKE_HIP_LAUNCH_LOG", &log);
    env_set_var("QD_CACHE_DIR", root.join("cache"));
    env_remove_var("QD_CACHE_DISABLE");

    // Names and what the device is.
    assert_eq!(qd::runtime::available_devices().iter().filter(|n| n.starts_with("amdgpu")).count(), 1);
    let d = Device::from_name("amdgpu").unwrap();
    assert_eq!(d.name(), "amdgpu:0");
    assert_eq!(d.target().name(), "amdgpu:gfx942");
    assert_eq!(d.subgroup_size(), 64);
    let info = d.describe();
    assert!(info.contains("Fake AMD Instinct (gfx942:sramecc+:xnack-)"), "{info}");
    assert!(info.contains("not yet run on AMD hardware"), "{info}");
    assert!(info.contains("16.0 GiB"), "{info}");
    let e = Device::from_name("amdgpu:1").unwrap_err();
    assert!(e.to_string().contains("reports 1 AMD GPU"), "{e}");

    // Arrays round-trip through (host) device memory, empty ones included.
    let a = d.array_from(&[1.5f32, -2.0, 3.25]).unwrap();
    assert_eq!(a.to_vec().unwrap(), [1.5, -2.0, 3.25]);
    a.write(&[4.0, 5.0, 6.0]).unwrap();
    assert_eq!(a.to_vec().unwrap(), [4.0, 5.0, 6.0]);
    let flags = d.zeros::<bool>(5).unwrap();
    assert_eq!(flags.to_vec().unwrap(), [false; 5]);
    assert!(d.zeros::<u64>(0).unwrap().to_vec().unwrap().is_empty());
    // Arrays do not move between devices.
    let cpu_array = Device::cpu().zeros::<f32>(3).unwrap();

    // Compile (llc + ld.lld, stored on disk), then launch: the kernarg buffer is D19's.
    let scale = Kernel::range("scale", 128, |k| {
        let x = k.array::<f32>("x");
        let flags = k.array::<bool>("flags");
        let alpha = k.scalar::<f32>("alpha");
        let shift = k.scalar::<i32>("shift");
        k.parallel_for(0, x.len(), |i| {
            x.set(i, alpha * x.get(i) + shift.cast::<f32>());
            flags.set(i, true);
        });
    });
    let args = [a.arg(), flags.arg(), Arg::scalar(2.0f32), Arg::scalar(-3i32)];
    d.launch(&scale, &args).unwrap();
    let stats = d.compile_stats().unwrap();
    let DiskCacheUse::Stored(path) = &stats.disk else { panic!("{:?}", stats.disk) };
    assert!(path.starts_with(root.join("cache/amdgpu/gfx942")) && path.extension().unwrap() == "hsaco", "{path:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged.lines().last().unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(
        &words[..12],
        ["grid", "1", "1", "1", "block", "128", "1", "1", "shared", "0", "args", words[11]],
        "{line}"
    );
    let slots: Vec<u64> = words[11..].iter().map(|w| u64::from_str_radix(w, 16).unwrap()).collect();
    assert_eq!(slots.len(), 6, "{line}");
    assert_ne!(slots[0], 0);
    assert_eq!(slots[1], 3);
    assert_ne!(slots[2], 0);
    assert_eq!(slots[3], 5);
    assert_eq!(slots[4], 2.0f32.to_bits() as u64);
    assert_eq!(slots[5], (-3i32) as u32 as u64);
    let wrong = d.launch(&scale, &[cpu_array.arg(), flags.arg(), Arg::scalar(2.0f32), Arg::scalar(-3i32)]);
    assert!(wrong.unwrap_err().to_string().contains("arrays do not move between devices"));

    // A second device (its own in-memory cache) loads the code object from disk.
    let d2 = Device::from_name("amdgpu:0").unwrap();
    d2.compile(&scale).unwrap();
    assert_eq!(d2.compile_stats().unwrap().disk, DiskCacheUse::Hit(path.clone()));

    // What makes a device unusable is a typed Unavailable with the reason (the stand-in reads its
    // settings on every call; qd asks on every open).
    let unavailable = |want: &str| match Device::from_name("amdgpu") {
        Err(qd::runtime::Error::Unavailable { backend, reason }) => {
            assert_eq!(backend, "amdgpu");
            assert!(reason.contains(want), "{reason}");
        }
        Err(e) => panic!("expected Unavailable, got {e}"),
        Ok(d) => panic!("expected Unavailable, got {}", d.name()),
    };
    env_set_var("FAKE_HIP_WAVE", "32");
    unavailable("reports a 32-wide wavefront");
    env_set_var("FAKE_HIP_ARCH", "gfx1100");
    let rdna = Device::from_name("amdgpu").unwrap(); // RDNA reports 32 and runs wave64 code objects
    assert_eq!((rdna.target().name().as_str(), rdna.subgroup_size()), ("amdgpu:gfx1100", 64));
    env_set_var("FAKE_HIP_ARCH", "gfx1030");
    unavailable("unknown AMDGPU architecture `gfx1030`");
    env_remove_var("FAKE_HIP_ARCH");
    env_remove_var("FAKE_HIP_WAVE");
    std::fs::remove_file(root.join("llvm")).unwrap();
    if !Path::new("/opt/rocm/llvm/bin/llc").exists() {
        unavailable("llc and ld.lld were not found");
    }
    let _ = std::fs::remove_dir_all(&root);
}

// SAFETY (both): this binary has one test, and qd reads the environment on the test's own thread
// (Device::from_name opens HIP there), so no other thread reads it while it changes.
fn env_set_var(key: &str, value: impl AsRef<std::ffi::OsStr>) {
    unsafe { std::env::set_var(key, value) }
}

fn env_remove_var(key: &str) {
    unsafe { std::env::remove_var(key) }
}
