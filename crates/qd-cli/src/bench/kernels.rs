//! The kernels of `qd emit`'s bench set: the warp primitives of the SASS table and the copy kernel
//! (the bandwidth ceiling `qd bench copy` measures).

use qd::prelude::*;

/// The kernels of this module that `qd emit` writes (so the snapshot tests pin their code and ptxas and
/// spirv-val check it): the warp primitives of issue 4's SASS table (`warp_*`, see [`warp_primitives`]),
/// then the device-wide kernels of `qd bench` (`bench_*`, see [`device_kernels`]).
pub fn warp_kernels() -> Vec<Kernel> {
    let mut kernels = warp_primitives();
    kernels.extend(device_kernels());
    kernels
}

/// The warp primitives of issue 4's SASS table, one full-warp operation per kernel on values loaded
/// from memory, in the same shape as `bench/warp_baselines.cu`: an explicit kernel, one element per
/// thread and no loop, so the counts are the primitive's alone (a grid-stride loop gets rotated by
/// ptxas, which copies its body).
pub fn warp_primitives() -> Vec<Kernel> {
    use qd::simt::subgroup;
    fn unary<T: Scalar>(name: &str, f: fn(Val<T>) -> Val<T>) -> Kernel {
        Kernel::explicit(name, 32, move |k| {
            let a = k.array::<T>("a");
            let out = k.array::<T>("out");
            let i = block::global_thread_idx();
            out.set(i, f(a.get(i)));
        })
    }
    vec![
        unary::<i32>("warp_reduce_add_i32", |v| subgroup::reduce_add(v)),
        unary::<f32>("warp_reduce_add_f32", |v| subgroup::reduce_add(v)),
        unary::<i32>("warp_reduce_all_add_i32", |v| subgroup::reduce_all_add(v)),
        unary::<f32>("warp_reduce_all_add_f32", |v| subgroup::reduce_all_add(v)),
        unary::<i32>("warp_inclusive_add_i32", |v| subgroup::inclusive_add(v)),
        unary::<i32>("warp_segmented_reduce_add_i32", |v| subgroup::segmented_reduce_add(v, (v & 7).eq(0))),
        Kernel::explicit("warp_bitonic_sort_kv_i32", 32, |k| {
            let keys = k.array::<i32>("keys");
            let vals = k.array::<i32>("vals");
            let i = block::global_thread_idx();
            let (key, val) = subgroup::bitonic_sort_kv(keys.get(i), vals.get(i));
            keys.set(i, key);
            vals.set(i, val);
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// Device-wide algorithms (`qd bench`): the library's (`qd::algorithms`), timed against the host's
// answer; `bench/cub_bench.cu` prints the same lines for NVIDIA's CUB.
// ---------------------------------------------------------------------------------------------

/// Threads per block of [`copy_kernel`].
pub const BLOCK: u32 = 256;
/// Items per thread of [`copy_kernel`].
pub const COPY_ITEMS: u32 = 8;

/// A copy `output[i] = input[i]` with striped loads and stores (`items` per thread, one tile per
/// block, launch `ceil(n / (block * items))` blocks): the bandwidth ceiling of this IR's accesses,
/// to compare with `cudaMemcpy`.
pub fn copy_kernel<T: Scalar>(block: u32, items: u32) -> Kernel {
    Kernel::explicit(&format!("bench_copy_{}", T::DTYPE), block, move |k| {
        let input = k.array::<T>("input");
        let output = k.array::<T>("output");
        let n = input.len();
        let tile_len = (block * items) as i32;
        let first = block::block_idx() * tile_len + block::thread_idx();
        if_else(
            (block::block_idx() * tile_len + tile_len).le(n),
            || {
                let vals: Vec<Val<T>> = (0..items).map(|j| input.get(first + (j * block) as i32)).collect();
                for (j, v) in vals.into_iter().enumerate() {
                    output.set(first + (j as u32 * block) as i32, v);
                }
            },
            || {
                for j in 0..items {
                    let i = first + (j * block) as i32;
                    if_(i.lt(n), || output.set(i, input.get(i)));
                }
            },
        );
    })
}

/// The bench's own kernels (the algorithms' are `qd::algorithms::kernels`, listed by the
/// conformance cases).
pub fn device_kernels() -> Vec<Kernel> {
    vec![copy_kernel::<i32>(BLOCK, COPY_ITEMS)]
}
