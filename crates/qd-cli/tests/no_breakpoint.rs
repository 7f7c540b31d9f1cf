//! `nv::breakpoint` traps and poisons the CUDA context (issue 11, item 3): no built-in kernel (the
//! corpus, the tour, the conformance suite, the benchmarks: everything `qd` launches) may contain
//! it. Its own tests only print and assemble it (`crates/qd/tests/nv_ptx.rs`).

use qd::backend::Target;
use qd::ir::{InstKind, NvOp};

#[test]
fn no_builtin_kernel_reaches_a_breakpoint() {
    let target = Target::cuda(90);
    let mut traced = 0;
    for k in qd_cli::builtin::kernels() {
        // Kernels sm_90 refuses cannot launch there either.
        let Ok(ir) = k.trace(&target) else { continue };
        traced += 1;
        let mut found = false;
        ir.body.walk(&mut |i| found |= matches!(i.kind, InstKind::Nv { op: NvOp::Breakpoint, .. }));
        assert!(!found, "built-in kernel `{}` contains nv.breakpoint", ir.name);
    }
    assert!(traced > 1000, "only {traced} built-in kernels traced for sm_90");
}
