//! The kernels of the `qd::nv` families that only CUDA runs (issue 11, items 3 and 8), shared by
//! `tests/nv_ptx.rs` (ptxas and the emulator, every CI run) and `tests/cuda_nv.rs` (the GPU record),
//! with the checks of the runs both make.
#![allow(dead_code)] // each test binary uses its own subset

use qd::ir::{AtomicOp, L2Policy, Ordering, Scope, ShuffleKind};
use qd::nv;
use qd::prelude::*;

/// Threads of the range kernels below (two 128-thread blocks).
pub const N: usize = 256;

/// out[4i..4i+4] = the warp's min, max, min |x| (NaN-propagating), max |x| of `a`.
pub fn redux_f32_kernel() -> Kernel {
    Kernel::range("nv_redux_f32", 64, |k| {
        let a = k.array::<f32>("a");
        let out = k.array::<f32>("out");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            out.set(i * 4, nv::redux_min_f32(v));
            out.set(i * 4 + 1, nv::redux_max_f32(v));
            out.set(i * 4 + 2, nv::redux_min_abs_nan_f32(v));
            out.set(i * 4 + 3, nv::redux_max_abs_nan_f32(v));
        });
    })
}

/// `out[i] = a[i]` through a hinted load; `old[i]` = the hinted atomic add's old value of
/// `sum[0]` (+ a[i]); `fsum[0]` += 1.0 per thread through a hinted `red`.
pub fn l2_hint_kernel() -> Kernel {
    Kernel::range("nv_l2_hint", 128, |k| {
        let a = k.array::<u32>("a");
        let out = k.array::<u32>("out");
        let old = k.array::<u32>("old");
        let sum = k.array::<u32>("sum");
        let fsum = k.array::<f32>("fsum");
        k.parallel_for(0, a.len(), |i| {
            let v = nv::load_l2_hint(a.at(i), L2Policy::EvictLast);
            out.set(i, v);
            old.set(i, nv::atomic_l2_hint(AtomicOp::Add, sum.at(0), v, L2Policy::EvictFirst));
            nv::atomic_l2_hint(AtomicOp::Add, fsum.at(0), 1.0f32, L2Policy::EvictNormal);
        });
    })
}

/// Pair 0 of `p`: every thread exchanges in (i, !i), writing the old pair to `out[2i..2i+2]`.
/// Pair 1: a 128-bit CAS loop adds (1, 2) per thread.
pub fn b128_kernel() -> Kernel {
    Kernel::range("nv_b128", 128, |k| {
        let p = k.array::<u64>("p");
        let out = k.array::<u64>("out");
        k.parallel_for(0, out.len() / 2, |i| {
            let id = i.cast::<u64>();
            let (lo, hi) = nv::atomic_exch_b128(p, 0u32, id, !id);
            out.set(i * 2, lo);
            out.set(i * 2 + 1, hi);
            let (e_lo, e_hi) = (var(p.get(2)), var(p.get(3)));
            loop_(|| {
                let (lo, hi) = (e_lo.get(), e_hi.get());
                let (o_lo, o_hi) = nv::atomic_cas_b128(p, 1u32, (lo, hi), (lo + 1u64, hi + 2u64));
                if_(o_lo.eq(lo) & o_hi.eq(hi), break_);
                e_lo.set(o_lo);
                e_hi.set(o_hi);
            });
        });
    })
}

/// acc[0] += (1.0, 2.0) per thread (the old words into `old`), acc[1] += (0.5, -1.0) through
/// `red`, and each block's shared word += (1.0, 2.0) per thread, written to `blocks[block]`.
fn packed_kernel(name: &str, bf16: bool) -> Kernel {
    Kernel::explicit(name, 128, move |k| {
        let acc = k.array::<u32>("acc");
        let old = k.array::<u32>("old");
        let blocks = k.array::<u32>("blocks");
        let s = block::shared_array::<u32>(1);
        let t = block::thread_idx();
        let g = block::block_idx() * 128 + t;
        let pack = |a: f32, b: f32| {
            if bf16 {
                nv::pack_bf16x2(BF16::from_f32(a), BF16::from_f32(b))
            } else {
                nv::pack_f16x2(F16::from_f32(a), F16::from_f32(b))
            }
        };
        let add = |e, v| if bf16 { nv::atomic_add_bf16x2(e, v) } else { nv::atomic_add_f16x2(e, v) };
        if_(t.eq(0), || s.set(0, 0u32));
        block::sync();
        old.set(g, add(acc.at(0), pack(1.0, 2.0)));
        add(acc.at(1), pack(0.5, -1.0));
        add(s.at(0), pack(1.0, 2.0));
        block::sync();
        if_(t.eq(0), || blocks.set(block::block_idx(), s.get(0)));
    })
}

/// [`packed_kernel`] on f16x2 (launch on 2 blocks).
pub fn packed_f16x2_kernel() -> Kernel {
    packed_kernel("nv_packed_f16x2", false)
}

/// [`packed_kernel`] on bf16x2 (launch on 2 blocks).
pub fn packed_bf16x2_kernel() -> Kernel {
    packed_kernel("nv_packed_bf16x2", true)
}

/// out[4i..]: shuffle up by 5 of i (u32) and its predicate, shuffle down by 7 of i as f32 (bits)
/// and its predicate.
pub fn shuffle_valid_kernel() -> Kernel {
    Kernel::range("nv_shuffle_valid", 64, |k| {
        let out = k.array::<u32>("out");
        k.parallel_for(0, out.len() / 4, |i| {
            let (up, up_ok) = nv::shuffle_valid(ShuffleKind::Up, i.cast::<u32>(), 5u32);
            let (down, down_ok) = nv::shuffle_valid(ShuffleKind::Down, i.cast::<f32>(), 7u32);
            out.set(i * 4, up);
            out.set(i * 4 + 1, up_ok.cast::<u32>());
            out.set(i * 4 + 2, down.bit_cast::<u32>());
            out.set(i * 4 + 3, down_ok.cast::<u32>());
        });
    })
}

/// Host reference of [`shuffle_valid_kernel`] for `n` threads (32-lane warps).
pub fn shuffle_valid_expected(n: usize) -> Vec<u32> {
    (0..n)
        .flat_map(|i| {
            let lane = i % 32;
            let (up, up_ok) = if lane >= 5 { (i - 5, 1) } else { (i, 0) };
            let (down, down_ok) = if lane + 7 < 32 { (i + 7, 1) } else { (i, 0) };
            [up as u32, up_ok, (down as f32).to_bits(), down_ok]
        })
        .collect()
}

/// out[i] = vote.uni of a predicate uniform in even warps (all true) and mixed in odd ones.
pub fn vote_uni_kernel() -> Kernel {
    Kernel::range("nv_vote_uni", 64, |k| {
        let out = k.array::<u32>("out");
        k.parallel_for(0, out.len(), |i| {
            let p = ((i / 32) % 2).eq(0) | (i % 2).eq(0);
            out.set(i, nv::vote_uni(p).cast::<u32>());
        });
    })
}

/// Host reference of [`vote_uni_kernel`] for `n` threads.
pub fn vote_uni_expected(n: usize) -> Vec<u32> {
    (0..n).map(|i| u32::from((i / 32) % 2 == 0)).collect()
}

/// A message through shared memory ordered by the sync_restrict fences (and the async-proxy
/// ones): `out[t] = shared[t ^ 1] + 1`.
pub fn sync_restrict_kernel() -> Kernel {
    Kernel::explicit("nv_sync_restrict", 64, |k| {
        let out = k.array::<u32>("out");
        let s = block::shared_array::<u32>(64);
        let t = block::thread_idx();
        s.set(t, t.cast::<u32>());
        nv::fence_sync_restrict(Ordering::Release);
        nv::proxy_async_fence(Ordering::Release);
        block::sync();
        nv::fence_sync_restrict(Ordering::Acquire);
        nv::proxy_async_fence(Ordering::Acquire);
        out.set(block::block_idx() * 64 + t, s.get(t ^ 1) + 1u32);
    })
}

/// Fills a 128-byte "tensor map" in shared memory with a pattern, copies it to `map` (pair 16
/// u64 per block) with `tensormap.cp_fenceproxy`, then releases and acquires it.
pub fn tensormap_kernel() -> Kernel {
    Kernel::explicit("nv_tensormap", 32, |k| {
        let map = k.array::<u64>("map");
        let s = block::shared_array::<u64>(16);
        let t = block::thread_idx();
        let b = block::block_idx();
        if_(t.lt(16), || s.set(t, (b * 1000 + t).cast::<u64>() * 0x1_0000_0001u64));
        block::sync();
        nv::tensormap_copy_fence(map.at(b * 16), s.at(0), Scope::Device);
        nv::tensormap_fence_release(Scope::Device);
        nv::tensormap_fence_acquire(map.at(b * 16), Scope::Device);
    })
}

/// Threads of one block of [`cluster_mbarrier_kernel`].
pub const CLUSTER_BLOCK: u32 = 64;

/// Rank 0 of each cluster initializes a barrier expecting every thread of the cluster
/// (`cluster` CTAs); after a cluster barrier, every thread arrives on rank 0's barrier remotely;
/// rank 0 waits on it at cluster scope and reads what every CTA wrote to `data` before arriving.
/// `out[block * 64 + t]` = 1 + (rank 0 only) the sum of the cluster's `data`.
pub fn cluster_mbarrier_kernel() -> Kernel {
    Kernel::explicit("nv_cluster_mbarrier", CLUSTER_BLOCK, |k| {
        let data = k.array::<u32>("data");
        let out = k.array::<u32>("out");
        let cluster = k.scalar::<u32>("cluster");
        let bar = block::shared_array::<u64>(1);
        let t = block::thread_idx();
        let b = block::block_idx();
        let rank = nv::cluster_ctarank();
        if_(t.eq(0), || {
            nv::mbarrier_init(bar.at(0), cluster * CLUSTER_BLOCK);
            nv::proxy_fence("mbarrier_init");
        });
        nv::cluster_sync();
        data.set(b * CLUSTER_BLOCK as i32 + t, 1u32);
        nv::mbarrier_arrive_cluster(bar.at(0), 0u32);
        let total = var(0u32);
        if_(rank.eq(0), || {
            // Bounded, so a broken remote arrive fails the test instead of hanging the GPU.
            let done = bounded_wait(|| nv::mbarrier_try_wait_parity_cluster(bar.at(0), 0u32));
            let first = b * CLUSTER_BLOCK as i32;
            for_range(0u32, cluster * CLUSTER_BLOCK, |j| total.set(total.get() + data.get(first + j.cast::<i32>())));
            if_(!done, || total.set(TIMED_OUT));
        });
        out.set(b * CLUSTER_BLOCK as i32 + t, total.get() + 1u32);
        // No CTA leaves while another may still arrive on its barrier.
        nv::cluster_sync();
    })
}

/// What a bounded wait stores when the barrier never completed.
pub const TIMED_OUT: u32 = 0xDEAD;

/// Calls `try_wait` until it is true or 2^16 times; whether it became true. (A `try_wait` may
/// suspend the thread for a while; 2^16 keeps a broken barrier to about a second, not a hang.)
fn bounded_wait(try_wait: impl Fn() -> Val<bool>) -> Val<bool> {
    let (done, spins) = (var(false), var(0u32));
    while_(
        || !done.get() & spins.get().lt(1u32 << 16),
        || {
            done.set(try_wait());
            spins.set(spins.get() + 1u32);
        },
    );
    done.get()
}

/// Every thread arrives on the block's barrier, then waits with a suspend-time hint.
pub fn try_wait_hint_kernel() -> Kernel {
    Kernel::explicit("nv_try_wait_hint", 32, |k| {
        let out = k.array::<u32>("out");
        let bar = block::shared_array::<u64>(1);
        let t = block::thread_idx();
        if_(t.eq(0), || nv::mbarrier_init(bar.at(0), 32u32));
        block::sync();
        nv::mbarrier_arrive(bar.at(0));
        let done = bounded_wait(|| nv::mbarrier_try_wait_parity_hint(bar.at(0), 0u32, 10_000u32));
        out.set(block::block_idx() * 32 + t, select(done, 1u32, TIMED_OUT));
    })
}

/// Every thread sleeps a thread-dependent time (`nv::nanosleep`, a register operand), then writes 1.
pub fn nanosleep_kernel() -> Kernel {
    Kernel::range("nv_nanosleep", 32, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            nv::nanosleep(i.cast::<u32>() * 8u32);
            a.set(i, 1u32);
        });
    })
}

/// A kernel that stops at `nv::breakpoint()` when it reads a zero. Never launched.
pub fn breakpoint_kernel() -> Kernel {
    Kernel::range("nv_breakpoint", 32, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| if_(a.get(i).eq(0), nv::breakpoint));
    })
}

/// Every kernel above that only CUDA runs (the emulator refuses them).
pub fn cuda_only_kernels() -> Vec<Kernel> {
    vec![
        redux_f32_kernel(),
        b128_kernel(),
        sync_restrict_kernel(),
        tensormap_kernel(),
        cluster_mbarrier_kernel(),
        breakpoint_kernel(),
    ]
}

/// Every kernel above that the emulator with 32-lane subgroups runs too.
pub fn emulated_kernels() -> Vec<Kernel> {
    vec![
        l2_hint_kernel(),
        packed_f16x2_kernel(),
        packed_bf16x2_kernel(),
        shuffle_valid_kernel(),
        vote_uni_kernel(),
        try_wait_hint_kernel(),
        nanosleep_kernel(),
    ]
}

/// Runs [`l2_hint_kernel`] on `d` and checks it: the hinted loads return the array; the hinted
/// atomic adds are atomic (sorted by old value, each thread's old + its addend is the next
/// thread's old, and the last one's is the final sum); the hinted `red` adds 1.0 per thread.
pub fn run_l2_hint(d: &Device) {
    let k = l2_hint_kernel();
    let a: Vec<u32> = (0..N as u32).map(|i| 1 + i % 3).collect();
    let da = d.array_from(&a).unwrap();
    let (out, old, sum, fsum) = (
        d.zeros::<u32>(N).unwrap(),
        d.zeros::<u32>(N).unwrap(),
        d.zeros::<u32>(1).unwrap(),
        d.zeros::<f32>(1).unwrap(),
    );
    d.launch(&k, &[da.arg(), out.arg(), old.arg(), sum.arg(), fsum.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), a);
    let total: u32 = a.iter().sum();
    assert_eq!(sum.to_vec().unwrap(), vec![total]);
    let old = old.to_vec().unwrap();
    let mut order: Vec<usize> = (0..N).collect();
    order.sort_by_key(|&i| old[i]);
    assert_eq!(old[order[0]], 0);
    for w in order.windows(2) {
        assert_eq!(old[w[1]], old[w[0]] + a[w[0]], "atomic adds lost or torn");
    }
    assert_eq!(old[order[N - 1]] + a[order[N - 1]], total);
    assert_eq!(fsum.to_vec().unwrap(), vec![N as f32]);
}

fn f16x2(lo: f32, hi: f32) -> u32 {
    u32::from(F16::from_f32(lo).0) | u32::from(F16::from_f32(hi).0) << 16
}

fn bf16x2(lo: f32, hi: f32) -> u32 {
    u32::from(BF16::from_f32(lo).0) | u32::from(BF16::from_f32(hi).0) << 16
}

/// Runs [`packed_f16x2_kernel`] (`bf16`: [`packed_bf16x2_kernel`]) `k` on `d` and checks it: packed
/// atomics and `red` on global and shared words (2 blocks of 128 threads, every sum
/// exact in the format): both halves of each word get every thread's addend, and the old low
/// halves returned are 0..256 once each.
pub fn run_packed(d: &Device, k: &Kernel, bf16: bool) {
    let pack = if bf16 { bf16x2 } else { f16x2 };
    let lo_of = |w: u32| if bf16 { BF16(w as u16).to_f32() } else { F16(w as u16).to_f32() };
    let (acc, old, blocks) = (d.zeros::<u32>(2).unwrap(), d.zeros::<u32>(N).unwrap(), d.zeros::<u32>(2).unwrap());
    d.launch_grid(k, 2, &[acc.arg(), old.arg(), blocks.arg()]).unwrap();
    assert_eq!(acc.to_vec().unwrap(), vec![pack(256.0, 512.0), pack(128.0, -256.0)], "global atom and red");
    assert_eq!(blocks.to_vec().unwrap(), vec![pack(128.0, 256.0); 2], "shared red");
    let mut lows: Vec<f32> = old.to_vec().unwrap().into_iter().map(lo_of).collect();
    lows.sort_by(f32::total_cmp);
    assert_eq!(lows, (0..N).map(|i| i as f32).collect::<Vec<_>>(), "old values of the atom");
}
