//! Whole kernels lowered to SPIR-V for Vulkan (8- and 32-lane subgroups, the Vulkan and the
//! GLSL450 memory model) and validated by `spirv-val --target-env vulkan1.1` (D9).

use qd::backend::spirv::{lower_kernel, ParamAbi, SpirvCaps, SpirvModule, SpirvTarget};
use qd::backend::{BackendKind, Target};
use qd::prelude::*;
use std::path::PathBuf;
use std::process::Command;

/// How to install spirv-val.
const SPIRV_VAL_INSTALL: &str = "apt-get install spirv-tools (Debian), or set SPIRV_VAL to a spirv-val binary";

/// spirv-val from `$SPIRV_VAL`, else PATH. `None` only when `QD_SKIP_SPIRV_VAL=1`; otherwise a
/// missing spirv-val fails the test with the install command (D9).
fn spirv_val() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("SPIRV_VAL") {
        Some(p) => vec![PathBuf::from(p)],
        None => std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join("spirv-val")).collect())
            .unwrap_or_default(),
    };
    if let Some(found) = candidates.into_iter().find(|p| p.is_file()) {
        return Some(found);
    }
    if std::env::var("QD_SKIP_SPIRV_VAL").as_deref() == Ok("1") {
        eprintln!("spirv-val not found: skipped (QD_SKIP_SPIRV_VAL=1)");
        return None;
    }
    panic!("spirv-val is needed to validate SPIR-V (D9) but was not found. Install it with: {SPIRV_VAL_INSTALL}; QD_SKIP_SPIRV_VAL=1 skips");
}

/// Validates a module, failing the test with spirv-val's message and the disassembly.
fn validate(name: &str, words: &[u32]) {
    let Some(val) = spirv_val() else { return };
    let dir = std::env::temp_dir().join(format!("qd-spirv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.spv"));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new(&val)
        .args(["--target-env", "vulkan1.1"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", val.display()));
    if !out.status.success() {
        let dis = Command::new(val.with_file_name("spirv-dis")).arg(&file).output().ok();
        let dis = dis.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        panic!(
            "spirv-val rejected {name}:\n{}{}\n---\n{dis}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The target to trace for a Vulkan device (`Target::vulkan` once the runtime switches to this
/// lowering; the two agree field for field).
fn vulkan(subgroup_size: u32, caps: &SpirvCaps) -> Target {
    SpirvTarget { subgroup_size, caps: caps.clone() }.trace_target()
}

/// Lowers `k` for 8- and 32-lane subgroups with lavapipe's caps and validates each module.
fn check(k: &Kernel) -> Vec<SpirvModule> {
    check_with(k, &SpirvCaps::lavapipe())
}

/// Lowers `k` for 8- and 32-lane subgroups with `caps` and validates each module; also without
/// the Vulkan memory model (GLSL450) when `caps` has it. Returns the modules for `caps`.
fn check_with(k: &Kernel, caps: &SpirvCaps) -> Vec<SpirvModule> {
    if caps.vulkan_memory_model {
        lower_and_validate(k, &SpirvCaps { vulkan_memory_model: false, ..caps.clone() });
    }
    lower_and_validate(k, caps)
}

fn lower_and_validate(k: &Kernel, caps: &SpirvCaps) -> Vec<SpirvModule> {
    let model = if caps.vulkan_memory_model { "vulkan" } else { "glsl450" };
    let mut out = Vec::new();
    for sg in [8, 32] {
        let ir = k.trace(&vulkan(sg, caps)).unwrap_or_else(|e| panic!("{e}"));
        let target = SpirvTarget { subgroup_size: sg, caps: caps.clone() };
        let m = lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.entry, k.name());
        assert_eq!(m.workgroup_size, k.block_dim());
        assert_eq!(m.params.len(), ir.params.len());
        assert_eq!(m.words, lower_kernel(&ir, &target).unwrap().words, "lowering is deterministic");
        validate(&format!("{}_sg{sg}_{model}", k.name()), &m.words);
        out.push(m);
    }
    out
}

#[test]
fn smoke() {
    check(&Kernel::range("smoke", 64, |k| {
        let a = k.array::<f32>("a");
        let b = k.array::<i32>("b");
        let s = k.scalar::<f32>("s");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, a.get(i) * s + 1.0f32);
            b.set(i, b.get(i) / 3 + i);
        });
    }));
}

#[test]
fn arithmetic_of_every_dtype_validates() {
    macro_rules! arith {
        ($name:ident, $t:ty) => {
            check(&Kernel::range(stringify!($name), 64, |k| {
                let a = k.array::<$t>("a");
                let b = k.array::<$t>("b");
                k.parallel_for(0, a.len(), |i| {
                    let x = a.get(i);
                    let y = b.get(i);
                    let s = (x + y) * x - y / (y + Val::constant(<$t as Num>::ONE));
                    let m = s.min(x).max(y);
                    let c = select(x.lt(y), m, s);
                    b.set(i, c);
                    a.set(i, x.cast::<f32>().cast::<$t>() + (x % y));
                    let z = x.cast::<i64>().cast::<u8>().cast::<$t>() + x.cast::<f64>().cast::<$t>();
                    let w = x.cast::<i8>().cast::<$t>() + x.cast::<u16>().cast::<$t>() + x.cast::<u64>().cast::<$t>();
                    let f = x.eq(y) | x.ne(y) | x.ge(y) | x.le(y) | x.gt(y) | x.cast::<bool>();
                    b.set(i + 1, select(f, z, w));
                });
            }));
        };
    }
    arith!(arith_i8, i8);
    arith!(arith_u8, u8);
    arith!(arith_i16, i16);
    arith!(arith_u16, u16);
    arith!(arith_i32, i32);
    arith!(arith_u32, u32);
    arith!(arith_i64, i64);
    arith!(arith_u64, u64);
    arith!(arith_f32, f32);
    arith!(arith_f64, f64);
    arith!(arith_f16, F16);
    arith!(arith_bf16, BF16);
}

#[test]
fn bits_shifts_casts_and_specials_validate() {
    check(&Kernel::explicit("bits", 128, |k| {
        let a = k.array::<u32>("a");
        let f = k.array::<f64>("f");
        let flags = k.array::<bool>("flags");
        let h = k.array::<F16>("h");
        let n = k.scalar::<i64>("n");
        let on = k.scalar::<bool>("on");
        let s8 = k.scalar::<i8>("s8");
        let sf = k.scalar::<f64>("sf");
        let t = block::thread_idx();
        let g = block::global_thread_idx();
        let x = a.get(t);
        let y = (x << (t.cast::<u32>() + 3u32)) ^ (x >> 7u32) | !x & x.popc() | x.clz();
        let w = n.cast::<u64>() >> 65u64;
        let z = (n << 3i64) >> 1i64;
        let q = w.popc() + w.clz() + (-n).abs().cast::<u32>() + s8.abs().cast::<u32>() + (!s8).cast::<u32>();
        a.set(t, y + q + z.cast::<u32>() + block::block_idx().cast::<u32>() + block::grid_dim().cast::<u32>());
        f.set(g, fma(f.get(t), 2.0f64, f.get(t).sqrt()) + (-f.get(t)).abs() + (f.get(t) % 3.0f64) + sf);
        flags.set(t, flags.get(t) & on | x.cast::<bool>() ^ !flags.get(t + 1));
        let hv = h.get(t);
        h.set(t, fma(hv, hv, -hv).sqrt().abs() + bit_cast::<i16, F16>(bit_cast::<F16, i16>(hv)));
        let lane = subgroup::invocation_id();
        a.set(t, lane.cast::<u32>() + block::block_dim().cast::<u32>() + bit_cast::<f32, u32>(f.get(0).cast::<f32>()));
    }));
}

#[test]
fn control_flow_validates() {
    check(&Kernel::range("control", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| {
            let acc = var(0i32);
            for_range(0, i, |j| {
                if_((j % 2).eq(1), continue_);
                if_(j.gt(20), break_);
                acc.set(acc.get() + j);
            });
            if_else(acc.get().gt(10), || a.set(i, acc.get()), || a.set(i, -acc.get()));
            while_(|| acc.get().gt(100), || acc.set(acc.get() / 2));
            loop_(|| {
                acc.set(acc.get() + 1);
                if_else(acc.get().gt(3), break_, continue_);
            });
            if_(acc.get().eq(7), return_);
            a.set(i, acc.get());
        });
    }));
    check(&Kernel::explicit("early_return", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.ge(a.len()), return_);
        if_else(t.eq(3), return_, return_);
        a.set(t, t);
    }));
    check(&Kernel::explicit("nested_loops", 64, |k| {
        let a = k.array::<u32>("a");
        let t = block::thread_idx();
        let n = var(0u32);
        loop_(|| {
            for_range(0u32, 4u32, |j| {
                if_(j.eq(2), break_);
                n.set(n.get() + j);
            });
            if_(n.get().gt(50u32), break_);
            if_(n.get().eq(7u32), || {
                n.set(n.get() + 1u32);
                continue_();
            });
        });
        a.set(t, n.get());
    }));
}

#[test]
fn memory_kinds_shared_local_and_atomics_validate() {
    use qd::ir::{AtomicOp, LoadKind, Ordering, Scope, StoreKind};
    let modules = check(&Kernel::explicit("memory", 64, |k| {
        let a = k.array::<i32>("a");
        let u = k.array::<u64>("u");
        let f = k.array::<f32>("f");
        let d = k.array::<f64>("d");
        let s = block::shared_array::<i32>(64);
        let sf = block::shared_array::<f32>(64);
        let sd = block::shared_array::<f64>(8);
        let l = local_array::<i32>(4);
        let lf = local_array::<F16>(4);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        block::sync();
        l.set(t % 4, s.get(63 - t));
        lf.set(t % 4, F16::from_f32(1.5));
        let v = volatile_load(a.at(0)) + l.get(1) + volatile_load(s.at(1)) + lf.get(2).cast::<i32>();
        let w = a.at(1).load_with(LoadKind::Ordered(Ordering::Acquire, Scope::Device));
        a.at(2).store_with(v + w, StoreKind::Ordered(Ordering::Release, Scope::Block));
        let x = s.at(3).load_with(LoadKind::Ordered(Ordering::SeqCst, Scope::Block));
        s.at(4).store_with(x, StoreKind::Ordered(Ordering::Relaxed, Scope::Subgroup));
        let y = u.at(5).load_with(LoadKind::Ordered(Ordering::Acquire, Scope::System));
        u.at(6).store_with(y, StoreKind::Ordered(Ordering::SeqCst, Scope::Device));
        u.at(7).store_with(y, StoreKind::Volatile);
        sd.at(7).store_with(volatile_load(sd.at(6)), StoreKind::Volatile);
        let old = atomic_add(a.at(3), 1);
        atomic_add(a.at(4), old);
        atomic_sub(u.at(0), 5u64);
        atomic_max(u.at(1), t.cast::<u64>());
        atomic_min(a.at(5), t);
        atomic_and(u.at(2), 0xFFu64);
        atomic_or(a.at(6), t);
        atomic_xor(a.at(7), t);
        atomic_mul(a.at(8), 3);
        atomic_add(f.at(0), 1.5f32);
        atomic_max(f.at(1), 2.0f32);
        atomic_min(f.at(3), 2.0f32);
        atomic_mul(f.at(4), 2.0f32);
        atomic_add(d.at(0), 1.0f64);
        atomic_min(d.at(1), 0.5f64);
        atomic_exchange(f.at(2), 4.0f32);
        atomic_exchange(d.at(2), 4.0f64);
        atomic_cas(u.at(3), 0u64, 1u64);
        atomic_cas_with(a.at(9), 0, 1, Ordering::SeqCst, Scope::Device);
        atomic_rmw(a.at(10), AtomicOp::Add, 1, Ordering::AcqRel, Scope::System);
        atomic_rmw(a.at(11), AtomicOp::Mul, 3, Ordering::Acquire, Scope::Thread);
        atomic_rmw(f.at(5), AtomicOp::Max, 1.0f32, Ordering::Release, Scope::Block);
        atomic_add(s.at(0), 1);
        atomic_add(sf.at(0), 1.0f32);
        atomic_max(sf.at(1), 1.0f32);
        atomic_add(sd.at(0), 1.0f64);
        atomic_exchange(sf.at(2), 1.0f32);
        atomic_add(l.at(0), 1);
        atomic_max(lf.at(0), F16::from_f32(2.0));
        atomic_cas(l.at(1), 0, 1);
        block::mem_fence();
        grid::mem_fence();
        subgroup::mem_fence();
    }));
    let m = &modules[0];
    assert_eq!(m.shared_bytes, 64 * 4 + 64 * 4 + 8 * 8);
    let bindings: Vec<u32> = m
        .params
        .iter()
        .map(|p| match p {
            ParamAbi::Array { binding, .. } => *binding,
            ParamAbi::Scalar { .. } => 0,
        })
        .collect();
    assert_eq!(bindings, [1, 2, 3, 4]);
}

#[test]
fn narrow_and_half_atomics_validate() {
    check(&Kernel::explicit("narrow_atomics", 64, |k| {
        let b = k.array::<i8>("b");
        let ub = k.array::<u8>("ub");
        let h = k.array::<i16>("h");
        let uh = k.array::<u16>("uh");
        let f = k.array::<F16>("f");
        let g = k.array::<BF16>("g");
        let flags = k.array::<bool>("flags");
        let out = k.array::<i32>("out");
        let idx = k.scalar::<u64>("idx");
        let sb = block::shared_array::<u8>(64);
        let sg = block::shared_array::<BF16>(64);
        let si = block::shared_array::<i8>(64);
        let sflag = block::shared_array::<bool>(64);
        let t = block::thread_idx();
        let x = atomic_add(b.at(t), 1i8) + atomic_max(b.at(1), -3i8) + atomic_cas(b.at(2), 0i8, 1i8);
        let y = atomic_add(ub.at(t), 200u8) + atomic_min(ub.at(1), 7u8) + atomic_exchange(ub.at(2), 9u8);
        atomic_xor(h.at(t), 0x55i16);
        let z = atomic_cas(h.at(1), 3i16, 4i16).cast::<i32>()
            + (atomic_mul(uh.at(0), 3u16) + atomic_or(uh.at(1), 1u16)).cast::<i32>();
        atomic_add(f.at(t), F16::from_f32(0.5));
        let w = atomic_max(f.at(1), F16::from_f32(2.0)).cast::<i32>()
            + atomic_add(g.at(t), BF16::from_f32(1.0)).cast::<i32>()
            + atomic_exchange(f.at(idx), F16::from_f32(3.0)).cast::<i32>();
        atomic_add(sb.at(t), 1u8);
        atomic_add(sg.at(t), BF16::from_f32(1.0));
        atomic_and(si.at(t), -2i8);
        atomic_max(si.at(1), 5i8);
        atomic_cas(si.at(2), 1i8, -1i8);
        atomic_exchange(sg.at(3), BF16::from_f32(2.0));
        sflag.set(t, flags.get(t));
        flags.set(t + 1, sflag.get(63 - t));
        flags.at(0).store_with(true, qd::ir::StoreKind::Ordered(qd::ir::Ordering::Release, qd::ir::Scope::Device));
        let fl = flags.at(1).load_with(qd::ir::LoadKind::Ordered(qd::ir::Ordering::Acquire, qd::ir::Scope::Device));
        let v = x.cast::<i32>() + y.cast::<i32>() + z + w + fl.cast::<i32>();
        out.set(t, v + sb.get(0).cast::<i32>() + sg.get(0).cast::<i32>() + volatile_load(b.at(3)).cast::<i32>());
        // Volatile stores: narrow device elements, bool, shared cells, 32-bit device elements.
        let vol = qd::ir::StoreKind::Volatile;
        b.at(4).store_with(-1i8, vol);
        flags.at(2).store_with(true, vol);
        sb.at(5).store_with(3u8, vol);
        out.at(0).store_with(v, vol);
        f.at(5).store_with(F16::from_f32(1.0), vol);
    }));
}

#[test]
fn subgroup_and_block_collectives_validate() {
    check(&Kernel::range("collectives", 64, |k| {
        let a = k.array::<i32>("a");
        let b = k.array::<f64>("b");
        let m = k.array::<u64>("m");
        let c = k.array::<u32>("c");
        let which = k.scalar::<u32>("which");
        k.parallel_for(0, a.len(), |i| {
            let x = a.get(i);
            let s = subgroup::shuffle(x, 3u32) + subgroup::shuffle_up(x, 1u32) + subgroup::shuffle_down(x, 2u32);
            let y = subgroup::shuffle_xor(b.get(i), 1u32) + subgroup::broadcast_first(b.get(i));
            let z = subgroup::broadcast(m.get(i), which) + subgroup::broadcast(m.get(i), 5u32);
            let lane = subgroup::invocation_id().cast::<u32>();
            let v = subgroup::shuffle(m.get(i), lane ^ 1u32) + subgroup::shuffle(c.get(i), lane + 100u32).cast::<u64>();
            a.set(
                i,
                s + subgroup::all_true(x.gt(0))
                    + subgroup::any_true(x)
                    + subgroup::ballot_first_n(x.gt(2), 8).cast::<i32>(),
            );
            b.set(i, y);
            m.set(i, subgroup::ballot(x.lt(0)) + z + v);
            subgroup::sync();
            let cnt = block::sync_count_nonzero(x) + block::sync_all_nonzero(x) + block::sync_any_nonzero(x);
            a.set(i, cnt);
            block::sync();
        });
    }));
}

#[test]
fn subgroup_library_validates() {
    check(&Kernel::range("subgroup_library", 64, |k| {
        let a = k.array::<i32>("a");
        let f = k.array::<f32>("f");
        let d = k.array::<f64>("d");
        let u = k.array::<u64>("u");
        let keys = k.array::<u32>("keys");
        k.parallel_for(0, a.len(), |i| {
            let x = a.get(i);
            let y = f.get(i);
            let log2 = subgroup::log2_group_size();
            let r = subgroup::reduce_add(x)
                + subgroup::reduce_min(x)
                + subgroup::reduce_max_tiled(x, 2)
                + subgroup::reduce_all_add(x)
                + subgroup::reduce_all_min_tiled(x, log2)
                + subgroup::segmented_reduce_add(x, x.gt(3))
                + subgroup::segmented_reduce_max_tiled(x, x.lt(0), 3)
                + subgroup::inclusive_add(x)
                + subgroup::inclusive_mul_tiled(x, 1)
                + subgroup::inclusive_and(x)
                + subgroup::inclusive_or_tiled(x, 2)
                + subgroup::inclusive_xor(x)
                + subgroup::exclusive_add(x)
                + subgroup::exclusive_min(x)
                + subgroup::exclusive_max_tiled(x, 3)
                + subgroup::exclusive_xor(x)
                + subgroup::all_equal(x)
                + subgroup::all_true_tiled(x.gt(0), 2)
                + subgroup::any_true_tiled(x, 3)
                + subgroup::elect();
            a.set(i, r);
            f.set(
                i,
                subgroup::reduce_all_max(y) + subgroup::inclusive_min(y) + subgroup::segmented_reduce_min(y, x.gt(0)),
            );
            d.set(i, subgroup::reduce_all_add(d.get(i)) + subgroup::exclusive_mul(d.get(i)));
            u.set(i, subgroup::inclusive_add(u.get(i)) + subgroup::ballot(x.gt(1)));
            let lane = subgroup::invocation_id();
            let m = subgroup::lanemask_lt(lane)
                + subgroup::lanemask_le(lane)
                + subgroup::lanemask_eq(lane)
                + subgroup::lanemask_gt(lane)
                + subgroup::lanemask_ge(lane);
            let (sk, sv) = subgroup::bitonic_sort_kv(keys.get(i), y);
            let (tk, tv) = subgroup::bitonic_sort_kv_tiled(y, x, 2);
            keys.set(i, sk + m + tv.cast::<u32>());
            f.set(i + 1, sv + tk);
        });
    }));
}

#[test]
fn block_algorithms_validate() {
    check(&Kernel::range("block_algorithms", 256, |k| {
        let a = k.array::<f32>("a");
        let keys = k.array::<u32>("keys");
        let r = k.array::<i32>("r");
        let d = k.array::<f64>("d");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            a.set(i, block::reduce_all_add(v, 256) + block::inclusive_max(v, 256) + block::exclusive_min(v, 256));
            d.set(i, block::reduce_add(d.get(i), 256) + block::exclusive_add(d.get(i), 256));
            let x = r.get(i);
            let c = block::sync_count_nonzero(x) + block::sync_all_nonzero(x - 2) + block::sync_any_nonzero(x);
            let red = block::reduce(x, 256, |p, q| p ^ q) + block::reduce_all(x, 256, |p, q| p.max(q));
            let scans = block::inclusive_scan(x, 256, |p, q| p + q) + block::exclusive_scan(x, 256, |p, q| p | q, 0);
            r.set(i, keys.get(i).cast::<i32>() + c + red + scans);
        });
    }));
    check(&Kernel::range("radix_rank", 128, |k| {
        let keys = k.array::<u32>("keys");
        let r = k.array::<i32>("r");
        k.parallel_for(0, keys.len(), |i| {
            let bins = block::shared_array::<i32>(128);
            let excl = block::shared_array::<i32>(128);
            r.set(i, block::radix_rank_match_atomic_or(keys.get(i), 128, 7, 3, 7, bins, excl));
        });
    }));
}

/// Lowering `ir` for `sg` lanes fails; returns the error.
fn rejected(ir: &qd::ir::Kernel, sg: u32, caps: SpirvCaps) -> qd::trace::TraceError {
    match lower_kernel(ir, &SpirvTarget { subgroup_size: sg, caps }) {
        Ok(_) => panic!("{} should not lower", ir.name),
        Err(e) => {
            assert!(e.message.contains("vulkan"), "the message names the backend: {e}");
            assert_eq!(e.kernel, ir.name);
            e
        }
    }
}

#[test]
fn the_vulkan_trace_target_has_the_spirv_capabilities() {
    let caps = SpirvCaps { float64: false, int64_atomics: false, max_shared_bytes: 48 * 1024, ..SpirvCaps::lavapipe() };
    let t = vulkan(16, &caps);
    assert_eq!((t.backend, t.subgroup_size), (BackendKind::Vulkan, 16));
    assert!(!t.caps.nv && !t.caps.vote_shortcut && !t.caps.redux && !t.caps.barrier_reduce);
    assert!(t.caps.uniform_broadcast_lane);
    assert!(!t.caps.f64 && !t.caps.atomic_i64);
    assert_eq!(t.caps.max_shared_bytes, 48 * 1024);
}

#[test]
fn nvidia_only_operations_are_rejected_naming_vulkan() {
    let k = Kernel::explicit("nv_on_vulkan", 32, |k| {
        let out = k.array::<u32>("out");
        let t = block::thread_idx();
        let (leader, _) = qd::nv::elect(); // ELECT
        out.set(t, leader);
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let e = rejected(&ir, 32, SpirvCaps::lavapipe());
    assert_eq!(e.op, "nv.elect");
    assert_eq!((e.loc.file, e.loc.line), (file!(), line_of("qd::nv::elect(); // ELECT")));
    let k = Kernel::explicit("nv_sreg_on_vulkan", 32, |k| {
        let out = k.array::<u64>("out");
        out.set(block::thread_idx(), qd::nv::clock64());
    });
    let e = rejected(&k.trace(&Target::cpu(32)).unwrap(), 32, SpirvCaps::lavapipe());
    assert!(e.op.starts_with("special.nv"), "{e}");
}

#[test]
fn fused_barrier_reductions_are_rejected_and_emulated_for_vulkan() {
    let k = Kernel::explicit("count_nonzero", 64, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, block::sync_count_nonzero(a.get(t)));
    });
    // Traced for CUDA (a fused bar.red): SPIR-V has no such barrier.
    let e = rejected(&k.trace(&Target::cuda(90)).unwrap(), 32, SpirvCaps::lavapipe());
    assert_eq!(e.op, "block.sync_count_nonzero");
    assert!(e.message.contains("fused"), "{e}");
    // Traced for Vulkan, the library emulates it with shared memory and plain barriers.
    check(&k);
}

#[test]
fn b128_and_packed_values_are_rejected() {
    let k = Kernel::explicit("wide", 32, |k| {
        let a = k.array::<u64>("a");
        let b = k.array::<u64>("b");
        let t = block::thread_idx();
        b.set(t, a.get(t));
    });
    for wide in [qd::ir::DType::B128, qd::ir::DType::F16x2] {
        let mut ir = k.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
        for p in &mut ir.params {
            if let qd::ir::Param::Array { dtype, .. } = p {
                *dtype = wide;
            }
        }
        for v in &mut ir.values {
            if *v == qd::ir::DType::U64 {
                *v = wide;
            }
        }
        let e = rejected(&ir, 8, SpirvCaps::lavapipe());
        assert!(e.message.contains("b128 and packed"), "{e}");
    }
}

#[test]
fn what_the_device_lacks_is_rejected() {
    let f64_kernel = Kernel::explicit("doubles", 32, |k| {
        let a = k.array::<f64>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) * 2.0f64);
    });
    let no_f64 = SpirvCaps { float64: false, ..SpirvCaps::lavapipe() };
    let ir = f64_kernel.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    assert!(rejected(&ir, 8, no_f64).message.contains("shaderFloat64"));

    let bytes = Kernel::explicit("bytes", 32, |k| {
        let a = k.array::<u8>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) + 1u8);
    });
    let ir = bytes.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int8_storage: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("storageBuffer8BitAccess"), "{e}");
    let halves = Kernel::explicit("halves", 32, |k| {
        let a = k.array::<F16>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) + F16::from_f32(1.0));
    });
    let ir = halves.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int16_storage: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("storageBuffer16BitAccess"), "{e}");
    // f16 needs no shaderFloat16: it is computed in f32.
    check_with(&halves, &SpirvCaps { float16: false, ..SpirvCaps::lavapipe() });

    let atomics64 = Kernel::explicit("atomics64", 32, |k| {
        let a = k.array::<u64>("a");
        atomic_cas_with(a.at(0), 0u64, 1u64, qd::ir::Ordering::Relaxed, qd::ir::Scope::Device);
    });
    let ir = atomics64.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int64_atomics: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("int64_atomics"), "{e}");

    // Shared arrays of elements below 32 bits take 32-bit cells.
    let shared = Kernel::explicit("shared_bytes", 32, |k| {
        let a = k.array::<u32>("a");
        let s = block::shared_array::<u8>(12 * 1024);
        let t = block::thread_idx();
        s.set(t, 1u8);
        block::sync();
        a.set(t, s.get(t).cast::<u32>());
    });
    let ir = shared.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps::lavapipe());
    assert_eq!(e.op, "block.shared_array");
    assert!(e.message.contains("49152 bytes"), "{e}");

    // The kernel must have been traced for the target's subgroup width.
    let e = rejected(&ir, 32, SpirvCaps::lavapipe());
    assert!(e.message.contains("8-lane"), "{e}");
}

#[test]
fn broadcast_needs_a_uniform_lane_on_vulkan() {
    let k = Kernel::explicit("varying_broadcast", 32, |k| {
        let a = k.array::<u32>("a");
        let t = block::thread_idx();
        a.set(t, subgroup::broadcast(a.get(t), a.get(t)));
    });
    let e = k.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap_err();
    assert!(e.message.contains("subgroup-uniform lane"), "{e}");
}

#[test]
fn the_abi_numbers_array_bindings_in_order() {
    let k = Kernel::explicit("abi", 32, |k| {
        let a = k.array::<f32>("a");
        let n = k.scalar::<u32>("n");
        let b = k.array::<bool>("b");
        let c = k.array::<i16>("c");
        let flag = k.scalar::<bool>("flag");
        let t = block::thread_idx();
        if_(t.cast::<u32>().lt(n) & flag, || {
            a.set(t, c.get(t).cast::<f32>());
            b.set(t, true);
        });
    });
    let m = &check(&k)[0];
    use qd::ir::DType::*;
    assert_eq!(
        m.params,
        [
            ParamAbi::Array { dtype: F32, binding: 1 },
            ParamAbi::Scalar { dtype: U32 },
            ParamAbi::Array { dtype: Bool, binding: 2 },
            ParamAbi::Array { dtype: I16, binding: 3 },
            ParamAbi::Scalar { dtype: Bool },
        ]
    );
    assert_eq!((m.workgroup_size, m.shared_bytes), (32, 0));
    assert_eq!(m.words[0], 0x0723_0203, "the SPIR-V magic number");
    assert_eq!(m.words[1], 0x0001_0300, "SPIR-V 1.3");
}

/// The 1-based line of this file that holds `needle` (not counting the lookup itself).
fn line_of(needle: &str) -> u32 {
    let src = include_str!("spirv_lower.rs");
    let at = src.lines().position(|l| l.contains(needle) && !l.contains("line_of("));
    at.map(|i| i as u32 + 1).unwrap_or_else(|| panic!("no line holds {needle:?}"))
}

/// One instruction of a lowered module, with its id operands resolved to constants where they
/// name one (scopes and memory semantics are constant ids).
#[derive(Debug)]
struct Seen {
    op: rspirv::spirv::Op,
    operands: Vec<rspirv::dr::Operand>,
    consts: Vec<Option<u32>>,
}

/// The module's memory model and the instructions of its function.
fn disassemble(words: &[u32]) -> (rspirv::spirv::MemoryModel, Vec<Seen>, rspirv::dr::Module) {
    use rspirv::dr::Operand;
    let m = rspirv::dr::load_words(words).expect("a parsable module");
    let mut consts = std::collections::HashMap::new();
    for i in &m.types_global_values {
        if let (rspirv::spirv::Op::Constant, Some(id), Some(Operand::LiteralBit32(v))) =
            (i.class.opcode, i.result_id, i.operands.first())
        {
            consts.insert(id, *v);
        }
    }
    let model = match m.memory_model.as_ref().map(|i| &i.operands[1]) {
        Some(Operand::MemoryModel(model)) => *model,
        other => panic!("no memory model: {other:?}"),
    };
    let seen = m.functions[0]
        .blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .map(|i| Seen {
            op: i.class.opcode,
            operands: i.operands.clone(),
            consts: i
                .operands
                .iter()
                .map(|o| match o {
                    Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) => {
                        consts.get(id).copied()
                    }
                    _ => None,
                })
                .collect(),
        })
        .collect();
    (model, seen, m)
}

/// The memory-access mask of an `OpLoad` (after the pointer) or `OpStore` (after the value).
fn access_mask(i: &Seen) -> rspirv::spirv::MemoryAccess {
    let at = if i.op == rspirv::spirv::Op::Load { 1 } else { 2 };
    match i.operands.get(at) {
        Some(rspirv::dr::Operand::MemoryAccess(m)) => *m,
        _ => rspirv::spirv::MemoryAccess::NONE,
    }
}

/// D6 under the Vulkan memory model: the block page's producer/consumer (a shared flag) and the
/// grid page's look-back (a device flag) with volatile spin-waits and fences, and volatile loads
/// with no native atomic. Without the model (GLSL450) the old form remains.
#[test]
fn fences_volatile_loads_and_plain_accesses_follow_the_vulkan_memory_model() {
    use rspirv::spirv::{MemoryAccess as A, MemoryModel, MemorySemantics as S, Op};
    let k = Kernel::explicit("d6_patterns", 64, |k| {
        let src = k.array::<i32>("src");
        let out = k.array::<i32>("out");
        let flags = k.array::<i32>("flags");
        let bytes = k.array::<u8>("bytes");
        let wide = k.array::<u64>("wide");
        let data = block::shared_array::<i32>(1);
        let flag = block::shared_array::<i32>(1);
        let t = block::thread_idx();
        if_else(
            t.eq(0),
            || {
                data.set(0, src.get(0));
                block::mem_fence();
                flag.set(0, 1);
                out.set(0, 1);
                grid::mem_fence();
                flags.set(0, 1);
            },
            || {
                while_(|| volatile_load(flag.at(0)).eq(0), || {});
                block::mem_fence();
                while_(|| volatile_load(flags.at(0)).eq(0), || {});
                grid::mem_fence();
                let x = volatile_load(bytes.at(t)).cast::<i32>() + volatile_load(wide.at(t)).cast::<i32>();
                out.set(t, data.get(0) + x);
            },
        );
        block::sync();
    });
    let no_i64_atomics = SpirvCaps { int64_atomics: false, ..SpirvCaps::lavapipe() };
    for caps in [SpirvCaps::lavapipe(), no_i64_atomics.clone()] {
        let m = &check_with(&k, &caps)[0];
        let (model, insts, module) = disassemble(&m.words);
        assert_eq!(model, MemoryModel::Vulkan);
        assert_eq!(m.words[1], 0x0001_0300, "SPIR-V 1.3 with SPV_KHR_vulkan_memory_model");
        assert!(module.annotations.iter().all(|a| !format!("{a:?}").contains("Coherent")), "no Coherent");
        // Fences (workgroup and device scope) and the block barrier: acquire-release with
        // availability and visibility on both storage classes.
        let full = S::ACQUIRE_RELEASE | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY | S::MAKE_AVAILABLE | S::MAKE_VISIBLE;
        let fences: Vec<_> =
            insts.iter().filter(|i| i.op == Op::MemoryBarrier).map(|i| (i.consts[0], i.consts[1])).collect();
        assert_eq!(fences.len(), 4);
        assert!(fences.contains(&(Some(2), Some(full.bits()))) && fences.contains(&(Some(1), Some(full.bits()))));
        let barriers: Vec<_> = insts.iter().filter(|i| i.op == Op::ControlBarrier).map(|i| i.consts.clone()).collect();
        assert_eq!(barriers, [vec![Some(2), Some(2), Some(full.bits())]]);
        // Spin-waits: volatile atomics at the array's scope, an acquire on shared memory
        // (workgroup), relaxed on device memory.
        let atomics: Vec<_> =
            insts.iter().filter(|i| i.op == Op::AtomicLoad).map(|i| (i.consts[1], i.consts[2])).collect();
        let volatile = Some(S::VOLATILE.bits());
        let acquire = S::ACQUIRE | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY | S::MAKE_VISIBLE | S::VOLATILE;
        let mut want = vec![(Some(2), Some(acquire.bits())), (Some(1), volatile)];
        if caps.int64_atomics {
            want.push((Some(1), volatile));
        }
        assert_eq!(atomics, want);
        // Every other load and store of device or shared memory is non-private; the u8 (and the
        // u64 without 64-bit atomics) volatile loads are volatile, visible at device scope.
        let accesses: Vec<_> = insts.iter().filter(|i| matches!(i.op, Op::Load | Op::Store)).collect();
        let nonprivate = accesses.iter().filter(|i| access_mask(i) == A::NON_PRIVATE_POINTER).count();
        assert_eq!(nonprivate, 7, "{accesses:#?}");
        let vis = A::VOLATILE | A::MAKE_POINTER_VISIBLE | A::NON_PRIVATE_POINTER;
        let volatile_loads: Vec<_> = accesses.iter().filter(|i| access_mask(i) == vis).map(|i| i.consts[2]).collect();
        assert_eq!(volatile_loads, vec![Some(1); if caps.int64_atomics { 1 } else { 2 }]);
    }
    let glsl = SpirvCaps { vulkan_memory_model: false, ..SpirvCaps::lavapipe() };
    let m = &check_with(&k, &glsl)[0];
    let (model, insts, module) = disassemble(&m.words);
    assert_eq!(model, MemoryModel::GLSL450);
    assert!(module.annotations.iter().any(|a| format!("{a:?}").contains("Coherent")));
    assert!(insts.iter().all(|i| i.op != Op::AtomicLoad));
    assert_eq!(insts.iter().filter(|i| i.op == Op::Load && access_mask(i) == A::VOLATILE).count(), 4);
}
