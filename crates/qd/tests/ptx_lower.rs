//! Whole kernels lowered to PTX and assembled by ptxas 13.0 for sm_80 and sm_90, and for the
//! architecture-specific sm_90a and sm_100a (D9).

use qd::backend::ptx::lower::{lower_kernel, lower_kernel_sm};
use qd::backend::ptx::PtxTarget;
use qd::backend::Target;
use qd::prelude::*;

fn assemble(name: &str, text: &str, sm: u32) {
    assemble_for(name, text, PtxTarget::sm(sm));
}

/// Assembles with the kit's ptxas (D9), failing the test with the module when it is rejected.
fn assemble_for(name: &str, text: &str, target: PtxTarget) {
    if let Some(ptxas) = qd_testkit::Ptxas::find() {
        ptxas.assert_assembles(name, &target.to_string(), text);
    }
}

/// The `.version` line of a module.
fn version_of(text: &str) -> String {
    text.lines().find_map(|l| l.strip_prefix(".version ")).expect("a .version line").to_string()
}

/// `major.minor` as a comparable pair.
fn version_pair(v: &str) -> (u32, u32) {
    let (a, b) = v.split_once('.').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

const TARGETS: [PtxTarget; 4] =
    [PtxTarget::sm(80), PtxTarget::sm(90), PtxTarget::arch_specific(90), PtxTarget::arch_specific(100)];

/// Lowers `k` for sm_80, sm_90, sm_90a and sm_100a and assembles each module; returns them.
fn check(k: &Kernel) -> Vec<(PtxTarget, String)> {
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let mut out = Vec::new();
    for target in TARGETS {
        let m = lower_kernel(&ir, &target).unwrap();
        assert!(m.text.contains(&format!(".target {target}\n")), "{target}");
        assert_eq!(m.params.len(), ir.params.len());
        assert_eq!(m.entry, k.name());
        assert_eq!(m.text, lower_kernel(&ir, &target).unwrap().text, "lowering is deterministic");
        // D7: at least the target's floor, at most what ptxas 13.0 / the CUDA 13.0 JIT take.
        let v = version_pair(&version_of(&m.text));
        let floor = target.floor().unwrap();
        assert!(v >= (u32::from(floor.major), u32::from(floor.minor)), "{target}: .version below the floor");
        assert!(v <= (9, 0), "{target}: .version above 9.0");
        if !target.arch_specific {
            assert_eq!(m.text, lower_kernel_sm(&ir, target.sm).unwrap().text, "lower_kernel_sm is lower_kernel");
        }
        assemble_for(k.name(), &m.text, target);
        out.push((target, m.text));
    }
    out
}

#[test]
fn large_shared_memory_uses_the_dynamic_region() {
    let k = Kernel::explicit("big_shared", 256, |k| {
        let a = k.array::<f32>("a");
        let s = block::shared_array::<f32>(16 * 1024);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        block::sync();
        a.set(t, s.get(255 - t));
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m = lower_kernel_sm(&ir, 90).unwrap();
    assert!(m.dynamic_shared && m.shared_bytes == 64 * 1024);
    assert!(m.text.contains(".extern .shared"));
    assemble("big_shared", &m.text, 90);
}

#[test]
fn nvidia_families_assemble_on_sm_90_and_are_gated_below() {
    use qd::ir::{NvSreg, Ordering, Scope};
    use qd::nv;
    let k = Kernel::explicit("nv_families", 64, |k| {
        let out = k.array::<u64>("out");
        let w = k.array::<u32>("w");
        let bar = block::shared_array::<u64>(1);
        let t = block::thread_idx();
        let v = w.get(t);
        let (mask, all) = nv::match_all(v);
        let (leader, is_leader) = nv::elect(); // ELECT
        let x = nv::match_any(v.cast::<u64>()) + mask + all.cast::<u32>() + leader + is_leader.cast::<u32>();
        let y = nv::redux_add(v) + nv::redux_min(v.cast::<i32>()).cast::<u32>() + nv::redux_xor(v);
        if_(t.eq(0), || nv::mbarrier_init(bar.at(0), 64u32));
        nv::proxy_fence("mbarrier_init");
        block::sync();
        let token = nv::mbarrier_arrive(bar.at(0));
        if_(t.eq(0), || {
            nv::mbarrier_expect_tx(bar.at(0), 16u32);
            nv::mbarrier_complete_tx(bar.at(0), 16u32);
        });
        nv::mbarrier_wait_parity(bar.at(0), 0u32);
        let ok = nv::mbarrier_test_wait(bar.at(0), token).cast::<u64>();
        nv::fence(Ordering::Acquire, Scope::Device);
        nv::fence(Ordering::Release, Scope::Cluster);
        nv::proxy_fence("async.shared::cta");
        nv::proxy_fence("alias");
        let s =
            nv::sreg(NvSreg::Smid) + nv::sreg(NvSreg::ClusterCtarank) + nv::clock64() + nv::sreg(NvSreg::GlobalTimer);
        let z = nv::sreg(NvSreg::Warpsize) + nv::dynamic_smem_size().cast::<u64>() + nv::sreg(NvSreg::LanemaskGe);
        out.set(t, x.cast::<u64>() + y.cast::<u64>() + ok + s + z);
        block::sync();
        if_(t.eq(0), || nv::mbarrier_inval(bar.at(0)));
    });
    let elect_line = line_of("nv::elect(); // ELECT");
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m = lower_kernel_sm(&ir, 90).unwrap();
    assert!(m.text.contains(".version 8.6"), "split fences need PTX 8.6:\n{}", m.text);
    for needle in
        ["match.sync.all.b32", "elect.sync", "redux.sync.add.u32", "redux.sync.min.s32", "mbarrier.try_wait.parity"]
    {
        assert!(m.text.contains(needle), "{needle}");
    }
    assemble("nv_families", &m.text, 90);
    for target in [PtxTarget::arch_specific(90), PtxTarget::arch_specific(100)] {
        let m = lower_kernel(&ir, &target).unwrap();
        assert!(m.text.contains(&format!(".target {target}\n")), "{target}");
        assert_eq!(version_of(&m.text), "8.6", "{target}: split fences need PTX 8.6");
        assemble_for("nv_families", &m.text, target);
    }
    // sm_80 lacks elect.sync (the first sm_90-only op): the error names the op, the user's line,
    // the feature and the SM it needs.
    let e = lower_kernel_sm(&ir, 80).unwrap_err();
    assert!(e.message.contains("requires .target sm_90"), "{e}");
    assert!(e.message.contains("target is sm_80"), "{e}");
    assert!(e.message.contains("elect.sync"), "{e}");
    assert_eq!(e.op, "nv.elect");
    assert_eq!(e.kernel, "nv_families");
    assert_eq!(e.loc.file, file!());
    assert_eq!(e.loc.line, elect_line);
}

/// The 1-based line of this file that holds `needle` (not counting the lookup itself).
fn line_of(needle: &str) -> u32 {
    let src = include_str!("ptx_lower.rs");
    let at = src.lines().position(|l| l.contains(needle) && !l.contains("line_of("));
    at.map(|i| i as u32 + 1).unwrap_or_else(|| panic!("no line holds {needle:?}"))
}

/// The body lines of a module, without their indentation.
fn lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).collect()
}

/// Whether `text` holds the consecutive lines `want`.
fn has_run(text: &str, want: &[&str]) -> bool {
    lines(text).windows(want.len()).any(|w| w == want)
}

#[test]
fn seq_cst_and_ordered_memory_follow_d6() {
    use qd::ir::{AtomicOp, LoadKind, Ordering, Scope, StoreKind};
    let modules = check(&Kernel::explicit("orderings", 64, |k| {
        let a = k.array::<u32>("a");
        let f = k.array::<f32>("f");
        let t = block::thread_idx();
        let old = atomic_rmw(a.at(0), AtomicOp::Add, 1u32, Ordering::SeqCst, Scope::Device);
        atomic_rmw(a.at(1), AtomicOp::Add, old, Ordering::Release, Scope::Block); // unused: red
        atomic_rmw(a.at(2), AtomicOp::Add, old, Ordering::Acquire, Scope::Device); // unused, acquire: atom _
        atomic_rmw(a.at(3), AtomicOp::Exchange, old, Ordering::Relaxed, Scope::Device); // unused exch: atom _
        atomic_rmw(a.at(4), AtomicOp::Mul, 3u32, Ordering::SeqCst, Scope::System); // CAS loop
        atomic_rmw(f.at(0), AtomicOp::Max, 1.0f32, Ordering::AcqRel, Scope::Block); // CAS loop
        let v = a.at(5).load_with(LoadKind::Ordered(Ordering::SeqCst, Scope::Device));
        a.at(6).store_with(v, StoreKind::Ordered(Ordering::SeqCst, Scope::Block));
        let w = a.at(7).load_with(LoadKind::Ordered(Ordering::Relaxed, Scope::Thread));
        a.at(t).store_with(w, StoreKind::Ordered(Ordering::Relaxed, Scope::System));
    }));
    for (target, text) in &modules {
        let l = lines(text);
        let at = |needle: &str| {
            l.iter().position(|x| x.starts_with(needle)).unwrap_or_else(|| panic!("{target}: {needle}\n{text}"))
        };
        assert_eq!(l[at("atom.acquire.add.u32.global") - 1], "fence.sc.gpu;", "{target}");
        at("red.release.cta.add.u32.global [");
        at("atom.acquire.add.u32.global _, [");
        at("atom.exch.b32.global _, [");
        // seq_cst CAS loop (the IR rewrite): one fence before the loop, an acq_rel CAS inside.
        let cas = at("atom.acq_rel.sys.cas.b32.global");
        let fence = at("fence.sc.sys;");
        assert!(fence < cas && l[fence..cas].iter().any(|x| x.starts_with("$L_loop")), "{target}");
        assert_eq!(l.iter().filter(|x| x.starts_with("fence.sc.sys")).count(), 1, "{target}");
        at("atom.acq_rel.cta.cas.b32.global");
        assert_eq!(l[at("ld.acquire.gpu.global.u32") - 1], "fence.sc.gpu;", "{target}");
        assert_eq!(l[at("st.release.cta.global.u32") - 1], "fence.sc.cta;", "{target}");
        at("ld.relaxed.cta.global.u32");
        at("st.relaxed.sys.global.u32");
    }
}

#[test]
fn fences_fall_back_and_set_the_version() {
    use qd::ir::{Ordering, Scope};
    let k = Kernel::explicit("fences", 32, |k| {
        let a = k.array::<u32>("a");
        a.set(0, 1u32);
        qd::nv::fence(Ordering::Acquire, Scope::Device);
        qd::nv::fence(Ordering::Release, Scope::Block);
        qd::nv::fence(Ordering::SeqCst, Scope::Thread); // prints nothing
        qd::nv::fence(Ordering::AcqRel, Scope::System);
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m80 = lower_kernel_sm(&ir, 80).unwrap();
    assert_eq!(version_of(&m80.text), "7.0");
    assert!(has_run(&m80.text, &["fence.acq_rel.gpu;", "fence.acq_rel.cta;", "fence.acq_rel.sys;"]), "{}", m80.text);
    assemble("fences", &m80.text, 80);
    let m90 = lower_kernel_sm(&ir, 90).unwrap();
    assert_eq!(version_of(&m90.text), "8.6", "split fences need PTX 8.6");
    assert!(has_run(&m90.text, &["fence.acquire.gpu;", "fence.release.cta;", "fence.acq_rel.sys;"]), "{}", m90.text);
    assemble("fences", &m90.text, 90);
    let m90a = lower_kernel(&ir, &PtxTarget::arch_specific(90)).unwrap();
    assert!(m90a.text.contains(".version 8.6\n.target sm_90a\n.address_size 64\n"), "{}", m90a.text);
    assemble_for("fences", &m90a.text, PtxTarget::arch_specific(90));
}

#[test]
fn version_is_the_highest_floor_of_target_and_features() {
    use qd::ir::NvSreg;
    let plain = Kernel::explicit("plain", 32, |k| {
        let a = k.array::<u32>("a");
        a.set(block::thread_idx(), 1u32);
    });
    let ir = plain.trace(&Target::cpu(32)).unwrap();
    for (target, v) in [
        (PtxTarget::sm(80), "7.0"),
        (PtxTarget::sm(86), "7.1"),
        (PtxTarget::sm(90), "7.8"),
        (PtxTarget::arch_specific(90), "8.0"),
        (PtxTarget::sm(100), "8.6"),
        (PtxTarget::arch_specific(100), "8.6"),
        (PtxTarget::sm(120), "8.7"),
    ] {
        assert_eq!(version_of(&lower_kernel(&ir, &target).unwrap().text), v, "{target}");
    }
    // Features raise it: cluster registers (7.8), expect_tx (8.0).
    let k = Kernel::explicit("features", 32, |k| {
        let a = k.array::<u64>("a");
        let bar = block::shared_array::<u64>(1);
        a.set(0, qd::nv::sreg(NvSreg::ClusterCtarank));
        qd::nv::mbarrier_expect_tx(bar.at(0), 16u32);
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m = lower_kernel_sm(&ir, 90).unwrap();
    assert_eq!(version_of(&m.text), "8.0");
    assemble("features", &m.text, 90);
    assert_eq!(version_of(&lower_kernel(&ir, &PtxTarget::arch_specific(100)).unwrap().text), "8.6");
}

#[test]
fn cluster_scope_is_gated_at_the_users_line() {
    use qd::ir::{AtomicOp, Ordering, Scope};
    let k = Kernel::explicit("cluster", 32, |k| {
        let a = k.array::<u32>("a");
        let old = atomic_rmw(a.at(0), AtomicOp::Add, 1u32, Ordering::Relaxed, Scope::Cluster); // CLUSTER
        a.set(1, old);
    });
    let line = line_of("Scope::Cluster); // CLUSTER");
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m = lower_kernel_sm(&ir, 90).unwrap();
    assert!(m.text.contains("atom.relaxed.cluster.add.u32.global"), "{}", m.text);
    assemble("cluster", &m.text, 90);
    let e = lower_kernel_sm(&ir, 80).unwrap_err();
    assert_eq!((e.op.as_str(), e.loc.file, e.loc.line), ("atomic_add", file!(), line), "{e}");
    assert!(e.message.contains(".cluster scope requires .target sm_90"), "{e}");
}

#[test]
fn unknown_target_is_an_error_at_the_callers_line() {
    let k = Kernel::explicit("tiny", 32, |k| {
        let a = k.array::<u32>("a");
        a.set(0, 1u32);
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let e = lower_kernel(&ir, &PtxTarget::sm(101)).unwrap_err(); // UNKNOWN
    assert_eq!((e.op.as_str(), e.loc.file, e.loc.line), ("ptx.module", file!(), line_of("// UNKNOWN")), "{e}");
    assert!(e.message.contains("unknown PTX target sm_101"), "{e}");
    assert!(lower_kernel(&ir, &PtxTarget::arch_specific(80)).is_err(), "there is no sm_80a");
}

/// D34: an i32 index `x + c` (a small non-negative constant) is `x`'s address plus `c` elements
/// in a 64-bit add, which ptxas folds into the access; a negative constant stays in the 32-bit
/// index (it could wrap a negative `x` into range).
#[test]
fn constant_index_offsets_fold_into_the_address() {
    let k = Kernel::explicit("fold_offsets", 64, |k| {
        let a = k.array::<f32>("a");
        let t = block::thread_idx();
        let x = a.get(t + 3) + a.get(t + 64 + 1);
        a.set(t + 7, x);
        a.set(t + (-2), x);
    });
    for (target, text) in check(&k) {
        // `(t + 64) + 1` is one chain: t plus 65 elements.
        for bytes in [12, 260, 28] {
            assert!(text.contains(&format!(", {bytes};")), "{target}: no {bytes}-byte offset in\n{text}");
        }
        // The 32-bit sums feed no address (only the negative one does).
        let wide: Vec<&str> = text.lines().filter(|l| l.contains("mul.wide.s32")).collect();
        assert_eq!(wide.len(), 4, "{target}: {wide:?}");
        assert!(!text.contains(", -8;"), "{target}: a negative offset folded");
    }
    let hinted = Kernel::explicit("hinted", 384, |k| {
        let a = k.array::<u32>("a");
        a.set(block::thread_idx(), 1u32);
    })
    .min_blocks_per_sm(2);
    for (target, text) in check(&hinted) {
        assert!(text.contains(".maxntid 384, 1, 1\n.minnctapersm 2\n"), "{target}:\n{text}");
    }
}
