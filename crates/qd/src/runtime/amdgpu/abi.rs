//! What the AMDGPU runtime decides without a GPU: the kernel-argument buffer (D19), the
//! architecture of a device's `gcnArchName`, and which wavefront sizes it accepts.

use crate::backend::amdgpu::AmdgpuArch;
use crate::runtime::{Arg, ArrayHandle};

/// The kernarg buffer of one launch (the ABI of `backend::amdgpu`): 8 bytes per slot, in parameter
/// order; an array is its device address (`device_ptr`) then its element count, a scalar its bits
/// (already zero-extended by [`Scalar::to_bits`](crate::trace::Scalar::to_bits); bool is 0 or 1).
pub(crate) fn pack_args(args: &[Arg], device_ptr: impl Fn(&ArrayHandle) -> u64) -> Vec<u64> {
    let mut slots = Vec::with_capacity(args.len() * 2);
    for a in args {
        match a {
            Arg::Array(h) => {
                slots.push(device_ptr(h));
                slots.push(h.len() as u64);
            }
            Arg::Scalar(_, bits) => slots.push(*bits),
        }
    }
    slots
}

/// The architecture of a device's `gcnArchName` (`gfx90a:sramecc+:xnack-`: the target features
/// after the first `:` do not matter, the code objects qd builds name none).
pub(crate) fn arch_from_gcn_name(gcn: &str) -> Result<AmdgpuArch, String> {
    let base = gcn.split(':').next().unwrap_or("").trim();
    base.parse::<AmdgpuArch>().map_err(|e| format!("the device's gcnArchName is `{gcn}`: {e}"))
}

/// Whether a device of `arch` reporting `wave_size` runs qd's wave64 code objects: CDNA parts must
/// report 64; RDNA parts report their native 32 and run wave64 code objects too.
pub(crate) fn check_wave_size(arch: AmdgpuArch, wave_size: i32) -> Result<(), String> {
    let rdna = matches!(arch, AmdgpuArch::Gfx1100 | AmdgpuArch::Gfx1201);
    match wave_size {
        64 => Ok(()),
        32 if rdna => Ok(()),
        n => Err(format!(
            "the device ({arch}) reports a {n}-wide wavefront; qd's AMDGPU kernels are wave64{}",
            if rdna { "" } else { " and this part must run them natively" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;
    use crate::runtime::Device;

    #[test]
    fn arrays_are_an_address_and_a_count_scalars_one_slot_of_bits() {
        let cpu = Device::cpu();
        let a = cpu.array_from(&[1.0f32, 2.0, 3.0]).unwrap();
        let b = cpu.zeros::<u8>(5).unwrap();
        let args = [Arg::scalar(-1i32), a.arg(), Arg::scalar(true), b.arg(), Arg::Scalar(DType::F64, 2.5f64.to_bits())];
        let slots = pack_args(&args, |h| if h.len() == 3 { 0x7000_0000_1000 } else { 0x7000_0000_2000 });
        assert_eq!(slots, vec![u32::MAX as u64, 0x7000_0000_1000, 3, 1, 0x7000_0000_2000, 5, 2.5f64.to_bits()]);
        // 8 bytes per slot: the kernarg segment the module states.
        assert!(pack_args(&[], |_| 0).is_empty());
    }

    #[test]
    fn gcn_arch_names_map_to_the_known_architectures() {
        assert_eq!(arch_from_gcn_name("gfx942:sramecc+:xnack-"), Ok(AmdgpuArch::Gfx942));
        assert_eq!(arch_from_gcn_name("gfx90a:sramecc-:xnack+"), Ok(AmdgpuArch::Gfx90a));
        assert_eq!(arch_from_gcn_name("gfx1100"), Ok(AmdgpuArch::Gfx1100));
        assert_eq!(arch_from_gcn_name("gfx1201"), Ok(AmdgpuArch::Gfx1201));
        let e = arch_from_gcn_name("gfx1030").unwrap_err();
        assert!(e.contains("gfx1030") && e.contains("gfx942"), "{e}");
        assert!(arch_from_gcn_name("").is_err());
    }

    #[test]
    fn wave_sizes() {
        assert!(check_wave_size(AmdgpuArch::Gfx942, 64).is_ok());
        assert!(check_wave_size(AmdgpuArch::Gfx1100, 32).is_ok());
        assert!(check_wave_size(AmdgpuArch::Gfx1201, 64).is_ok());
        let e = check_wave_size(AmdgpuArch::Gfx90a, 32).unwrap_err();
        assert!(e.contains("32-wide") && e.contains("wave64"), "{e}");
        assert!(check_wave_size(AmdgpuArch::Gfx1100, 16).is_err());
    }
}
