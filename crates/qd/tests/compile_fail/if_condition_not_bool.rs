use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32]) {
    let t = block::thread_idx();
    if a[t] {
        a[t] = 0;
    }
}

fn main() {}
