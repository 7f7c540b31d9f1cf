use qd::prelude::*;

#[qd::kernel(block_dim = 64)]
fn k(a: &[i32]) -> i32 {
    a[0]
}

fn main() {}
