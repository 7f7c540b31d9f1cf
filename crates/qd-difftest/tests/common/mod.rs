//! What the differential tester's tests share: every emitter's validator run on a program.

use qd::backend::amdgpu::{Amdgpu, AmdgpuArch};
use qd::backend::metal::Metal;
use qd::backend::ptx::{Ptx, PtxTarget};
use qd::backend::spirv::{Spirv, SpirvCaps};
use qd::backend::{Backend as _, Target};
use qd::prelude::Kernel;
use qd_difftest::program::{Program, Sizing};
use std::sync::Arc;

/// A program's kernel, as the runner builds it.
pub fn kernel(p: &Program) -> Kernel {
    qd_difftest::build::kernel("difftest", Arc::new(p.clone()))
}

/// The validators of this machine (D9: each is skipped where its tool is absent, a failure in CI).
pub struct Validators {
    ptxas: Option<qd_testkit::Ptxas>,
    spirv_val: Option<qd_testkit::SpirvVal>,
    msl: Option<qd_testkit::MslCheck>,
    llvm: Option<(qd_testkit::Llc, qd_testkit::LdLld)>,
}

impl Validators {
    /// Finds every tool.
    pub fn find() -> Validators {
        Validators {
            ptxas: qd_testkit::Ptxas::find(),
            spirv_val: qd_testkit::SpirvVal::find(),
            msl: qd_testkit::MslCheck::find(),
            llvm: qd_testkit::Llc::find().zip(qd_testkit::LdLld::find()),
        }
    }

    /// Emits `p` for every target its `sizing` fits (PTX for sm_80 and sm_90, Metal, SPIR-V at 8
    /// and 32 lanes, AMDGPU) and validates each module: how many modules were emitted.
    pub fn check(&self, p: &Program, sizing: Sizing) -> Result<usize, String> {
        let k = kernel(p);
        let name = format!("difftest_{:x}", p.inputs[0].bits.iter().fold(0u64, |h, b| h.rotate_left(5) ^ b));
        let mut checked = 0;
        if sizing.runs_at(32) {
            for (sm, arch) in [(PtxTarget::parse("sm_80"), "sm_80"), (PtxTarget::parse("sm_90"), "sm_90")] {
                let target = Target::ptx(sm.map_err(|e| e.to_string())?);
                if let Ok(ir) = k.trace(&target) {
                    let text = Ptx::lower(&ir, &target).map_err(|e| e.to_string())?.text;
                    if let Some(t) = &self.ptxas {
                        t.assemble(&name, arch, &text)?;
                    }
                    checked += 1;
                }
            }
            let target = Target::metal();
            if let Ok(ir) = k.trace(&target) {
                let source = Metal::lower(&ir, &target).map_err(|e| e.to_string())?.source;
                if let Some(m) = &self.msl {
                    m.check_source(&name, &source)?;
                }
                checked += 1;
            }
        }
        for w in [8, 32].into_iter().filter(|&w| sizing.runs_at(w)) {
            let target = Target::vulkan(w, &SpirvCaps::lavapipe());
            if let Ok(ir) = k.trace(&target) {
                let words = Spirv::lower(&ir, &target).map_err(|e| e.to_string())?.words;
                if let Some(v) = &self.spirv_val {
                    v.validate(&name, &words, "vulkan1.1")?;
                }
                checked += 1;
            }
        }
        if sizing.runs_at(64) {
            let target = Target::amdgpu(AmdgpuArch::Gfx942);
            if let Ok(ir) = k.trace(&target) {
                let text = Amdgpu::lower(&ir, &target).map_err(|e| e.to_string())?.text;
                if let Some((llc, lld)) = &self.llvm {
                    let obj = llc.compile(&name, &text, "amdgcn-amd-amdhsa", "gfx942", &["-mattr=+wavefrontsize64"])?;
                    let linked = lld.link_shared(&name, &[&obj]);
                    let _ = std::fs::remove_file(&obj);
                    let _ = std::fs::remove_file(linked?);
                }
                checked += 1;
            }
        }
        Ok(checked)
    }
}
