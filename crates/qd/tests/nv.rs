//! The NVIDIA-only families on the emulator (cpu:sg32 has the `nv` capability) and their
//! trace-time rejection elsewhere.

use qd::ir::NvSreg;
use qd::nv;
use qd::prelude::*;

#[test]
fn match_redux_and_elect_over_a_warp() {
    let k = Kernel::range("warp_ops", 64, |k| {
        let a = k.array::<u32>("a");
        let out = k.array::<u32>("out");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            let (all_mask, all) = nv::match_all(v);
            let (leader, is_leader) = nv::elect();
            let base = i * 8;
            out.set(base, nv::match_any(v));
            out.set(base + 1, all_mask + all.cast::<u32>());
            out.set(base + 2, nv::redux_add(v));
            out.set(base + 3, nv::redux_min(v));
            out.set(base + 4, nv::redux_max(v).cast::<i32>().cast::<u32>());
            out.set(base + 5, nv::redux_xor(v) ^ nv::redux_or(v) ^ nv::redux_and(v));
            out.set(base + 6, leader + is_leader.cast::<u32>() * 100);
            out.set(base + 7, nv::laneid() + nv::lanemask_lt().popc() + nv::warpid() * 1000);
        });
    });
    let d = Device::cpu();
    let a: Vec<u32> = (0..64).map(|i| (i * 7 % 5) as u32).collect();
    let aa = d.array_from(&a).unwrap();
    let out = d.zeros::<u32>(64 * 8).unwrap();
    d.launch(&k, &[aa.arg(), out.arg()]).unwrap();
    let o = out.to_vec().unwrap();
    for i in 0..64 {
        let w = &a[i / 32 * 32..i / 32 * 32 + 32];
        let lane = i % 32;
        let any = (0..32).filter(|&j| w[j] == a[i]).fold(0u32, |m, j| m | 1 << j);
        assert_eq!(o[i * 8], any, "match_any lane {i}");
        assert_eq!(o[i * 8 + 1], 0, "not all equal");
        assert_eq!(o[i * 8 + 2], w.iter().sum::<u32>());
        assert_eq!(o[i * 8 + 3], *w.iter().min().unwrap());
        assert_eq!(o[i * 8 + 4], *w.iter().max().unwrap());
        let x = w.iter().fold(0, |x, v| x ^ v) ^ w.iter().fold(0, |x, v| x | v) ^ w.iter().fold(!0, |x, v| x & v);
        assert_eq!(o[i * 8 + 5], x);
        assert_eq!(o[i * 8 + 6], if lane == 0 { 100 } else { 0 });
        assert_eq!(o[i * 8 + 7], 2 * lane as u32 + (i / 32) as u32 * 1000);
    }
}

#[test]
fn mbarrier_phases_complete_after_every_arrival() {
    // Every thread arrives; thread 0 waits on parity 0, then everyone checks the phase flipped.
    let k = Kernel::explicit("mbarrier", 64, |k| {
        let out = k.array::<u32>("out");
        let bar = block::shared_array::<u64>(1);
        let t = block::thread_idx();
        if_(t.eq(0), || nv::mbarrier_init(bar.at(0), 64u32));
        block::sync();
        let token = nv::mbarrier_arrive(bar.at(0));
        nv::mbarrier_wait_parity(bar.at(0), 0u32);
        let done = nv::mbarrier_test_wait(bar.at(0), token);
        out.set(t, done.cast::<u32>() + nv::mbarrier_try_wait_parity(bar.at(0), 1u32).cast::<u32>() * 10);
    });
    let d = Device::cpu();
    let out = d.zeros::<u32>(64).unwrap();
    d.launch_grid(&k, 2, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![1; 64]);
}

#[test]
fn mbarrier_transaction_counts_hold_the_phase() {
    let k = Kernel::explicit("mbarrier_tx", 32, |k| {
        let out = k.array::<u32>("out");
        let bar = block::shared_array::<u64>(1);
        let t = block::thread_idx();
        if_(t.eq(0), || nv::mbarrier_init(bar.at(0), 1u32));
        block::sync();
        if_(t.eq(0), || {
            nv::mbarrier_arrive_expect_tx(bar.at(0), 128u32);
            // The arrival is in, but 128 bytes are outstanding: the phase has not completed.
            out.set(0, nv::mbarrier_try_wait_parity(bar.at(0), 0u32).cast::<u32>());
            nv::mbarrier_complete_tx(bar.at(0), 128u32);
            out.set(1, nv::mbarrier_try_wait_parity(bar.at(0), 0u32).cast::<u32>());
        });
    });
    let d = Device::cpu();
    let out = d.zeros::<u32>(2).unwrap();
    d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![0, 1]);
}

#[test]
fn special_registers_read_on_the_emulator() {
    let k = Kernel::explicit("sregs", 64, |k| {
        let out = k.array::<u64>("out");
        let t = block::thread_idx();
        let base = t * 4;
        out.set(base, nv::sreg(NvSreg::Tid(0)) + nv::sreg(NvSreg::Ntid(0)) * 1000);
        out.set(base + 1, nv::sreg(NvSreg::LanemaskLe));
        out.set(base + 2, nv::sreg(NvSreg::Nwarpid));
        let c0 = nv::clock64();
        out.set(base + 3, (nv::clock64() - c0).min(0u64));
    });
    let d = Device::cpu();
    let out = d.zeros::<u64>(256).unwrap();
    d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    let o = out.to_vec().unwrap();
    for t in 0..64u64 {
        assert_eq!(o[t as usize * 4], t + 64_000);
        assert_eq!(o[t as usize * 4 + 1], (1u64 << ((t % 32) + 1)) - 1);
        assert_eq!(o[t as usize * 4 + 2], 2);
    }
}

#[test]
fn nv_ops_are_rejected_where_the_target_lacks_the_capability() {
    let k = Kernel::range("needs_nv", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, nv::redux_add(a.get(i))));
    });
    let line = line!() - 2;
    let d = Device::from_name("cpu:sg8").unwrap();
    let e = d.trace(&k).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("nv.redux_add") && text.contains("cpu"), "{text}");
    assert!(text.contains(&format!("nv.rs:{line}")), "{text}");
    let bad_place = Kernel::explicit("global_mbarrier", 32, |k| {
        let a = k.array::<u64>("a");
        nv::mbarrier_init(a.at(0), 1u32);
    });
    assert!(Device::cpu().trace(&bad_place).unwrap_err().to_string().contains("shared memory"));
    let relaxed =
        Kernel::explicit("relaxed_fence", 32, |_k| nv::fence(qd::ir::Ordering::Relaxed, qd::ir::Scope::Block));
    assert!(Device::cpu()
        .trace(&relaxed)
        .unwrap_err()
        .to_string()
        .contains("fence ordering must be acquire, release, acq_rel, or seq_cst"));
}

#[test]
fn vector_loads_read_consecutive_elements_and_refuse_misaligned_ones() {
    let k = |offset: i32| {
        Kernel::explicit("load_vector", 32, move |k| {
            let a = k.array::<f64>("a");
            let b = k.array::<u32>("b");
            let out = k.array::<f64>("out");
            let t = qd::simt::block::thread_idx();
            let [x, y] = nv::load_vector::<f64, 2>(a.at(2 * t + offset));
            let [p, q, r, s] = nv::load_vector::<u32, 4>(b.at(4 * t));
            out.set(t, x - y + (p + q + r + s).cast::<f64>());
        })
    };
    let d = Device::from_name("cpu:sg32").unwrap();
    let a = d.array_from(&(0..66).map(|i| (i * i) as f64).collect::<Vec<_>>()).unwrap();
    let b = d.array_from(&(0..128u32).collect::<Vec<_>>()).unwrap();
    let out = d.zeros::<f64>(32).unwrap();
    d.launch_grid(&k(0), 1, &[a.arg(), b.arg(), out.arg()]).unwrap();
    let want: Vec<f64> = (0..32).map(|t| -((4 * t + 1) as f64) + (16 * t + 6) as f64).collect();
    assert_eq!(out.to_vec().unwrap(), want);
    // An odd first index is misaligned: an error at the call, not a silent read.
    let e = d.launch_grid(&k(1), 1, &[a.arg(), b.arg(), out.arg()]).unwrap_err().to_string();
    assert!(e.contains("not a multiple of 2") && e.contains("nv.load_vector") && e.contains("nv.rs:"), "{e}");
    // The last vector reaching past the array is out of bounds, though its first element is not.
    let short = d.array_from(&[0.0f64; 63]).unwrap();
    let e = d.launch_grid(&k(0), 1, &[short.arg(), b.arg(), out.arg()]).unwrap_err().to_string();
    assert!(e.contains("index 63 is out of bounds") && e.contains("length 63"), "{e}");
}

#[test]
fn vector_loads_of_other_shapes_are_trace_errors() {
    let d = Device::from_name("cpu:sg32").unwrap();
    let e = |k: Kernel| d.trace(&k).unwrap_err().to_string();
    let wide = Kernel::explicit("v4_f64", 32, |k| {
        let a = k.array::<f64>("a");
        nv::load_vector::<f64, 4>(a.at(0));
    });
    assert!(e(wide).contains("2 or 4 elements of 4 or 8 bytes, 16 bytes at most, not 4 x f64"));
    let small = Kernel::explicit("v4_u16", 32, |k| {
        let a = k.array::<u16>("a");
        nv::load_vector::<u16, 4>(a.at(0));
    });
    assert!(e(small).contains("not 4 x u16"));
    let shared = Kernel::explicit("v2_shared", 32, |_| {
        let s = qd::simt::block::shared_array::<u32>(64);
        nv::load_vector::<u32, 2>(s.at(0));
    });
    assert!(e(shared).contains("needs an element of a kernel array"));
    let fine = Kernel::explicit("v2_sg8", 32, |k| {
        let a = k.array::<u32>("a");
        nv::load_vector::<u32, 2>(a.at(0));
    });
    let text = Device::from_name("cpu:sg8").unwrap().trace(&fine).unwrap_err().to_string();
    assert!(text.contains("nv.load_vector"), "{text}");
}
