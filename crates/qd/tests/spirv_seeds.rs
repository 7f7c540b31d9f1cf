//! SPIR-V for the seed behaviours that depend on the device's features: a broadcast from a varying
//! lane (a shuffle), native f64 and f32 float atomic add against the CAS loop, and the float
//! controls that keep float `atomic_sub`'s signed zeros. Each module is validated by spirv-val.

use qd::backend::spirv::{lower_kernel, SpirvCaps, SpirvTarget};
use qd::prelude::*;
use qd::target::Feature;
use rspirv::binary::Disassemble;

/// Traces and lowers `k` for 32-lane subgroups with `caps`, validates it, and returns the
/// disassembly.
fn lower(k: &Kernel, caps: &SpirvCaps) -> String {
    let target = SpirvTarget { subgroup_size: 32, caps: caps.clone() };
    let ir = k.trace(&target.trace_target()).unwrap_or_else(|e| panic!("{e}"));
    let m = lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{e}"));
    if let Some(val) = qd_testkit::SpirvVal::find() {
        val.assert_valid(k.name(), &m.words);
    }
    rspirv::dr::load_words(&m.words).expect("a module rspirv reads").disassemble()
}

#[test]
fn a_varying_broadcast_lane_is_a_shuffle_on_vulkan() {
    let k = Kernel::explicit("varying_broadcast", 32, |k| {
        let a = k.array::<u32>("a");
        let t = block::thread_idx();
        a.set(t, subgroup::broadcast(a.get(t), a.get(t)));
    });
    let text = lower(&k, &SpirvCaps::lavapipe());
    assert!(text.contains("OpGroupNonUniformShuffle "), "{text}");
    assert!(!text.contains("OpGroupNonUniformBroadcast "), "{text}");
    // A constant lane keeps the broadcast.
    let k = Kernel::explicit("constant_broadcast", 32, |k| {
        let a = k.array::<u32>("a");
        let t = block::thread_idx();
        a.set(t, subgroup::broadcast(a.get(t), 3u32));
    });
    assert!(lower(&k, &SpirvCaps::lavapipe()).contains("OpGroupNonUniformBroadcast "));
}

fn add_kernel<T: Num>() -> Kernel {
    Kernel::range("float_add", 64, |k| {
        let a = k.array::<T>("a");
        let b = k.array::<T>("b");
        k.parallel_for(0, a.len(), |i| {
            atomic_add(b.at(0), a.get(i));
        });
    })
}

#[test]
fn f64_atomic_add_is_native_where_the_device_has_it() {
    let native = SpirvCaps { float64_atomic_add: true, ..SpirvCaps::lavapipe() };
    let text = lower(&add_kernel::<f64>(), &native);
    assert!(text.contains("OpCapability AtomicFloat64AddEXT") && text.contains("OpAtomicFAddEXT"), "{text}");
    let cas = lower(&add_kernel::<f64>(), &SpirvCaps { float64_atomic_add: false, ..SpirvCaps::lavapipe() });
    assert!(!cas.contains("OpAtomicFAddEXT") && cas.contains("OpAtomicCompareExchange"), "{cas}");
    // lavapipe (22.3) reports no f64 atomic add: CI runs the CAS loop.
    assert!(!SpirvCaps::lavapipe().float64_atomic_add);
    let f32_native = lower(&add_kernel::<f32>(), &SpirvCaps::lavapipe());
    assert!(f32_native.contains("OpCapability AtomicFloat32AddEXT"), "{f32_native}");
}

fn sub_kernel<T: Num>(declares: bool) -> Kernel {
    Kernel::range("float_sub", 64, move |k| {
        if declares {
            k.requires(Feature::SignedZeros(T::DTYPE));
        }
        let a = k.array::<T>("a");
        let b = k.array::<T>("b");
        k.parallel_for(0, a.len(), |i| {
            atomic_sub(b.at(i), a.get(i));
        });
    })
}

#[test]
fn float_atomic_sub_negates_and_keeps_signed_zeros_where_the_device_can() {
    let text = lower(&sub_kernel::<f32>(true), &SpirvCaps::lavapipe());
    assert!(text.contains("OpFNegate"), "add(x, -y), not add(x, 0 - y): {text}");
    assert!(text.contains("SignedZeroInfNanPreserve 32"), "{text}");
    assert!(text.contains("OpExtension \"SPV_KHR_float_controls\""), "{text}");
    let text = lower(&sub_kernel::<f64>(true), &SpirvCaps::lavapipe());
    assert!(text.contains("SignedZeroInfNanPreserve 64"), "{text}");

    // A device without the float controls: the kernel that depends on signed zeros is refused by
    // the capability check with the reason; one that does not is lowered without the mode.
    let without = SpirvCaps { signed_zeros32: false, ..SpirvCaps::lavapipe() };
    let e = sub_kernel::<f32>(true).trace(&SpirvTarget { subgroup_size: 32, caps: without.clone() }.trace_target());
    let e = e.unwrap_err();
    assert_eq!(e.unsupported, Some(Feature::SignedZeros(qd::ir::DType::F32)), "{e}");
    assert!(e.message.contains("shaderSignedZeroInfNanPreserveFloat32"), "{e}");
    let text = lower(&sub_kernel::<f32>(false), &without);
    assert!(!text.contains("SignedZeroInfNanPreserve"), "{text}");
    // Kernels without a float negation leave the driver its float freedom.
    assert!(!lower(&add_kernel::<f32>(), &SpirvCaps::lavapipe()).contains("SignedZeroInfNanPreserve"));
}

/// lavapipe reports no f16 atomic add, and no GPU of the record does either, so this module is
/// validated by spirv-val only (never run): the capability forced on.
#[test]
fn f16_atomic_add_is_native_with_the_capability_forced() {
    let forced = SpirvCaps { float16_atomic_add: true, float16: true, ..SpirvCaps::lavapipe() };
    let text = lower(&add_kernel::<qd::trace::F16>(), &forced);
    assert!(text.contains("OpCapability AtomicFloat16AddEXT") && text.contains("OpAtomicFAddEXT"), "{text}");
    assert!(text.contains("SPV_EXT_shader_atomic_float16_add"), "{text}");
    let cas = lower(&add_kernel::<qd::trace::F16>(), &SpirvCaps { float16: true, ..SpirvCaps::lavapipe() });
    assert!(!cas.contains("OpAtomicFAddEXT"), "{cas}");
}
