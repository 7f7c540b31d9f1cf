//! More of the seed pages' examples in `#[qd::kernel]` form, each next to the Python it mirrors
//! line for line, run on the emulator against a host reference.

use qd::prelude::*;

/// ```python
/// @qd.kernel
/// def sum32(src, dst):
///     qd.loop_config(block_dim=32)
///     for i in range(src.shape[0]):
///         total = subgroup.reduce_add_tiled(src[i], 5)
///         if subgroup.invocation_id() == 0:
///             dst[i // 32] = total
/// ```
#[qd::kernel]
fn sum32(src: &[f32], dst: &mut [f32]) {
    qd::loop_config(block_dim = 32);
    for i in range(src.len()) {
        let total = subgroup::reduce_add_tiled(src[i], 5);
        if subgroup::invocation_id() == 0 {
            dst[i / 32] = total;
        }
    }
}

/// ```python
/// @qd.kernel
/// def normalize32(a):
///     qd.loop_config(block_dim=32)
///     for i in range(a.shape[0]):
///         total = subgroup.reduce_all_add_tiled(a[i], 5)
///         a[i] = a[i] / total
/// ```
#[qd::kernel]
fn normalize32(a: &mut [f32]) {
    qd::loop_config(block_dim = 32);
    for i in range(a.len()) {
        let total = subgroup::reduce_all_add_tiled(a[i], 5);
        a[i] = a[i] / total;
    }
}

/// ```python
/// @qd.kernel
/// def cumsum(a):
///     qd.loop_config(block_dim=32)
///     for i in range(a.shape[0]):
///         a[i] = subgroup.inclusive_add_tiled(a[i], 5)
/// ```
#[qd::kernel]
fn cumsum(a: &mut [i32]) {
    qd::loop_config(block_dim = 32);
    for i in range(a.len()) {
        a[i] = subgroup::inclusive_add_tiled(a[i], 5);
    }
}

/// ```python
/// @qd.kernel
/// def kern(src, out):
///     qd.loop_config(block_dim=128)
///     for i in range(N):
///         agg = qd.simt.block.reduce_add(src[i], 128, qd.f32)
///         if qd.simt.block.thread_idx() == 0:
///             out[i // 128] = agg
/// ```
#[qd::kernel]
fn block_sum(src: &[f32], out: &mut [f32]) {
    qd::loop_config(block_dim = 128);
    for i in range(src.len()) {
        let agg = block::reduce_add(src[i], 128);
        if block::thread_idx() == 0 {
            out[i / 128] = agg;
        }
    }
}

const MAX_RETRIES: i32 = 1000;

/// ```python
/// @qd.kernel
/// def cas_loop_max():
///     for _attempt in range(MAX_RETRIES):
///         cur = x[None]
///         new = qd.max(cur, candidate)
///         old = qd.atomic_cas(x[None], cur, new)
///         if old == cur:
///             break  # CAS landed; we're done.
/// ```
#[qd::kernel]
fn cas_loop_max(x: &mut [i32], candidates: &[i32]) {
    qd::loop_config(block_dim = 64);
    for i in range(candidates.len()) {
        let candidate = candidates[i];
        for _attempt in 0..MAX_RETRIES {
            let cur = volatile_load(&x[0]);
            let new = cur.max(candidate);
            let old = atomic_cas(&x[0], cur, new);
            if old == cur {
                break; // CAS landed; we're done.
            }
        }
    }
}

#[test]
fn subgroup_page_reductions_and_scans() {
    let device = Device::cpu();
    let data: Vec<f32> = (0..128).map(|x| (x % 7) as f32).collect();
    let src = device.array_from(&data).unwrap();
    let mut dst = device.zeros::<f32>(4).unwrap();
    sum32().launch(&device, (&src, &mut dst)).unwrap();
    let want: Vec<f32> = data.chunks(32).map(|c| c.iter().sum()).collect();
    assert_eq!(dst.to_vec().unwrap(), want);

    let mut a = device.array_from(&vec![2.0f32; 64]).unwrap();
    normalize32().launch(&device, (&mut a,)).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![1.0 / 32.0; 64]);

    let ints: Vec<i32> = (0..64).map(|x| x % 5 - 2).collect();
    let mut a = device.array_from(&ints).unwrap();
    cumsum().launch(&device, (&mut a,)).unwrap();
    let want: Vec<i32> = ints
        .chunks(32)
        .flat_map(|c| {
            c.iter()
                .scan(0, |s, &x| {
                    *s += x;
                    Some(*s)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(a.to_vec().unwrap(), want);
}

#[test]
fn block_page_reduction() {
    let device = Device::cpu();
    let data: Vec<f32> = (0..256).map(|x| (x % 11) as f32).collect();
    let src = device.array_from(&data).unwrap();
    let mut out = device.zeros::<f32>(2).unwrap();
    block_sum().launch(&device, (&src, &mut out)).unwrap();
    let want: Vec<f32> = data.chunks(128).map(|c| c.iter().sum()).collect();
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn atomics_page_cas_loop() {
    let device = Device::cpu();
    let candidates: Vec<i32> = (0..256).map(|x| (x * 7919) % 1000).collect();
    let c = device.array_from(&candidates).unwrap();
    let mut x = device.array_from(&[-1i32]).unwrap();
    cas_loop_max().launch(&device, (&mut x, &c)).unwrap();
    assert_eq!(x.to_vec().unwrap(), [*candidates.iter().max().unwrap()]);
}
