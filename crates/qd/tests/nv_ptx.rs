//! Every family of seed 004 that only `qd::nv` reaches (issue 11, items 3 and 8): traced for its
//! minimum CUDA target, lowered, checked for its PTX line and assembled by ptxas 13.0 for that
//! target (D9); refused by the capability check one step below its floor and on the emulator.
//! The kernels are shared with the GPU tests (`tests/cuda_nv.rs`) through `tests/nv_kernels/`.

mod nv_kernels;

use nv_kernels::*;
use qd::backend::ptx::{lower_kernel, PtxTarget};
use qd::backend::Target;
use qd::prelude::*;

/// Lowers `k` for `target`, assembles it with the kit's ptxas and returns the module text.
fn lower_and_assemble(k: &Kernel, target: PtxTarget) -> String {
    let ir = k.trace(&Target::ptx(target)).unwrap_or_else(|e| panic!("{target}: {e}"));
    let m = lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{target}: {e}"));
    if let Some(ptxas) = qd_testkit::Ptxas::find() {
        ptxas.assert_assembles(&m.entry, &target.to_string(), &m.text);
    }
    m.text
}

/// The family is refused on `below` (when given), naming `why`.
fn refused_below(k: &Kernel, below: Option<PtxTarget>, why: &str) {
    if let Some(t) = below {
        let e = k.trace(&Target::ptx(t)).expect_err("refused below the floor").to_string();
        assert!(e.contains(why), "{t}: {e}");
    }
}

/// As [`refused_below`], and refused on the emulator (a CUDA-only family).
fn refused(k: &Kernel, below: Option<PtxTarget>, why: &str) {
    refused_below(k, below, why);
    let e = Device::cpu().trace(k).expect_err("CUDA-only").to_string();
    assert!(e.contains("not supported on cpu"), "{e}");
}

fn has(text: &str, line: &str) {
    assert!(text.contains(line), "missing `{line}` in:\n{text}");
}

const SM80: PtxTarget = PtxTarget::sm(80);
const SM90: PtxTarget = PtxTarget::sm(90);

#[test]
fn redux_f32_assembles_for_sm_100a_only() {
    let k = redux_f32_kernel();
    let t = lower_and_assemble(&k, PtxTarget::arch_specific(100));
    for l in ["redux.sync.min.f32", "redux.sync.max.f32", "redux.sync.min.abs.NaN.f32", "redux.sync.max.abs.NaN.f32"] {
        has(&t, l);
    }
    lower_and_assemble(&k, PtxTarget::arch_specific(103));
    for t in [SM90, PtxTarget::arch_specific(90), PtxTarget::sm(100)] {
        refused(&k, Some(t), "sm_100a");
    }
}

#[test]
fn l2_cache_hint_loads_and_atomics() {
    let k = l2_hint_kernel();
    let t = lower_and_assemble(&k, SM80);
    has(&t, "createpolicy.fractional.L2::evict_last.b64");
    has(&t, "ld.global.L2::cache_hint.u32");
    has(&t, "atom.relaxed.sys.add.u32.global.L2::cache_hint");
    has(&t, "red.relaxed.sys.add.f32.global.L2::cache_hint");
    refused_below(&k, Some(PtxTarget::sm(75)), "sm_80");
    // The emulator runs them as the plain accesses: the checks the GPU run makes.
    run_l2_hint(&Device::cpu());
}

#[test]
fn b128_exchange_and_cas() {
    let k = b128_kernel();
    let t = lower_and_assemble(&k, SM90);
    has(&t, "atom.exch.b128.global %q0");
    has(&t, "atom.cas.b128.global %q0");
    has(&t, "mov.b128 %q1, {");
    refused(&k, Some(SM80), "sm_90");
}

#[test]
fn packed_half_atomics_and_red() {
    let f16 = packed_f16x2_kernel();
    // sm_60 is the floor; ptxas 13.0 assembles nothing below sm_75.
    let t = lower_and_assemble(&f16, PtxTarget::sm(75));
    has(&t, "atom.add.noftz.f16x2.global");
    has(&t, "red.add.noftz.f16x2.global");
    has(&t, "red.add.noftz.f16x2.shared");
    refused_below(&f16, Some(PtxTarget::sm(53)), "sm_60");
    run_packed(&Device::cpu(), &f16, false);
    let bf16 = packed_bf16x2_kernel();
    let t = lower_and_assemble(&bf16, SM90);
    has(&t, "atom.add.noftz.bf16x2.global");
    has(&t, "red.add.noftz.bf16x2.global");
    refused_below(&bf16, Some(SM80), "sm_90");
    run_packed(&Device::cpu(), &bf16, true);
}

#[test]
fn shuffle_validity_predicate_and_vote_uni() {
    let k = shuffle_valid_kernel();
    let t = lower_and_assemble(&k, SM80);
    has(&t, "shfl.sync.up.b32 %r");
    assert!(t.lines().any(|l| l.contains("shfl.sync.down.b32") && l.contains('|')), "{t}");
    let v = vote_uni_kernel();
    has(&lower_and_assemble(&v, SM80), "vote.sync.uni.pred");
    // Both run on the emulator too, as the GPU run checks them.
    let d = Device::cpu();
    let out = d.zeros::<u32>(4 * N).unwrap();
    d.launch(&k, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), shuffle_valid_expected(N));
    let out = d.zeros::<u32>(N).unwrap();
    d.launch(&v, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vote_uni_expected(N));
}

#[test]
fn sync_restrict_and_proxy_acquire_release_fences() {
    let k = sync_restrict_kernel();
    let t = lower_and_assemble(&k, SM90);
    has(&t, "fence.acquire.sync_restrict::shared::cluster.cluster;");
    has(&t, "fence.release.sync_restrict::shared::cta.cluster;");
    has(&t, "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;");
    has(&t, "fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;");
    refused(&k, Some(SM80), "sm_90");
}

#[test]
fn tensormap_fences_and_copy() {
    let k = tensormap_kernel();
    let t = lower_and_assemble(&k, SM90);
    has(&t, "fence.proxy.tensormap::generic.release.gpu;");
    has(&t, "fence.proxy.tensormap::generic.acquire.gpu [%rd");
    has(&t, "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned");
    has(&t, ".shared .align 128 .b8"); // the copied map is 128-byte aligned
    refused(&k, Some(SM80), "sm_90");
}

#[test]
fn cluster_mbarriers_and_cluster_barrier() {
    let k = cluster_mbarrier_kernel();
    let t = lower_and_assemble(&k, SM90);
    has(&t, "barrier.cluster.arrive.release;");
    has(&t, "barrier.cluster.wait.acquire;");
    has(&t, "mapa.shared::cluster.u64");
    has(&t, "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rd");
    has(&t, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64");
    has(&t, "fence.mbarrier_init.release.cluster;");
    refused(&k, Some(SM80), "sm_90");
}

#[test]
fn try_wait_suspend_hint() {
    let k = try_wait_hint_kernel();
    let t = lower_and_assemble(&k, SM90);
    assert!(
        t.lines().any(|l| l.contains("mbarrier.try_wait.parity.shared.b64") && l.matches(',').count() == 3),
        "no try_wait with a hint operand:\n{t}"
    );
    let e = k.trace(&Target::ptx(SM80)).unwrap_err().to_string();
    assert!(e.contains("sm_90"), "{e}");
    // The emulator runs it (the hint is only a hint).
    let d = Device::cpu();
    let out = d.zeros::<u32>(64).unwrap();
    d.launch_grid(&k, 2, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![1; 64]);
}

/// `nanosleep.u32` (the look-back's back-off, D33): assembled from sm_75 up (ptxas 13.0's
/// oldest), refused below its sm_70 floor, a no-op on the emulator.
#[test]
fn nanosleep_backs_off() {
    let k = nanosleep_kernel();
    for target in [PtxTarget::sm(75), SM90] {
        has(&lower_and_assemble(&k, target), "nanosleep.u32 %r");
    }
    refused_below(&k, Some(PtxTarget::sm(60)), "sm_70");
    let d = Device::cpu();
    let a = d.zeros::<u32>(100).unwrap();
    d.launch(&k, &[a.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![1; 100]);
}

/// `nvvm.breakpoint` (item 3): printed and assembled for every target ptxas 13.0 has (sm_75 up),
/// never launched (the trap poisons the CUDA context).
#[test]
fn breakpoint_prints_the_timer_wait_then_trap() {
    let k = breakpoint_kernel();
    for target in [PtxTarget::sm(75), SM80, SM90, PtxTarget::arch_specific(100)] {
        let t = lower_and_assemble(&k, target);
        let body: Vec<&str> = t.lines().map(str::trim).collect();
        let start = body.iter().position(|l| l.starts_with("mov.u64") && l.ends_with("%globaltimer;")).expect("timer");
        let rest = &body[start..];
        assert!(rest[1].starts_with("$L_breakpoint_") && rest[1].ends_with(':'), "{t}");
        assert!(rest[2].ends_with("%globaltimer;") && rest[3].starts_with("sub.u64"), "{t}");
        assert!(rest[4].starts_with("setp.lt.u64") && rest[4].ends_with(", 1000;"), "{t}");
        assert!(rest[5].starts_with('@') && rest[6] == "trap;", "{t}");
    }
    refused(&k, None, "");
}

#[test]
fn other_backends_refuse_every_new_family() {
    // The emulator wearing sm_90 traces what sm_90 has, then refuses to run it (no panic).
    let worn = Device::from_name("cpu@cuda:sm_90").unwrap();
    for k in cuda_only_kernels() {
        let e = worn.compile(&k).expect_err("not emulated").to_string();
        assert!(e.contains("not supported"), "{e}");
        let e = Device::cpu().compile(&k).expect_err("CUDA-only").to_string();
        assert!(e.contains("not supported on cpu"), "{e}");
    }
    for k in cuda_only_kernels().into_iter().chain(emulated_kernels()) {
        for t in [Target::metal(), Target::cpu(8)] {
            let e = k.trace(&t).expect_err("refused").to_string();
            assert!(e.contains("not supported"), "{e}");
        }
    }
}

/// Each misuse the front end catches is a trace error naming the op and what was wrong, at the
/// user's line.
#[test]
fn misuses_are_trace_errors() {
    use qd::ir::{AtomicOp, L2Policy, Ordering, Scope};
    use qd::nv;
    let sm90 = Target::ptx(SM90);
    let err = |k: Kernel| k.trace(&sm90).expect_err("refused").to_string();
    let e = err(Kernel::explicit("hint_mul", 32, |k| {
        let a = k.array::<u32>("a");
        nv::atomic_l2_hint(AtomicOp::Mul, a.at(0), 2u32, L2Policy::EvictFirst);
    }));
    assert!(e.contains("atomic_mul on u32 has no native PTX atom") && e.contains("nv_ptx.rs:"), "{e}");
    let e = err(Kernel::explicit("hint_shared", 32, |_| {
        let s = block::shared_array::<u32>(32);
        nv::load_l2_hint(s.at(0), L2Policy::EvictFirst);
    }));
    assert!(e.contains("needs an element of a kernel array"), "{e}");
    let e = err(Kernel::explicit("b128_shared", 32, |_| {
        let s = block::shared_array::<u64>(4);
        nv::atomic_exch_b128(s, 0u32, 1u64, 2u64);
    }));
    assert!(e.contains("nv.atomic_exch_b128") && e.contains("kernel array"), "{e}");
    let e = err(Kernel::explicit("restrict_acq_rel", 32, |_| nv::fence_sync_restrict(Ordering::AcqRel)));
    assert!(e.contains("an acquire or a release fence, not acq_rel"), "{e}");
    let e = err(Kernel::explicit("tmap_thread", 32, |_| nv::tensormap_fence_release(Scope::Thread)));
    assert!(e.contains("block, cluster, device or system scope"), "{e}");
    let e = err(Kernel::explicit("tmap_src", 32, |k| {
        let a = k.array::<u64>("a");
        nv::tensormap_copy_fence(a.at(0), a.at(16), Scope::Device);
    }));
    assert!(e.contains("copies from a shared array element"), "{e}");
    let e = err(Kernel::explicit("packed_local", 32, |_| {
        let l = local_array::<u32>(1);
        nv::atomic_add_f16x2(l.at(0), 0u32);
    }));
    assert!(e.contains("global or shared memory"), "{e}");
    let e = err(Kernel::explicit("remote_global", 32, |k| {
        let a = k.array::<u64>("a");
        nv::mbarrier_arrive_cluster(a.at(0), 1u32);
    }));
    assert!(e.contains("shared memory"), "{e}");
    // A cluster launch on a device without clusters, and one whose size does not divide the grid.
    let k = try_wait_hint_kernel();
    let d = Device::cpu();
    let out = d.zeros::<u32>(64).unwrap();
    let e = d.launch_cluster(&k, 2, 2, &[out.arg()]).unwrap_err().to_string();
    assert!(e.contains("thread-block clusters are a CUDA feature"), "{e}");
    let e = d.launch_cluster(&k, 3, 2, &[out.arg()]).unwrap_err().to_string();
    assert!(e.contains("divide the grid"), "{e}");
}
