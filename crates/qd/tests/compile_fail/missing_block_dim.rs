use qd::prelude::*;

#[qd::kernel]
fn k(a: &mut [i32]) {
    for i in range(a.len()) {
        a[i] = 0;
    }
}

fn main() {}
