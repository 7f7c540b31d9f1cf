//! The corpus (`qd_cli::corpus`) through the backend variants the snapshot tests do not cover:
//! PTX for the architecture-specific sm_90a and sm_100a beside sm_80 and sm_90 (deterministic,
//! `.version` within the target's floor and ptxas 13.0's cap, assembled by ptxas), and SPIR-V with
//! and without the Vulkan memory model (validated by spirv-val).

use qd::backend::ptx::lower::{lower_kernel, lower_kernel_sm};
use qd::backend::ptx::PtxTarget;
use qd::backend::spirv::{self, ParamAbi, SpirvCaps, SpirvTarget};
use qd::backend::Target;
use qd::prelude::*;
use qd_cli::corpus;
use qd_testkit::{par_map, Ptxas, SpirvVal};

const PTX_TARGETS: [PtxTarget; 4] =
    [PtxTarget::sm(80), PtxTarget::sm(90), PtxTarget::arch_specific(90), PtxTarget::arch_specific(100)];

/// `major.minor` of a module's `.version` line.
fn version_of(text: &str) -> (u32, u32) {
    let v = text.lines().find_map(|l| l.strip_prefix(".version ")).expect("a .version line");
    let (a, b) = v.split_once('.').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// `k`'s PTX for every target of [`PTX_TARGETS`], checked for D7's `.version` rule and determinism.
fn ptx_modules(k: &Kernel) -> Vec<(PtxTarget, String)> {
    let ir = k.trace(&Target::cpu(32)).unwrap_or_else(|e| panic!("{e}"));
    PTX_TARGETS
        .iter()
        .map(|&target| {
            let m = lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{}: {e}", k.name()));
            assert!(m.text.contains(&format!(".target {target}\n")), "{target}");
            assert_eq!((m.entry.as_str(), m.params.len()), (k.name(), ir.params.len()));
            assert_eq!(m.text, lower_kernel(&ir, &target).unwrap().text, "lowering is deterministic");
            let floor = target.floor().unwrap();
            let v = version_of(&m.text);
            assert!(v >= (u32::from(floor.major), u32::from(floor.minor)), "{target}: .version below the floor");
            assert!(v <= (9, 0), "{target}: .version above what ptxas 13.0 and the CUDA 13.0 JIT accept");
            if !target.arch_specific {
                assert_eq!(m.text, lower_kernel_sm(&ir, target.sm).unwrap().text, "lower_kernel_sm is lower_kernel");
            }
            (target, m.text)
        })
        .collect()
}

#[test]
fn the_corpus_assembles_for_every_ptx_target() {
    let modules: Vec<(String, PtxTarget, String)> = corpus::all()
        .iter()
        .flat_map(|k| ptx_modules(k).into_iter().map(|(t, text)| (k.name().to_string(), t, text)))
        .collect();
    let Some(ptxas) = Ptxas::find() else { return };
    let rejected: Vec<String> = par_map(&modules, |(name, t, text)| ptxas.assemble(name, &t.to_string(), text).err())
        .into_iter()
        .flatten()
        .collect();
    assert!(rejected.is_empty(), "{}", rejected.join("\n"));
}

#[test]
fn narrow_and_half_atomics_print_the_native_forms() {
    let kernel = corpus::narrow_and_half_atomics().remove(0);
    for (target, text) in ptx_modules(&kernel) {
        // 8-bit elements: atom.cas.b32 on the enclosing word.
        assert!(text.contains("0xFFFFFFFFFFFFFFFC;"), "{target}");
        assert!(text.contains("atom.cas.b32.global"), "{target}");
        assert!(text.contains("atom.cas.b32.shared"), "{target}");
        // 16-bit CAS is native from sm_70; f16 add from sm_70 (D7 prints .noftz).
        assert!(text.contains("atom.cas.b16.global"), "{target}");
        assert!(text.contains("red.add.noftz.f16.global"), "{target}");
        // bf16 add is native from sm_90; before that it is a CAS loop.
        let native_bf16 = text.contains("atom.add.noftz.bf16.global") && text.contains("red.add.noftz.bf16.shared");
        assert_eq!(native_bf16, target.sm >= 90, "{target}:\n{text}");
    }
}

/// `k` lowered for 8 and 32 lanes with `caps`: (name, words) per module.
fn spirv_modules(k: &Kernel, caps: &SpirvCaps) -> Vec<(String, Vec<u32>)> {
    let model = if caps.vulkan_memory_model { "vulkan" } else { "glsl450" };
    [8, 32]
        .into_iter()
        .map(|sg| {
            let target = SpirvTarget { subgroup_size: sg, caps: caps.clone() };
            let ir = k.trace(&target.trace_target()).unwrap_or_else(|e| panic!("{e}"));
            let m = spirv::lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((m.entry.as_str(), m.workgroup_size), (k.name(), k.block_dim()));
            assert_eq!(m.params.len(), ir.params.len());
            assert_eq!(m.words, spirv::lower_kernel(&ir, &target).unwrap().words, "lowering is deterministic");
            (format!("{}_sg{sg}_{model}", k.name()), m.words)
        })
        .collect()
}

#[test]
fn the_corpus_validates_with_and_without_the_vulkan_memory_model() {
    let lavapipe = SpirvCaps::lavapipe();
    assert!(lavapipe.vulkan_memory_model);
    let glsl450 = SpirvCaps { vulkan_memory_model: false, ..lavapipe.clone() };
    let modules: Vec<(String, Vec<u32>)> =
        corpus::all().iter().flat_map(|k| [spirv_modules(k, &lavapipe), spirv_modules(k, &glsl450)].concat()).collect();
    let Some(val) = SpirvVal::find() else { return };
    let rejected: Vec<String> =
        par_map(&modules, |(name, words)| val.validate(name, words, "vulkan1.1").err()).into_iter().flatten().collect();
    assert!(rejected.is_empty(), "{}", rejected.join("\n"));
}

#[test]
fn the_abi_of_the_memory_kernel() {
    let target = SpirvTarget { subgroup_size: 8, caps: SpirvCaps::lavapipe() };
    let ir = corpus::memory().trace(&target.trace_target()).unwrap();
    let m = spirv::lower_kernel(&ir, &target).unwrap();
    assert_eq!(m.shared_bytes, 64 * 4 + 64 * 4 + 8 * 8);
    let bindings: Vec<u32> = m
        .params
        .iter()
        .map(|p| match p {
            ParamAbi::Array { binding, .. } => *binding,
            ParamAbi::Scalar { .. } => 0,
        })
        .collect();
    assert_eq!(bindings, [1, 2, 3, 4]);
}
