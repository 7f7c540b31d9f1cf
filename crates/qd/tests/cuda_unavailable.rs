//! Asking for CUDA never panics. On a machine without the NVIDIA driver (CI) every CUDA name is
//! `Error::Unavailable` naming the missing driver library; with a driver, these tests check what
//! still holds there.
#![cfg(feature = "cuda")]

use qd::prelude::*;

fn driver_missing() -> bool {
    match Device::from_name("cuda") {
        Ok(_) => false,
        Err(QdError::Unavailable { reason, .. }) => reason.contains("libcuda"),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn cuda_without_a_driver_is_unavailable_not_a_panic() {
    for name in ["cuda", "cuda:0", "cuda:3"] {
        match Device::from_name(name) {
            Ok(d) => {
                eprintln!("a CUDA driver is present: {}", d.describe());
                return;
            }
            Err(QdError::Unavailable { backend, reason }) => {
                assert_eq!(backend, name);
                if driver_missing() {
                    assert!(reason.contains("libcuda"), "{reason}");
                    assert!(reason.contains("NVIDIA driver"), "{reason}");
                }
                let shown = Device::from_name(name).unwrap_err().to_string();
                assert!(shown.starts_with(&format!("backend `{name}` is not available: ")), "{shown}");
            }
            Err(e) => panic!("{name}: expected Unavailable, got {e}"),
        }
    }
    // The explicit constructor says the same.
    if driver_missing() {
        let e = qd::runtime::Device::cuda(0).unwrap_err();
        assert!(matches!(&e, QdError::Unavailable { backend, .. } if backend == "cuda:0"), "{e}");
    }
}

#[test]
fn malformed_cuda_names_are_unavailable() {
    for name in ["cuda:", "cuda:x", "cuda:-1", "cuda0"] {
        match Device::from_name(name) {
            Err(QdError::Unavailable { backend, .. }) => assert_eq!(backend, name),
            other => panic!("{name}: expected Unavailable, got {other:?}"),
        }
    }
}

#[test]
fn device_list_has_the_emulators_and_cuda_only_with_a_driver() {
    let names = qd::runtime::available_devices();
    assert_eq!(&names[..5], ["cpu", "cpu:sg4", "cpu:sg8", "cpu:sg16", "cpu:sg64"]);
    let cuda: Vec<_> = names.iter().filter(|n| n.starts_with("cuda:")).collect();
    if driver_missing() {
        assert!(cuda.is_empty(), "{names:?}");
    }
    for n in names {
        assert_eq!(Device::from_name(&n).unwrap().name(), n);
    }
}

#[test]
fn ptx_overrides_need_a_cuda_device() {
    let code = qd::runtime::PtxCode { text: String::new(), entry: "k".into(), shared_bytes: 0, params: Vec::new() };
    let e = Device::cpu().override_ptx("k", code).unwrap_err();
    assert!(matches!(e, QdError::Launch { .. }), "{e}");
}

#[test]
fn cpu_compile_stats_are_recorded() {
    let d = Device::cpu();
    assert!(d.compile_stats().is_none());
    let k = Kernel::range("stats", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, i));
    });
    let a = d.zeros::<i32>(64).unwrap();
    d.launch(&k, &[a.arg()]).unwrap();
    let s = d.compile_stats().unwrap();
    assert_eq!(s.kernel, "stats");
    assert_eq!(s.disk, qd::runtime::DiskCacheUse::NotApplicable);
    assert!(s.total >= s.trace + s.lower);
    let compiled = d.compile(&k).unwrap();
    assert!(compiled.cpu_program().is_some() && compiled.ptx().is_none());
    assert_eq!(compiled.kernel().name, "stats");
}
