//! Block reductions, scans and radix ranking (seed 000) on several subgroup widths.

use qd::prelude::*;

fn host_scan(v: &[i64], op: fn(i64, i64) -> i64) -> Vec<i64> {
    let mut acc = v[0];
    let mut out = vec![acc];
    for x in &v[1..] {
        acc = op(acc, *x);
        out.push(acc);
    }
    out
}

#[test]
fn block_reduce_and_scans_match_the_host_on_every_width() {
    for (sg, bd) in [(8u32, 8u32), (8, 64), (32, 128), (64, 256), (16, 48)] {
        let k = Kernel::range("block_ops", bd, move |k| {
            let a = k.array::<i64>("a");
            let out = k.array::<i64>("out");
            k.parallel_for(0, a.len(), |i| {
                let v = a.get(i);
                let t = block::thread_idx();
                let r = block::reduce_add(v, bd);
                let base = i * 6;
                if_(t.eq(0), || out.set(base, r));
                out.set(base + 1, block::reduce_all_max(v, bd));
                out.set(base + 2, block::inclusive_add(v, bd));
                out.set(base + 3, block::exclusive_min(v, bd));
                out.set(base + 4, block::exclusive_add(v, bd));
                out.set(base + 5, block::inclusive_scan(v, bd, |x, y| x ^ y));
            });
        });
        let d = Device::from_name(&format!("cpu:sg{sg}")).unwrap();
        let n = bd as usize * 3;
        let a: Vec<i64> = (0..n).map(|i| ((i as i64 * 7919) % 101) - 50).collect();
        let aa = d.array_from(&a).unwrap();
        let out = d.zeros::<i64>(n * 6).unwrap();
        d.launch(&k, &[aa.arg(), out.arg()]).unwrap();
        let o = out.to_vec().unwrap();
        for b in 0..3 {
            let blk = &a[b * bd as usize..(b + 1) * bd as usize];
            let inc = host_scan(blk, |x, y| x + y);
            let mx = *blk.iter().max().unwrap();
            let custom = host_scan(blk, |x, y| x ^ y);
            for t in 0..bd as usize {
                let i = b * bd as usize + t;
                if t == 0 {
                    assert_eq!(o[i * 6], blk.iter().sum::<i64>(), "sg{sg} bd{bd} reduce");
                }
                assert_eq!(o[i * 6 + 1], mx);
                assert_eq!(o[i * 6 + 2], inc[t], "sg{sg} bd{bd} inclusive t{t}");
                let ex_min = if t == 0 { i64::MAX } else { *blk[..t].iter().min().unwrap() };
                assert_eq!(o[i * 6 + 3], ex_min, "sg{sg} bd{bd} exclusive_min t{t}");
                assert_eq!(o[i * 6 + 4], if t == 0 { 0 } else { inc[t - 1] });
                assert_eq!(o[i * 6 + 5], custom[t], "sg{sg} bd{bd} custom scan t{t}");
            }
        }
    }
}

#[test]
fn block_ops_can_run_again_from_the_same_site() {
    // A loop runs the same call site several times per thread: the trailing barrier keeps a fast
    // thread's next write from racing a slow reader of the previous result.
    let k = Kernel::explicit("repeat", 64, |k| {
        let a = k.array::<f32>("a");
        let out = k.array::<f32>("out");
        let t = block::thread_idx();
        let acc = var(0.0f32);
        for_range(0, 5, |j| {
            let v = a.get(t) * j.cast::<f32>();
            acc.set(acc.get() + block::reduce_all_add(v, 64));
        });
        out.set(t, acc.get());
    });
    let d = Device::from_name("cpu:sg16").unwrap();
    let a: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let aa = d.array_from(&a).unwrap();
    let out = d.zeros::<f32>(64).unwrap();
    d.launch_grid(&k, 1, &[aa.arg(), out.arg()]).unwrap();
    assert!(out.to_vec().unwrap().iter().all(|x| *x == 2016.0 * 10.0));
}

#[test]
fn radix_rank_is_stable_with_counts_and_prefix() {
    for sg in [32u32, 64, 8] {
        let k = Kernel::range("rank", 256, |k| {
            let keys = k.array::<u32>("keys");
            let ranks = k.array::<i32>("ranks");
            let bins_out = k.array::<i32>("bins");
            let excl_out = k.array::<i32>("excl");
            k.parallel_for(0, 256, |i| {
                let bins = block::shared_array::<i32>(256);
                let excl = block::shared_array::<i32>(256);
                let r = block::radix_rank_match_atomic_or(keys.get(i), 256, 8, 4, 6, bins, excl);
                ranks.set(i, r);
                bins_out.set(i, bins.get(i));
                excl_out.set(i, excl.get(i));
            });
        });
        let d = Device::from_name(&format!("cpu:sg{sg}")).unwrap();
        let keys: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(2654435761) >> 8).collect();
        let ka = d.array_from(&keys).unwrap();
        let (ranks, bins, excl) =
            (d.zeros::<i32>(256).unwrap(), d.zeros::<i32>(256).unwrap(), d.zeros::<i32>(256).unwrap());
        d.launch(&k, &[ka.arg(), ranks.arg(), bins.arg(), excl.arg()]).unwrap();
        let digit = |k: u32| ((k >> 4) & 63) as usize;
        let mut count = vec![0i32; 256];
        for k in &keys {
            count[digit(*k)] += 1;
        }
        let prefix: Vec<i32> = (0..256).map(|d| count[..d].iter().sum()).collect();
        let want: Vec<i32> = (0..256)
            .map(|i| prefix[digit(keys[i])] + keys[..i].iter().filter(|k| digit(**k) == digit(keys[i])).count() as i32)
            .collect();
        assert_eq!(bins.to_vec().unwrap(), count, "sg{sg}");
        assert_eq!(excl.to_vec().unwrap(), prefix, "sg{sg}");
        assert_eq!(ranks.to_vec().unwrap(), want, "sg{sg}");
    }
}

#[test]
fn radix_rank_keys_ranks_warp_striped_keys_on_every_subgroup_width() {
    // 4 keys per thread, 128 threads, 256 digits (two per thread): 512 keys, many peers per digit.
    for sg in [4u32, 8, 16, 32, 64] {
        let k = Kernel::explicit("rank_keys", 128, |k| {
            let keys = k.array::<u32>("keys");
            let ranks = k.array::<i32>("ranks");
            let bins_out = k.array::<i32>("bins");
            let t = block::thread_idx();
            let s = subgroup::group_size() as i32;
            let pos = |j: i32| (t / s * 4 + j) * s + t % s;
            let ks = [0, 1, 2, 3].map(|j| keys.get(pos(j)));
            let bins = block::shared_array::<i32>(256);
            let excl = block::shared_array::<i32>(256);
            let r = block::radix_rank_keys(ks, 128, 8, 3, 8, bins, excl);
            for j in 0..4 {
                ranks.set(pos(j), r[j as usize]);
            }
            bins_out.set(t, bins.get(t));
            bins_out.set(t + 128, bins.get(t + 128));
        });
        let d = Device::from_name(&format!("cpu:sg{sg}")).unwrap();
        let keys: Vec<u32> = (0..512u32).map(|i| (i.wrapping_mul(2654435761) >> 20) & 0x3f8).collect();
        let ka = d.array_from(&keys).unwrap();
        let (ranks, bins) = (d.zeros::<i32>(512).unwrap(), d.zeros::<i32>(256).unwrap());
        d.launch_grid(&k, 1, &[ka.arg(), ranks.arg(), bins.arg()]).unwrap();
        let digit = |k: u32| ((k >> 3) & 255) as usize;
        let mut count = vec![0i32; 256];
        for k in &keys {
            count[digit(*k)] += 1;
        }
        let prefix: Vec<i32> = (0..256).map(|d| count[..d].iter().sum()).collect();
        let want: Vec<i32> = (0..512)
            .map(|i| prefix[digit(keys[i])] + keys[..i].iter().filter(|k| digit(**k) == digit(keys[i])).count() as i32)
            .collect();
        assert_eq!(bins.to_vec().unwrap(), count, "sg{sg}");
        assert_eq!(ranks.to_vec().unwrap(), want, "sg{sg}");
    }
}

#[test]
fn radix_rank_keys_arguments_are_checked_while_tracing() {
    fn err(block_dim: u32, kernel_dim: u32, radix_bits: u32, bit_start: u32, num_bits: u32) -> String {
        let k = Kernel::explicit("bad_rank_keys", kernel_dim, move |k| {
            let a = k.array::<u32>("a");
            let bins = block::shared_array::<i32>(1024);
            let excl = block::shared_array::<i32>(1024);
            block::radix_rank_keys([a.get(0), a.get(1)], block_dim, radix_bits, bit_start, num_bits, bins, excl);
        });
        let e = k.trace(&qd::backend::Target::cpu(32)).unwrap_err();
        assert_eq!(e.loc.file, file!(), "{e}");
        assert_eq!(e.op, "block.radix_rank_keys", "{e}");
        e.message
    }
    assert!(err(256, 256, 11, 0, 8).contains("radix_bits must be in 1..=10"));
    assert!(err(256, 256, 4, 0, 4).contains("the 16 digits must be a multiple of the subgroup size 32"));
    assert!(err(128, 256, 8, 0, 8).contains("differs from the kernel's block_dim 256"));
    assert!(err(96, 96, 8, 0, 8).contains("block_dim 96 must divide the 256 digits"));
    assert!(err(256, 256, 8, 0, 9).contains("num_bits 9 must be <= radix_bits 8"));
    assert!(err(256, 256, 8, u32::MAX, 4).contains("bit_start 4294967295"));
}

#[test]
fn block_op_arguments_are_checked_while_tracing() {
    let wrong_dim = Kernel::explicit("wrong_dim", 128, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, block::reduce_add(a.get(t), 64));
    });
    let e = Device::cpu().trace(&wrong_dim).unwrap_err().to_string();
    assert!(e.contains("block.reduce_add") && e.contains("differs from the kernel's block_dim 128"), "{e}");
    let not_multiple = Kernel::explicit("not_multiple", 48, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, block::inclusive_add(a.get(t), 48));
    });
    let e = Device::cpu().trace(&not_multiple).unwrap_err().to_string();
    assert!(e.contains("block_dim must be a positive multiple of subgroup size"), "{e}");
    let bad_rank = Kernel::explicit("bad_rank", 128, |k| {
        let a = k.array::<u32>("a");
        let bins = block::shared_array::<i32>(256);
        let excl = block::shared_array::<i32>(256);
        block::radix_rank_match_atomic_or(a.get(0), 128, 8, 0, 8, bins, excl);
    });
    let e = Device::cpu().trace(&bad_rank).unwrap_err().to_string();
    assert!(e.contains("block_dim must equal RADIX_DIGITS"), "{e}");
    // The digit's bits past the key: blamed on bit_start and the sum, never wrapping (issue 12).
    for bit_start in [u32::MAX, 30] {
        let bad_bits = Kernel::explicit("bad_bits", 256, move |k| {
            let a = k.array::<u32>("a");
            let bins = block::shared_array::<i32>(256);
            let excl = block::shared_array::<i32>(256);
            block::radix_rank_match_atomic_or(a.get(0), 256, 8, bit_start, 4, bins, excl);
        });
        let e = bad_bits.trace(&qd::backend::Target::cpu(32)).unwrap_err();
        assert_eq!(e.loc.file, file!(), "{e}");
        let m = &e.message;
        assert!(
            m.contains(&format!("bit_start {bit_start} is too large")) && m.contains("go past the 32-bit key"),
            "{e}"
        );
    }
}

#[test]
fn emulated_sync_nonzero_matches_the_fused_barrier() {
    // Targets without a fused barrier-reduction (Vulkan, Metal, AMDGPU) get the shared-slot
    // emulation; run it on the emulator by tracing for such a target.
    use qd::backend::cpu::{self, CpuArg, LaunchGeometry, Options};
    use qd::backend::Target;
    use std::sync::Arc;
    let k = Kernel::explicit("sync_nonzero_emulated", 128, |k| {
        let p = k.array::<i32>("p");
        let out = k.array::<i32>("out");
        let t = block::thread_idx();
        let v = p.get(t + block::block_idx() * 128);
        let base = (t + block::block_idx() * 128) * 3;
        // Twice in a row: the emulation's slot must be reusable.
        for _ in 0..2 {
            out.set(base, block::sync_all_nonzero(v));
            out.set(base + 1, block::sync_any_nonzero(v));
            out.set(base + 2, block::sync_count_nonzero(v));
        }
    });
    let target = Target::cpu(16).with_support(
        qd::target::Feature::BarrierReduce,
        qd::target::Support::polyfill(qd::target::Polyfill::Library("emulated")),
    );
    let ir = k.trace(&target).unwrap();
    assert!(!qd::ir::print_kernel(&ir).contains("block.sync.popc"), "the emulated path has no fused barrier");
    let prog = cpu::compile(&ir).unwrap();
    // Block 0: all zero; block 1: all non-zero (values like 2 and -1 count); block 2: 37 set.
    let mut p = vec![0i32; 384];
    for (i, x) in p[128..256].iter_mut().enumerate() {
        *x = if i % 2 == 0 { 2 } else { -1 };
    }
    for i in 0..37 {
        p[256 + i * 3] = 7;
    }
    let pa =
        Arc::new(cpu::Buffer::from_bits(qd::ir::DType::I32, &p.iter().map(|x| *x as u32 as u64).collect::<Vec<_>>()));
    let out = Arc::new(cpu::Buffer::zeroed(qd::ir::DType::I32, 384 * 3));
    let geo = LaunchGeometry { grid: 3, block_dim: 128, subgroup_size: 16 };
    cpu::launch(&prog, geo, &[CpuArg::Array(pa), CpuArg::Array(out.clone())], &Options::default()).unwrap();
    let o: Vec<i32> = out.to_bits().into_iter().map(|b| b as u32 as i32).collect();
    for t in 0..128 {
        assert_eq!(&o[t * 3..t * 3 + 3], &[0, 0, 0]);
        assert_eq!(&o[(128 + t) * 3..(128 + t) * 3 + 3], &[1, 1, 128]);
        assert_eq!(&o[(256 + t) * 3..(256 + t) * 3 + 3], &[0, 1, 37]);
    }
}
