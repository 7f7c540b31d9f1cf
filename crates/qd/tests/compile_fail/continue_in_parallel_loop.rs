use qd::prelude::*;

#[qd::kernel]
fn k(a: &mut [i32]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        if a[i] < 0 {
            continue;
        }
        a[i] = 0;
    }
}

fn main() {}
