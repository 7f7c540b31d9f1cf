//! The safety net under every code generator: the IR, PTX (sm_80, sm_90), SPIR-V (8- and 32-lane
//! subgroups) and MSL of every built-in kernel (`qd_cli::builtin::kernels`: the corpus, the tour, the
//! conformance suite and the benchmarks), pinned as insta snapshots, one folder per target under
//! `tests/out/<target>/<kernel>.snap`, and each module checked by the vendor's validator
//! (ptxas, spirv-val; for MSL, clang against our `metal_stdlib` header; for AMDGPU's LLVM IR, llc and
//! ld.lld on a sample) through `qd-testkit`. The kernels that need 64-lane subgroups are pinned
//! once more as SPIR-V for 64 lanes (`tests/out/spirv_sg64/`).
//!
//! A kernel a target cannot express is pinned too: its snapshot holds the error (with source
//! lines written as `LL:CC`, so moving code does not churn it). A snapshot with no kernel left is
//! a failure as well.
//!
//! When a change alters emitted code on purpose, review every diff: run the tests, then
//! `cargo insta review` (or `INSTA_UPDATE=always cargo test -p qd-cli --test snapshots` and read
//! `git diff crates/qd-cli/tests/out`), and say in the commit why each changed.

use qd::prelude::Kernel;
use qd_cli::builtin;
use qd_cli::emit::{emit_kernel, EmitTarget};
use qd_testkit::{par_map, LdLld, Llc, MslCheck, Ptxas, SpirvVal};
use rspirv::binary::Disassemble;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Every built-in kernel, built once for all targets.
fn kernels() -> &'static [Kernel] {
    static KERNELS: OnceLock<Vec<Kernel>> = OnceLock::new();
    KERNELS.get_or_init(builtin::kernels)
}

/// The folder of a target's snapshots, e.g. `tests/out/ptx_sm_80`.
fn folder(target: &EmitTarget) -> PathBuf {
    let name: String = target.to_string().chars().map(|c| if c == ':' { '_' } else { c }).collect();
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/out").join(name)
}

/// `file.rs:12:34` becomes `file.rs:LL:CC`: error messages name the user's line, which would
/// otherwise change whenever code above it moves.
fn without_line_numbers(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(".rs:") {
        let (head, tail) = rest.split_at(at + 4);
        out.push_str(head);
        let line_len = tail.bytes().take_while(u8::is_ascii_digit).count();
        let after_line = &tail[line_len..];
        let col_len = after_line.strip_prefix(':').map_or(0, |t| t.bytes().take_while(u8::is_ascii_digit).count());
        if line_len > 0 && col_len > 0 {
            out.push_str("LL:CC");
            rest = &after_line[1 + col_len..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// What a snapshot holds: the module as text (SPIR-V disassembled), or the refusal.
fn snapshot_text(target: &EmitTarget, emitted: &Result<Vec<u8>, String>) -> String {
    match emitted {
        Err(e) => format!("not emitted for {target}: {}", without_line_numbers(e)),
        Ok(bytes) if target.is_binary() => {
            let words: Vec<u32> = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
            match rspirv::dr::load_words(&words) {
                Ok(module) => module.disassemble(),
                Err(e) => format!("SPIR-V that does not parse: {e}"),
            }
        }
        Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Emits every kernel for `target`, compares each with its snapshot, validates each module with
/// `validate`, and fails with the list of everything that differed or was rejected.
fn check_target(target: &str, validate: impl Fn(&str, &[u8]) -> Result<(), String> + Sync) {
    check_kernels(target, kernels(), validate);
}

/// [`check_target`] for some of the kernels.
fn check_kernels(target: &str, kernels: &[Kernel], validate: impl Fn(&str, &[u8]) -> Result<(), String> + Sync) {
    let target: EmitTarget = target.parse().unwrap();
    let emitted: Vec<Result<Vec<u8>, String>> = par_map(kernels, |k| emit_kernel(k, &target));
    let dir = folder(&target);

    let mut differ = Vec::new();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(&dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for (k, e) in kernels.iter().zip(&emitted) {
            let text = snapshot_text(&target, e);
            if catch_unwind(AssertUnwindSafe(|| insta::assert_snapshot!(k.name().to_string(), text))).is_err() {
                differ.push(k.name().to_string());
            }
        }
    });

    // A snapshot whose kernel is gone would pin nothing: it must be deleted with its kernel.
    let names: BTreeSet<String> = kernels.iter().map(|k| format!("{}.snap", k.name())).collect();
    let stale: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect::<Vec<String>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|f: &String| f.ends_with(".snap") && !names.contains(f))
        .collect();

    let modules: Vec<(&Kernel, &Vec<u8>)> =
        kernels.iter().zip(&emitted).filter_map(|(k, e)| e.as_ref().ok().map(|b| (k, b))).collect();
    let rejected: Vec<String> =
        par_map(&modules, |(k, bytes)| validate(k.name(), bytes).err()).into_iter().flatten().collect();

    let mut report = Vec::new();
    if !differ.is_empty() {
        report.push(format!(
            "{} of {} snapshots differ (diffs above; review them with `cargo insta review`): {}",
            differ.len(),
            kernels.len(),
            differ.join(", ")
        ));
    }
    if !stale.is_empty() {
        report.push(format!("snapshots in {} with no kernel: {}", dir.display(), stale.join(", ")));
    }
    if !rejected.is_empty() {
        report.push(format!("{} of {} modules rejected:\n{}", rejected.len(), modules.len(), rejected.join("\n")));
    }
    assert!(report.is_empty(), "{target}:\n{}", report.join("\n"));
    // Most kernels must be expressible (on 8 lanes the tiles of 16 to 64 lanes are refused): a
    // lowering that starts refusing many more fails here even if its refusals were accepted as
    // snapshots.
    assert!(
        modules.len() * 3 > kernels.len() * 2,
        "{target}: only {} of {} kernels emitted",
        modules.len(),
        kernels.len()
    );
}

fn no_validator(_: &str, _: &[u8]) -> Result<(), String> {
    Ok(())
}

fn ptxas_for(arch: &'static str) -> impl Fn(&str, &[u8]) -> Result<(), String> + Sync {
    let ptxas = Ptxas::find();
    move |name, text| match &ptxas {
        Some(p) => p.assemble(name, arch, std::str::from_utf8(text).map_err(|e| e.to_string())?),
        None => Ok(()),
    }
}

fn spirv_val() -> impl Fn(&str, &[u8]) -> Result<(), String> + Sync {
    let val = SpirvVal::find();
    move |name, bytes| match &val {
        Some(v) => v.validate_bytes(name, bytes, "vulkan1.1"),
        None => Ok(()),
    }
}

/// clang's C++17 parse against our MSL header (`MslCheck`): see docs/metal.md for what it proves.
fn msl_check() -> impl Fn(&str, &[u8]) -> Result<(), String> + Sync {
    let check = MslCheck::find();
    move |name, text| match &check {
        Some(c) => c.check_source(name, std::str::from_utf8(text).map_err(|e| e.to_string())?),
        None => Ok(()),
    }
}

/// llc-19 for gfx942 and gfx1100 (wave64) and ld.lld-19 `-shared`, on one kernel in
/// `AMDGPU_SAMPLE` (chosen by name, so the same ones every run): all of them take minutes on two
/// cores, so `scripts/test-amdgpu.sh` assembles and links every kernel for both chips instead.
fn llc_amdgpu() -> impl Fn(&str, &[u8]) -> Result<(), String> + Sync {
    let (llc, lld) = (Llc::find(), LdLld::find());
    move |name, text| {
        let (Some(llc), Some(lld)) = (&llc, &lld) else { return Ok(()) };
        if name.bytes().map(u32::from).sum::<u32>() % AMDGPU_SAMPLE != 0 {
            return Ok(());
        }
        let text = std::str::from_utf8(text).map_err(|e| e.to_string())?;
        for chip in ["gfx942", "gfx1100"] {
            let obj = llc.compile(name, text, "amdgcn-amd-amdhsa", chip, &["-mattr=+wavefrontsize64"])?;
            let linked = lld.link_shared(name, &[&obj]);
            let _ = std::fs::remove_file(&obj);
            let _ = std::fs::remove_file(linked?);
        }
        Ok(())
    }
}

/// One kernel in this many is assembled by the snapshot test.
const AMDGPU_SAMPLE: u32 = 16;

#[test]
fn amdgpu_gfx942() {
    check_target("amdgpu:gfx942", llc_amdgpu());
}

#[test]
fn msl() {
    check_target("msl", msl_check());
}

#[test]
fn ir() {
    check_target("ir", no_validator);
}

#[test]
fn ptx_sm_80() {
    check_target("ptx:sm_80", ptxas_for("sm_80"));
}

#[test]
fn ptx_sm_90() {
    check_target("ptx:sm_90", ptxas_for("sm_90"));
}

#[test]
fn spirv_sg8() {
    check_target("spirv:sg8", spirv_val());
}

#[test]
fn spirv_sg32() {
    check_target("spirv:sg32", spirv_val());
}

/// The kernels that need 64-lane subgroups (the `log2_size = 6` tiles) trace on no 32-lane target,
/// so the folders above pin only their refusal; their code is pinned here, as SPIR-V for 64-lane
/// subgroups (the wave64 width the AMDGPU backend will use), and validated by spirv-val.
#[test]
fn spirv_sg64_of_the_kernels_that_need_64_lanes() {
    let wide: Vec<Kernel> = kernels().iter().filter(|k| emit_kernel(k, &EmitTarget::Ir).is_err()).cloned().collect();
    assert!(wide.len() >= 172, "{} kernels need 64 lanes", wide.len());
    check_kernels("spirv:sg64", &wide, spirv_val());
}

#[test]
fn line_numbers_are_masked_in_errors_only() {
    assert_eq!(without_line_numbers("at src/a.rs:12:5: bad"), "at src/a.rs:LL:CC: bad");
    assert_eq!(without_line_numbers("a.rs:1:2 and b.rs:33:44"), "a.rs:LL:CC and b.rs:LL:CC");
    assert_eq!(without_line_numbers("a.rs: no line, x.rs:7 no column"), "a.rs: no line, x.rs:7 no column");
}
