//! Whole kernels lowered to PTX and assembled by ptxas 13.0 for sm_80 and sm_90 (D9).

use qd::backend::ptx::lower::lower_kernel_sm;
use qd::backend::Target;
use qd::prelude::*;
use std::path::PathBuf;
use std::process::Command;

/// ptxas from `$PTXAS`, else the workspace's `.tools/ptxas` (installed by scripts/test.sh).
fn ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/ptxas");
    local.exists().then_some(local)
}

fn assemble(name: &str, text: &str, sm: u32) {
    let Some(ptxas) = ptxas() else {
        if std::env::var("QD_SKIP_PTXAS").as_deref() == Ok("1") {
            eprintln!("skipped: ptxas not found (QD_SKIP_PTXAS=1)");
            return;
        }
        panic!("ptxas not found: set PTXAS or run `bash scripts/test.sh` (it installs the nvidia-cuda-nvcc==13.0.88 wheel's ptxas into .tools/); QD_SKIP_PTXAS=1 skips");
    };
    let dir = std::env::temp_dir().join(format!("qd-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}_sm{sm}.ptx"));
    std::fs::write(&file, text).unwrap();
    let out =
        Command::new(&ptxas).arg(format!("-arch=sm_{sm}")).arg(&file).arg("-o").arg("/dev/null").output().unwrap();
    assert!(
        out.status.success(),
        "ptxas rejected {name} for sm_{sm}:\n{}\n---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(k: &Kernel) {
    let ir = k.trace(&Target::cpu(32)).unwrap();
    for sm in [80, 90] {
        let m = lower_kernel_sm(&ir, sm).unwrap();
        assert!(m.text.contains(&format!(".target sm_{sm}")));
        assert_eq!(m.params.len(), ir.params.len());
        assert_eq!(m.entry, k.name());
        assert_eq!(m.text, lower_kernel_sm(&ir, sm).unwrap().text, "lowering is deterministic");
        assemble(k.name(), &m.text, sm);
    }
}

#[test]
fn arithmetic_of_every_dtype_assembles() {
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
                    a.set(i, x.cast::<f32>().cast::<$t>());
                    let _ = x.cast::<i64>().cast::<u8>().cast::<$t>();
                    let _ = x.eq(y) | x.ne(y) | x.ge(y);
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
fn bits_shifts_casts_and_specials_assemble() {
    check(&Kernel::explicit("bits", 128, |k| {
        let a = k.array::<u32>("a");
        let f = k.array::<f64>("f");
        let flags = k.array::<bool>("flags");
        let n = k.scalar::<i64>("n");
        let on = k.scalar::<bool>("on");
        let t = block::thread_idx();
        let g = block::global_thread_idx();
        let x = a.get(t);
        let y = (x << (t.cast::<u32>() + 3u32)) ^ (x >> 7u32) | !x & x.popc() | x.clz();
        let w = n.cast::<u64>() >> 65u64;
        let z = (n << 3i64) >> 1i64;
        a.set(
            t,
            y + w.cast::<u32>() + z.cast::<u32>() + block::block_idx().cast::<u32>() + block::grid_dim().cast::<u32>(),
        );
        f.set(g, fma(f.get(t), 2.0f64, f.get(t).sqrt()) + (-f.get(t)).abs() + (f.get(t) % 3.0f64));
        flags.set(t, flags.get(t) & on | x.cast::<bool>());
        let lane = subgroup::invocation_id();
        a.set(t, lane.cast::<u32>() + block::block_dim().cast::<u32>());
    }));
}

#[test]
fn control_flow_assembles() {
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
        });
    }));
    check(&Kernel::explicit("early_return", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.ge(a.len()), return_);
        a.set(t, t);
    }));
}

#[test]
fn memory_kinds_shared_local_and_atomics_assemble() {
    check(&Kernel::explicit("memory", 64, |k| {
        let a = k.array::<i32>("a");
        let u = k.array::<u64>("u");
        let f = k.array::<f32>("f");
        let d = k.array::<f64>("d");
        let s = block::shared_array::<i32>(64);
        let l = local_array::<i32>(4);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        block::sync();
        l.set(t % 4, s.get(63 - t));
        let v = volatile_load(a.at(0)) + l.get(1);
        let w = a.at(1).load_with(qd::ir::LoadKind::Ordered(qd::ir::Ordering::Acquire, qd::ir::Scope::Device));
        a.at(2).store_with(v + w, qd::ir::StoreKind::Ordered(qd::ir::Ordering::Release, qd::ir::Scope::Block));
        let old = atomic_add(a.at(3), 1);
        atomic_add(a.at(4), old); // result unused: red
        atomic_sub(u.at(0), 5u64);
        atomic_max(u.at(1), t.cast::<u64>());
        atomic_min(a.at(5), t);
        atomic_and(u.at(2), 0xFFu64);
        atomic_or(a.at(6), t);
        atomic_xor(a.at(7), t);
        atomic_mul(a.at(8), 3);
        atomic_add(f.at(0), 1.5f32);
        atomic_max(f.at(1), 2.0f32);
        atomic_add(d.at(0), 1.0f64);
        atomic_min(d.at(1), 0.5f64);
        atomic_exchange(f.at(2), 4.0f32);
        atomic_cas(u.at(3), 0u64, 1u64);
        atomic_cas_with(a.at(9), 0, 1, qd::ir::Ordering::SeqCst, qd::ir::Scope::Device);
        atomic_rmw(a.at(10), qd::ir::AtomicOp::Add, 1, qd::ir::Ordering::AcqRel, qd::ir::Scope::System);
        atomic_add(s.at(0), 1);
        atomic_add(l.at(0), 1);
        block::mem_fence();
        grid::mem_fence();
    }));
}

#[test]
fn subgroup_and_block_collectives_assemble() {
    check(&Kernel::range("collectives", 64, |k| {
        let a = k.array::<i32>("a");
        let b = k.array::<f64>("b");
        let m = k.array::<u64>("m");
        k.parallel_for(0, a.len(), |i| {
            let x = a.get(i);
            let s = subgroup::shuffle(x, 3u32) + subgroup::shuffle_up(x, 1u32) + subgroup::shuffle_down(x, 2u32);
            let y = subgroup::shuffle_xor(b.get(i), 1u32) + subgroup::broadcast_first(b.get(i));
            a.set(
                i,
                s + subgroup::all_true(x.gt(0))
                    + subgroup::any_true(x)
                    + subgroup::ballot_first_n(x.gt(2), 8).cast::<i32>(),
            );
            b.set(i, y);
            m.set(i, subgroup::ballot(x.lt(0)));
            subgroup::sync();
            let c = block::sync_count_nonzero(x) + block::sync_all_nonzero(x) + block::sync_any_nonzero(x);
            a.set(i, c);
            block::sync();
        });
    }));
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
        let (leader, is_leader) = nv::elect();
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
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let m = lower_kernel_sm(&ir, 90).unwrap();
    assert!(m.text.contains(".version 8.6"), "split fences need PTX 8.6:\n{}", m.text);
    for needle in
        ["match.sync.all.b32", "elect.sync", "redux.sync.add.u32", "redux.sync.min.s32", "mbarrier.try_wait.parity"]
    {
        assert!(m.text.contains(needle), "{needle}");
    }
    assemble("nv_families", &m.text, 90);
    let e = lower_kernel_sm(&ir, 80).unwrap_err();
    assert!(e.message.contains("needs sm_90"), "{e}");
}

#[test]
fn block_algorithms_assemble() {
    check(&Kernel::range("block_algorithms", 256, |k| {
        let a = k.array::<f32>("a");
        let keys = k.array::<u32>("keys");
        let r = k.array::<i32>("r");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            a.set(i, block::reduce_all_add(v, 256) + block::inclusive_max(v, 256) + block::exclusive_min(v, 256));
            let bins = block::shared_array::<i32>(256);
            let excl = block::shared_array::<i32>(256);
            r.set(i, block::radix_rank_match_atomic_or(keys.get(i), 256, 8, 0, 8, bins, excl));
        });
    }));
}
