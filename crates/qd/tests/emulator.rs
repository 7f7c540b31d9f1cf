//! The emulator's contract (D8): lane-exact results, independent scheduling of divergent paths,
//! and errors (never hangs or garbage) for run-time mistakes.

use qd::backend::cpu::{EmuErrorKind, Options};
use qd::prelude::*;
use std::time::{Duration, Instant};

fn device(sg: u32) -> Device {
    Device::cpu_with(sg, Options { hang_timeout: Duration::from_millis(500), ..Options::default() }).unwrap()
}

fn emu_kind(e: QdError) -> EmuErrorKind {
    match e {
        QdError::Emulator(e) => e.kind,
        other => panic!("expected an emulator error, got {other}"),
    }
}

#[test]
fn divergent_if_else_reconverges_with_lane_exact_values() {
    for sg in [4, 8, 32, 64] {
        let k = Kernel::range("diverge", 64, |k| {
            let a = k.array::<i32>("a");
            k.parallel_for(0, a.len(), |i| {
                let x = var(0i32);
                if_else((i % 3).eq(0), || x.set(i * 10), || x.set(-i));
                // After reconvergence every lane takes part in a shuffle.
                a.set(i, subgroup::shuffle_xor(x.get(), 1u32));
            });
        });
        let d = device(sg);
        let a = d.zeros::<i32>(128).unwrap();
        d.launch(&k, &[a.arg()]).unwrap();
        let want: Vec<i32> = (0..128).map(|i: i32| i ^ 1).map(|j| if j % 3 == 0 { j * 10 } else { -j }).collect();
        assert_eq!(a.to_vec().unwrap(), want, "sg{sg}");
    }
}

#[test]
fn loops_with_varying_trip_counts_break_and_continue() {
    let k = Kernel::range("loops", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| {
            let sum = var(0i32);
            for_range(0, i, |j| {
                if_((j % 2).eq(1), continue_);
                if_(j.gt(20), break_);
                sum.set(sum.get() + j);
            });
            a.set(i, sum.get());
        });
    });
    let d = device(8);
    let a = d.zeros::<i32>(64).unwrap();
    d.launch(&k, &[a.arg()]).unwrap();
    let want: Vec<i32> = (0..64).map(|i| (0..i).filter(|j| j % 2 == 0 && *j <= 20).sum()).collect();
    assert_eq!(a.to_vec().unwrap(), want);
}

#[test]
fn grid_stride_past_the_cap_and_early_return() {
    let k = Kernel::explicit("ret", 32, |k| {
        let a = k.array::<u32>("a");
        let t = block::global_thread_idx();
        if_(t.ge(a.len()), return_);
        a.set(t, t.cast::<u32>() * 2);
    });
    let d = device(16);
    let a = d.zeros::<u32>(100).unwrap();
    d.launch_grid(&k, 4, &[a.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap(), (0..100).map(|x| x * 2).collect::<Vec<u32>>());
}

#[test]
fn out_of_bounds_store_names_array_and_index() {
    let k = Kernel::range("oob", 32, |k| {
        let a = k.array::<f32>("values");
        k.parallel_for(0, 32, |i| a.set(i + 100, 1.0f32));
    });
    let d = device(32);
    let a = d.zeros::<f32>(32).unwrap();
    let e = d.launch(&k, &[a.arg()]).unwrap_err();
    let text = e.to_string();
    match emu_kind(e) {
        EmuErrorKind::OutOfBounds { array, index, len, .. } => {
            assert_eq!(array, "values");
            assert!((100..132).contains(&index));
            assert_eq!(len, 32);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(text.contains("emulator.rs"), "{text}");
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let k = Kernel::range("div0", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, 7 / (i - i)));
    });
    let d = device(32);
    let a = d.zeros::<i32>(32).unwrap();
    assert!(matches!(emu_kind(d.launch(&k, &[a.arg()]).unwrap_err()), EmuErrorKind::DivisionByZero { .. }));
}

#[test]
fn spin_wait_on_a_flag_nobody_sets_is_reported_within_seconds() {
    let k = Kernel::explicit("spin", 32, |k| {
        let flag = k.array::<i32>("flag");
        while_(|| volatile_load(flag.at(0)).eq(0), || {});
    });
    let d = device(32);
    let flag = d.zeros::<i32>(1).unwrap();
    let start = Instant::now();
    let e = d.launch_grid(&k, 1, &[flag.arg()]).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    let text = e.to_string();
    match emu_kind(e) {
        EmuErrorKind::Hang { op, .. } => assert_eq!(op, "volatile_load"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(text.contains("emulator.rs"), "names the spinning op's line: {text}");
}

/// Thread 0 publishes data then a flag in shared memory; the others spin on the flag.
fn producer_consumer(block_dim: u32) -> Kernel {
    Kernel::explicit("producer_consumer", block_dim, |k| {
        let out = k.array::<i32>("out");
        let data = block::shared_array::<i32>(1);
        let flag = block::shared_array::<i32>(1);
        let t = block::thread_idx();
        if_(t.eq(0), || {
            flag.set(0, 0);
            data.set(0, 42);
        });
        block::sync();
        if_else(
            t.eq(0),
            || {
                data.set(0, 1234);
                block::mem_fence();
                flag.set(0, 1);
            },
            || {
                while_(|| volatile_load(flag.at(0)).eq(0), || {});
                block::mem_fence();
            },
        );
        out.set(t, data.get(0));
    })
}

#[test]
fn producer_consumer_inside_one_subgroup_and_across_subgroups_complete() {
    for (sg, bd) in [(32, 32), (8, 64), (4, 16), (64, 64)] {
        let d = device(sg);
        let out = d.zeros::<i32>(bd as usize).unwrap();
        d.launch_grid(&producer_consumer(bd), 1, &[out.arg()]).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![1234; bd as usize], "sg{sg} bd{bd}");
    }
}

#[test]
fn consumer_subgroup_scheduled_before_producer_still_completes() {
    // The last thread of the block produces, so every consumer subgroup runs first and spins.
    let k = Kernel::explicit("late_producer", 64, |k| {
        let out = k.array::<i32>("out");
        let flag = k.array::<i32>("flag");
        let t = block::thread_idx();
        if_else(
            t.eq(63),
            || {
                grid::mem_fence();
                flag.set(0, 7);
            },
            || while_(|| volatile_load(flag.at(0)).eq(0), || {}),
        );
        out.set(t, volatile_load(flag.at(0)));
    });
    let d = device(8);
    let out = d.zeros::<i32>(64).unwrap();
    let flag = d.zeros::<i32>(1).unwrap();
    d.launch_grid(&k, 1, &[out.arg(), flag.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![7; 64]);
}

#[test]
fn collective_under_a_partial_mask_is_reported_at_run_time() {
    // 40 threads on 32-lane subgroups: the second subgroup has 8 lanes, which tracing cannot see.
    let k = Kernel::explicit("partial", 40, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, subgroup::shuffle(t, 0u32));
    });
    let d = device(32);
    let a = d.zeros::<i32>(40).unwrap();
    match emu_kind(d.launch_grid(&k, 1, &[a.arg()]).unwrap_err()) {
        EmuErrorKind::PartialMask { op, active, subgroup, .. } => {
            assert_eq!(op, "subgroup.shuffle");
            assert_eq!(subgroup, 1);
            assert_eq!(active, 0xFF);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn range_kernel_with_collectives_needs_whole_blocks() {
    let k = Kernel::range("ragged", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::shuffle(i, 0u32)));
    });
    let d = device(32);
    let a = d.zeros::<i32>(48).unwrap();
    let e = d.launch(&k, &[a.arg()]).unwrap_err();
    assert!(matches!(e, QdError::Launch { .. }), "{e}");
    assert!(e.to_string().contains("subgroup.shuffle"), "{e}");
}

#[test]
fn block_barrier_with_predicate_reductions() {
    let k = Kernel::explicit("bar_red", 64, |k| {
        let p = k.array::<i32>("p");
        let out = k.array::<i32>("out");
        let t = block::thread_idx();
        let v = p.get(t);
        let base = t * 3;
        out.set(base, block::sync_all_nonzero(v));
        out.set(base + 1, block::sync_any_nonzero(v));
        out.set(base + 2, block::sync_count_nonzero(v));
    });
    let d = device(16);
    let mut p = vec![0i32; 64];
    p[3] = 2;
    p[40] = -1;
    let pa = d.array_from(&p).unwrap();
    let out = d.zeros::<i32>(192).unwrap();
    d.launch_grid(&k, 1, &[pa.arg(), out.arg()]).unwrap();
    let o = out.to_vec().unwrap();
    for t in 0..64 {
        assert_eq!(&o[t * 3..t * 3 + 3], &[0, 1, 2]);
    }
}

#[test]
fn atomics_are_linearizable_across_blocks() {
    let k = Kernel::range("reserve", 64, |k| {
        let counter = k.array::<u32>("counter");
        let slots = k.array::<u32>("slots");
        k.parallel_for(0, slots.len(), |i| {
            let s = atomic_add(counter.at(0), 1u32);
            slots.set(i, s);
        });
    });
    let d = device(32);
    let counter = d.zeros::<u32>(1).unwrap();
    let slots = d.zeros::<u32>(4096).unwrap();
    d.launch(&k, &[counter.arg(), slots.arg()]).unwrap();
    let mut s = slots.to_vec().unwrap();
    s.sort();
    assert_eq!(s, (0..4096).collect::<Vec<u32>>());
    assert_eq!(counter.to_vec().unwrap(), [4096]);
}

#[test]
fn strict_mode_reports_implementation_defined_values_reaching_memory() {
    let k = Kernel::range("updown", 32, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::shuffle_down(i, 1u32)));
    });
    let d = Device::cpu_with(32, Options { strict: true, ..Options::default() }).unwrap();
    let a = d.zeros::<i32>(32).unwrap();
    assert!(matches!(emu_kind(d.launch(&k, &[a.arg()]).unwrap_err()), EmuErrorKind::Poison { .. }));
    // The default mode gives CUDA's value: the top lane keeps its own.
    let d = device(32);
    d.launch(&k, &[a.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap()[31], 31);
    // A broadcast from a lane past the subgroup is implementation-defined the same way.
    let k = Kernel::range("far_broadcast", 32, |k| {
        let a = k.array::<i32>("a");
        let lane = k.scalar::<u32>("lane");
        k.parallel_for(0, a.len(), |i| a.set(i, subgroup::broadcast(i, lane)));
    });
    let d = Device::cpu_with(32, Options { strict: true, ..Options::default() }).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(5u32)]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![5; 32]);
    let e = d.launch(&k, &[a.arg(), Arg::scalar(40u32)]).unwrap_err();
    assert!(matches!(emu_kind(e), EmuErrorKind::Poison { .. }));
}

#[test]
fn wrong_arguments_are_typed_errors() {
    let k = Kernel::range("args", 32, |k| {
        let a = k.array::<f32>("a");
        let s = k.scalar::<i32>("s");
        k.parallel_for(0, s, |i| a.set(i, 1.0f32));
    });
    let d = device(32);
    let wrong = d.zeros::<i32>(32).unwrap();
    let e = d.launch(&k, &[wrong.arg(), Arg::scalar(32i32)]).unwrap_err();
    assert!(e.to_string().contains("expects an array of f32"), "{e}");
    let right = d.zeros::<f32>(32).unwrap();
    let e = d.launch(&k, &[right.arg()]).unwrap_err();
    assert!(e.to_string().contains("expects 2 arguments"), "{e}");
    d.launch(&k, &[right.arg(), Arg::scalar(32i32)]).unwrap();
    assert_eq!(right.to_vec().unwrap(), vec![1.0; 32]);
}

#[test]
fn a_new_kernel_never_reuses_a_dropped_kernels_compiled_program() {
    fn make(v: i32) -> Kernel {
        Kernel::range("fill", 64, move |k| {
            let a = k.array::<i32>("a");
            k.parallel_for(0, a.len(), |i| a.set(i, v));
        })
    }
    let d = device(32);
    let a = d.zeros::<i32>(64).unwrap();
    for v in 0..50 {
        d.launch(&make(v), &[a.arg()]).unwrap();
        assert_eq!(a.to_vec().unwrap()[0], v);
    }
}

#[test]
fn strict_mode_select_takes_poison_only_from_the_chosen_operand() {
    let k = Kernel::range("guarded_up", 8, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| {
            let p = subgroup::shuffle_up(a.get(i), 1u32); // lane 0: implementation-defined
            a.set(i, select(subgroup::invocation_id().ge(1), p, 0));
        });
    });
    let d = Device::cpu_with(8, Options { strict: true, ..Options::default() }).unwrap();
    let a = d.array_from(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    d.launch(&k, &[a.arg()]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn oversized_arrays_are_allocation_errors_not_aborts() {
    let d = device(32);
    // The byte size overflows usize: a typed error before any allocation.
    match d.zeros::<u8>(usize::MAX) {
        Err(QdError::Allocation { message, .. }) => assert!(message.contains("overflows"), "{message}"),
        other => panic!("expected an allocation error, got {:?}", other.map(|_| ())),
    }
    // 512 GiB of emulator cells: over the budget of half the available memory.
    match d.zeros::<f64>(1 << 36) {
        Err(QdError::Allocation { message, .. }) => assert!(message.contains("budget"), "{message}"),
        other => panic!("expected an allocation error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn the_time_limit_holds_across_many_short_blocks() {
    // Millions of trivial blocks: the limit is checked between blocks, not only inside one.
    let k = Kernel::explicit("trivial", 32, |_k| {});
    let d = Device::cpu_with(32, Options { time_limit: Duration::from_millis(300), ..Options::default() }).unwrap();
    let start = Instant::now();
    let e = d.launch_grid(&k, 1 << 26, &[]).unwrap_err();
    assert!(matches!(emu_kind(e), EmuErrorKind::TimeLimit { .. }));
    // Generous for a busy machine; unchecked, 2^26 blocks took tens of seconds.
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
}
