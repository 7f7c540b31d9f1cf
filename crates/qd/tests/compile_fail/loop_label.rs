use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &mut [i32]) {
    let t = block::thread_idx();
    'outer: loop {
        a[t] = 1;
        break 'outer;
    }
}

fn main() {}
