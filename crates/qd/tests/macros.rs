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
