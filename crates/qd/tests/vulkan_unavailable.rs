//! Asking for Vulkan never panics. Without a loader, a driver (ICD) or a device every Vulkan name is
//! `Error::Unavailable` saying what is missing and how to install it; `QD_REQUIRE_VULKAN=1` (set by
//! `scripts/test.sh` once it has installed lavapipe) turns a missing device into a failure.
#![cfg(feature = "vulkan")]

use qd::prelude::*;

const INSTALL: &str = "apt-get install libvulkan1 mesa-vulkan-drivers";

fn required() -> bool {
    std::env::var("QD_REQUIRE_VULKAN").as_deref() == Ok("1")
}

#[test]
fn vulkan_is_available_or_says_why() {
    match Device::from_name("vulkan") {
        Ok(d) => eprintln!("a Vulkan device is present: {}", d.describe()),
        Err(QdError::Unavailable { backend, reason }) => {
            assert_eq!(backend, "vulkan");
            assert!(!required(), "QD_REQUIRE_VULKAN=1 but Vulkan is unavailable: {reason}");
            eprintln!("skipped: no Vulkan device ({reason})");
        }
        Err(e) => panic!("expected a device or Unavailable, got {e}"),
    }
}

/// With the loader pointed at a driver file that does not exist, every Vulkan name is unavailable,
/// with the install command; checked in a child process, since the loader reads the variables once.
#[test]
fn without_a_driver_every_vulkan_name_is_unavailable_with_the_fix() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_without_a_driver", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env("QD_TEST_CHILD_NO_ICD", "1")
        .env("VK_DRIVER_FILES", "/nonexistent/qd_no_icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/qd_no_icd.json")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("child: every vulkan name unavailable"), "{text}");
    eprintln!("{}", text.lines().find(|l| l.contains("child: reason")).unwrap_or_default());
}

/// Run by `without_a_driver_every_vulkan_name_is_unavailable_with_the_fix` in a new process.
#[test]
#[ignore = "run as a child process without a Vulkan driver"]
fn child_without_a_driver() {
    if std::env::var_os("QD_TEST_CHILD_NO_ICD").is_none() {
        return;
    }
    let mut last = String::new();
    for name in ["vulkan", "vulkan:0", "vulkan:3"] {
        match Device::from_name(name) {
            Err(QdError::Unavailable { backend, reason }) => {
                assert_eq!(backend, name);
                assert!(reason.contains(INSTALL), "{reason}");
                let shown = Device::from_name(name).unwrap_err().to_string();
                assert!(shown.starts_with(&format!("backend `{name}` is not available: ")), "{shown}");
                last = reason;
            }
            Ok(d) => panic!("{name}: a device without a driver: {}", d.describe()),
            Err(e) => panic!("{name}: expected Unavailable, got {e}"),
        }
    }
    let e = Device::vulkan(0).unwrap_err();
    assert!(matches!(&e, QdError::Unavailable { backend, .. } if backend == "vulkan:0"), "{e}");
    let names = qd::runtime::available_devices();
    assert!(!names.iter().any(|n| n.starts_with("vulkan")), "{names:?}");
    println!("child: reason: {last}");
    println!("child: every vulkan name unavailable");
}

#[test]
fn malformed_vulkan_names_are_unavailable() {
    for name in ["vulkan:", "vulkan:x", "vulkan:-1", "vulkan0", "vulkan:99999"] {
        match Device::from_name(name) {
            Err(QdError::Unavailable { backend, .. }) => assert_eq!(backend, name),
            other => panic!("{name}: expected Unavailable, got {other:?}"),
        }
    }
}

#[test]
fn spirv_overrides_need_a_vulkan_device() {
    let code = qd::runtime::SpirvCode {
        words: Vec::new(),
        entry: "k".into(),
        workgroup_size: 32,
        params: Vec::new(),
        shared_bytes: 0,
    };
    let e = Device::cpu().override_spirv("k", code).unwrap_err();
    assert!(matches!(e, QdError::Launch { .. }), "{e}");
}
