use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32]) {
    let t = block::thread_idx();
    let mut x = 0;
    if t > 3 {
        x = 1;
    }
    atomic_add(&x, 1);
    a[t] = x;
}

fn main() {}
