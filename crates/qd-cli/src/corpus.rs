//! The kernel corpus every code generator is checked on: each op family, every dtype, control flow,
//! memory kinds and atomics, subgroup and block collectives, the subgroup and block libraries.
//! These kernels are built in (`qd emit` writes them, the snapshot tests pin their code, ptxas and
//! spirv-val check them) but never run: they exist to reach every lowering rule.

use qd::prelude::*;

/// Every kernel of the corpus (portable: no NVIDIA-only operations).
pub fn all() -> Vec<Kernel> {
    [
        arithmetic_of_every_dtype(),
        bits_shifts_casts_and_specials(),
        control_flow(),
        memory_kinds_shared_local_and_atomics(),
        narrow_and_half_atomics(),
        subgroup_and_block_collectives(),
        subgroup_library(),
        block_algorithms(),
    ]
    .concat()
}

/// Arithmetic, comparisons, selects and casts on every dtype, one kernel per dtype.
pub fn arithmetic_of_every_dtype() -> Vec<Kernel> {
    let mut out = Vec::new();
    macro_rules! arith {
        ($name:ident, $t:ty) => {
            out.push(Kernel::range(stringify!($name), 64, |k| {
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
    out
}

/// Bit operations, shifts past the width, casts between every width, the special registers.
pub fn bits_shifts_casts_and_specials() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::explicit("bits", 128, |k| {
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
    out
}

/// Nested ifs, loops with break and continue, while loops, early returns, grid-stride ranges.
pub fn control_flow() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::range("control", 32, |k| {
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
            // `return_` is rejected in a range body (D2): the guard skips the rest instead.
            if_(acc.get().ne(7), || a.set(i, acc.get()));
        });
    }));
    out.push(Kernel::explicit("early_return", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.ge(a.len()), return_);
        if_else(t.eq(3), return_, return_);
        a.set(t, t);
    }));
    out.push(Kernel::explicit("nested_loops", 64, |k| {
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
    out
}

/// [`memory`], as a list.
pub fn memory_kinds_shared_local_and_atomics() -> Vec<Kernel> {
    vec![memory()]
}

/// Every memory kind, shared and local arrays, every atomic form (also used for the SPIR-V ABI test).
pub fn memory() -> Kernel {
    use qd::ir::{AtomicOp, LoadKind, Ordering, Scope, StoreKind};
    Kernel::explicit("memory", 64, |k| {
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
    })
}

/// Atomics on 8- and 16-bit integers and on f16/bf16 (sub-word CAS loops, native half adds).
pub fn narrow_and_half_atomics() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::explicit("narrow_atomics", 64, |k| {
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
    out
}

/// The core subgroup and block collectives: shuffles, broadcasts, ballots, votes, barriers.
pub fn subgroup_and_block_collectives() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::range("collectives", 64, |k| {
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
    out
}

/// The subgroup library: reductions, scans, segmented reductions, sorts, at several tile sizes.
pub fn subgroup_library() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::range("subgroup_library", 64, |k| {
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
    out
}

/// The block library: reductions, scans, `sync_*_nonzero` and radix rank.
pub fn block_algorithms() -> Vec<Kernel> {
    let mut out = Vec::new();
    out.push(Kernel::range("block_algorithms", 256, |k| {
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
    out.push(Kernel::range("radix_rank", 128, |k| {
        let keys = k.array::<u32>("keys");
        let r = k.array::<i32>("r");
        k.parallel_for(0, keys.len(), |i| {
            let bins = block::shared_array::<i32>(128);
            let excl = block::shared_array::<i32>(128);
            r.set(i, block::radix_rank_match_atomic_or(keys.get(i), 128, 7, 3, 7, bins, excl));
        });
    }));
    out
}
