use qd::prelude::*;

// `log2_size` is a compile-time parameter of the tiled reductions; `n` is a kernel parameter,
// known only on the device.
#[qd::kernel]
fn k(a: &mut [f32], n: u32) {
    qd::loop_config(block_dim = 32);
    for i in range(a.len()) {
        a[i] = subgroup::reduce_add_tiled(a[i], n);
    }
}

fn main() {}
