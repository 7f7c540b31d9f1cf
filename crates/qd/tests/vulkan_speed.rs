//! The Vulkan runtime's fast paths on a real Vulkan device (lavapipe in CI): host copies through the
//! staging buffer (the path of discrete GPUs, forced here with `VulkanOptions::staging`, since
//! lavapipe's memory is all host-visible), launches that reuse their recorded command buffer and
//! descriptor set, memory that does not grow with repeated launches and copies, and device-timed
//! launches.
//!
//! Without a Vulkan device every test prints `skipped` and passes; with `QD_REQUIRE_VULKAN=1` (what
//! `scripts/test.sh` sets) they fail instead. The tests that read the device's counters take
//! `SERIAL`, since every `Device` on vulkan:0 in this process shares one logical device and its
//! counts.
#![cfg(feature = "vulkan")]

use qd::prelude::*;
use qd::runtime::{RuntimeCounters, VulkanOptions};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Vulkan device 0 with `staging` forced or not, or `None` (and a `skipped` line) without one.
fn vulkan(staging: bool) -> Option<Device> {
    match Device::vulkan_with(0, VulkanOptions { staging, ..VulkanOptions::from_env() }) {
        Ok(d) => Some(d),
        Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_VULKAN").as_deref() != Ok("1") => {
            eprintln!("skipped: no Vulkan device ({reason}); QD_REQUIRE_VULKAN=1 makes this a failure");
            None
        }
        Err(e) => panic!("Vulkan required (QD_REQUIRE_VULKAN=1) but unavailable: {e}"),
    }
}

fn counters(d: &Device) -> RuntimeCounters {
    d.counters().expect("a Vulkan device counts")
}

/// `a[i] = a[i] * 3 + s` over the whole array (traced and lowered by qd).
fn scale_add() -> Kernel {
    Kernel::range("vk_speed_scale_add", 64, |k| {
        let a = k.array::<u32>("a");
        let s = k.scalar::<u32>("s");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 3u32 + s));
    })
}

/// `out[i] = x[i] + y[i]` for every element type the copies move at a different width.
fn add<T: Num>(name: &str) -> Kernel {
    Kernel::range(name, 64, |k| {
        let x = k.array::<T>("x");
        let y = k.array::<T>("y");
        let out = k.array::<T>("out");
        k.parallel_for(0, out.len(), |i| out.set(i, x.get(i) + y.get(i)));
    })
}

fn check_add<T: Num + std::fmt::Debug + PartialEq>(d: &Device, name: &str, x: &[T], y: &[T], want: &[T]) {
    let xa = d.array_from(x).unwrap();
    let ya = d.array_from(y).unwrap();
    let out = d.zeros::<T>(x.len()).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![T::from_bits(0); x.len()], "{name}: new arrays are zeroed");
    d.launch(&add::<T>(name), &[xa.arg(), ya.arg(), out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), want, "{name}");
}

#[test]
fn staged_copies_move_every_width_and_size() {
    let Some(d) = vulkan(true) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let before = counters(&d);
    // Odd lengths: the copies are not multiples of 4 or 16 bytes.
    let n = 1001;
    let x: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
    let y: Vec<u8> = (0..n).map(|i| (i * 13 + 1) as u8).collect();
    let want: Vec<u8> = x.iter().zip(&y).map(|(a, b)| a.wrapping_add(*b)).collect();
    check_add(&d, "vk_speed_add_u8", &x, &y, &want);
    let x: Vec<i16> = (0..n).map(|i| i as i16 - 500).collect();
    let want: Vec<i16> = x.iter().map(|a| a.wrapping_add(*a)).collect();
    check_add(&d, "vk_speed_add_i16", &x, &x, &want);
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let want: Vec<f32> = x.iter().map(|a| a + 1.0).collect();
    check_add(&d, "vk_speed_add_f32", &x, &vec![1.0; n], &want);
    let after = counters(&d);
    // Each array: one staged zero-or-upload is a copy only for uploads (zeroing is a fill), and one
    // staged read: 3 dtypes x (2 uploads + 2 reads).
    assert!(after.staged_copies >= before.staged_copies + 12, "{before:?} -> {after:?}");

    // More than one staging buffer's worth (64 MiB): the copies go in two pieces each way. (No
    // kernel on it: lavapipe would take seconds over 16M invocations.)
    let big = (64 << 20) / 4 + 3;
    let host: Vec<u32> = (0..big as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let mid = counters(&d);
    let a = d.array_from(&host).unwrap();
    assert_eq!(counters(&d).staged_copies, mid.staged_copies + 2, "a 64 MiB + 12 byte upload is two pieces");
    assert!(a.to_vec().unwrap() == host, "the round trip changed the data");
    assert_eq!(counters(&d).staged_copies, mid.staged_copies + 4, "a 64 MiB + 12 byte read is two pieces");
}

#[test]
fn arrays_move_between_devices_with_and_without_staging() {
    let (Some(staged), Some(mapped)) = (vulkan(true), vulkan(false)) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // One logical device: an array either device made runs on the other.
    let a = staged.array_from(&[1u32, 2, 3]).unwrap();
    let b = mapped.array_from(&[10u32, 20, 30]).unwrap();
    mapped.launch(&scale_add(), &[a.arg(), Arg::scalar(1u32)]).unwrap();
    staged.launch(&scale_add(), &[b.arg(), Arg::scalar(2u32)]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![4, 7, 10]);
    assert_eq!(b.to_vec().unwrap(), vec![32, 62, 92]);
    let info = staged.info();
    assert!(info.notes.iter().any(|n| n.contains("staging buffer")), "{info:?}");
    assert!(!mapped.info().notes.iter().any(|n| n.contains("staging buffer")), "{:?}", mapped.info());
}

#[test]
fn repeated_launches_reuse_their_recording() {
    let Some(d) = vulkan(false) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let k = scale_add();
    let a = d.zeros::<u32>(256).unwrap();
    let b = d.zeros::<u32>(256).unwrap();
    let c = d.zeros::<u32>(100).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(1u32)]).unwrap();
    let start = counters(&d);
    // Same arrays and grid, other scalars: the parameter block changes, nothing is recorded.
    for s in 0..20u32 {
        d.launch(&k, &[a.arg(), Arg::scalar(s)]).unwrap();
    }
    let same = counters(&d);
    assert_eq!(same.launches, start.launches + 20, "{start:?} -> {same:?}");
    assert_eq!(same.recordings, start.recordings, "{start:?} -> {same:?}");
    // Scalars reached the kernel: a = ((1*3 + 0)*3 + 1)*3 + ... (mod 2^32).
    let want = (0..20u32).fold(1u32, |v, s| v.wrapping_mul(3).wrapping_add(s));
    assert_eq!(a.to_vec().unwrap(), vec![want; 256]);
    // Another array: recorded once, then reused; back to the first: recorded again.
    d.launch(&k, &[b.arg(), Arg::scalar(1u32)]).unwrap();
    d.launch(&k, &[b.arg(), Arg::scalar(1u32)]).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(0u32)]).unwrap();
    assert_eq!(counters(&d).recordings, same.recordings + 2);
    // Another grid (100 elements: 2 blocks, not 4): recorded again.
    d.launch(&k, &[c.arg(), Arg::scalar(1u32)]).unwrap();
    assert_eq!(counters(&d).recordings, same.recordings + 3);
    assert_eq!(b.to_vec().unwrap(), vec![4; 256]);
    assert_eq!(c.to_vec().unwrap(), vec![1; 100]);
    // A freed array's successor is a different array, even if the driver hands back the same handle.
    drop(b);
    let b2 = d.array_from(&vec![2u32; 256]).unwrap();
    let before = counters(&d).recordings;
    d.launch(&k, &[b2.arg(), Arg::scalar(0u32)]).unwrap();
    assert_eq!(counters(&d).recordings, before + 1);
    assert_eq!(b2.to_vec().unwrap(), vec![6; 256]);
}

#[test]
fn memory_does_not_grow_with_repeated_launches_and_copies() {
    let Some(d) = vulkan(true) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let k = scale_add();
    let host: Vec<u32> = (0..4096).collect();
    let round = |s: u32| {
        let a = d.array_from(&host).unwrap();
        d.launch(&k, &[a.arg(), Arg::scalar(s)]).unwrap();
        d.launch_timed(&k, None, &[a.arg(), Arg::scalar(s)]).unwrap();
        a.write(&host).unwrap();
        assert_eq!(a.to_vec().unwrap()[4095], 4095);
    };
    round(0);
    let warm = counters(&d);
    for s in 0..30 {
        round(s);
    }
    let after = counters(&d);
    assert_eq!(after.reserved_bytes, warm.reserved_bytes, "{warm:?} -> {after:?}");
    assert_eq!(after.launches, warm.launches + 60);
}

#[test]
fn timed_launches_use_the_device_clock() {
    let Some(d) = vulkan(false) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let k = scale_add();
    let a = d.zeros::<u32>(1 << 16).unwrap();
    let info = d.info();
    let t = d.launch_timed(&k, None, &[a.arg(), Arg::scalar(1u32)]).unwrap();
    if info.device_timer {
        // Timestamps around a dispatch of 65536 invocations: more than nothing, less than a second.
        assert!(t > std::time::Duration::ZERO && t < std::time::Duration::from_secs(1), "{t:?}");
    }
    assert_eq!(a.to_vec().unwrap(), vec![1; 1 << 16]);
    // An empty grid is timed as nothing.
    let e = d.zeros::<u32>(0).unwrap();
    assert_eq!(d.launch_timed(&k, None, &[e.arg(), Arg::scalar(1u32)]).unwrap(), std::time::Duration::ZERO);
}
