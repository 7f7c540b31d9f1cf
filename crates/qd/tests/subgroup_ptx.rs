//! The subgroup library through the PTX backend: every op × dtype lowers and assembles with ptxas
//! for sm_80 and sm_90, and the full-warp ops print the instruction counts of hand-written CUDA.

use qd::backend::ptx::lower::lower_kernel_sm;
use qd::backend::Target;
use qd::prelude::*;
use qd::simt::subgroup::Shuffle;

/// What a CUDA device traces with: 32 lanes, `vote.all`/`vote.any`, `redux.sync`.
fn cuda() -> Target {
    Target::cuda(90)
}

/// Assembles with the kit's ptxas (D9), failing the test with the module when it is rejected.
fn assemble(name: &str, text: &str, sm: u32) {
    if let Some(ptxas) = qd_testkit::Ptxas::find() {
        ptxas.assert_assembles(name, &format!("sm_{sm}"), text);
    }
}

/// Every op on `T` at the full width and at a 8-lane tile, in one kernel.
fn all_ops<T: Shuffle>(name: &str, int: bool) -> Kernel {
    Kernel::range(name, 64, move |k| {
        let a = k.array::<T>("a");
        let h = k.array::<i32>("h");
        let out = k.array::<T>("out");
        let flags = k.array::<i32>("flags");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            let head = h.get(i);
            let mut r = subgroup::shuffle(v, 3u32)
                + subgroup::shuffle_up(v, 1u32)
                + subgroup::shuffle_down(v, 2u32)
                + subgroup::shuffle_xor(v, 5u32)
                + subgroup::broadcast(v, 7u32)
                + subgroup::broadcast_first(v);
            for l in [3, 5] {
                r = r
                    + subgroup::reduce_add_tiled(v, l)
                    + subgroup::reduce_min_tiled(v, l)
                    + subgroup::reduce_max_tiled(v, l)
                    + subgroup::reduce_all_add_tiled(v, l)
                    + subgroup::reduce_all_min_tiled(v, l)
                    + subgroup::reduce_all_max_tiled(v, l)
                    + subgroup::segmented_reduce_add_tiled(v, head, l)
                    + subgroup::segmented_reduce_min_tiled(v, head, l)
                    + subgroup::segmented_reduce_max_tiled(v, head, l)
                    + subgroup::inclusive_add_tiled(v, l)
                    + subgroup::inclusive_mul_tiled(v, l)
                    + subgroup::inclusive_min_tiled(v, l)
                    + subgroup::inclusive_max_tiled(v, l)
                    + subgroup::exclusive_add_tiled(v, l)
                    + subgroup::exclusive_mul_tiled(v, l)
                    + subgroup::exclusive_min_tiled(v, l)
                    + subgroup::exclusive_max_tiled(v, l);
                if int {
                    r = r
                        + subgroup::inclusive_and_tiled(v, l)
                        + subgroup::inclusive_or_tiled(v, l)
                        + subgroup::inclusive_xor_tiled(v, l)
                        + subgroup::exclusive_and_tiled(v, l)
                        + subgroup::exclusive_or_tiled(v, l)
                        + subgroup::exclusive_xor_tiled(v, l);
                }
                let (sk, sv) = subgroup::bitonic_sort_kv_tiled(v, head, l);
                r += sk;
                flags.set(i, sv + subgroup::all_equal_tiled(v, l));
            }
            out.set(i, r);
        });
    })
}

#[test]
fn every_op_and_dtype_assembles() {
    let t = cuda();
    for k in [
        all_ops::<i32>("sg_i32", true),
        all_ops::<u32>("sg_u32", true),
        all_ops::<i64>("sg_i64", true),
        all_ops::<u64>("sg_u64", true),
        all_ops::<f32>("sg_f32", false),
        all_ops::<f64>("sg_f64", false),
    ] {
        let ir = k.trace(&t).unwrap();
        for sm in [80, 90] {
            let m = lower_kernel_sm(&ir, sm).unwrap();
            assemble(k.name(), &m.text, sm);
        }
    }
}

#[test]
fn votes_ballots_and_lane_masks_assemble() {
    let k = Kernel::range("sg_votes", 64, |k| {
        let a = k.array::<i32>("a");
        let m = k.array::<u64>("m");
        k.parallel_for(0, a.len(), |i| {
            let x = a.get(i);
            let lane = subgroup::invocation_id();
            let v = subgroup::all_true(x)
                + subgroup::any_true(x.gt(3))
                + subgroup::all_true_tiled(x, 2)
                + subgroup::any_true_tiled(x, 4)
                + subgroup::all_equal(x)
                + subgroup::elect()
                + (subgroup::lanemask_lt(lane)
                    | subgroup::lanemask_le(lane)
                    | subgroup::lanemask_eq(3u32)
                    | subgroup::lanemask_gt(lane)
                    | subgroup::lanemask_ge(lane)
                    | subgroup::ballot_first_n(x, 7)
                    | subgroup::ballot_first_n(x, 32))
                .cast::<i32>();
            subgroup::sync();
            subgroup::mem_fence();
            a.set(i, v);
            m.set(i, subgroup::ballot(x));
        });
    });
    let ir = k.trace(&cuda()).unwrap();
    for sm in [80, 90] {
        assemble(k.name(), &lower_kernel_sm(&ir, sm).unwrap().text, sm);
    }
}

/// The PTX instruction counts of the full-warp ops (quadrants.md: `log2_group_size()` shuffles per
/// reduction and scan, `L(L+1)` for the sort; CUDA shortcuts `redux.sync` and `vote.all`).
#[test]
fn full_warp_instruction_counts() {
    fn count<T: Shuffle, R: Scalar>(f: impl Fn(Val<T>) -> Val<R> + Send + Sync + 'static) -> (usize, usize, usize) {
        let k = Kernel::range("count", 32, move |k| {
            let a = k.array::<T>("a");
            let out = k.array::<R>("out");
            k.parallel_for(0, a.len(), |i| out.set(i, f(a.get(i))));
        });
        let text = lower_kernel_sm(&k.trace(&cuda()).unwrap(), 90).unwrap().text;
        let n = |pat: &str| text.lines().filter(|l| l.trim_start().starts_with(pat)).count();
        (n("shfl.sync"), n("redux.sync"), n("vote.sync"))
    }
    assert_eq!(count(|v: Val<i32>| subgroup::reduce_add(v)), (0, 1, 0));
    assert_eq!(count(|v: Val<u32>| subgroup::reduce_all_max(v)), (0, 1, 0));
    assert_eq!(count(|v: Val<f32>| subgroup::reduce_add(v)), (5, 0, 0));
    assert_eq!(count(|v: Val<f32>| subgroup::reduce_all_add(v)), (5, 0, 0));
    assert_eq!(count(|v: Val<i32>| subgroup::inclusive_add(v)), (5, 0, 0));
    assert_eq!(count(|v: Val<i32>| subgroup::segmented_reduce_add(v, v)), (5, 0, 1));
    assert_eq!(count(|v: Val<i32>| subgroup::bitonic_sort_kv(v, v).0), (30, 0, 0));
    assert_eq!(count(|v: Val<i32>| subgroup::all_true(v)), (0, 0, 1));
    assert_eq!(count(|v: Val<f32>| subgroup::all_equal(v)), (1, 0, 1));
}
