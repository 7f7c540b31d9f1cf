use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &[f32], b: &[i32], out: &mut [f32]) {
    let t = block::thread_idx();
    out[t] = a[t] + b[t];
}

fn main() {}
