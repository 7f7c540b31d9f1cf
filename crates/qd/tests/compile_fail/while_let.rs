use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32]) {
    let t = block::thread_idx();
    while let Some(x) = Some(t) {
        a[x] = 0;
    }
}

fn main() {}
