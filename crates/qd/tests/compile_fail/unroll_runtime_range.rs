use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32], n: i32) {
    let t = block::thread_idx();
    for j in qd::unroll(t..n) {
        a[t] = j;
    }
}

fn main() {}
