//! The AMDGPU runtime without ROCm (feature `amdgpu`): every entry point is a typed
//! `Error::Unavailable` that says HIP was not found and where qd looked, never a panic. On a machine
//! with ROCm and an AMD GPU the checks are skipped (this project has not run it on AMD hardware).
#![cfg(feature = "amdgpu")]

use qd::runtime::{available_devices, Device, Error};

const FAKE_ROCM: &str = "/nonexistent/qd-test-rocm";

/// One test, so that `ROCM_PATH` is set before anything in this process loads HIP (the library is
/// looked for once per process).
#[test]
fn without_rocm_every_entry_point_is_unavailable() {
    if std::path::Path::new("/opt/rocm/lib/libamdhip64.so").exists() {
        eprintln!("ROCm is installed here; skipping the without-ROCm checks");
        return;
    }
    // SAFETY: the only test of this binary, before anything in it starts a thread.
    unsafe { std::env::set_var("ROCM_PATH", FAKE_ROCM) };
    for name in ["amdgpu", "amdgpu:0", "amdgpu:3"] {
        match Device::from_name(name) {
            Err(Error::Unavailable { backend, reason }) => {
                assert_eq!(backend, name);
                assert!(reason.contains("ROCm/HIP was not found"), "{reason}");
                assert!(reason.contains(&format!("{FAKE_ROCM}/lib/libamdhip64.so")), "{reason}");
                assert!(reason.contains("/opt/rocm/lib"), "{reason}");
            }
            Err(other) => panic!("{name}: expected Unavailable, got {other}"),
            Ok(d) => panic!("{name}: expected an error, got device {}", d.name()),
        }
    }
    for ordinal in [0, 1, u32::MAX] {
        let e = Device::amdgpu(ordinal).unwrap_err();
        assert!(matches!(&e, Error::Unavailable { backend, .. } if *backend == format!("amdgpu:{ordinal}")), "{e}");
        assert!(e.to_string().contains("backend `amdgpu:"), "{e}");
    }
    // A target name is not a device name.
    let e = Device::from_name("amdgpu:gfx942").unwrap_err();
    assert!(matches!(&e, Error::Unavailable { reason, .. } if reason.contains("amdgpu:N")), "{e}");
    assert!(available_devices().iter().all(|n| !n.starts_with("amdgpu")));
    // Kernels still trace and the emulator still wears the target.
    assert!(Device::from_name("cpu@amdgpu:gfx942").is_ok());
}
