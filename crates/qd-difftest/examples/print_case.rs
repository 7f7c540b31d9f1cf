//! Prints a saved regression case's kernel as traced for a device (IR text) and, on a Vulkan
//! device, writes the SPIR-V it loads to `case.spv`:
//! `cargo run -p qd-difftest --example print_case -- CASE.json [DEVICE]`.
use qd::prelude::*;
use qd_difftest::regress::Case;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("give a case file")?;
    let device = Device::from_name(&args.next().unwrap_or_else(|| "cpu:sg32".into()))?;
    let case: Case = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let k = qd_difftest::build::kernel("case", Arc::new(case.program));
    println!("{}", qd::ir::print_kernel(&device.trace(&k)?));
    if let Some(spirv) = device.compile(&k)?.spirv() {
        let bytes: Vec<u8> = spirv.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write("case.spv", bytes)?;
        println!("wrote case.spv");
    }
    Ok(())
}
