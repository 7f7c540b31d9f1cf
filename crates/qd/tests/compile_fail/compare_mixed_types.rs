use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32]) {
    let t = block::thread_idx();
    if a[t] < 1.5 {
        a[t] = 0;
    }
}

fn main() {}
