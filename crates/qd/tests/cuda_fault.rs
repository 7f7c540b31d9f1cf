//! A fault inside a kernel comes back from `cuCtxSynchronize` as `Error::Driver` naming the kernel.
//!
//! Its own test binary (one process): a fault poisons the CUDA context for the rest of the process.
//! Without a driver it prints `skipped`; `QD_REQUIRE_CUDA=1` makes that a failure.
#![cfg(feature = "cuda")]

use qd::ir::DType;
use qd::prelude::*;
use qd::runtime::{CudaOptions, PtxCode, PtxParam};

#[test]
fn a_kernel_fault_is_a_driver_error_naming_the_kernel() {
    let d = match Device::cuda_with(0, CudaOptions { disk_cache: false, cache_dir: None, ptxas: None }) {
        Ok(d) => d,
        Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_CUDA").as_deref() != Ok("1") => {
            eprintln!("skipped: no CUDA device ({reason})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let k = Kernel::explicit("cuda_fault", 32, |k| {
        let a = k.array::<u32>("a");
        a.set(0, 7u32);
    });
    // Stores through a null pointer.
    let text = r#".version 7.0
.target sm_70
.address_size 64

.visible .entry cuda_fault(.param .u64 a_ptr, .param .u32 a_len)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 7;
    st.global.u32 [%rd1], %r1;
    ret;
}
"#;
    let code = PtxCode {
        text: text.into(),
        entry: "cuda_fault".into(),
        shared_bytes: 0,
        params: vec![PtxParam::Array { dtype: DType::U32 }],
    };
    d.override_ptx("cuda_fault", code).unwrap();
    let a = d.zeros::<u32>(1).unwrap();
    match d.launch_grid(&k, 1, &[a.arg()]).unwrap_err() {
        QdError::Driver { kernel, call, message } => {
            assert_eq!(kernel, "cuda_fault");
            assert_eq!(call, "cuCtxSynchronize");
            assert!(message.starts_with("CUDA_ERROR_"), "{message}");
            eprintln!("{}", QdError::Driver { kernel, call, message });
        }
        other => panic!("expected a driver error, got {other}"),
    }
}
