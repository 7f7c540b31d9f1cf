//! The `qd::nv` families only CUDA runs (issue 11, item 8), run on a real GPU (the GPU record runs
//! this binary from `.gpu/tests`, with `QD_REQUIRE_CUDA=1`). Each test says what its run checks.
//!
//! A family the device lacks is not run: the test then checks that the capability model refuses
//! it while tracing (so it would fail, not skip, if the model claimed a feature the launch then
//! lacked). Float `redux.sync` needs sm_100a, which no device target is (the runtime compiles for
//! `sm_<cc>`), so on an H100 it is only assembled (tests/nv_ptx.rs); `nv::breakpoint` is never
//! launched anywhere (its trap poisons the CUDA context). Without a CUDA driver every test prints
//! `skipped` and passes unless `QD_REQUIRE_CUDA=1`.
#![cfg(feature = "cuda")]

mod nv_kernels;

use nv_kernels::*;
use qd::prelude::*;
use qd::target::{Feature, NvFeature};

/// CUDA device 0, or `None` when there is no driver (a failure with `QD_REQUIRE_CUDA=1`).
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

/// Whether the device has `family`; when it does not, checks that tracing `k` is refused as
/// unsupported, naming the family, and says the run was left out.
fn has_family(d: &Device, family: NvFeature, k: &Kernel) -> bool {
    if d.target().has(Feature::Nv(family)) {
        return true;
    }
    let e = d.trace(k).expect_err("the capability model refuses what the device lacks").to_string();
    assert!(e.contains("not supported"), "{e}");
    eprintln!("not run on {}: {} is refused there ({e})", d.name(), family.name());
    false
}

/// Float `redux.sync` (sm_100a only). On sm_90 (H100) this checks the refusal; on a device whose
/// target had it, it checks min, max and the abs/NaN forms against the host.
#[test]
fn redux_f32_runs_only_where_the_model_says() {
    let Some(d) = gpu() else { return };
    let k = redux_f32_kernel();
    if !has_family(&d, NvFeature::ReduxFloat, &k) {
        return;
    }
    let a: Vec<f32> = (0..64).map(|i| (i as f32 - 20.5) * if i % 3 == 0 { -1.0 } else { 1.0 }).collect();
    let (da, out) = (d.array_from(&a).unwrap(), d.zeros::<f32>(256).unwrap());
    d.launch(&k, &[da.arg(), out.arg()]).unwrap();
    let o = out.to_vec().unwrap();
    for i in 0..64 {
        let w = &a[i / 32 * 32..i / 32 * 32 + 32];
        let min = w.iter().copied().fold(f32::INFINITY, f32::min);
        let max = w.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let amin = w.iter().map(|x| x.abs()).fold(f32::INFINITY, f32::min);
        let amax = w.iter().map(|x| x.abs()).fold(0.0, f32::max);
        assert_eq!(&o[i * 4..i * 4 + 4], &[min, max, amin, amax], "lane {i}");
    }
}

/// `.L2::cache_hint` (sm_80): the hinted loads return the array; the hinted atomic adds are
/// atomic (the old values chain: sorted by old value, each thread's old + its addend is the next
/// thread's old, and the last one's is the final sum); the hinted `red` adds 1.0 per thread.
#[test]
fn l2_cache_hints_keep_load_and_atomic_semantics() {
    let Some(d) = gpu() else { return };
    let k = l2_hint_kernel();
    if !has_family(&d, NvFeature::L2CacheHint, &k) {
        return;
    }
    run_l2_hint(&d);
}

/// `atom.exch.b128` / `atom.cas.b128` (sm_90): every old pair of the exchanges is whole (high ==
/// !low: no torn 128-bit access), each value was seen exactly once (initial, 0..N), and the
/// 128-bit CAS loop added (1, 2) once per thread to both halves together.
#[test]
fn b128_exchange_and_cas_are_single_atomic_accesses() {
    let Some(d) = gpu() else { return };
    let k = b128_kernel();
    if !has_family(&d, NvFeature::Atomic128, &k) {
        return;
    }
    let init = 1u64 << 40;
    let p = d.array_from(&[init, !init, 0, 0]).unwrap();
    let out = d.zeros::<u64>(2 * N).unwrap();
    d.launch(&k, &[p.arg(), out.arg()]).unwrap();
    let (p, out) = (p.to_vec().unwrap(), out.to_vec().unwrap());
    let mut seen: Vec<u64> = out.chunks(2).map(|c| c[0]).chain([p[0]]).collect();
    for c in out.chunks(2).chain([&p[0..2]]) {
        assert_eq!(c[1], !c[0], "torn 128-bit exchange: {c:?}");
    }
    seen.sort_unstable();
    let mut want: Vec<u64> = (0..N as u64).chain([init]).collect();
    want.sort_unstable();
    assert_eq!(seen, want);
    assert_eq!(&p[2..4], &[N as u64, 2 * N as u64], "128-bit CAS loop");
}

/// `atom.add.noftz.f16x2` and `red` (sm_60).
#[test]
fn packed_f16x2_atomics_add_both_halves() {
    let Some(d) = gpu() else { return };
    let k = packed_f16x2_kernel();
    if has_family(&d, NvFeature::PackedF16x2, &k) {
        run_packed(&d, &k, false);
    }
}

/// `atom.add.noftz.bf16x2` and `red` (sm_90).
#[test]
fn packed_bf16x2_atomics_add_both_halves() {
    let Some(d) = gpu() else { return };
    let k = packed_bf16x2_kernel();
    if has_family(&d, NvFeature::PackedBf16x2, &k) {
        run_packed(&d, &k, true);
    }
}

/// `shfl.sync` with its validity predicate: values and predicates equal the host reference and
/// the emulator's (up by 5: lanes 0..5 invalid; down by 7: lanes 25..32 invalid, own value).
#[test]
fn shuffle_validity_predicate_matches_the_emulator() {
    let Some(d) = gpu() else { return };
    let k = shuffle_valid_kernel();
    if !has_family(&d, NvFeature::ShuffleValid, &k) {
        return;
    }
    let out = d.zeros::<u32>(4 * N).unwrap();
    d.launch(&k, &[out.arg()]).unwrap();
    let cpu = Device::cpu();
    let cpu_out = cpu.zeros::<u32>(4 * N).unwrap();
    cpu.launch(&k, &[cpu_out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), shuffle_valid_expected(N));
    assert_eq!(cpu_out.to_vec().unwrap(), shuffle_valid_expected(N));
}

/// `vote.sync.uni`: true in the warps whose predicate is uniform (even warps), false in the
/// mixed ones.
#[test]
fn vote_uni_tells_uniform_warps() {
    let Some(d) = gpu() else { return };
    let k = vote_uni_kernel();
    if !has_family(&d, NvFeature::VoteUni, &k) {
        return;
    }
    let out = d.zeros::<u32>(N).unwrap();
    d.launch(&k, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vote_uni_expected(N));
}

/// The sync_restrict fences and the async-proxy acquire/release fences (sm_90, PTX 8.6): the
/// driver JIT accepts them and a shared-memory message ordered by them arrives, launched plainly
/// (an implicit one-CTA cluster) and in clusters of 2.
#[test]
fn sync_restrict_fences_run() {
    let Some(d) = gpu() else { return };
    let k = sync_restrict_kernel();
    if !has_family(&d, NvFeature::SyncRestrict, &k) {
        return;
    }
    let want: Vec<u32> = (0..128u32).map(|i| ((i % 64) ^ 1) + 1).collect();
    let out = d.zeros::<u32>(128).unwrap();
    d.launch_grid(&k, 2, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), want);
    let out = d.zeros::<u32>(128).unwrap();
    d.launch_cluster(&k, 2, 2, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), want);
}

/// `tensormap.cp_fenceproxy` and the tensormap proxy fences (sm_90): the 128 bytes each block
/// built in shared memory arrive in its slot of the global array, and the fences run.
#[test]
fn tensormap_copy_moves_128_bytes() {
    let Some(d) = gpu() else { return };
    let k = tensormap_kernel();
    if !has_family(&d, NvFeature::TensormapProxy, &k) {
        return;
    }
    let map = d.zeros::<u64>(32).unwrap();
    d.launch_grid(&k, 2, &[map.arg()]).unwrap();
    let want: Vec<u64> = (0..32u64).map(|i| ((i / 16) * 1000 + i % 16) * 0x1_0000_0001).collect();
    assert_eq!(map.to_vec().unwrap(), want);
}

/// The cluster forms of mbarrier with a cluster launch (sm_90): every thread of a cluster arrives
/// (release, cluster scope, through `mapa`) on rank 0's barrier, which completes only then; rank 0
/// waits at cluster scope and sees every CTA's writes made before its arrival (its threads store
/// 1 + the cluster's count of ones, the others 1). Clusters of 2 and of 4; the bounded wait
/// stores 0xDEAD instead of hanging if an arrival goes astray.
#[test]
fn cluster_mbarrier_collects_every_cta_of_the_cluster() {
    let Some(d) = gpu() else { return };
    let k = cluster_mbarrier_kernel();
    if !has_family(&d, NvFeature::ClusterMbarrier, &k) {
        return;
    }
    for cluster in [2u32, 4] {
        let grid = 2 * cluster;
        let n = (grid * CLUSTER_BLOCK) as usize;
        let (data, out) = (d.zeros::<u32>(n).unwrap(), d.zeros::<u32>(n).unwrap());
        d.launch_cluster(&k, grid, cluster, &[data.arg(), out.arg(), Arg::scalar(cluster)]).unwrap();
        let out = out.to_vec().unwrap();
        for (i, v) in out.iter().enumerate() {
            let rank = (i as u32 / CLUSTER_BLOCK) % cluster;
            let want = if rank == 0 { 1 + cluster * CLUSTER_BLOCK } else { 1 };
            assert_eq!(*v, want, "cluster {cluster}, thread {i}");
        }
    }
    // The grid must be a whole number of clusters.
    let (data, out) = (d.zeros::<u32>(192).unwrap(), d.zeros::<u32>(192).unwrap());
    let e = d.launch_cluster(&k, 3, 2, &[data.arg(), out.arg(), Arg::scalar(2u32)]).unwrap_err();
    assert!(e.to_string().contains("divide the grid"), "{e}");
}

/// The `try_wait` suspend-time hint (sm_90): every thread's wait completes once the whole block
/// arrived (no 0xDEAD from the bounded wait), as on the emulator.
#[test]
fn try_wait_with_a_suspend_hint_completes() {
    let Some(d) = gpu() else { return };
    let k = try_wait_hint_kernel();
    if !has_family(&d, NvFeature::MbarrierTryWait, &k) {
        return;
    }
    let out = d.zeros::<u32>(64).unwrap();
    d.launch_grid(&k, 2, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![1; 64]);
}
