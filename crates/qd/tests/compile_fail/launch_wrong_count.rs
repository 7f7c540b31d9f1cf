use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(a: &[f32], out: &mut [f32], n: i32) {
    let t = block::thread_idx();
    if t < n {
        out[t] = a[t];
    }
}

fn main() {
    let device = Device::cpu();
    let a = device.zeros::<f32>(32).unwrap();
    let mut out = device.zeros::<f32>(32).unwrap();
    k().launch_grid(&device, 1, (&a, &mut out)).unwrap();
}
