//! The subgroup library's lowering (what each op traces into, per target) and the fixed examples
//! of the upstream test catalogue that random conformance inputs would rarely hit.

use qd::backend::amdgpu::AmdgpuArch;
use qd::backend::Target;
use qd::ir::{print_kernel, InstKind, NvOp, ReduxOp, ScanKind, ShuffleKind};
use qd::prelude::*;

/// Traces `out[i] = f(a[i])` for `target`.
fn trace<T: Scalar, R: Scalar>(
    target: &Target,
    f: impl Fn(Val<T>) -> Val<R> + Send + Sync + 'static,
) -> qd::ir::Kernel {
    let k = Kernel::range("k", 64, move |k| {
        let a = k.array::<T>("a");
        let out = k.array::<R>("out");
        k.parallel_for(0, a.len(), |i| out.set(i, f(a.get(i))));
    });
    k.trace(target).unwrap()
}

/// Counts of (shuffle idx, shuffle up, shuffle down, broadcast, ballot, vote, nv redux, subgroup
/// reductions and scans).
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    idx: usize,
    up: usize,
    down: usize,
    broadcast: usize,
    ballot: usize,
    vote: usize,
    redux: usize,
    reduce: usize,
}

fn counts(k: &qd::ir::Kernel) -> Counts {
    let mut c = Counts::default();
    k.body.walk(&mut |inst| match &inst.kind {
        InstKind::Shuffle { kind: ShuffleKind::Idx | ShuffleKind::Xor, .. } => c.idx += 1,
        InstKind::Shuffle { kind: ShuffleKind::Up, .. } => c.up += 1,
        InstKind::Shuffle { kind: ShuffleKind::Down, .. } => c.down += 1,
        InstKind::Broadcast { .. } => c.broadcast += 1,
        InstKind::Ballot { .. } => c.ballot += 1,
        InstKind::Vote { .. } => c.vote += 1,
        InstKind::Nv { op: NvOp::Redux(_), .. } => c.redux += 1,
        InstKind::SubgroupReduce { .. } => c.reduce += 1,
        _ => {}
    });
    c
}

fn c(idx: usize, up: usize, down: usize) -> Counts {
    Counts { idx, up, down, ..Counts::default() }
}

#[test]
fn shuffle_counts_match_the_page() {
    let t = Target::cpu(64);
    for l in 0..=6u32 {
        let n = l as usize;
        assert_eq!(counts(&trace(&t, move |v: Val<f32>| subgroup::reduce_add_tiled(v, l))), c(0, 0, n), "L{l}");
        assert_eq!(counts(&trace(&t, move |v: Val<i32>| subgroup::reduce_all_max_tiled(v, l))), c(n, 0, 0));
        assert_eq!(counts(&trace(&t, move |v: Val<u64>| subgroup::inclusive_xor_tiled(v, l))), c(0, n, 0));
        // The exclusive forms shift the input first: one more shuffle_up (none for one-lane tiles).
        let ex = if l == 0 { 0 } else { n + 1 };
        assert_eq!(counts(&trace(&t, move |v: Val<f64>| subgroup::exclusive_min_tiled(v, l))), c(0, ex, 0));
        let seg = counts(&trace(&t, move |v: Val<i64>| subgroup::segmented_reduce_add_tiled(v, v, l)));
        assert_eq!(seg, Counts { up: n, ballot: 1, ..Counts::default() }, "L{l}");
        let sort = counts(&trace(&t, move |v: Val<u32>| subgroup::bitonic_sort_kv_tiled(v, v, l).0));
        assert_eq!(sort, c(n * (n + 1), 0, 0), "L{l}: log2_size * (log2_size + 1) shuffles");
        // all_equal: one shuffle from the tile's lane 0 plus the all_true butterfly.
        let eq = counts(&trace(&t, move |v: Val<f32>| subgroup::all_equal_tiled(v, l)));
        assert_eq!(eq, c(n + (l > 0) as usize, 0, 0), "L{l}");
    }
}

/// CUDA with (sm_80) or without (sm_70) `redux.sync`.
fn cuda_like(redux: bool) -> Target {
    Target::cuda(if redux { 80 } else { 70 })
}

#[test]
fn vote_shortcut_for_full_subgroup_votes() {
    let t = cuda_like(false);
    let all = counts(&trace(&t, |v: Val<i32>| subgroup::all_true(v)));
    assert_eq!(all, Counts { vote: 1, ..Counts::default() });
    // all_equal: one shuffle plus one vote.all.
    let eq = counts(&trace(&t, |v: Val<f64>| subgroup::all_equal(v)));
    assert_eq!(eq, Counts { idx: 1, vote: 1, ..Counts::default() });
    // Partial tiles keep the portable butterfly.
    let any = counts(&trace(&t, |v: Val<i32>| subgroup::any_true_tiled(v, 3)));
    assert_eq!(any, c(3, 0, 0));
}

#[test]
fn redux_for_full_warp_32_bit_integer_reductions() {
    let t = cuda_like(true);
    let one = Counts { redux: 1, ..Counts::default() };
    assert_eq!(counts(&trace(&t, |v: Val<i32>| subgroup::reduce_add(v))), one);
    assert_eq!(counts(&trace(&t, |v: Val<u32>| subgroup::reduce_all_min(v))), one);
    assert_eq!(counts(&trace(&t, |v: Val<i32>| subgroup::reduce_max_tiled(v, 5))), one);
    let k = trace(&t, |v: Val<u32>| subgroup::reduce_all_max(v));
    let ops: Vec<ReduxOp> = {
        let mut ops = Vec::new();
        k.body.walk(&mut |inst| {
            if let InstKind::Nv { op: NvOp::Redux(r), dsts, args, place: None } = &inst.kind {
                assert_eq!((dsts.len(), args.len()), (1, 1));
                ops.push(*r);
            }
        });
        ops
    };
    assert_eq!(ops, [ReduxOp::Max]);
    // Not for 64-bit or float values, partial tiles, or targets without redux.
    assert_eq!(counts(&trace(&t, |v: Val<i64>| subgroup::reduce_add(v))), c(0, 0, 5));
    assert_eq!(counts(&trace(&t, |v: Val<f32>| subgroup::reduce_all_add(v))), c(5, 0, 0));
    assert_eq!(counts(&trace(&t, |v: Val<i32>| subgroup::reduce_add_tiled(v, 4))), c(0, 0, 4));
    assert_eq!(counts(&trace(&cuda_like(false), |v: Val<i32>| subgroup::reduce_add(v))), c(0, 0, 5));
}

/// The emulator with `sg` lanes answering every integer `Feature::SubgroupArith` natively.
fn arith_everywhere(sg: u32) -> Target {
    use qd::target::{Feature, Support};
    let mut t = Target::cpu(sg);
    for op in [ReduxOp::Add, ReduxOp::Min, ReduxOp::Max, ReduxOp::And, ReduxOp::Or, ReduxOp::Xor] {
        let scans: &[Option<ScanKind>] = if op == ReduxOp::Add {
            &[None, Some(ScanKind::Inclusive), Some(ScanKind::Exclusive)]
        } else {
            &[None, Some(ScanKind::Inclusive)]
        };
        for &scan in scans {
            for dtype in [qd::ir::DType::I32, qd::ir::DType::U32, qd::ir::DType::I64, qd::ir::DType::U64] {
                t = t.with_support(Feature::SubgroupArith { op, scan, dtype }, Support::Native);
            }
        }
    }
    t
}

/// The reductions and scans traced for `target` as one `SubgroupReduce`: their (op, scan) pairs.
fn reductions(k: &qd::ir::Kernel) -> Vec<(ReduxOp, Option<ScanKind>)> {
    let mut found = Vec::new();
    k.body.walk(&mut |inst| {
        if let InstKind::SubgroupReduce { op, scan, .. } = &inst.kind {
            found.push((*op, *scan));
        }
    });
    found
}

#[test]
fn one_instruction_for_full_subgroup_integer_reductions_where_the_target_has_it() {
    use ScanKind::{Exclusive, Inclusive};
    let one = |op, scan| vec![(op, scan)];
    for t in [Target::metal(), arith_everywhere(8), arith_everywhere(64)] {
        assert_eq!(reductions(&trace(&t, |v: Val<i32>| subgroup::reduce_add(v))), one(ReduxOp::Add, None));
        assert_eq!(reductions(&trace(&t, |v: Val<u32>| subgroup::reduce_all_max(v))), one(ReduxOp::Max, None));
        assert_eq!(
            reductions(&trace(&t, |v: Val<i32>| subgroup::inclusive_add(v))),
            one(ReduxOp::Add, Some(Inclusive))
        );
        assert_eq!(
            reductions(&trace(&t, |v: Val<u32>| subgroup::exclusive_add(v))),
            one(ReduxOp::Add, Some(Exclusive))
        );
        let l = t.log2_subgroup_size();
        let full_tile = trace(&t, move |v: Val<i32>| subgroup::reduce_min_tiled(v, l));
        assert_eq!(reductions(&full_tile), one(ReduxOp::Min, None));
        // Never for floats, products, exclusive scans other than sums, or partial tiles.
        assert_eq!(counts(&trace(&t, |v: Val<f32>| subgroup::reduce_add(v))), c(0, 0, l as usize));
        assert!(reductions(&trace(&t, |v: Val<i32>| subgroup::inclusive_mul(v))).is_empty());
        assert!(reductions(&trace(&t, |v: Val<u32>| subgroup::exclusive_max(v))).is_empty());
        assert!(reductions(&trace(&t, |v: Val<i32>| subgroup::reduce_add_tiled(v, 2))).is_empty());
    }
    // Metal: 32-bit sums and reductions only (no 64-bit simd_sum, prefix scans of sums only).
    let metal = Target::metal();
    assert!(reductions(&trace(&metal, |v: Val<i64>| subgroup::reduce_add(v))).is_empty());
    assert!(reductions(&trace(&metal, |v: Val<i32>| subgroup::inclusive_max(v))).is_empty());
    let every = arith_everywhere(16);
    assert_eq!(reductions(&trace(&every, |v: Val<i64>| subgroup::reduce_add(v))), one(ReduxOp::Add, None));
    assert_eq!(
        reductions(&trace(&every, |v: Val<u64>| subgroup::inclusive_xor(v))),
        one(ReduxOp::Xor, Some(Inclusive))
    );
    // CUDA, Vulkan, AMDGPU and the emulator's own profile take the trees.
    let vulkan = Target::vulkan(32, &qd::backend::spirv::SpirvCaps::lavapipe());
    for t in [Target::cuda(90), vulkan, Target::amdgpu(AmdgpuArch::Gfx942), Target::cpu(32)] {
        assert!(reductions(&trace(&t, |v: Val<i64>| subgroup::reduce_add(v))).is_empty());
        assert!(reductions(&trace(&t, |v: Val<i32>| subgroup::exclusive_add(v))).is_empty());
    }
}

#[test]
fn full_forms_trace_to_the_tiled_form_at_log2_group_size() {
    for sg in [4, 8, 16, 32, 64] {
        let t = Target::cpu(sg);
        let same = |a: qd::ir::Kernel, b: qd::ir::Kernel| assert_eq!(print_kernel(&a), print_kernel(&b), "sg{sg}");
        let l = t.log2_subgroup_size();
        same(
            trace(&t, |v: Val<i32>| subgroup::reduce_add(v)),
            trace(&t, move |v: Val<i32>| subgroup::reduce_add_tiled(v, l)),
        );
        same(
            trace(&t, |v: Val<f32>| subgroup::exclusive_mul(v)),
            trace(&t, move |v: Val<f32>| subgroup::exclusive_mul_tiled(v, l)),
        );
        same(
            trace(&t, |v: Val<u64>| subgroup::segmented_reduce_max(v, v)),
            trace(&t, move |v: Val<u64>| subgroup::segmented_reduce_max_tiled(v, v, l)),
        );
        same(
            trace(&t, |v: Val<f64>| subgroup::bitonic_sort_kv(v, v).1),
            trace(&t, move |v: Val<f64>| subgroup::bitonic_sort_kv_tiled(v, v, l).1),
        );
    }
}

/// Runs `out[i] = f(a[i], b[i])` on `cpu:sg{sg}`.
fn run<A: Scalar, B: Scalar, R: Scalar>(
    sg: u32,
    a: &[A],
    b: &[B],
    f: impl Fn(Val<A>, Val<B>) -> Val<R> + Send + Sync + 'static,
) -> Vec<R> {
    let k = Kernel::range("run", 64, move |k| {
        let (x, y, out) = (k.array::<A>("a"), k.array::<B>("b"), k.array::<R>("out"));
        k.parallel_for(0, x.len(), |i| out.set(i, f(x.get(i), y.get(i))));
    });
    let d = Device::from_name(&format!("cpu:sg{sg}")).unwrap();
    let (x, y, out) = (d.array_from(a).unwrap(), d.array_from(b).unwrap(), d.zeros::<R>(a.len()).unwrap());
    d.launch(&k, &[x.arg(), y.arg(), out.arg()]).unwrap();
    out.to_vec().unwrap()
}

/// quadrants.md 1.6 `segmented_reduce_add_tiled_block64`: heads at {0, 3, 7, 12, 19, 25} in each
/// 32-lane half of a 64-lane subgroup (the wave64 half-local arithmetic), every L from 0 to 5, and
/// the L = 6 u64 path with heads {0, 9, 23, 40, 57}.
#[test]
fn segmented_reduce_on_wave64_halves() {
    let seg = |vals: &[i32], heads: &[i32], tile: usize| -> Vec<i32> {
        (0..vals.len())
            .map(|i| {
                let base = i - i % tile;
                let h = (base..=i).rev().find(|&j| j == base || heads[j] != 0).unwrap();
                vals[h..=i].iter().sum()
            })
            .collect()
    };
    let vals: Vec<i32> = (0..64).map(|i| i % 32 + 1).collect();
    let heads: Vec<i32> = (0..64).map(|i| [0, 3, 7, 12, 19, 25].contains(&(i % 32)) as i32).collect();
    for l in 0..=5u32 {
        let got = run(64, &vals, &heads, move |v, h| subgroup::segmented_reduce_add_tiled(v, h, l));
        assert_eq!(got, seg(&vals, &heads, 1 << l), "L{l}");
    }
    let vals: Vec<i32> = (1..=64).collect();
    // Truthy heads: any non-zero value starts a segment.
    let heads: Vec<i32> = (0..64).map(|i| [0, 9, 23, 40, 57].contains(&i) as i32 * -42).collect();
    let got = run(64, &vals, &heads, |v, h| subgroup::segmented_reduce_add_tiled(v, h, 6));
    assert_eq!(got, seg(&vals, &heads, 64));
    let got = run(64, &vals, &heads, |v, h| subgroup::segmented_reduce_max(v, h));
    assert_eq!(got, vals);
}

/// quadrants.md 1.10: equal keys come back in ascending-value order, not lane order.
#[test]
fn bitonic_sort_breaks_ties_on_value() {
    let pairs: Vec<(i32, i32)> = (0..16).flat_map(|k| [(k, 2 * k), (k, 2 * k + 1)]).collect();
    let input: Vec<(i32, i32)> = (0..64).map(|i| pairs[(11 * i + 5) % 32]).collect();
    let keys: Vec<i32> = input.iter().map(|p| p.0).collect();
    let vals: Vec<i32> = input.iter().map(|p| p.1).collect();
    let got_k = run(32, &keys, &vals, |k, v| subgroup::bitonic_sort_kv(k, v).0);
    let got_v = run(32, &keys, &vals, |k, v| subgroup::bitonic_sort_kv(k, v).1);
    let want_k: Vec<i32> = (0..64).map(|i| (i % 32) / 2).collect();
    let want_v: Vec<i32> = (0..64).map(|i| i % 32).collect();
    assert_eq!((got_k, got_v), (want_k, want_v));
}

/// NaN keys land anywhere, but the output is still a permutation of the input pairs.
#[test]
fn bitonic_sort_with_nan_keys_permutes() {
    let keys: Vec<f32> = (0..64).map(|i| if i % 5 == 0 { f32::NAN } else { ((i * 7) % 13) as f32 }).collect();
    let vals: Vec<u32> = (0..64).collect();
    let got_v = run(64, &keys, &vals, |k, v| subgroup::bitonic_sort_kv_tiled(k, v, 6).1);
    let mut sorted = got_v.clone();
    sorted.sort();
    assert_eq!(sorted, vals);
    let got_k = run(64, &keys, &vals, |k, v| subgroup::bitonic_sort_kv_tiled(k, v, 6).0);
    for (k, v) in got_k.iter().zip(&got_v) {
        assert_eq!(k.to_bits(), keys[*v as usize].to_bits(), "pairs stay together");
    }
}

/// quadrants.md 1.8 ballot on wave64: a predicate on the high half only.
#[test]
fn ballot_high_half_and_ballot_first_n_on_wave64() {
    let lanes: Vec<i32> = (0..64).collect();
    let got = run(64, &lanes, &lanes, |l, _| subgroup::ballot(l.ge(32)));
    assert!(got.iter().all(|&m| m == 0xFFFF_FFFF_0000_0000));
    // Lanes 32..63 receive the same low-half mask as everyone else.
    let got = run(64, &lanes, &lanes, |l, _| subgroup::ballot_first_n(l % 2, 16));
    assert!(got.iter().all(|&m| m == 0xAAAA));
}

#[test]
#[allow(deprecated)]
fn deprecated_aliases_forward() {
    let lanes: Vec<i32> = (0..64).collect();
    let got = run(8, &lanes, &lanes, |l, _| {
        subgroup::barrier();
        subgroup::memory_barrier();
        subgroup::ballot_full_subgroup(l % 2)
    });
    assert!(got.iter().all(|&m| m == 0xAA));
    let k = trace(&Target::cpu(8), |v: Val<i32>| {
        subgroup::barrier();
        subgroup::memory_barrier();
        v
    });
    let mut names = Vec::new();
    k.body.walk(&mut |inst| names.push(inst.kind.mnemonic()));
    assert!(names.contains(&"subgroup.sync".to_string()), "{names:?}");
}

/// quadrants.md 1.8: `reduce_add_tiled(1, log2_group_size())` gives the subgroup width in lane 0,
/// and constants work as inputs everywhere.
/// Runs `out[i] = f(a[i])` on the emulator wearing `target`, checking the kernel reduced in one
/// instruction.
fn run_on<A: Scalar, R: Scalar>(
    target: &Target,
    a: &[A],
    f: impl Fn(Val<A>) -> Val<R> + Send + Sync + 'static,
) -> Vec<R> {
    let k = Kernel::range("run_on", 64, move |k| {
        let (x, out) = (k.array::<A>("a"), k.array::<R>("out"));
        k.parallel_for(0, x.len(), |i| out.set(i, f(x.get(i))));
    });
    let d = Device::cpu_wearing(target, Default::default()).unwrap();
    assert_eq!(reductions(&d.trace(&k).unwrap()).len(), 1);
    let (x, out) = (d.array_from(a).unwrap(), d.zeros::<R>(a.len()).unwrap());
    d.launch(&k, &[x.arg(), out.arg()]).unwrap();
    out.to_vec().unwrap()
}

/// The emulator's `SubgroupReduce` (D5): sums wrap, min and max follow the signedness, lane 0 of
/// an exclusive sum gets 0; at 8 lanes (any width) and on Metal's 32.
#[test]
fn subgroup_reduce_wraps_and_keeps_signedness() {
    let a: Vec<i64> = (0..64).map(|i| if i % 3 == 0 { i64::MAX - i } else { i64::MIN + i * 7 }).collect();
    let t8 = arith_everywhere(8);
    let tile = |i: usize| &a[i - i % 8..i - i % 8 + 8];
    let got = run_on(&t8, &a, |v: Val<i64>| subgroup::inclusive_add(v));
    let want: Vec<i64> = (0..64).map(|i| tile(i)[..=i % 8].iter().fold(0i64, |s, x| s.wrapping_add(*x))).collect();
    assert_eq!(got, want);
    let got = run_on(&t8, &a, |v: Val<i64>| subgroup::reduce_all_max(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == *tile(i).iter().max().unwrap()), "{got:?}");
    let u: Vec<u64> = a.iter().map(|x| *x as u64).collect();
    let got = run_on(&t8, &u, |v: Val<u64>| subgroup::inclusive_xor(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == u[i - i % 8..=i].iter().fold(0, |s, y| s ^ y)), "{got:?}");
}

#[test]
fn subgroup_reduce_on_metal_wraps_and_keeps_signedness() {
    let a: Vec<i32> = (0..64).map(|i| if i % 3 == 0 { i32::MAX - i } else { i32::MIN + i * 7 }).collect();
    let metal = Target::metal();
    let prefix = |i: usize, inclusive: bool| {
        let base = i - i % 32;
        let end = if inclusive { i + 1 } else { i };
        a[base..end].iter().fold(0i32, |s, x| s.wrapping_add(*x))
    };
    let tile = |i: usize| &a[i - i % 32..i - i % 32 + 32];
    let got = run_on(&metal, &a, |v: Val<i32>| subgroup::reduce_all_add(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == prefix(i - i % 32 + 31, true)), "{got:?}");
    let got = run_on(&metal, &a, |v: Val<i32>| subgroup::inclusive_add(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == prefix(i, true)), "{got:?}");
    let got = run_on(&metal, &a, |v: Val<i32>| subgroup::exclusive_add(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == prefix(i, false)), "{got:?}");
    let got = run_on(&metal, &a, |v: Val<i32>| subgroup::reduce_all_min(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == *tile(i).iter().min().unwrap()), "{got:?}");
    let u: Vec<u32> = a.iter().map(|x| *x as u32).collect();
    let got = run_on(&metal, &u, |v: Val<u32>| subgroup::reduce_all_min(v));
    assert!(got.iter().enumerate().all(|(i, &x)| x == tile(i).iter().map(|x| *x as u32).min().unwrap()));
}

#[test]
fn constant_inputs() {
    let lanes: Vec<i32> = (0..64).collect();
    for sg in [4, 8, 16, 32, 64] {
        let got = run(sg, &lanes, &lanes, |_, _| subgroup::reduce_add_tiled(1i32, subgroup::log2_group_size()));
        assert!(got.iter().step_by(sg as usize).all(|&x| x == sg as i32), "sg{sg}: {got:?}");
        let got = run(sg, &lanes, &lanes, |_, _| subgroup::exclusive_add(2u32));
        assert!(got.iter().enumerate().all(|(i, &x)| x == 2 * (i as u32 % sg)), "sg{sg}: {got:?}");
        let got = run(sg, &lanes, &lanes, |_, _| subgroup::all_equal(7.5f64));
        assert!(got.iter().all(|&x| x == 1));
    }
}
