//! The CUDA runtime on a real GPU: arrays, launches, parameter passing, errors, caches.
//!
//! Without a CUDA driver every test here prints `skipped` and passes; with `QD_REQUIRE_CUDA=1` (the
//! GPU record's setting) a missing driver fails them instead. The kernels are given hand-written
//! PTX through `Device::override_ptx`, so these tests check the runtime whatever the NVPTX lowering
//! does; `lowered_kernel_runs` checks the lowering's own output end to end.
#![cfg(feature = "cuda")]

use qd::ir::DType;
use qd::prelude::*;
use qd::runtime::{CudaOptions, DiskCacheUse, PtxCode, PtxParam};
use std::path::PathBuf;

/// CUDA device 0 with a private disk cache folder (or none), or `None` when there is no driver.
fn gpu(tag: &str, disk_cache: bool) -> Option<(Device, PathBuf)> {
    let dir = std::env::temp_dir().join(format!("qd-cuda-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    match Device::cuda_with(0, CudaOptions { disk_cache, cache_dir: Some(dir.clone()), ptxas: None }) {
        Ok(d) => Some((d, dir)),
        Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_CUDA").as_deref() != Ok("1") => {
            eprintln!("skipped: no CUDA device ({reason}); QD_REQUIRE_CUDA=1 makes this a failure");
            None
        }
        Err(e) => panic!("CUDA required (QD_REQUIRE_CUDA=1) but unavailable: {e}"),
    }
}

const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

fn add_scalar_kernel() -> Kernel {
    Kernel::range("cuda_add_scalar", 128, |k| {
        let a = k.array::<i32>("a");
        let s = k.scalar::<i32>("s");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) + s));
    })
}

fn add_scalar_ptx() -> PtxCode {
    let body = r#"
.visible .entry cuda_add_scalar(.param .u64 a_ptr, .param .u32 a_len, .param .u32 s)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [a_ptr];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [a_len];
    ld.param.u32 %r2, [s];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r6, %r3, %r4, %r5;
    mov.u32 %r7, %nctaid.x;
    mul.lo.s32 %r8, %r7, %r4;
LOOP:
    setp.ge.s32 %p1, %r6, %r1;
    @%p1 bra DONE;
    mul.wide.s32 %rd2, %r6, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r9, [%rd3];
    add.s32 %r9, %r9, %r2;
    st.global.u32 [%rd3], %r9;
    add.s32 %r6, %r6, %r8;
    bra.uni LOOP;
DONE:
    ret;
}
"#;
    PtxCode {
        text: format!("{HEADER}{body}"),
        entry: "cuda_add_scalar".into(),
        shared_bytes: 0,
        params: vec![PtxParam::Array { dtype: DType::I32 }, PtxParam::Scalar { dtype: DType::I32 }],
    }
}

#[test]
fn range_kernel_runs_past_the_grid_cap() {
    let Some((d, _)) = gpu("range", false) else { return };
    let k = add_scalar_kernel();
    d.override_ptx("cuda_add_scalar", add_scalar_ptx()).unwrap();
    // More than RANGE_GRID_CAP blocks of 128: the grid is capped and threads loop grid-stride.
    let n = qd::runtime::RANGE_GRID_CAP as usize * 128 + 77;
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
fn scalars_pass_at_their_natural_width() {
    let Some((d, _)) = gpu("params", false) else { return };
    let k = Kernel::explicit("cuda_params", 32, |k| {
        let out = k.array::<i64>("out");
        let b = k.scalar::<bool>("b");
        let x = k.scalar::<u8>("x");
        let y = k.scalar::<i16>("y");
        let z = k.scalar::<f64>("z");
        let w = k.scalar::<u64>("w");
        let f = k.scalar::<f32>("f");
        let h = k.scalar::<F16>("h");
        if_(block::thread_idx().eq(0), || {
            out.set(0, select(b, 1i64, 0i64));
            out.set(1, x.cast::<i64>());
            out.set(2, y.cast::<i64>());
            out.set(3, z.bit_cast::<i64>());
            out.set(4, w.bit_cast::<i64>());
            out.set(5, f.bit_cast::<u32>().cast::<i64>());
            out.set(6, h.bit_cast::<u16>().cast::<i64>());
            out.set(7, out.len().cast::<i64>());
        });
    });
    let body = r#"
.visible .entry cuda_params(.param .u64 out_ptr, .param .u32 out_len, .param .u8 b, .param .u8 x,
    .param .s16 y, .param .f64 z, .param .u64 w, .param .f32 f, .param .b16 h)
{
    .reg .b16 %rs<5>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out_ptr];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [out_len];
    ld.param.u8 %rs1, [b];
    ld.param.u8 %rs2, [x];
    ld.param.s16 %rs3, [y];
    ld.param.b64 %rd2, [z];
    ld.param.u64 %rd3, [w];
    ld.param.b32 %r2, [f];
    ld.param.b16 %rs4, [h];
    cvt.u64.u16 %rd4, %rs1;
    cvt.u64.u16 %rd5, %rs2;
    cvt.s64.s16 %rd6, %rs3;
    cvt.u64.u32 %rd7, %r1;
    cvt.u64.u32 %rd8, %r2;
    cvt.u64.u16 %rd9, %rs4;
    st.global.u64 [%rd1], %rd4;
    st.global.u64 [%rd1+8], %rd5;
    st.global.u64 [%rd1+16], %rd6;
    st.global.u64 [%rd1+24], %rd2;
    st.global.u64 [%rd1+32], %rd3;
    st.global.u64 [%rd1+40], %rd8;
    st.global.u64 [%rd1+48], %rd9;
    st.global.u64 [%rd1+56], %rd7;
    ret;
}
"#;
    let params = vec![
        PtxParam::Array { dtype: DType::I64 },
        PtxParam::Scalar { dtype: DType::Bool },
        PtxParam::Scalar { dtype: DType::U8 },
        PtxParam::Scalar { dtype: DType::I16 },
        PtxParam::Scalar { dtype: DType::F64 },
        PtxParam::Scalar { dtype: DType::U64 },
        PtxParam::Scalar { dtype: DType::F32 },
        PtxParam::Scalar { dtype: DType::F16 },
    ];
    let code = PtxCode { text: format!("{HEADER}{body}"), entry: "cuda_params".into(), shared_bytes: 0, params };
    d.override_ptx("cuda_params", code).unwrap();
    let out = d.zeros::<i64>(8).unwrap();
    let h = F16::from_f32(-2.5);
    let args = [
        out.arg(),
        Arg::scalar(true),
        Arg::scalar(200u8),
        Arg::scalar(-12345i16),
        Arg::scalar(std::f64::consts::PI),
        Arg::scalar(0xDEAD_BEEF_0123_4567u64),
        Arg::scalar(1.25f32),
        Arg::scalar(h),
    ];
    d.launch_grid(&k, 1, &args).unwrap();
    let got = out.to_vec().unwrap();
    let want = vec![
        1,
        200,
        -12345,
        std::f64::consts::PI.to_bits() as i64,
        0xDEAD_BEEF_0123_4567u64 as i64,
        1.25f32.to_bits() as i64,
        h.to_bits() as i64,
        8,
    ];
    assert_eq!(got, want);
}

#[test]
fn arrays_of_every_dtype_round_trip() {
    let Some((d, _)) = gpu("arrays", false) else { return };
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
fn large_dynamic_shared_memory_sets_the_launch_attribute() {
    let Some((d, _)) = gpu("smem", false) else { return };
    const WORDS: u32 = 24576; // 96 KiB: past the 48 KiB default
    let k = Kernel::explicit("cuda_big_shared", 64, |k| {
        let out = k.array::<u32>("out");
        let smem = block::shared_array::<u32>(WORDS);
        let t = block::thread_idx();
        smem.set((WORDS as i32 - 1) - t, t.cast::<u32>() * 3);
        block::sync();
        out.set(t, smem.get((WORDS as i32 - 1) - (t ^ 1)));
    });
    let body = r#"
.extern .shared .align 16 .b8 smem[];

.visible .entry cuda_big_shared(.param .u64 out_ptr, .param .u32 out_len)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out_ptr];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    mov.u32 %r3, 24575;
    sub.s32 %r4, %r3, %r1;
    shl.b32 %r4, %r4, 2;
    add.s32 %r4, %r2, %r4;
    mul.lo.s32 %r5, %r1, 3;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    xor.b32 %r6, %r1, 1;
    sub.s32 %r7, %r3, %r6;
    shl.b32 %r7, %r7, 2;
    add.s32 %r7, %r2, %r7;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
    ret;
}
"#;
    let code = PtxCode {
        text: format!("{HEADER}{body}"),
        entry: "cuda_big_shared".into(),
        shared_bytes: WORDS * 4,
        params: vec![PtxParam::Array { dtype: DType::U32 }],
    };
    d.override_ptx("cuda_big_shared", code.clone()).unwrap();
    let out = d.zeros::<u32>(64).unwrap();
    d.launch_grid(&k, 3, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), (0..64u32).map(|t| (t ^ 1) * 3).collect::<Vec<_>>());

    // More than the device allows is a launch error before the driver sees it.
    d.override_ptx("cuda_big_shared", PtxCode { shared_bytes: 4 << 20, ..code }).unwrap();
    match d.launch_grid(&k, 1, &[out.arg()]).unwrap_err() {
        QdError::Launch { kernel, message } => {
            assert_eq!(kernel, "cuda_big_shared");
            assert!(message.contains("bytes of shared memory"), "{message}");
        }
        other => panic!("expected a launch error, got {other}"),
    }
}

#[test]
fn bad_ptx_returns_the_jit_log_with_and_without_the_disk_cache() {
    for disk in [false, true] {
        let Some((d, _)) = gpu(&format!("badptx{disk}"), disk) else { return };
        let k = add_scalar_kernel();
        let mut code = add_scalar_ptx();
        code.text = code.text.replace("add.s32 %r9, %r9, %r2;", "add.bogus.s32 %r9, %r9, %r2;");
        d.override_ptx("cuda_add_scalar", code).unwrap();
        let a = d.zeros::<i32>(4).unwrap();
        match d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap_err() {
            QdError::Driver { kernel, call, message } => {
                assert_eq!(kernel, "cuda_add_scalar");
                let want_call = if disk { "cuLinkAddData_v2" } else { "cuModuleLoadDataEx" };
                assert_eq!(call, want_call);
                assert!(message.contains("CUDA_ERROR_INVALID_PTX"), "{message}");
                assert!(message.contains("bogus"), "the JIT log should name the bad token: {message}");
            }
            other => panic!("expected a driver error, got {other}"),
        }
    }
}

#[test]
fn a_missing_entry_is_a_driver_error_naming_it() {
    let Some((d, _)) = gpu("entry", false) else { return };
    let k = add_scalar_kernel();
    d.override_ptx("cuda_add_scalar", PtxCode { entry: "no_such_entry".into(), ..add_scalar_ptx() }).unwrap();
    let a = d.zeros::<i32>(4).unwrap();
    match d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap_err() {
        QdError::Driver { kernel, call, message } => {
            assert_eq!((kernel.as_str(), call.as_str()), ("cuda_add_scalar", "cuModuleGetFunction"));
            assert!(message.contains("no_such_entry"), "{message}");
        }
        other => panic!("expected a driver error, got {other}"),
    }
}

#[test]
fn arguments_are_checked_as_on_the_cpu() {
    let Some((d, _)) = gpu("args", false) else { return };
    let k = add_scalar_kernel();
    d.override_ptx("cuda_add_scalar", add_scalar_ptx()).unwrap();
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
    // Arrays do not move between devices.
    let on_cpu = Device::cpu().zeros::<i32>(4).unwrap();
    let e = d.launch(&k, &[on_cpu.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(e.to_string().contains("lives on cpu"), "{e}");
    let e = Device::cpu().launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap_err();
    assert!(e.to_string().contains("lives on cuda:0"), "{e}");
}

#[test]
fn the_disk_cache_skips_the_jit_for_a_new_device_and_a_new_process() {
    let Some((d, dir)) = gpu("disk", true) else { return };
    let k = add_scalar_kernel();
    d.override_ptx("cuda_add_scalar", add_scalar_ptx()).unwrap();
    let a = d.array_from(&[1i32, 2]).unwrap();
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    let cold = d.compile_stats().unwrap();
    assert_eq!(cold.kernel, "cuda_add_scalar");
    assert!(matches!(cold.disk, DiskCacheUse::Stored(ref p) if p.starts_with(&dir)), "{cold:?}");
    assert!(cold.jit.is_some(), "{cold:?}");
    // The in-memory cache: no new compile.
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    assert_eq!(d.compile_stats().unwrap(), cold);
    assert_eq!(a.to_vec().unwrap(), vec![3, 4]);
    // Same device, in-memory cache cleared: the cubin comes from disk.
    d.clear_cache();
    d.launch(&k, &[a.arg(), Arg::scalar(1i32)]).unwrap();
    let warm = d.compile_stats().unwrap();
    assert!(matches!(warm.disk, DiskCacheUse::Hit(_)), "{warm:?}");
    assert_eq!(warm.jit, None);
    assert_eq!(a.to_vec().unwrap(), vec![4, 5]);
    eprintln!("cold: {cold:?}\nwarm: {warm:?}");

    // A second process loads the cubin instead of running the JIT.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_compile", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env("QD_TEST_CHILD_CACHE_DIR", &dir)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("child disk: Hit"), "{text}");
    eprintln!("{}", text.lines().find(|l| l.contains("child disk")).unwrap_or_default());
}

/// Run by `the_disk_cache_skips_the_jit_for_a_new_device_and_a_new_process` in a new process.
#[test]
#[ignore = "run as a child process by the disk cache test"]
fn child_process_compile() {
    let Some(dir) = std::env::var_os("QD_TEST_CHILD_CACHE_DIR") else { return };
    let d = Device::cuda_with(0, CudaOptions { disk_cache: true, cache_dir: Some(dir.into()), ptxas: None }).unwrap();
    d.override_ptx("cuda_add_scalar", add_scalar_ptx()).unwrap();
    let a = d.array_from(&[1i32]).unwrap();
    d.launch(&add_scalar_kernel(), &[a.arg(), Arg::scalar(1i32)]).unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![2]);
    let s = d.compile_stats().unwrap();
    let disk = match s.disk {
        DiskCacheUse::Hit(_) => "Hit",
        DiskCacheUse::IrHit(_) => "IrHit",
        DiskCacheUse::Stored(_) => "Stored",
        _ => "other",
    };
    println!("child disk: {disk}; stats {s:?}");
}

#[test]
fn info_names_the_gpu() {
    let Some((d, _)) = gpu("info", true) else { return };
    let info = d.info();
    assert_eq!(info.name, "cuda:0");
    assert_eq!(info.subgroup_size, 32);
    let (major, _) = info.compute_capability.unwrap();
    assert!(major >= 7, "{info:?}");
    assert!(info.driver_version.unwrap().0 >= 12, "{info:?}");
    assert!(info.multiprocessors.unwrap() > 0);
    assert!(info.max_shared_bytes >= 48 * 1024);
    let text = d.describe();
    assert!(text.starts_with("cuda:0: ") && text.contains("compute capability"), "{text}");
    assert!(qd::runtime::available_devices().contains(&"cuda:0".to_string()));
    assert_eq!(d.target().backend_name(), "cuda");
    assert_eq!(Device::from_name("cuda").unwrap().name(), "cuda:0");
    eprintln!("{text}");
}

#[test]
fn launches_from_many_threads() {
    let Some((d, _)) = gpu("threads", false) else { return };
    let k = add_scalar_kernel();
    d.override_ptx("cuda_add_scalar", add_scalar_ptx()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4i32 {
            let (d, k) = (&d, &k);
            s.spawn(move || {
                let a = d.zeros::<i32>(1000).unwrap();
                for _ in 0..10 {
                    d.launch(k, &[a.arg(), Arg::scalar(t)]).unwrap();
                }
                assert!(a.to_vec().unwrap().iter().all(|&x| x == 10 * t));
            });
        }
    });
}

/// The NVPTX lowering's output, end to end (no override). Until the lowering is plugged in, this
/// accepts its "no lowering yet" trace error.
#[test]
fn lowered_kernel_runs() {
    let Some((d, _)) = gpu("lowered", false) else { return };
    let k = Kernel::range("cuda_lowered_saxpy", 64, |k| {
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        let s = k.scalar::<f32>("s");
        k.parallel_for(0, y.len(), |i| y.set(i, y.get(i) + s * x.get(i)));
    });
    let n = 1000;
    let x = d.array_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let y = d.array_from(&vec![1.0f32; n]).unwrap();
    match d.launch(&k, &[x.arg(), y.arg(), Arg::scalar(2.0f32)]) {
        Ok(()) => {
            let want: Vec<f32> = (0..n).map(|i| 1.0 + 2.0 * i as f32).collect();
            assert_eq!(y.to_vec().unwrap(), want);
            let ptx = d.compile(&k).unwrap().ptx().unwrap().text.clone();
            assert!(ptx.contains(".entry"), "{ptx}");
            eprintln!("lowered: {:?}", d.compile_stats().unwrap());
        }
        Err(QdError::Trace(e)) if e.message.contains("no NVPTX lowering yet") => {
            eprintln!("skipped: {e}");
        }
        Err(e) => panic!("{e}"),
    }
}

/// The ptxas route of the disk cache (D23): whole-program cubins with the driver JIT's register
/// count, a bad PTX reported through the JIT's log, and a second device loading the cubin.
#[test]
fn ptxas_cubins_are_whole_program_code() {
    let Some(ptxas) = CudaOptions::from_env().ptxas else {
        // The GPU record's machine has the toolkit; elsewhere there is nothing to compare.
        assert_ne!(std::env::var("QD_REQUIRE_CUDA").as_deref(), Ok("1"), "QD_REQUIRE_CUDA=1 but no ptxas found");
        eprintln!("skipped: no ptxas (set QD_PTXAS or install the CUDA toolkit)");
        return;
    };
    let Some((jit, _)) = gpu("ptxas-jit", false) else { return };
    let dir = std::env::temp_dir().join(format!("qd-cuda-test-{}-ptxas", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let options = CudaOptions { disk_cache: true, cache_dir: Some(dir.clone()), ptxas: Some(ptxas) };
    let d = Device::cuda_with(0, options.clone()).unwrap();
    // A kernel with enough live values that relocatable code would differ: the library's scan.
    let k = qd::algorithms::kernels::scan(&qd::algorithms::Operator::<i32>::add(), true, &Default::default());
    let via_ptxas = d.compile(&k).unwrap();
    let cold = d.compile_stats().unwrap();
    assert!(matches!(cold.disk, DiskCacheUse::Stored(ref p) if p.starts_with(&dir)), "{cold:?}");
    let via_jit = jit.compile(&k).unwrap();
    assert_eq!(via_ptxas.registers(), via_jit.registers(), "ptxas and the driver's JIT should make the same code");
    // Another device with the same cache loads the file.
    let again = Device::cuda_with(0, options).unwrap();
    again.compile(&k).unwrap();
    // (Through the kernel's IR key: the same program, so no lowering either.)
    assert!(matches!(again.compile_stats().unwrap().disk, DiskCacheUse::IrHit(_)));
    // A bad PTX: ptxas refuses it, the JIT reports it (CUDA_ERROR_INVALID_PTX with its log).
    let add = add_scalar_kernel();
    let mut code = add_scalar_ptx();
    code.text = code.text.replace("add.s32 %r9, %r9, %r2;", "add.bogus.s32 %r9, %r9, %r2;");
    d.override_ptx("cuda_add_scalar", code).unwrap();
    let a = d.zeros::<i32>(4).unwrap();
    match d.launch(&add, &[a.arg(), Arg::scalar(1i32)]).unwrap_err() {
        QdError::Driver { call, message, .. } => {
            assert_eq!(call, "cuModuleLoadDataEx");
            assert!(message.contains("bogus"), "{message}");
        }
        other => panic!("expected a driver error, got {other}"),
    }
    eprintln!("ptxas route: {} registers; cold {:?}", via_ptxas.registers().unwrap_or(0), cold);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sidecars of the IR-level disk cache under `dir` (`cuda/sm_XX/ir/<key>.meta`).
fn ir_sidecars(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for sm in std::fs::read_dir(dir.join("cuda")).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(sm.path().join("ir")).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|e| e == "meta") {
                found.push(f.path());
            }
        }
    }
    found
}

/// The IR level of the disk cache (D23): a new device on the same cache folder finds the cubin
/// through the traced kernel's key and its sidecar, and loads it without lowering the kernel; the
/// PTX is still there on request, the same text. A corrupt sidecar is a miss and is rewritten.
#[test]
fn a_new_device_skips_the_lowering_through_the_ir_key() {
    let Some((d, dir)) = gpu("ir-key", true) else { return };
    let k = Kernel::range("cuda_ir_key_saxpy", 64, |k| {
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        let s = k.scalar::<f32>("s");
        k.parallel_for(0, y.len(), |i| y.set(i, y.get(i) + s * x.get(i)));
    });
    let n = 1000;
    let want: Vec<f32> = (0..n).map(|i| 1.0 + 2.0 * i as f32).collect();
    let run = |d: &Device| {
        let x = d.array_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
        let y = d.array_from(&vec![1.0f32; n]).unwrap();
        d.launch(&k, &[x.arg(), y.arg(), Arg::scalar(2.0f32)]).unwrap();
        assert_eq!(y.to_vec().unwrap(), want);
        d.compile_stats().unwrap()
    };
    let options = CudaOptions { disk_cache: true, cache_dir: Some(dir.clone()), ptxas: None };
    let cold = run(&d);
    assert!(matches!(cold.disk, DiskCacheUse::Stored(ref p) if p.starts_with(&dir)), "{cold:?}");
    let first_ptx = d.compile(&k).unwrap().ptx().unwrap().text.clone();
    let sidecars = ir_sidecars(&dir);
    assert_eq!(sidecars.len(), 1, "{sidecars:?}");

    // A new device: the IR key finds the cubin, nothing is lowered or compiled.
    let warm_device = Device::cuda_with(0, options.clone()).unwrap();
    let warm = run(&warm_device);
    assert!(matches!(warm.disk, DiskCacheUse::IrHit(ref p) if p.starts_with(&dir)), "{warm:?}");
    assert_eq!(warm.jit, None);
    // The PTX, lowered on request, is the first device's.
    assert_eq!(warm_device.compile(&k).unwrap().ptx().unwrap().text, first_ptx);

    // A sidecar cut short is a miss: the kernel is lowered, the cubin found by its PTX key, and
    // the sidecar written again.
    let whole = std::fs::read_to_string(&sidecars[0]).unwrap();
    std::fs::write(&sidecars[0], &whole[..whole.len() / 2]).unwrap();
    let third = run(&Device::cuda_with(0, options.clone()).unwrap());
    assert!(matches!(third.disk, DiskCacheUse::Hit(_)), "{third:?}");
    assert_eq!(std::fs::read_to_string(&sidecars[0]).unwrap(), whole);
    let fourth = run(&Device::cuda_with(0, options).unwrap());
    assert!(matches!(fourth.disk, DiskCacheUse::IrHit(_)), "{fourth:?}");
    eprintln!("cold: {cold:?}\nwarm: {warm:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
