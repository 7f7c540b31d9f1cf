//! `#[qd::kernel]` and `#[qd::func]` on the emulator: each construct of the kernel language.

use qd::prelude::*;

fn cpu() -> Device {
    Device::cpu()
}

#[qd::kernel]
fn broadcast(a: &mut [f32]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        a[i] = subgroup::shuffle(a[i], 0u32);
    }
}

#[test]
fn parallel_loop_and_indexing() {
    let device = cpu();
    let mut a = device.array_from(&(0..128).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
    broadcast().launch(&device, (&mut a,)).unwrap();
    let out = a.to_vec().unwrap();
    assert_eq!(out[5], 0.0);
    assert_eq!(out[40], 32.0);
}

/// `&&` evaluates its right side only where the left one holds: `a[i]` is never loaded past the
/// end (the emulator checks every access), although every thread of the last block runs.
#[qd::kernel(block_dim = 64)]
fn count_positive(a: &[i32], n: i32, out: &mut [i32]) {
    let i = block::global_thread_idx();
    if i < n && a[i] > 0 {
        atomic_add(&out[0], 1);
    }
    if i >= n || a[i] <= 0 {
        atomic_add(&out[1], 1);
    }
}

#[test]
fn short_circuit_never_loads_out_of_range() {
    let device = cpu();
    let data: Vec<i32> = (0..100).map(|x| if x % 3 == 0 { -x } else { x }).collect();
    let a = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i32>(2).unwrap();
    // Two blocks of 64 threads for 100 elements: threads 100..128 must not touch a[i].
    count_positive().launch_grid(&device, 2, (&a, 100, &mut out)).unwrap();
    let positive = data.iter().filter(|&&x| x > 0).count() as i32;
    assert_eq!(out.to_vec().unwrap(), [positive, 128 - positive]);
}

/// The same without short-circuit evaluation is an out-of-bounds load: the check above can fail.
#[qd::kernel(block_dim = 64)]
fn count_positive_eager(a: &[i32], n: i32, out: &mut [i32]) {
    let i = block::global_thread_idx();
    let inside = i < n;
    let positive = a[i] > 0;
    if inside & positive {
        atomic_add(&out[0], 1);
    }
}

#[test]
fn eager_and_loads_out_of_range() {
    let device = cpu();
    let a = device.array_from(&vec![1i32; 100]).unwrap();
    let mut out = device.zeros::<i32>(2).unwrap();
    let err = count_positive_eager().launch_grid(&device, 2, (&a, 100, &mut out)).unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
}

/// Operators with Rust's precedence, `!`, `as`, compound assignment, `if` as an expression.
#[qd::kernel(block_dim = 32)]
fn arithmetic(x: &[i32], out: &mut [i32], flags: &mut [u32]) {
    let t = block::thread_idx();
    let v = x[t];
    let mut acc = 1 + v * 2 - (v >> 1) % 3;
    acc += 3;
    acc <<= 1;
    acc ^= v & 5 | 2;
    out[t * 3] = acc;
    out[t * 3 + 1] = if v > 10 {
        v - 10
    } else if v < 0 {
        -v
    } else {
        0
    };
    out[t * 3 + 2] = (v as f32 * 0.5) as i32 + !(v < 3) as i32;
    let small = (v as u32) < 8u32;
    flags[t] = !(v as u32) ^ small as u32;
}

#[test]
fn operators_casts_and_if_expressions() {
    let device = cpu();
    let data: Vec<i32> = (-10..22).collect();
    let x = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i32>(96).unwrap();
    let mut flags = device.zeros::<u32>(32).unwrap();
    arithmetic().launch_grid(&device, 1, (&x, &mut out, &mut flags)).unwrap();
    let out = out.to_vec().unwrap();
    let flags = flags.to_vec().unwrap();
    for (t, &v) in data.iter().enumerate() {
        let mut acc = 1 + v * 2 - (v >> 1) % 3;
        acc += 3;
        acc <<= 1;
        acc ^= v & 5 | 2;
        assert_eq!(out[t * 3], acc, "v = {v}");
        assert_eq!(
            out[t * 3 + 1],
            if v > 10 {
                v - 10
            } else if v < 0 {
                -v
            } else {
                0
            }
        );
        assert_eq!(out[t * 3 + 2], (v as f32 * 0.5) as i32 + (v >= 3) as i32);
        assert_eq!(flags[t], !(v as u32) ^ ((v as u32) < 8) as u32);
    }
}

/// `while`, `loop`, `for i in a..b`, `break`, `continue`, and a `let mut` assigned in them.
#[qd::kernel(block_dim = 32)]
fn loops(n: &[i32], out: &mut [i32]) {
    let t = block::thread_idx();
    let limit = n[t];
    // Sum of the odd numbers below `limit`, skipping multiples of 7.
    let mut sum = 0;
    for j in 0..limit {
        if j % 2 == 0 {
            continue;
        }
        if j % 7 == 0 {
            continue;
        }
        sum += j;
    }
    out[t * 3] = sum;
    // Collatz steps of limit + 1.
    let mut x = limit + 1;
    let mut steps = 0;
    while x != 1 {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    out[t * 3 + 1] = steps;
    // The first power of two above limit.
    let mut p = 1;
    loop {
        if p > limit {
            break;
        }
        p *= 2;
    }
    out[t * 3 + 2] = p;
}

#[test]
fn device_loops() {
    let device = cpu();
    let data: Vec<i32> = (0..32).map(|x| x * 3).collect();
    let n = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i32>(96).unwrap();
    loops().launch_grid(&device, 1, (&n, &mut out)).unwrap();
    let out = out.to_vec().unwrap();
    for (t, &limit) in data.iter().enumerate() {
        let sum: i32 = (0..limit).filter(|j| j % 2 == 1 && j % 7 != 0).sum();
        let (mut x, mut steps) = (limit + 1, 0);
        while x != 1 {
            x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
            steps += 1;
        }
        let p = ((limit + 1) as u32).next_power_of_two() as i32;
        assert_eq!(&out[t * 3..t * 3 + 3], &[sum, steps, p], "limit {limit}");
    }
}

/// A device function: inlined, generic over the element type, with an early `return`.
#[qd::func]
fn clamp_to<T: Num>(x: T, lo: T, hi: T) -> T {
    if x < lo {
        return lo;
    }
    if x > hi {
        return hi;
    }
    x
}

/// A device function taking an array and a location, returning a tuple.
#[qd::func]
fn load_pair(a: &[i32], i: i32, counter: &i32) -> (i32, i32) {
    atomic_add(counter, 1);
    (a[2 * i], a[2 * i + 1])
}

#[qd::kernel(block_dim = 32)]
fn funcs(a: &[i32], out: &mut [i32], counter: &mut [i32], f: &mut [f32]) {
    let t = block::thread_idx();
    let (x, y) = load_pair(a, t, &counter[0]);
    out[t] = clamp_to(x + y, -10, 10);
    f[t] = clamp_to(x as f32 * 0.25, 0.0f32, 1.5f32);
}

#[test]
fn device_functions() {
    let device = cpu();
    let data: Vec<i32> = (0..64).map(|x| (x * 7) % 23 - 11).collect();
    let a = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i32>(32).unwrap();
    let mut counter = device.zeros::<i32>(1).unwrap();
    let mut f = device.zeros::<f32>(32).unwrap();
    funcs().launch_grid(&device, 1, (&a, &mut out, &mut counter, &mut f)).unwrap();
    let out = out.to_vec().unwrap();
    let f = f.to_vec().unwrap();
    for t in 0..32 {
        let (x, y) = (data[2 * t], data[2 * t + 1]);
        assert_eq!(out[t], (x + y).clamp(-10, 10));
        assert_eq!(f[t], (x as f32 * 0.25).clamp(0.0, 1.5));
    }
    assert_eq!(counter.to_vec().unwrap(), [32]);
}

/// `qd::unroll`: a loop run while tracing, left by `break`/`continue` under compile-time
/// conditions; `if` on a compile-time value keeps one branch.
#[qd::kernel(block_dim = 32)]
fn unrolled(out: &mut [i32]) {
    let t = block::thread_idx();
    let mut acc = t;
    for k in qd::unroll(0..10) {
        if k == 1 {
            continue;
        }
        if k % 2 == 0 {
            if k > 6 {
                break;
            }
            acc = acc + k;
        } else {
            acc = acc * 2;
        }
    }
    out[t] = acc;
}

#[test]
fn unrolled_loops_and_compile_time_if() {
    let device = cpu();
    let mut out = device.zeros::<i32>(32).unwrap();
    unrolled().launch_grid(&device, 1, (&mut out,)).unwrap();
    let host = |t: i32| {
        let mut acc = t;
        for k in 0..10 {
            if k == 1 {
                continue;
            }
            if k % 2 == 0 {
                if k > 6 {
                    break;
                }
                acc += k;
            } else {
                acc *= 2;
            }
        }
        acc
    };
    assert_eq!(out.to_vec().unwrap(), (0..32).map(host).collect::<Vec<_>>());
    // Every `if` was on a compile-time value: the traced kernel has no branch and no local.
    let ir = qd::ir::print_kernel(&unrolled().kernel().trace(&qd::target::Target::cpu(32)).unwrap());
    assert!(!ir.contains("if "), "{ir}");
    assert!(!ir.contains("local"), "{ir}");
}

/// Generic over the element type with a compile-time operator closure and size: one kernel per
/// (type, operator), like the seeds' generic reductions.
#[qd::kernel(block_dim = 64, name = format!("block_fold_{log2}"))]
fn block_fold<T: Shuffle>(
    #[comptime] op: fn(Val<T>, Val<T>) -> Val<T>,
    #[comptime] log2: u32,
    src: &[T],
    out: &mut [T],
) {
    let t = block::thread_idx();
    let g = block::global_thread_idx();
    let total = block::reduce_all(src[g], 64, op);
    let tile = subgroup::reduce_all_add_tiled(src[g], log2);
    out[2 * g] = total;
    out[2 * g + 1] = if t % 2 == 0 { tile } else { total };
}

#[test]
fn compile_time_parameters_and_generics() {
    let device = cpu();
    let data: Vec<i64> = (0..128).map(|x| (x * 37 % 101) - 50).collect();
    let src = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i64>(256).unwrap();
    let max = block_fold::<i64>(|a, b| a.max(b), 2);
    max.launch_grid(&device, 2, (&src, &mut out)).unwrap();
    let out = out.to_vec().unwrap();
    for g in 0..128 {
        let block = &data[g / 64 * 64..g / 64 * 64 + 64];
        let tile: i64 = data[g / 4 * 4..g / 4 * 4 + 4].iter().sum();
        assert_eq!(out[2 * g], *block.iter().max().unwrap());
        assert_eq!(out[2 * g + 1], if g % 2 == 0 { tile } else { out[2 * g] });
    }
    let fdata: Vec<f32> = (0..64).map(|x| x as f32).collect();
    let fsrc = device.array_from(&fdata).unwrap();
    let mut fout = device.zeros::<f32>(128).unwrap();
    block_fold::<f32>(|a, b| a + b, 3).launch_grid(&device, 1, (&fsrc, &mut fout)).unwrap();
    assert_eq!(fout.to_vec().unwrap()[0], 2016.0);
}

/// Tuples from library calls and a destructuring assignment into device variables, as the
/// seeds' bitonic sort example writes it.
#[qd::kernel]
fn sort_contacts(keys: &mut [f32], idxs: &mut [i32], n_con: i32) {
    qd::loop_config(block_dim = 32);
    for tid in range(32) {
        let mut my_key = 1.0e30f32;
        let mut my_idx = -1i32;
        if tid < n_con {
            my_key = keys[tid];
            my_idx = idxs[tid];
        }
        (my_key, my_idx) = subgroup::bitonic_sort_kv(my_key, my_idx);
        if tid < n_con {
            keys[tid] = my_key;
            idxs[tid] = my_idx;
        }
    }
}

#[test]
fn tuples_and_destructuring() {
    let device = cpu();
    let k: Vec<f32> = vec![5.0, 1.0, 4.0, 1.0, 9.0, 2.0, 6.0, 0.0, 0.0, 0.0];
    let n = 7;
    let mut keys = device.array_from(&k).unwrap();
    let mut idxs = device.array_from(&(0..10).collect::<Vec<i32>>()).unwrap();
    sort_contacts().launch(&device, (&mut keys, &mut idxs, n)).unwrap();
    assert_eq!(&keys.to_vec().unwrap()[..7], &[1.0, 1.0, 2.0, 4.0, 5.0, 6.0, 9.0]);
    assert_eq!(&idxs.to_vec().unwrap()[..7], &[1, 3, 5, 2, 0, 6, 4]);
}

/// Shared and per-thread arrays, `volatile_load` on `&flag[0]`, a spin-wait `while`.
#[qd::kernel(block_dim = 64)]
fn memories(src: &[i32], out: &mut [i32]) {
    let shared = block::shared_array::<i32>(64);
    let flag = block::shared_array::<i32>(1);
    let local = local_array::<i32>(4);
    let t = block::thread_idx();
    let g = block::global_thread_idx();
    if t == 0 {
        flag[0] = 0;
    }
    block::sync();
    for k in 0..4 {
        local[k] = src[g] * k;
    }
    shared[t] = local[3] - local[1];
    block::sync();
    if t == 0 {
        block::mem_fence();
        atomic_exchange(&flag[0], 1);
    } else {
        while volatile_load(&flag[0]) == 0 {}
        block::mem_fence();
    }
    out[g] = shared[63 - t];
}

#[test]
fn shared_local_and_volatile() {
    let device = cpu();
    let data: Vec<i32> = (0..128).collect();
    let src = device.array_from(&data).unwrap();
    let mut out = device.zeros::<i32>(128).unwrap();
    memories().launch_grid(&device, 2, (&src, &mut out)).unwrap();
    let want: Vec<i32> = (0..128).map(|g| 2 * data[g / 64 * 64 + 63 - g % 64]).collect();
    assert_eq!(out.to_vec().unwrap(), want);
}

/// The line of `needle` in this file (1-based).
fn line_of(needle: &str) -> u32 {
    let source = include_str!("macros.rs");
    let matches: Vec<usize> =
        source.lines().enumerate().filter(|(_, l)| l.contains(needle)).map(|(n, _)| n + 1).collect();
    assert_eq!(matches.len(), 2, "`{needle}` is written once in a kernel and once in its test");
    matches[0] as u32
}

#[qd::kernel]
fn bad_tile(a: &mut [f32]) {
    qd::loop_config(block_dim = 32);
    for i in range(a.len()) {
        let x = a[i] * 2.0;
        a[i] = subgroup::reduce_add_tiled(x, 9); // trace error here
    }
}

#[test]
fn trace_errors_name_the_line_in_the_kernel() {
    let err = bad_tile().kernel().trace(&qd::target::Target::cpu(32)).unwrap_err();
    assert!(err.loc.file.ends_with("macros.rs"), "{err}");
    assert_eq!(err.loc.line, line_of("reduce_add_tiled(x, 9); // trace error here"), "{err}");
    assert!(err.message.contains("log2_size"), "{err}");
}

#[qd::kernel(block_dim = 32)]
fn out_of_bounds(a: &mut [i32]) {
    let t = block::thread_idx();
    a[t] = 1;
    a[t + 32] = 2; // out of bounds here
}

#[test]
fn emulator_errors_name_the_line_in_the_kernel() {
    let device = cpu();
    let mut a = device.zeros::<i32>(40).unwrap();
    let err = out_of_bounds().launch_grid(&device, 1, (&mut a,)).unwrap_err().to_string();
    let line = line_of("a[t + 32] = 2; // out of bounds here");
    assert!(err.contains(&format!("macros.rs:{line}:")), "{err}");
}

fn ir(kernel: &Kernel) -> String {
    qd::ir::print_kernel(&kernel.trace(&qd::target::Target::cpu(32)).unwrap())
}

/// The macro form costs nothing: the IR equals the builder form's, instruction for instruction.
#[test]
fn macro_kernels_trace_to_the_builder_forms_ir() {
    let broadcast_builder = Kernel::range("broadcast", 64, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::shuffle(a.get(i), 0u32));
        });
    });
    assert_eq!(ir(broadcast().kernel()), ir(&broadcast_builder));

    let count_builder = Kernel::explicit("count_positive", 64, |k| {
        let a = k.array::<i32>("a");
        let n = k.scalar::<i32>("n");
        let out = k.array::<i32>("out");
        let i = block::global_thread_idx();
        let c = i.lt(n);
        let both = var(c);
        if_(c, || both.set(a.get(i).gt(0)));
        if_(both.get(), || {
            atomic_add(out.at(0), 1);
        });
        let c = i.ge(n);
        let either = var(c);
        if_else(c, || {}, || either.set(a.get(i).le(0)));
        if_(either.get(), || {
            atomic_add(out.at(1), 1);
        });
    });
    assert_eq!(ir(count_positive().kernel()), ir(&count_builder));

    let loops_builder = Kernel::explicit("loops", 32, |k| {
        let n = k.array::<i32>("n");
        let out = k.array::<i32>("out");
        let t = block::thread_idx();
        let limit = n.get(t);
        let sum = var(0);
        for_range(0, limit, |j| {
            if_((j % 2).eq(0), continue_);
            if_((j % 7).eq(0), continue_);
            sum.set(sum.get() + j);
        });
        out.set(t * 3, sum.get());
        let x = var(limit + 1);
        let steps = var(0);
        while_(
            || x.get().ne(1),
            || {
                let c = (x.get() % 2).eq(0);
                let slot = var(0);
                if_else(c, || slot.set(x.get() / 2), || slot.set(3 * x.get() + 1));
                x.set(slot.get());
                steps.set(steps.get() + 1);
            },
        );
        out.set(t * 3 + 1, steps.get());
        let p = var(1);
        loop_(|| {
            if_(p.get().gt(limit), break_);
            p.set(p.get() * 2);
        });
        out.set(t * 3 + 2, p.get());
    });
    assert_eq!(ir(loops().kernel()), ir(&loops_builder));
}

#[qd::kernel(block_dim = 32)]
fn unroll_break_on_device_value(a: &mut [i32]) {
    let t = block::thread_idx();
    for k in qd::unroll(0..4) {
        if a[t] > k {
            break; // a trace-time loop cannot be left on a run-time condition
        }
        a[t] = k;
    }
}

#[test]
fn leaving_an_unrolled_loop_on_a_device_condition_is_a_trace_error() {
    let err = unroll_break_on_device_value().kernel().trace(&qd::target::Target::cpu(32)).unwrap_err();
    assert!(err.message.contains("qd::unroll"), "{err}");
    assert_eq!(err.loc.line, line_of("if a[t] > k {"), "{err}");
}
