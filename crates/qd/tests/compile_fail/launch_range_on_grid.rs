use qd::prelude::*;

#[qd::kernel(block_dim = 32)]
fn k(out: &mut [f32]) {
    let t = block::thread_idx();
    out[t] = 1.0;
}

fn main() {
    let device = Device::cpu();
    let mut out = device.zeros::<f32>(32).unwrap();
    k().launch(&device, (&mut out,)).unwrap();
}
