//! The Vulkan runtime on a real Vulkan device (lavapipe in CI): arrays, launches, the parameter
//! block, the D1 grid, errors, the pipeline cache, device info.
//!
//! Without a Vulkan loader, driver or device every test here prints `skipped` and passes; with
//! `QD_REQUIRE_VULKAN=1` (what `scripts/test.sh` sets once it has installed lavapipe) they fail
//! instead. Most kernels are hand-written SPIR-V given through `Device::override_spirv`, so these
//! tests check the runtime whatever the SPIR-V lowering does; `lowered_kernel_runs` checks the
//! lowering's own output end to end.
#![cfg(feature = "vulkan")]

use qd::ir::DType;
use qd::prelude::*;
use qd::runtime::{SpirvCode, SpirvParam};

/// Vulkan device 0, or `None` (and a `skipped` line) when this machine has none.
fn vulkan() -> Option<Device> {
    match Device::from_name("vulkan") {
        Ok(d) => Some(d),
        Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_VULKAN").as_deref() != Ok("1") => {
            eprintln!("skipped: no Vulkan device ({reason}); QD_REQUIRE_VULKAN=1 makes this a failure");
            None
        }
        Err(e) => panic!("Vulkan required (QD_REQUIRE_VULKAN=1) but unavailable: {e}"),
    }
}

fn add_scalar_kernel() -> Kernel {
    Kernel::range("vk_add_scalar", 64, |k| {
        let a = k.array::<i32>("a");
        let s = k.scalar::<i32>("s");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + s));
    })
}

fn add_scalar_spirv() -> SpirvCode {
    SpirvCode {
        words: ADD_SCALAR.to_vec(),
        entry: "vk_add_scalar".into(),
        workgroup_size: 64,
        params: vec![SpirvParam::Array { dtype: DType::I32, binding: 1 }, SpirvParam::Scalar { dtype: DType::I32 }],
        shared_bytes: 0,
    }
}

fn block_ids_kernel() -> Kernel {
    Kernel::explicit("vk_block_ids", 64, |k| {
        let out = k.array::<u32>("out");
        let i = block::block_idx() * 64 + block::thread_idx();
        if_(i.lt(out.len()), || out.set(i, block::block_idx().cast::<u32>()));
    })
}

fn block_ids_spirv() -> SpirvCode {
    SpirvCode {
        words: BLOCK_IDS.to_vec(),
        entry: "vk_block_ids".into(),
        workgroup_size: 64,
        params: vec![SpirvParam::Array { dtype: DType::U32, binding: 1 }],
        shared_bytes: 0,
    }
}

#[test]
fn range_kernel_runs_past_the_grid_cap() {
    let Some(d) = vulkan() else { return };
    let k = add_scalar_kernel();
    d.override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap();
    // More than RANGE_GRID_CAP blocks of 64: the grid is capped and threads loop grid-stride.
    let n = qd::runtime::RANGE_GRID_CAP as usize * 64 + 77;
    let host: Vec<i32> = (0..n as i32).collect();
    let a = d.array_from(&host).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(5i32)]).unwrap();
    let out = a.to_vec().unwrap();
    assert_eq!(out.len(), n);
    assert!(out.iter().enumerate().all(|(i, &x)| x == i as i32 + 5), "wrong values");
    // A small launch and an empty one.
    let b = d.array_from(&[1i32, 2, 3]).unwrap();
    d.launch(&k, &[b.arg(), Arg::scalar(-1i32)]).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![0, 1, 2]);
    let e = d.zeros::<i32>(0).unwrap();
    d.launch(&k, &[e.arg(), Arg::scalar(1i32)]).unwrap();
    assert!(e.to_vec().unwrap().is_empty());
}

#[test]
fn the_parameter_block_holds_lengths_and_zero_extended_scalars() {
    let Some(d) = vulkan() else { return };
    let k = Kernel::explicit("vk_params", 64, |k| {
        let out = k.array::<u32>("out");
        let _b = k.scalar::<bool>("b");
        let _x = k.scalar::<u8>("x");
        let _y = k.scalar::<i16>("y");
        let _z = k.scalar::<f64>("z");
        let _w = k.scalar::<u64>("w");
        let _f = k.scalar::<f32>("f");
        let _h = k.scalar::<F16>("h");
        let tail = k.array::<u32>("tail");
        if_(block::thread_idx().eq(0), || {
            out.set(0, out.len().cast::<u32>());
            tail.set(0, 0xABCDu32);
        });
    });
    let scalar = |dtype| SpirvParam::Scalar { dtype };
    let params = vec![
        SpirvParam::Array { dtype: DType::U32, binding: 1 },
        scalar(DType::Bool),
        scalar(DType::U8),
        scalar(DType::I16),
        scalar(DType::F64),
        scalar(DType::U64),
        scalar(DType::F32),
        scalar(DType::F16),
        SpirvParam::Array { dtype: DType::U32, binding: 2 },
    ];
    let code =
        SpirvCode { words: PARAMS.to_vec(), entry: "vk_params".into(), workgroup_size: 64, params, shared_bytes: 0 };
    d.override_spirv("vk_params", code).unwrap();
    let out = d.zeros::<u32>(20).unwrap();
    let tail = d.zeros::<u32>(3).unwrap();
    let h = F16::from_f32(-2.5);
    let z = std::f64::consts::PI;
    let w = 0xDEAD_BEEF_0123_4567u64;
    let args = [
        out.arg(),
        Arg::scalar(true),
        Arg::scalar(200u8),
        Arg::scalar(-12345i16),
        Arg::scalar(z),
        Arg::scalar(w),
        Arg::scalar(1.25f32),
        Arg::scalar(h),
        tail.arg(),
    ];
    d.launch_grid(&k, 2, &args).unwrap();
    let slots: Vec<u64> = out.to_vec().unwrap()[..18].chunks(2).map(|p| p[0] as u64 | (p[1] as u64) << 32).collect();
    let want = vec![20, 1, 200, (-12345i16) as u16 as u64, z.to_bits(), w, 1.25f32.to_bits() as u64, h.to_bits(), 3];
    assert_eq!(slots, want);
    assert_eq!(tail.to_vec().unwrap(), vec![0xABCD, 0, 0]);
}

#[test]
fn explicit_kernels_take_the_grid_given_and_the_device_caps_it() {
    let Some(d) = vulkan() else { return };
    let k = block_ids_kernel();
    d.override_spirv("vk_block_ids", block_ids_spirv()).unwrap();
    let out = d.array_from(&vec![u32::MAX; 64 * 5 + 10]).unwrap();
    d.launch_grid(&k, 3, &[out.arg()]).unwrap();
    let got = out.to_vec().unwrap();
    let want: Vec<u32> = (0..64 * 5 + 10).map(|i| if i < 64 * 3 { i / 64 } else { u32::MAX }).collect();
    assert_eq!(got, want);
    // Zero blocks run nothing.
    d.launch_grid(&k, 0, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), want);
    // Past maxComputeWorkGroupCount[0]: a launch error naming the limit.
    match d.launch_grid(&k, u32::MAX, &[out.arg()]).unwrap_err() {
        QdError::Launch { kernel, message } => {
            assert_eq!(kernel, "vk_block_ids");
            assert!(message.contains("maxComputeWorkGroupCount[0]"), "{message}");
        }
        other => panic!("expected a launch error, got {other}"),
    }
}

#[test]
fn arrays_of_every_dtype_round_trip() {
    let Some(d) = vulkan() else { return };
    fn check<T: Scalar>(d: &Device, data: &[T]) {
        let a = d.array_from(data).unwrap();
        assert_eq!(a.len(), data.len());
        assert_eq!(a.to_vec().unwrap(), data);
        let z = d.zeros::<T>(data.len()).unwrap();
        z.write(data).unwrap();
        assert_eq!(z.to_vec().unwrap(), data);
        if !data.is_empty() {
            assert!(z.write(&data[1..]).is_err());
        }
        match a.arg() {
            Arg::Array(h) => assert_eq!((h.dtype(), h.device().as_str()), (T::DTYPE, "vulkan:0")),
            Arg::Scalar(..) => panic!("an array's argument is an array"),
        }
    }
    check(&d, &[true, false, true, true]);
    check(&d, &[-128i8, 0, 127]);
    check(&d, &[0u8, 255, 7]);
    check(&d, &[-32768i16, 1]);
    check(&d, &[65535u16, 2]);
    check(&d, &[i32::MIN, -1, 3]);
    check(&d, &[u32::MAX, 4]);
    check(&d, &[i64::MIN, 5]);
    check(&d, &[u64::MAX, 6]);
    check(&d, &[F16::from_f32(1.5), F16::from_f32(-0.25)]);
    check(&d, &[BF16::from_f32(3.0)]);
    check(&d, &[1.5f32, -0.0, f32::INFINITY]);
    check(&d, &[1e300f64, -2.0]);
    check::<i32>(&d, &[]);
    assert_eq!(d.zeros::<u16>(1000).unwrap().to_vec().unwrap(), vec![0u16; 1000]);
}

#[test]
fn module_mistakes_are_launch_errors_before_the_driver_sees_them() {
    let Some(d) = vulkan() else { return };
    let k = block_ids_kernel();
    let out = d.zeros::<u32>(64).unwrap();
    let expect = |code: SpirvCode, want: &str| {
        d.override_spirv("vk_block_ids", code).unwrap();
        match d.launch_grid(&k, 1, &[out.arg()]).unwrap_err() {
            QdError::Launch { kernel, message } => {
                assert_eq!(kernel, "vk_block_ids");
                assert!(message.contains(want), "expected `{want}` in: {message}");
            }
            other => panic!("expected a launch error containing `{want}`, got {other}"),
        }
    };
    let good = block_ids_spirv();
    let max_shared = d.info().max_shared_bytes;
    expect(SpirvCode { shared_bytes: max_shared + 1, ..good.clone() }, "maxComputeSharedMemorySize");
    expect(
        SpirvCode { params: vec![SpirvParam::Array { dtype: DType::I32, binding: 1 }], ..good.clone() },
        "parameter 0 (`out`)",
    );
    expect(
        SpirvCode { params: vec![SpirvParam::Array { dtype: DType::U32, binding: 2 }], ..good.clone() },
        "parameter 0 (`out`)",
    );
    expect(SpirvCode { params: Vec::new(), ..good.clone() }, "0 SPIR-V parameters for 1");
    expect(SpirvCode { workgroup_size: 32, ..good.clone() }, "workgroup size 32 for block_dim 64");
    let mut words = good.words.clone();
    words[0] = 0x1234_5678;
    expect(SpirvCode { words, ..good.clone() }, "magic number");
    let mut words = good.words.clone();
    words[1] = 0x0001_0900; // SPIR-V 1.9: newer than any Vulkan accepts
    expect(SpirvCode { words, ..good.clone() }, "version 1.9");
    expect(SpirvCode { entry: "a\0b".into(), ..good.clone() }, "NUL");
    // The good module runs again afterwards.
    d.override_spirv("vk_block_ids", good).unwrap();
    d.launch_grid(&k, 1, &[out.arg()]).unwrap();
}

#[test]
fn arguments_are_checked_as_on_the_cpu() {
    let Some(d) = vulkan() else { return };
    let k = add_scalar_kernel();
    d.override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap();
    let f = d.zeros::<f32>(4).unwrap();
    let a = d.zeros::<i32>(4).unwrap();
    let e = d.launch(&k, &[f.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(matches!(&e, QdError::Argument { index: 0, .. }), "{e}");
    let e = d.launch(&k, &[a.arg(), Arg::scalar(1u32)]).unwrap_err();
    assert!(matches!(&e, QdError::Argument { index: 1, .. }), "{e}");
    let e = d.launch(&k, &[a.arg()]).unwrap_err();
    assert!(matches!(&e, QdError::Launch { .. }), "{e}");
    let e = d.launch_grid(&k, 1, &[a.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(matches!(&e, QdError::Launch { .. }), "{e}");
    // Arrays do not move between backends...
    let on_cpu = Device::cpu().zeros::<i32>(4).unwrap();
    let e = d.launch(&k, &[on_cpu.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(e.to_string().contains("lives on cpu"), "{e}");
    let e = Device::cpu().launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(e.to_string().contains("lives on vulkan:0"), "{e}");
    // ... but every Device naming vulkan:0 shares its arrays.
    let again = Device::from_name("vulkan:0").unwrap();
    again.override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap();
    again.launch(&k, &[a.arg(), Arg::scalar(2i32)]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![2; 4]);
    // An override needs a Vulkan device.
    let e = Device::cpu().override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap_err();
    assert!(matches!(e, QdError::Launch { .. }), "{e}");
}

/// The device's buffer limits reach the target, and an array past them is a typed allocation error
/// before the driver sees it (issue 12).
#[test]
fn arrays_past_the_buffer_limit_are_allocation_errors() {
    let Some(d) = vulkan() else { return };
    let max = d.target().limits().max_buffer_bytes.expect("maxStorageBufferRange / maxMemoryAllocationSize");
    assert!(max >= 1 << 27, "{max}");
    let len = usize::try_from(max / 4 + 1).unwrap();
    let e = d.zeros::<u32>(len).unwrap_err();
    assert!(matches!(e, QdError::Allocation { len: l, .. } if l == len), "{e}");
    assert!(e.to_string().contains(&format!("over the {max} bytes one array may take on vulkan")), "{e}");
    assert!(d.zeros::<u8>(4096).is_ok());
}

#[test]
fn pipelines_are_cached_per_kernel_and_compile_stats_recorded() {
    let Some(d) = vulkan() else { return };
    let k = add_scalar_kernel();
    d.override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap();
    let a = d.array_from(&[1i32, 2]).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    let first = d.compile_stats().unwrap();
    assert_eq!(first.kernel, "vk_add_scalar");
    assert_eq!(first.disk, qd::runtime::DiskCacheUse::NotApplicable);
    assert!(first.total >= first.trace + first.lower + first.load, "{first:?}");
    assert!(first.load > std::time::Duration::ZERO, "{first:?}");
    // The in-memory cache: no new compile.
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    assert_eq!(d.compile_stats().unwrap(), first);
    let compiled = d.compile(&k).unwrap();
    assert_eq!(compiled.spirv().unwrap().entry, "vk_add_scalar");
    assert!(compiled.ptx().is_none() && compiled.cpu_program().is_none());
    // Cleared: compiled again.
    d.clear_cache();
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    assert_ne!(d.compile_stats().unwrap(), first);
    assert_eq!(a.to_vec().unwrap(), vec![4, 5]);
}

#[test]
fn launches_from_many_threads() {
    let Some(d) = vulkan() else { return };
    let k = add_scalar_kernel();
    d.override_spirv("vk_add_scalar", add_scalar_spirv()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4i32 {
            let (d, k) = (d.clone(), k.clone());
            s.spawn(move || {
                let a = d.array_from(&vec![t; 1000]).unwrap();
                for _ in 0..10 {
                    d.launch(&k, &[a.arg(), Arg::scalar(t)]).unwrap();
                }
                assert_eq!(a.to_vec().unwrap(), vec![11 * t; 1000]);
            });
        }
    });
}

#[test]
fn info_names_the_device() {
    let Some(d) = vulkan() else { return };
    let info = d.info();
    assert_eq!(info.name, "vulkan:0");
    assert_eq!(d.name(), "vulkan:0");
    assert_eq!(info.backend, "vulkan");
    assert_eq!(d.target().backend_name(), "vulkan");
    let (major, minor, _) = info.api_version.unwrap();
    assert!((major, minor) >= (1, 1), "{info:?}");
    assert!(info.driver.is_some() && !info.model.is_empty(), "{info:?}");
    assert!(info.subgroup_size.is_power_of_two() && info.subgroup_size >= 4, "{info:?}");
    assert_eq!(info.subgroup_size, d.subgroup_size());
    assert!(info.max_shared_bytes >= 16 * 1024, "{info:?}");
    assert!(!d.target().support(qd::target::Feature::Nv(qd::target::NvFeature::Match)).is_available());
    let text = d.describe();
    assert!(text.starts_with("vulkan:0: ") && text.contains(", Vulkan 1."), "{text}");
    assert!(text.contains(&format!("subgroup size {} (", info.subgroup_size)), "{text}");
    assert!(qd::runtime::available_devices().contains(&"vulkan:0".to_string()));
    if info.model.contains("llvmpipe") {
        // lavapipe: 8 lanes measured (the default LP_NATIVE_VECTOR_WIDTH of 256 bits), 32 KiB.
        if std::env::var_os("LP_NATIVE_VECTOR_WIDTH").is_none() {
            assert_eq!(info.subgroup_size, 8, "{text}");
        }
        assert_eq!(info.max_shared_bytes, 32 * 1024, "{text}");
        assert!(info.notes[0].starts_with("measured"), "{text}");
        // Mesa's LP_MAX_TGSI_LOOP_ITERATIONS: every loop of an invocation ends after 65535 in all.
        assert_eq!(info.loop_iteration_limit, Some(65535), "{text}");
        assert!(text.contains("loops end after 65535 iterations"), "{text}");
        // vulkanMemoryModel with device scope: the lowering uses the Vulkan memory model.
        assert!(text.contains("Vulkan memory model"), "{text}");
    }
    eprintln!("{text}");
}

#[test]
fn device_names() {
    let Some(d) = vulkan() else { return };
    let count = qd::runtime::available_devices().iter().filter(|n| n.starts_with("vulkan:")).count();
    assert!(count >= 1);
    let missing = format!("vulkan:{count}");
    match Device::from_name(&missing).unwrap_err() {
        QdError::Unavailable { backend, reason } => {
            assert_eq!(backend, missing);
            assert!(reason.contains(&format!("there is no Vulkan device {count}")), "{reason}");
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    assert_eq!(d.name(), Device::from_name("vulkan:0").unwrap().name());
}

/// The SPIR-V lowering's own output, end to end.
#[test]
fn lowered_kernel_runs() {
    let Some(d) = vulkan() else { return };
    let k = Kernel::range("vk_lowered_saxpy", 64, |k| {
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        let a = k.scalar::<f32>("a");
        k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    });
    let n = 1000;
    let x = d.array_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let y = d.array_from(&vec![1.0f32; n]).unwrap();
    d.launch(&k, &[x.arg(), y.arg(), Arg::scalar(2.0f32)]).unwrap();
    let compiled = d.compile(&k).unwrap();
    let code = compiled.spirv().unwrap();
    assert_eq!((code.entry.as_str(), code.workgroup_size), ("vk_lowered_saxpy", 64));
    assert_eq!(code.words[0], 0x0723_0203);
    // `OpMemoryModel Logical Vulkan` where the device has the Vulkan memory model, else GLSL450.
    let model = if d.describe().contains("Vulkan memory model") { 3 } else { 1 };
    let header = [(3 << 16) | 14, 0, model];
    assert!(code.words.windows(3).any(|w| w == header), "no OpMemoryModel Logical {model}");
    let want: Vec<f32> = (0..n).map(|i| 2.0 * i as f32 + 1.0).collect();
    assert_eq!(y.to_vec().unwrap(), want);
}

// Hand-written kernels, assembled by `spirv-as --target-env vulkan1.1` and accepted by `spirv-val`.
/// ```text
/// ; vk_add_scalar(a: array<i32>, s: i32), block 64: a[i] += s for i in 0..len(a), grid-stride.
///                OpCapability Shader
///                OpMemoryModel Logical GLSL450
///                OpEntryPoint GLCompute %main "vk_add_scalar" %gid %nwg
///                OpExecutionMode %main LocalSize 64 1 1
///                OpDecorate %gid BuiltIn GlobalInvocationId
///                OpDecorate %nwg BuiltIn NumWorkgroups
///                OpDecorate %rtu ArrayStride 4
///                OpMemberDecorate %pblk 0 Offset 0
///                OpDecorate %pblk Block
///                OpDecorate %rti ArrayStride 4
///                OpMemberDecorate %ablk 0 Offset 0
///                OpDecorate %ablk Block
///                OpDecorate %params DescriptorSet 0
///                OpDecorate %params Binding 0
///                OpDecorate %a DescriptorSet 0
///                OpDecorate %a Binding 1
///        %void = OpTypeVoid
///          %fn = OpTypeFunction %void
///         %u32 = OpTypeInt 32 0
///         %i32 = OpTypeInt 32 1
///         %v3u = OpTypeVector %u32 3
///        %bool = OpTypeBool
///         %rtu = OpTypeRuntimeArray %u32
///        %pblk = OpTypeStruct %rtu
///         %rti = OpTypeRuntimeArray %i32
///        %ablk = OpTypeStruct %rti
///       %ppblk = OpTypePointer StorageBuffer %pblk
///       %pablk = OpTypePointer StorageBuffer %ablk
///         %psu = OpTypePointer StorageBuffer %u32
///         %psi = OpTypePointer StorageBuffer %i32
///        %pin3 = OpTypePointer Input %v3u
///         %pfu = OpTypePointer Function %u32
///          %c0 = OpConstant %u32 0
///          %c2 = OpConstant %u32 2
///         %c64 = OpConstant %u32 64
///      %params = OpVariable %ppblk StorageBuffer
///           %a = OpVariable %pablk StorageBuffer
///         %gid = OpVariable %pin3 Input
///         %nwg = OpVariable %pin3 Input
///        %main = OpFunction %void None %fn
///       %entry = OpLabel
///           %i = OpVariable %pfu Function
///          %g3 = OpLoad %v3u %gid
///           %g = OpCompositeExtract %u32 %g3 0
///          %w3 = OpLoad %v3u %nwg
///           %w = OpCompositeExtract %u32 %w3 0
///      %stride = OpIMul %u32 %w %c64
///          %pn = OpAccessChain %psu %params %c0 %c0
///           %n = OpLoad %u32 %pn
///          %ps = OpAccessChain %psu %params %c0 %c2
///          %su = OpLoad %u32 %ps
///           %s = OpBitcast %i32 %su
///                OpStore %i %g
///                OpBranch %header
///      %header = OpLabel
///                OpLoopMerge %merge %continue None
///                OpBranch %cond
///        %cond = OpLabel
///          %iv = OpLoad %u32 %i
///          %lt = OpULessThan %bool %iv %n
///                OpBranchConditional %lt %body %merge
///        %body = OpLabel
///          %pa = OpAccessChain %psi %a %c0 %iv
///           %x = OpLoad %i32 %pa
///           %y = OpIAdd %i32 %x %s
///                OpStore %pa %y
///                OpBranch %continue
///    %continue = OpLabel
///        %next = OpIAdd %u32 %iv %stride
///                OpStore %i %next
///                OpBranch %header
///       %merge = OpLabel
///                OpReturn
///                OpFunctionEnd
/// ```
#[rustfmt::skip]
const ADD_SCALAR: [u32; 280] = [
    0x07230203, 0x00010300, 0x00070000, 0x00000030, 0x00000000, 0x00020011, 0x00000001, 0x0003000e,
    0x00000000, 0x00000001, 0x0009000f, 0x00000005, 0x00000001, 0x615f6b76, 0x735f6464, 0x616c6163,
    0x00000072, 0x00000002, 0x00000003, 0x00060010, 0x00000001, 0x00000011, 0x00000040, 0x00000001,
    0x00000001, 0x00040047, 0x00000002, 0x0000000b, 0x0000001c, 0x00040047, 0x00000003, 0x0000000b,
    0x00000018, 0x00040047, 0x00000004, 0x00000006, 0x00000004, 0x00050048, 0x00000005, 0x00000000,
    0x00000023, 0x00000000, 0x00030047, 0x00000005, 0x00000002, 0x00040047, 0x00000006, 0x00000006,
    0x00000004, 0x00050048, 0x00000007, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x00000007,
    0x00000002, 0x00040047, 0x00000008, 0x00000022, 0x00000000, 0x00040047, 0x00000008, 0x00000021,
    0x00000000, 0x00040047, 0x00000009, 0x00000022, 0x00000000, 0x00040047, 0x00000009, 0x00000021,
    0x00000001, 0x00020013, 0x0000000a, 0x00030021, 0x0000000b, 0x0000000a, 0x00040015, 0x0000000c,
    0x00000020, 0x00000000, 0x00040015, 0x0000000d, 0x00000020, 0x00000001, 0x00040017, 0x0000000e,
    0x0000000c, 0x00000003, 0x00020014, 0x0000000f, 0x0003001d, 0x00000004, 0x0000000c, 0x0003001e,
    0x00000005, 0x00000004, 0x0003001d, 0x00000006, 0x0000000d, 0x0003001e, 0x00000007, 0x00000006,
    0x00040020, 0x00000010, 0x0000000c, 0x00000005, 0x00040020, 0x00000011, 0x0000000c, 0x00000007,
    0x00040020, 0x00000012, 0x0000000c, 0x0000000c, 0x00040020, 0x00000013, 0x0000000c, 0x0000000d,
    0x00040020, 0x00000014, 0x00000001, 0x0000000e, 0x00040020, 0x00000015, 0x00000007, 0x0000000c,
    0x0004002b, 0x0000000c, 0x00000016, 0x00000000, 0x0004002b, 0x0000000c, 0x00000017, 0x00000002,
    0x0004002b, 0x0000000c, 0x00000018, 0x00000040, 0x0004003b, 0x00000010, 0x00000008, 0x0000000c,
    0x0004003b, 0x00000011, 0x00000009, 0x0000000c, 0x0004003b, 0x00000014, 0x00000002, 0x00000001,
    0x0004003b, 0x00000014, 0x00000003, 0x00000001, 0x00050036, 0x0000000a, 0x00000001, 0x00000000,
    0x0000000b, 0x000200f8, 0x00000019, 0x0004003b, 0x00000015, 0x0000001a, 0x00000007, 0x0004003d,
    0x0000000e, 0x0000001b, 0x00000002, 0x00050051, 0x0000000c, 0x0000001c, 0x0000001b, 0x00000000,
    0x0004003d, 0x0000000e, 0x0000001d, 0x00000003, 0x00050051, 0x0000000c, 0x0000001e, 0x0000001d,
    0x00000000, 0x00050084, 0x0000000c, 0x0000001f, 0x0000001e, 0x00000018, 0x00060041, 0x00000012,
    0x00000020, 0x00000008, 0x00000016, 0x00000016, 0x0004003d, 0x0000000c, 0x00000021, 0x00000020,
    0x00060041, 0x00000012, 0x00000022, 0x00000008, 0x00000016, 0x00000017, 0x0004003d, 0x0000000c,
    0x00000023, 0x00000022, 0x0004007c, 0x0000000d, 0x00000024, 0x00000023, 0x0003003e, 0x0000001a,
    0x0000001c, 0x000200f9, 0x00000025, 0x000200f8, 0x00000025, 0x000400f6, 0x00000026, 0x00000027,
    0x00000000, 0x000200f9, 0x00000028, 0x000200f8, 0x00000028, 0x0004003d, 0x0000000c, 0x00000029,
    0x0000001a, 0x000500b0, 0x0000000f, 0x0000002a, 0x00000029, 0x00000021, 0x000400fa, 0x0000002a,
    0x0000002b, 0x00000026, 0x000200f8, 0x0000002b, 0x00060041, 0x00000013, 0x0000002c, 0x00000009,
    0x00000016, 0x00000029, 0x0004003d, 0x0000000d, 0x0000002d, 0x0000002c, 0x00050080, 0x0000000d,
    0x0000002e, 0x0000002d, 0x00000024, 0x0003003e, 0x0000002c, 0x0000002e, 0x000200f9, 0x00000027,
    0x000200f8, 0x00000027, 0x00050080, 0x0000000c, 0x0000002f, 0x00000029, 0x0000001f, 0x0003003e,
    0x0000001a, 0x0000002f, 0x000200f9, 0x00000025, 0x000200f8, 0x00000026, 0x000100fd, 0x00010038,
];

/// ```text
/// ; vk_params(out: array<u32>, b: bool, x: u8, y: i16, z: f64, w: u64, f: f32, h: f16, tail: array<u32>),
/// ; block 64: invocation 0 copies the parameter block's 18 words to out[0..18] and sets tail[0] = 0xABCD.
///                OpCapability Shader
///                OpMemoryModel Logical GLSL450
///                OpEntryPoint GLCompute %main "vk_params" %lid %wid
///                OpExecutionMode %main LocalSize 64 1 1
///                OpDecorate %lid BuiltIn LocalInvocationIndex
///                OpDecorate %wid BuiltIn WorkgroupId
///                OpDecorate %rtu ArrayStride 4
///                OpMemberDecorate %blk 0 Offset 0
///                OpDecorate %blk Block
///                OpDecorate %params DescriptorSet 0
///                OpDecorate %params Binding 0
///                OpDecorate %out DescriptorSet 0
///                OpDecorate %out Binding 1
///                OpDecorate %tail DescriptorSet 0
///                OpDecorate %tail Binding 2
///        %void = OpTypeVoid
///          %fn = OpTypeFunction %void
///         %u32 = OpTypeInt 32 0
///         %v3u = OpTypeVector %u32 3
///        %bool = OpTypeBool
///         %rtu = OpTypeRuntimeArray %u32
///         %blk = OpTypeStruct %rtu
///        %pblk = OpTypePointer StorageBuffer %blk
///         %psu = OpTypePointer StorageBuffer %u32
///        %pinu = OpTypePointer Input %u32
///        %pin3 = OpTypePointer Input %v3u
///         %pfu = OpTypePointer Function %u32
///          %c0 = OpConstant %u32 0
///          %c1 = OpConstant %u32 1
///         %c18 = OpConstant %u32 18
///       %cabcd = OpConstant %u32 43981
///      %params = OpVariable %pblk StorageBuffer
///         %out = OpVariable %pblk StorageBuffer
///        %tail = OpVariable %pblk StorageBuffer
///         %lid = OpVariable %pinu Input
///         %wid = OpVariable %pin3 Input
///        %main = OpFunction %void None %fn
///       %entry = OpLabel
///           %k = OpVariable %pfu Function
///           %l = OpLoad %u32 %lid
///          %w3 = OpLoad %v3u %wid
///           %w = OpCompositeExtract %u32 %w3 0
///         %lw = OpBitwiseOr %u32 %l %w
///       %first = OpIEqual %bool %lw %c0
///                OpSelectionMerge %done None
///                OpBranchConditional %first %copy %done
///        %copy = OpLabel
///                OpStore %k %c0
///                OpBranch %header
///      %header = OpLabel
///                OpLoopMerge %merge %continue None
///                OpBranch %cond
///        %cond = OpLabel
///          %kv = OpLoad %u32 %k
///          %lt = OpULessThan %bool %kv %c18
///                OpBranchConditional %lt %body %merge
///        %body = OpLabel
///         %src = OpAccessChain %psu %params %c0 %kv
///           %v = OpLoad %u32 %src
///         %dst = OpAccessChain %psu %out %c0 %kv
///                OpStore %dst %v
///                OpBranch %continue
///    %continue = OpLabel
///        %next = OpIAdd %u32 %kv %c1
///                OpStore %k %next
///                OpBranch %header
///       %merge = OpLabel
///          %pt = OpAccessChain %psu %tail %c0 %c0
///                OpStore %pt %cabcd
///                OpBranch %done
///        %done = OpLabel
///                OpReturn
///                OpFunctionEnd
/// ```
#[rustfmt::skip]
const PARAMS: [u32; 268] = [
    0x07230203, 0x00010300, 0x00070000, 0x0000002c, 0x00000000, 0x00020011, 0x00000001, 0x0003000e,
    0x00000000, 0x00000001, 0x0008000f, 0x00000005, 0x00000001, 0x705f6b76, 0x6d617261, 0x00000073,
    0x00000002, 0x00000003, 0x00060010, 0x00000001, 0x00000011, 0x00000040, 0x00000001, 0x00000001,
    0x00040047, 0x00000002, 0x0000000b, 0x0000001d, 0x00040047, 0x00000003, 0x0000000b, 0x0000001a,
    0x00040047, 0x00000004, 0x00000006, 0x00000004, 0x00050048, 0x00000005, 0x00000000, 0x00000023,
    0x00000000, 0x00030047, 0x00000005, 0x00000002, 0x00040047, 0x00000006, 0x00000022, 0x00000000,
    0x00040047, 0x00000006, 0x00000021, 0x00000000, 0x00040047, 0x00000007, 0x00000022, 0x00000000,
    0x00040047, 0x00000007, 0x00000021, 0x00000001, 0x00040047, 0x00000008, 0x00000022, 0x00000000,
    0x00040047, 0x00000008, 0x00000021, 0x00000002, 0x00020013, 0x00000009, 0x00030021, 0x0000000a,
    0x00000009, 0x00040015, 0x0000000b, 0x00000020, 0x00000000, 0x00040017, 0x0000000c, 0x0000000b,
    0x00000003, 0x00020014, 0x0000000d, 0x0003001d, 0x00000004, 0x0000000b, 0x0003001e, 0x00000005,
    0x00000004, 0x00040020, 0x0000000e, 0x0000000c, 0x00000005, 0x00040020, 0x0000000f, 0x0000000c,
    0x0000000b, 0x00040020, 0x00000010, 0x00000001, 0x0000000b, 0x00040020, 0x00000011, 0x00000001,
    0x0000000c, 0x00040020, 0x00000012, 0x00000007, 0x0000000b, 0x0004002b, 0x0000000b, 0x00000013,
    0x00000000, 0x0004002b, 0x0000000b, 0x00000014, 0x00000001, 0x0004002b, 0x0000000b, 0x00000015,
    0x00000012, 0x0004002b, 0x0000000b, 0x00000016, 0x0000abcd, 0x0004003b, 0x0000000e, 0x00000006,
    0x0000000c, 0x0004003b, 0x0000000e, 0x00000007, 0x0000000c, 0x0004003b, 0x0000000e, 0x00000008,
    0x0000000c, 0x0004003b, 0x00000010, 0x00000002, 0x00000001, 0x0004003b, 0x00000011, 0x00000003,
    0x00000001, 0x00050036, 0x00000009, 0x00000001, 0x00000000, 0x0000000a, 0x000200f8, 0x00000017,
    0x0004003b, 0x00000012, 0x00000018, 0x00000007, 0x0004003d, 0x0000000b, 0x00000019, 0x00000002,
    0x0004003d, 0x0000000c, 0x0000001a, 0x00000003, 0x00050051, 0x0000000b, 0x0000001b, 0x0000001a,
    0x00000000, 0x000500c5, 0x0000000b, 0x0000001c, 0x00000019, 0x0000001b, 0x000500aa, 0x0000000d,
    0x0000001d, 0x0000001c, 0x00000013, 0x000300f7, 0x0000001e, 0x00000000, 0x000400fa, 0x0000001d,
    0x0000001f, 0x0000001e, 0x000200f8, 0x0000001f, 0x0003003e, 0x00000018, 0x00000013, 0x000200f9,
    0x00000020, 0x000200f8, 0x00000020, 0x000400f6, 0x00000021, 0x00000022, 0x00000000, 0x000200f9,
    0x00000023, 0x000200f8, 0x00000023, 0x0004003d, 0x0000000b, 0x00000024, 0x00000018, 0x000500b0,
    0x0000000d, 0x00000025, 0x00000024, 0x00000015, 0x000400fa, 0x00000025, 0x00000026, 0x00000021,
    0x000200f8, 0x00000026, 0x00060041, 0x0000000f, 0x00000027, 0x00000006, 0x00000013, 0x00000024,
    0x0004003d, 0x0000000b, 0x00000028, 0x00000027, 0x00060041, 0x0000000f, 0x00000029, 0x00000007,
    0x00000013, 0x00000024, 0x0003003e, 0x00000029, 0x00000028, 0x000200f9, 0x00000022, 0x000200f8,
    0x00000022, 0x00050080, 0x0000000b, 0x0000002a, 0x00000024, 0x00000014, 0x0003003e, 0x00000018,
    0x0000002a, 0x000200f9, 0x00000020, 0x000200f8, 0x00000021, 0x00060041, 0x0000000f, 0x0000002b,
    0x00000008, 0x00000013, 0x00000013, 0x0003003e, 0x0000002b, 0x00000016, 0x000200f9, 0x0000001e,
    0x000200f8, 0x0000001e, 0x000100fd, 0x00010038,
];

/// ```text
/// ; vk_block_ids(out: array<u32>), block 64: out[64 * wg + lid] = wg where in bounds.
///                OpCapability Shader
///                OpMemoryModel Logical GLSL450
///                OpEntryPoint GLCompute %main "vk_block_ids" %lid %wid
///                OpExecutionMode %main LocalSize 64 1 1
///                OpDecorate %lid BuiltIn LocalInvocationIndex
///                OpDecorate %wid BuiltIn WorkgroupId
///                OpDecorate %rtu ArrayStride 4
///                OpMemberDecorate %blk 0 Offset 0
///                OpDecorate %blk Block
///                OpDecorate %params DescriptorSet 0
///                OpDecorate %params Binding 0
///                OpDecorate %out DescriptorSet 0
///                OpDecorate %out Binding 1
///        %void = OpTypeVoid
///          %fn = OpTypeFunction %void
///         %u32 = OpTypeInt 32 0
///         %v3u = OpTypeVector %u32 3
///        %bool = OpTypeBool
///         %rtu = OpTypeRuntimeArray %u32
///         %blk = OpTypeStruct %rtu
///        %pblk = OpTypePointer StorageBuffer %blk
///         %psu = OpTypePointer StorageBuffer %u32
///        %pinu = OpTypePointer Input %u32
///        %pin3 = OpTypePointer Input %v3u
///          %c0 = OpConstant %u32 0
///         %c64 = OpConstant %u32 64
///      %params = OpVariable %pblk StorageBuffer
///         %out = OpVariable %pblk StorageBuffer
///         %lid = OpVariable %pinu Input
///         %wid = OpVariable %pin3 Input
///        %main = OpFunction %void None %fn
///       %entry = OpLabel
///           %l = OpLoad %u32 %lid
///          %w3 = OpLoad %v3u %wid
///           %w = OpCompositeExtract %u32 %w3 0
///          %wb = OpIMul %u32 %w %c64
///           %i = OpIAdd %u32 %wb %l
///          %pn = OpAccessChain %psu %params %c0 %c0
///           %n = OpLoad %u32 %pn
///          %in = OpULessThan %bool %i %n
///                OpSelectionMerge %done None
///                OpBranchConditional %in %store %done
///       %store = OpLabel
///          %po = OpAccessChain %psu %out %c0 %i
///                OpStore %po %w
///                OpBranch %done
///        %done = OpLabel
///                OpReturn
///                OpFunctionEnd
/// ```
#[rustfmt::skip]
const BLOCK_IDS: [u32; 191] = [
    0x07230203, 0x00010300, 0x00070000, 0x0000001f, 0x00000000, 0x00020011, 0x00000001, 0x0003000e,
    0x00000000, 0x00000001, 0x0009000f, 0x00000005, 0x00000001, 0x625f6b76, 0x6b636f6c, 0x7364695f,
    0x00000000, 0x00000002, 0x00000003, 0x00060010, 0x00000001, 0x00000011, 0x00000040, 0x00000001,
    0x00000001, 0x00040047, 0x00000002, 0x0000000b, 0x0000001d, 0x00040047, 0x00000003, 0x0000000b,
    0x0000001a, 0x00040047, 0x00000004, 0x00000006, 0x00000004, 0x00050048, 0x00000005, 0x00000000,
    0x00000023, 0x00000000, 0x00030047, 0x00000005, 0x00000002, 0x00040047, 0x00000006, 0x00000022,
    0x00000000, 0x00040047, 0x00000006, 0x00000021, 0x00000000, 0x00040047, 0x00000007, 0x00000022,
    0x00000000, 0x00040047, 0x00000007, 0x00000021, 0x00000001, 0x00020013, 0x00000008, 0x00030021,
    0x00000009, 0x00000008, 0x00040015, 0x0000000a, 0x00000020, 0x00000000, 0x00040017, 0x0000000b,
    0x0000000a, 0x00000003, 0x00020014, 0x0000000c, 0x0003001d, 0x00000004, 0x0000000a, 0x0003001e,
    0x00000005, 0x00000004, 0x00040020, 0x0000000d, 0x0000000c, 0x00000005, 0x00040020, 0x0000000e,
    0x0000000c, 0x0000000a, 0x00040020, 0x0000000f, 0x00000001, 0x0000000a, 0x00040020, 0x00000010,
    0x00000001, 0x0000000b, 0x0004002b, 0x0000000a, 0x00000011, 0x00000000, 0x0004002b, 0x0000000a,
    0x00000012, 0x00000040, 0x0004003b, 0x0000000d, 0x00000006, 0x0000000c, 0x0004003b, 0x0000000d,
    0x00000007, 0x0000000c, 0x0004003b, 0x0000000f, 0x00000002, 0x00000001, 0x0004003b, 0x00000010,
    0x00000003, 0x00000001, 0x00050036, 0x00000008, 0x00000001, 0x00000000, 0x00000009, 0x000200f8,
    0x00000013, 0x0004003d, 0x0000000a, 0x00000014, 0x00000002, 0x0004003d, 0x0000000b, 0x00000015,
    0x00000003, 0x00050051, 0x0000000a, 0x00000016, 0x00000015, 0x00000000, 0x00050084, 0x0000000a,
    0x00000017, 0x00000016, 0x00000012, 0x00050080, 0x0000000a, 0x00000018, 0x00000017, 0x00000014,
    0x00060041, 0x0000000e, 0x00000019, 0x00000006, 0x00000011, 0x00000011, 0x0004003d, 0x0000000a,
    0x0000001a, 0x00000019, 0x000500b0, 0x0000000c, 0x0000001b, 0x00000018, 0x0000001a, 0x000300f7,
    0x0000001c, 0x00000000, 0x000400fa, 0x0000001b, 0x0000001d, 0x0000001c, 0x000200f8, 0x0000001d,
    0x00060041, 0x0000000e, 0x0000001e, 0x00000007, 0x00000011, 0x00000018, 0x0003003e, 0x0000001e,
    0x00000016, 0x000200f9, 0x0000001c, 0x000200f8, 0x0000001c, 0x000100fd, 0x00010038,
];
