//! Trace-time errors of the subgroup library: each names the op and points at the user's line.

use qd::backend::Target;
use qd::prelude::*;
use qd::trace::TraceError;

/// Traces a kernel whose body is `f(a[i])` (result unused) for `target`, expecting a trace error.
fn trace_err<T: Scalar, R>(target: &Target, f: impl Fn(Val<T>) -> R + Send + Sync + 'static) -> TraceError {
    let k = Kernel::range("errs", 64, move |k| {
        let a = k.array::<T>("a");
        k.parallel_for(0, a.len(), |i| {
            let _ = f(a.get(i));
        });
    });
    k.trace(target).expect_err("the trace should fail")
}

/// Asserts the error names `op` and points at `line` of this file.
#[track_caller]
fn assert_points_here(e: &TraceError, op: &str, line: u32, message: &str) {
    assert_eq!(e.op, op, "{e}");
    assert!(e.loc.file.ends_with("subgroup_errors.rs"), "{e}");
    assert_eq!(e.loc.line, line, "{e}");
    assert!(e.message.contains(message), "{e}");
}

#[test]
fn log2_size_above_the_subgroup_width() {
    let t = Target::cpu(16);
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |v| subgroup::reduce_add_tiled(v, 5));
    assert_points_here(&e, "subgroup.reduce_add_tiled", line, "log2_size 5 exceeds log2_group_size() = 4");

    // Every tiled family checks, and the error names the op the user called.
    let line = line!() + 1;
    let e = trace_err::<f32, _>(&t, |v| subgroup::inclusive_max_tiled(v, 6));
    assert_points_here(&e, "subgroup.inclusive_max_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<u64, _>(&t, |v| subgroup::exclusive_and_tiled(v, 7));
    assert_points_here(&e, "subgroup.exclusive_and_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<i64, _>(&t, |v| subgroup::segmented_reduce_min_tiled(v, 1i32, 5));
    assert_points_here(&e, "subgroup.segmented_reduce_min_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<f64, _>(&t, |v| subgroup::reduce_all_max_tiled(v, 5));
    assert_points_here(&e, "subgroup.reduce_all_max_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<u32, _>(&t, |v| subgroup::bitonic_sort_kv_tiled(v, v, 5));
    assert_points_here(&e, "subgroup.bitonic_sort_kv_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |v| subgroup::all_equal_tiled(v, 5));
    assert_points_here(&e, "subgroup.all_equal_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |v| subgroup::any_true_tiled(v, 5));
    assert_points_here(&e, "subgroup.any_true_tiled", line, "exceeds");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |v| subgroup::all_true_tiled(v, 9));
    assert_points_here(&e, "subgroup.all_true_tiled", line, "exceeds");

    // At the limit it traces.
    let k = Kernel::range("ok", 64, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_add_tiled(a.get(i), 4)));
    });
    k.trace(&t).unwrap();
}

#[test]
fn ballot_first_n_outside_1_to_32() {
    let t = Target::cpu(32);
    for n in [0, 33, 64] {
        let line = line!() + 1;
        let e = trace_err::<i32, _>(&t, move |v| subgroup::ballot_first_n(v, n));
        assert_points_here(&e, "subgroup.ballot_first_n", line, &format!("got {n}"));
    }
}

#[test]
fn lanemask_with_a_constant_lane_id_above_31() {
    let t = Target::cpu(64);
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |_| subgroup::lanemask_lt(32u32));
    assert_points_here(&e, "subgroup.lanemask_lt", line, "lane id 32 is out of range 0..=31");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |_| subgroup::lanemask_ge(40i32));
    assert_points_here(&e, "subgroup.lanemask_ge", line, "lane id 40");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |_| subgroup::lanemask_eq(-1i32));
    assert_points_here(&e, "subgroup.lanemask_eq", line, "lane id -1");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |_| subgroup::lanemask_le(33u32));
    assert_points_here(&e, "subgroup.lanemask_le", line, "lane id 33");
    let line = line!() + 1;
    let e = trace_err::<i32, _>(&t, |_| subgroup::lanemask_gt(63u32));
    assert_points_here(&e, "subgroup.lanemask_gt", line, "lane id 63");
}

#[test]
fn bitwise_scans_reject_floats() {
    let t = Target::cpu(32);
    let line = line!() + 1;
    let e = trace_err::<f32, _>(&t, |v| subgroup::inclusive_and_tiled(v, 3));
    assert_points_here(&e, "subgroup.inclusive_and_tiled", line, "got f32");
    let line = line!() + 1;
    let e = trace_err::<f64, _>(&t, |v| subgroup::exclusive_xor(v));
    assert_points_here(&e, "subgroup.exclusive_xor", line, "got f64");
    let line = line!() + 1;
    let e = trace_err::<f32, _>(&t, |v| subgroup::inclusive_or(v));
    assert_points_here(&e, "subgroup.inclusive_or", line, "bitwise ops are not defined on floats");
    let line = line!() + 1;
    let e = trace_err::<f64, _>(&t, |v| subgroup::exclusive_and_tiled(v, 0));
    assert_points_here(&e, "subgroup.exclusive_and_tiled", line, "takes an integer dtype");
}

#[test]
fn broadcast_of_a_varying_lane_where_the_target_needs_a_uniform_one() {
    let spirv_like = Target::cpu(32).with_support(
        qd::target::Feature::DynamicBroadcastLane,
        qd::target::Support::unsupported("uniform lanes only"),
    );
    let line = line!() + 1;
    let e = trace_err::<f32, _>(&spirv_like, |v| subgroup::broadcast(v, (subgroup::invocation_id() ^ 1).cast::<u32>()));
    assert_points_here(&e, "subgroup.broadcast", line, "subgroup-uniform lane");

    // A uniform lane (a constant, broadcast_first) is fine there, and a varying one elsewhere.
    let uniform = Kernel::range("uniform", 64, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::broadcast(a.get(i), 3u32) + subgroup::broadcast_first(a.get(i)));
        });
    });
    uniform.trace(&spirv_like).unwrap();
    let varying = Kernel::range("varying", 64, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::broadcast(a.get(i), subgroup::invocation_id().cast::<u32>() ^ 1u32));
        });
    });
    varying.trace(&Target::cpu(32)).unwrap();
}

#[test]
fn full_forms_report_their_own_name() {
    // A float bitwise scan through the full form names the full form the user called.
    let t = Target::cpu(8);
    let line = line!() + 1;
    let e = trace_err::<f32, _>(&t, |v| subgroup::inclusive_xor(v));
    assert_points_here(&e, "subgroup.inclusive_xor", line, "f32");
}
