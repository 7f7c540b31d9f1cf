//! The IR: one test per op family (traced, verified, printed and run on the emulator), the
//! uniformity analysis, and the verifier's trace-time errors.

use qd::backend::Target;
use qd::ir::uniformity::{analyze, Uniformity};
use qd::ir::{print_kernel, InstKind};
use qd::prelude::*;

fn run_i32(name: &str, n: usize, f: impl Fn(Val<i32>) -> Val<i32> + Send + Sync + 'static) -> Vec<i32> {
    let k = Kernel::range(name, 32, move |k| {
        let out = k.array::<i32>("out");
        k.parallel_for(0, out.len(), |i| out.set(i, f(i)));
    });
    let d = Device::cpu();
    let out = d.zeros::<i32>(n).unwrap();
    d.launch(&k, &[out.arg()]).unwrap();
    out.to_vec().unwrap()
}

fn trace(k: &Kernel) -> qd::ir::Kernel {
    k.trace(&Target::cpu(32)).unwrap()
}

#[test]
fn arithmetic_wraps_and_shifts_modulo_width() {
    let got = run_i32("arith", 32, |i| {
        let big = Val::constant(i32::MAX) + i; // wraps for i > 0
        let shifted = Val::constant(1i32) << (i + 32); // shift amount modulo 32
        select(i.eq(0), big, shifted) + (-i).abs() - i * 2 / 2 % 1000
    });
    for (i, g) in got.iter().enumerate() {
        let i = i as i32;
        let big = i32::MAX.wrapping_add(i);
        let sh = 1i32.wrapping_shl((i + 32) as u32);
        let want = (if i == 0 { big } else { sh }) + i.abs() - i * 2 / 2 % 1000;
        assert_eq!(*g, want);
    }
}

#[test]
fn bitwise_min_max_popc_clz() {
    let got = run_i32("bits", 64, |i| {
        let u = i.cast::<u32>() * 2654435761u32;
        let w = u.cast::<u64>() << 20u64;
        ((u & 0xFF0u32) | (u ^ 7u32)).popc().cast::<i32>() * 1000
            + w.clz().cast::<i32>() * 10
            + i.min(20).max(5)
            + (!i & 1)
    });
    for (i, g) in got.iter().enumerate() {
        let u = (i as u32).wrapping_mul(2654435761);
        let w = (u as u64) << 20;
        let want = ((u & 0xFF0) | (u ^ 7)).count_ones() as i32 * 1000
            + w.leading_zeros() as i32 * 10
            + (i as i32).clamp(5, 20)
            + (!(i as i32) & 1);
        assert_eq!(*g, want, "lane {i}");
    }
}

#[test]
fn comparisons_select_and_casts_follow_d5() {
    let got = run_i32("casts", 32, |i| {
        let f = i.cast::<f32>() * 1.0e9f32 - 3.0e9f32; // saturates to i32 range when cast back
        let sat = f.cast::<i32>();
        let nan = (f - f) / (f - f); // 0/0 = NaN
        let z = nan.cast::<i32>(); // NaN -> 0
        let back = (-i).cast::<u8>().cast::<i32>(); // wraps
        select(i.lt(16), sat, back) + z + i.ge(31).to_i32()
    });
    for (i, g) in got.iter().enumerate() {
        let f = i as f32 * 1.0e9 - 3.0e9;
        let want = if i < 16 { f as i32 } else { (-(i as i32)) as u8 as i32 } + (i >= 31) as i32;
        assert_eq!(*g, want, "lane {i}");
    }
}

#[test]
fn floats_fma_sqrt_bit_cast_half() {
    let k = Kernel::range("floats", 32, |k| {
        let out = k.array::<f32>("out");
        let bits = k.array::<u32>("bits");
        let h = k.array::<F16>("h");
        k.parallel_for(0, out.len(), |i| {
            let x = i.cast::<f32>();
            out.set(i, fma(x, 0.5f32, x.sqrt()));
            bits.set(i, x.bit_cast::<u32>());
            h.set(i, x.cast::<F16>() * Val::constant(F16::from_f32(2.0)));
        });
    });
    let d = Device::cpu();
    let out = d.zeros::<f32>(32).unwrap();
    let bits = d.zeros::<u32>(32).unwrap();
    let h = d.zeros::<F16>(32).unwrap();
    d.launch(&k, &[out.arg(), bits.arg(), h.arg()]).unwrap();
    for (i, ((o, b), hv)) in
        out.to_vec().unwrap().iter().zip(bits.to_vec().unwrap()).zip(h.to_vec().unwrap()).enumerate()
    {
        let x = i as f32;
        assert_eq!(*o, x.mul_add(0.5, x.sqrt()));
        assert_eq!(b, x.to_bits());
        assert_eq!(hv.to_f32(), 2.0 * x);
    }
}

#[test]
fn locals_loops_and_local_arrays() {
    let got = run_i32("locals", 32, |i| {
        let arr = local_array::<i32>(8);
        for_range(0, 8, |j| arr.set(j, j * i));
        let acc = var(0i32);
        let j = var(0i32);
        loop_(|| {
            if_(j.get().ge(8), break_);
            acc.set(acc.get() + arr.get(j.get()));
            j.set(j.get() + 1);
        });
        acc.get()
    });
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, 28 * i as i32);
    }
}

#[test]
fn loads_stores_volatile_and_ordered() {
    let k = Kernel::range("mem", 32, |k| {
        let a = k.array::<u64>("a");
        let b = k.array::<u64>("b");
        k.parallel_for(0, a.len(), |i| {
            let v = volatile_load(a.at(i));
            let w = a.at(i).load_with(qd::ir::LoadKind::Ordered(qd::ir::Ordering::Acquire, qd::ir::Scope::Device));
            b.at(i).store_with(v + w, qd::ir::StoreKind::Ordered(qd::ir::Ordering::Release, qd::ir::Scope::Device));
        });
    });
    let ir = trace(&k);
    let text = print_kernel(&ir);
    assert!(text.contains("global load volatile"), "{text}");
    assert!(text.contains("load acquire.device"), "{text}");
    assert!(text.contains("store release.device"), "{text}");
    let d = Device::cpu();
    let a = d.array_from(&(0..32u64).map(|x| x << 40).collect::<Vec<_>>()).unwrap();
    let b = d.zeros::<u64>(32).unwrap();
    d.launch(&k, &[a.arg(), b.arg()]).unwrap();
    assert_eq!(b.to_vec().unwrap(), (0..32u64).map(|x| x << 41).collect::<Vec<_>>());
}

#[test]
fn atomics_cas_and_exchange() {
    let k = Kernel::range("atomics", 64, |k| {
        let c = k.array::<i64>("c");
        let f = k.array::<f64>("f");
        k.parallel_for(0, 64, |i| {
            let v = i.cast::<i64>();
            atomic_add(c.at(0), v);
            atomic_sub(c.at(1), v);
            atomic_max(c.at(2), v);
            atomic_min(c.at(3), v);
            atomic_or(c.at(4), Val::constant(1i64) << v);
            atomic_xor(c.at(5), v);
            atomic_cas(c.at(6), 0i64, v + 1);
            atomic_exchange(c.at(7), 9i64);
            atomic_max(f.at(0), v.cast::<f64>());
            atomic_add(f.at(1), 0.5f64);
        });
    });
    let d = Device::cpu();
    let c = d.array_from(&[0i64, 0, i64::MIN, i64::MAX, 0, 0, 0, 0]).unwrap();
    let f = d.array_from(&[f64::NAN, 0.0]).unwrap();
    d.launch(&k, &[c.arg(), f.arg()]).unwrap();
    let c = c.to_vec().unwrap();
    assert_eq!(&c[..6], &[2016, -2016, 63, 0, -1, 0]);
    assert!((1..=64).contains(&c[6]));
    assert_eq!(c[7], 9);
    // minNum/maxNum: a NaN seed is replaced by the first real operand.
    assert_eq!(f.to_vec().unwrap(), vec![63.0, 32.0]);
}

#[test]
fn subgroup_core_intrinsics_on_every_width() {
    for sg in [4u32, 8, 16, 32, 64] {
        let k = Kernel::range("sg_core", 64, |k| {
            let out = k.array::<u64>("out");
            k.parallel_for(0, 64, |i| {
                let lane = subgroup::invocation_id();
                let b = subgroup::ballot((lane % 3).eq(0));
                let up = subgroup::shuffle_up(i.cast::<u64>(), 1u32);
                let bc = subgroup::broadcast(i, 1u32).cast::<u64>();
                let all = subgroup::all_true(lane.ge(0)).cast::<u64>();
                out.set(i * 4, b);
                out.set(i * 4 + 1, up);
                out.set(i * 4 + 2, bc);
                out.set(i * 4 + 3, all);
            });
        });
        let d = Device::from_name(&format!("cpu:sg{sg}")).unwrap();
        let out = d.zeros::<u64>(256).unwrap();
        d.launch(&k, &[out.arg()]).unwrap();
        let o = out.to_vec().unwrap();
        let want_ballot = (0..sg as u64).filter(|l| l % 3 == 0).fold(0u64, |m, l| m | 1 << l);
        for i in 0..64u64 {
            let lane = i % sg as u64;
            let base = i - lane;
            assert_eq!(o[i as usize * 4], want_ballot, "sg{sg} ballot lane {i}");
            assert_eq!(o[i as usize * 4 + 1], if lane == 0 { i } else { i - 1 });
            assert_eq!(o[i as usize * 4 + 2], base + 1);
            assert_eq!(o[i as usize * 4 + 3], 1);
        }
    }
}

#[test]
fn fences_and_barriers_are_printed() {
    let k = Kernel::explicit("sync", 64, |k| {
        let a = k.array::<i32>("a");
        let s = block::shared_array::<i32>(64);
        let t = block::thread_idx();
        s.set(t, t);
        block::mem_fence();
        grid::mem_fence();
        subgroup::sync();
        block::sync();
        a.set(t, s.get(63 - t));
    });
    let text = print_kernel(&trace(&k));
    for needle in ["fence.seq_cst.block", "fence.seq_cst.device", "subgroup.sync", "block.sync", "shared @s0"] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
}

/// The control uniformity of the first instruction matching `pred`.
fn control_of(ir: &qd::ir::Kernel, pred: impl Fn(&InstKind) -> bool) -> Uniformity {
    let info = analyze(ir);
    let mut i = 0;
    let mut found = None;
    ir.body.walk(&mut |inst| {
        if found.is_none() && pred(&inst.kind) {
            found = Some(info.control[i]);
        }
        i += 1;
    });
    found.expect("instruction present")
}

/// A condition built from the kernel's array and the thread index.
type Condition = Box<dyn Fn(&Array<i32>, Val<i32>) -> Val<bool> + Send + Sync>;

#[test]
fn uniformity_uniform_block_subgroup_and_varying_conditions() {
    let is_store = |k: &InstKind| matches!(k, InstKind::Store { .. });
    let cases: Vec<(&str, Uniformity, Condition)> = vec![
        ("uniform", Uniformity::Uniform, Box::new(|a, _| a.len().gt(3))),
        ("block", Uniformity::Block, Box::new(|_, _| block::block_idx().eq(1))),
        ("subgroup", Uniformity::Subgroup, Box::new(|_, t| subgroup::ballot(t.gt(3)).ne(0u64))),
        ("varying", Uniformity::Varying, Box::new(|_, t| t.eq(0))),
    ];
    for (name, want, cond) in cases {
        let k = Kernel::explicit(name, 32, move |k| {
            let a = k.array::<i32>("a");
            let t = block::thread_idx();
            let c = cond(&a, t);
            if_(c, || a.set(t, 1));
        });
        let ir = trace(&k);
        assert_eq!(control_of(&ir, is_store), want, "{name}");
    }
}

#[test]
fn uniformity_sees_varying_loop_exits_and_early_returns() {
    let k = Kernel::explicit("exits", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        let j = var(0i32);
        loop_(|| {
            if_(j.get().ge(t), break_); // varying exit: the body runs divergently
            a.set(0, 1);
            j.set(j.get() + 1);
        });
    });
    assert_eq!(control_of(&trace(&k), |k| matches!(k, InstKind::Store { .. })), Uniformity::Varying);
    // A local assigned under a varying condition is varying afterwards.
    let k = Kernel::explicit("local", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        let x = var(0i32);
        if_(t.eq(3), || x.set(1));
        if_(x.get().eq(1), || a.set(0, 1));
    });
    assert_eq!(control_of(&trace(&k), |k| matches!(k, InstKind::Store { .. })), Uniformity::Varying);
}

#[test]
fn block_sync_under_thread_idx_condition_is_rejected_while_tracing() {
    let k = Kernel::explicit("bad_barrier", 64, |_k| {
        if_(block::thread_idx().eq(0), block::sync);
    });
    let line = line!() - 2;
    let e = k.trace(&Target::cpu(32)).unwrap_err();
    assert_eq!(e.op, "block.sync");
    assert_eq!(e.loc.line, line, "{e}");
    assert!(e.loc.file.ends_with("ir.rs"));
    assert!(e.message.contains("deadlock"), "{e}");
    // The same through the runtime: a typed error, nothing launched.
    let d = Device::cpu();
    assert!(matches!(d.launch_grid(&k, 1, &[]), Err(QdError::Trace(_))));
}

#[test]
fn shuffle_under_lane_condition_is_rejected_but_block_uniform_barrier_is_fine() {
    let k = Kernel::explicit("bad_shuffle", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.lt(16), || a.set(t, subgroup::shuffle(t, 0u32)));
    });
    let e = k.trace(&Target::cpu(32)).unwrap_err();
    assert_eq!(e.op, "subgroup.shuffle");
    let ok = Kernel::explicit("fine", 32, |k| {
        let a = k.array::<i32>("a");
        if_(block::block_idx().eq(0), || {
            block::sync();
            a.set(block::thread_idx(), 1);
        });
    });
    ok.trace(&Target::cpu(32)).unwrap();
}

#[test]
fn structural_mistakes_are_trace_errors() {
    let outside = Kernel::explicit("brk", 32, |_k| break_());
    assert!(outside.trace(&Target::cpu(32)).unwrap_err().message.contains("outside of a loop"));
    let ret = Kernel::explicit("ret_in_loop", 32, |_k| loop_(return_));
    assert!(ret.trace(&Target::cpu(32)).unwrap_err().message.contains("early return"));
    // In a range body `return_` would also skip the thread's later grid-stride passes (D2).
    let ret = Kernel::range("ret_in_range", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| if_(i.eq(3), return_));
    });
    let e = ret.trace(&Target::cpu(32)).unwrap_err();
    assert_eq!((e.op.as_str(), e.loc.file), ("return_", file!()), "{e}");
    assert!(e.message.contains("inside parallel_for"), "{e}");
    let no_range = Kernel::range("no_range", 32, |k| {
        k.array::<i32>("a");
    });
    assert!(no_range.trace(&Target::cpu(32)).unwrap_err().message.contains("exactly one parallel range"));
    let range_in_explicit = Kernel::explicit("range_in_explicit", 32, |k| k.parallel_for(0, 4, |_| {}));
    assert!(range_in_explicit.trace(&Target::cpu(32)).unwrap_err().message.contains("range kernel"));
    let local_volatile = Kernel::explicit("volatile_local", 32, |_k| {
        let l = local_array::<i32>(4);
        volatile_load(l.at(0));
    });
    assert!(local_volatile.trace(&Target::cpu(32)).unwrap_err().message.contains("is a per-thread array"));
    let big = Kernel::explicit("too_big", 2048, |_k| {});
    assert!(big.trace(&Target::cpu(32)).unwrap_err().message.contains("block_dim"));
}

#[test]
fn passes_fold_merge_and_drop_pure_code_but_keep_memory_ops() {
    let k = Kernel::range("passes", 32, |k| {
        let a = k.array::<i32>("a");
        let f = k.array::<i32>("flag");
        k.parallel_for(0, a.len(), |i| {
            let x = (Val::constant(3i32) * 4 + 1) * i; // folds to 13 * i
            let y = (Val::constant(3i32) * 4 + 1) * i; // the same value
            let _unused = i * 1000;
            let v1 = volatile_load(f.at(0));
            let v2 = volatile_load(f.at(0)); // never merged (D6)
            a.set(i, x + y + v1 + v2);
        });
    });
    let mut ir = trace(&k);
    let before = print_kernel(&ir);
    qd::ir::passes::optimize(&mut ir);
    let after = print_kernel(&ir);
    qd::ir::verify(&ir, Default::default()).unwrap();
    assert!(after.lines().count() < before.lines().count(), "{after}");
    assert!(after.contains("const 13"), "{after}");
    assert_eq!(after.matches("= mul").count(), 1, "{after}");
    assert_eq!(after.matches("load volatile").count(), 2, "{after}");
    assert!(!after.contains("const 1000"), "{after}");
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).unwrap();
    let f = d.array_from(&[5]).unwrap();
    d.launch(&k, &[a.arg(), f.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap(), (0..32).map(|i| 26 * i + 10).collect::<Vec<_>>());
}

#[test]
fn shared_memory_over_the_targets_limit_is_a_trace_error() {
    let k = Kernel::explicit("too_much_shared", 64, |k| {
        let a = k.array::<f64>("a");
        let s = block::shared_array::<f64>(64 * 1024); // 512 KiB
        s.set(0, a.get(0));
    });
    let e = k.trace(&Target::cpu(32)).unwrap_err();
    assert!(e.message.contains("524288 bytes") && e.message.contains("over the"), "{e}");
    let e = k.trace(&Target::cuda(90)).unwrap_err();
    assert!(e.message.contains("cuda"), "{e}");
}

#[test]
fn handles_kept_past_their_trace_are_trace_errors() {
    use std::sync::{Arc, Mutex};
    type Kept = Arc<Mutex<Option<(Array<i32>, Var<i32>)>>>;
    let kept: Kept = Arc::default();
    let k1 = {
        let kept = kept.clone();
        Kernel::explicit("first", 32, move |k| {
            let a = k.array::<i32>("a");
            *kept.lock().unwrap() = Some((a, var(0i32)));
        })
    };
    k1.trace(&Target::cpu(32)).unwrap();
    let k2 = Kernel::explicit("second", 32, move |_k| {
        let (a, v) = kept.lock().unwrap().unwrap();
        a.set(0, v.get());
    });
    let e = k2.trace(&Target::cpu(32)).unwrap_err();
    assert!(e.message.contains("another kernel's trace"), "{e}");
}

#[test]
fn a_value_computed_inside_an_if_is_not_visible_after_it() {
    let k = Kernel::explicit("escaping_value", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        let mut inner = None;
        if_(t.gt(3), || inner = Some(t * 2));
        let line_use = inner.unwrap();
        a.set(t, line_use);
    });
    let e = k.trace(&Target::cpu(32)).unwrap_err();
    assert!(e.message.contains("outside the if/loop body"), "{e}");
}

/// `subgroup.reduce_*` / `inclusive_*` / `exclusive_add` as one instruction: printed by name, a
/// reduction uniform across the subgroup and a scan not, the verifier's type rules, under a
/// lane condition a trace error, and refused where the target takes the library's trees.
#[test]
fn subgroup_reduce_printing_uniformity_types_and_refusals() {
    let k = Kernel::range("sgred", 64, |k| {
        let a = k.array::<i64>("a");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            a.set(i, subgroup::reduce_all_add(v) + subgroup::inclusive_add(v));
        });
    });
    // The emulator's own profile takes the trees; answering the feature natively it reduces.
    let add = |scan| qd::target::Feature::SubgroupArith { op: qd::ir::ReduxOp::Add, scan, dtype: qd::ir::DType::I64 };
    let native = qd::target::Support::Native;
    let target = Target::cpu(16)
        .with_support(add(None), native.clone())
        .with_support(add(Some(qd::ir::ScanKind::Inclusive)), native.clone());
    let ir = k.trace(&target).unwrap();
    let text = print_kernel(&ir);
    assert!(text.contains("= subgroup.reduce_add %") && text.contains("= subgroup.inclusive_add %"), "{text}");
    let info = analyze(&ir);
    let mut seen = Vec::new();
    ir.body.walk(&mut |inst| {
        if let InstKind::SubgroupReduce { dst, scan, .. } = &inst.kind {
            seen.push((scan.is_some(), info.values[dst.0 as usize]));
        }
    });
    assert_eq!(seen, [(false, Uniformity::Subgroup), (true, Uniformity::Varying)]);

    // The verifier: integers of 32 or 64 bits, exclusive scans of sums only.
    let mut bad = ir.clone();
    edit_first(&mut bad.body, &mut |kind| match kind {
        InstKind::SubgroupReduce { op, scan, .. } => {
            (*op, *scan) = (qd::ir::ReduxOp::Min, Some(qd::ir::ScanKind::Exclusive));
            true
        }
        _ => false,
    });
    let e = qd::ir::verify(&bad, Default::default()).unwrap_err();
    // The error names the library op the user called (the edited instruction came from it).
    assert_eq!(e.op, "subgroup.reduce_all_add", "{e}");
    assert!(e.message.contains("an exclusive scan is a sum only"), "{e}");
    let floats = Kernel::range("sgred_f32", 64, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::shuffle_xor(a.get(i), 1u32)));
    });
    let mut bad = floats.trace(&Target::cpu(16)).unwrap();
    edit_first(&mut bad.body, &mut |kind| match *kind {
        InstKind::Shuffle { dst, value, .. } => {
            *kind = InstKind::SubgroupReduce { dst, op: qd::ir::ReduxOp::Add, scan: None, value };
            true
        }
        _ => false,
    });
    let e = qd::ir::verify(&bad, Default::default()).unwrap_err();
    assert!(e.message.contains("reduces 32- or 64-bit integers, got f32"), "{e}");

    // A collective: not under a lane condition.
    let divergent = Kernel::explicit("sgred_divergent", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        if_(t.lt(16), || a.set(t, subgroup::reduce_all_add(t)));
    });
    let e = divergent.trace(&Target::metal()).unwrap_err();
    // The op the user called, not the instruction it became (`subgroup.reduce_add`, issue 12).
    assert_eq!(e.op, "subgroup.reduce_all_add", "{e}");

    // Where the target takes the trees, the instruction is refused by the check and by PTX.
    let e = qd::target::check(&ir, &Target::cuda(90), qd::ir::SrcLoc::caller()).unwrap_err();
    assert!(e.message.contains("only as a library path (the shuffle trees"), "{e}");
    let e = qd::backend::ptx::lower_kernel_sm(&ir, 90).unwrap_err();
    assert_eq!(e.op, "subgroup.reduce_all_add", "{e}");
}

/// Applies `f` to instructions in walk order until it returns true.
fn edit_first(b: &mut qd::ir::Block, f: &mut dyn FnMut(&mut InstKind) -> bool) -> bool {
    for inst in &mut b.insts {
        if f(&mut inst.kind) {
            return true;
        }
        let nested = match &mut inst.kind {
            InstKind::GridStride { body, .. } | InstKind::Loop { body } => vec![body],
            InstKind::If { then_block, else_block, .. } => vec![then_block, else_block],
            _ => vec![],
        };
        for n in nested {
            if edit_first(n, f) {
                return true;
            }
        }
    }
    false
}

#[test]
fn sixteen_thousand_dead_instructions_compile_in_linear_time() {
    // A dead chain of adds: removing it round by round was quadratic (10 s for 16 000, issue 12).
    let k = Kernel::explicit("dead_chain", 32, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        let _dead = (0..16_000).fold(a.get(t), |x, _| x + 1);
        a.set(t, t);
    });
    let start = std::time::Instant::now();
    let d = Device::cpu();
    d.compile(&k).unwrap();
    let took = start.elapsed();
    // Generous for debug builds on a busy machine; the quadratic pass took seconds.
    assert!(took < std::time::Duration::from_secs(2), "compiling 16 000 dead adds took {took:?}");
}

#[test]
fn deep_nesting_is_a_trace_error_not_a_stack_overflow() {
    fn nest(t: Val<i32>, a: Array<i32>, n: u32) {
        if n == 0 {
            a.set(t, t);
        } else {
            if_(t.lt(1000), move || nest(t, a, n - 1));
        }
    }
    let k = Kernel::explicit("deep", 32, |k| {
        let a = k.array::<i32>("a");
        nest(block::thread_idx(), a, 20_000);
    });
    let e = k.trace(&Target::cpu(32)).unwrap_err();
    assert_eq!((e.op.as_str(), e.loc.file), ("nesting", file!()), "{e}");
    assert!(e.message.contains(&qd::trace::MAX_NESTING.to_string()), "{e}");
    // Just under the limit every pass and generator copes on a test thread's stack.
    let k = Kernel::explicit("deep_ok", 32, |k| {
        let a = k.array::<i32>("a");
        nest(block::thread_idx(), a, qd::trace::MAX_NESTING as u32 - 2);
    });
    for target in [Target::cpu(32), Target::cuda(90)] {
        k.trace(&target).unwrap();
    }
    let d = Device::cpu();
    let a = d.zeros::<i32>(32).unwrap();
    d.launch_grid(&k, 1, &[a.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap(), (0..32).collect::<Vec<i32>>());
}
