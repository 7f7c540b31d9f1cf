use qd::prelude::*;

#[qd::kernel(block_dim = 64)]
fn k(a: &mut [i32], n: i32) {
    if n > 0 {
        for i in range(a.len()) {
            a[i] = 0;
        }
    }
}

fn main() {}
