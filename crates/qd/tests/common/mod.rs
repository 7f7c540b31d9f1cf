//! Shared by the tests that validate PTX with ptxas (D9): finding ptxas and assembling a module.

#![allow(dead_code)] // each test binary uses its own subset

pub mod corpus;

use qd::backend::ptx::PtxTarget;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to install the ptxas the tests use.
pub const PTXAS_INSTALL: &str = "bash scripts/test.sh (it downloads the nvidia-cuda-nvcc==13.0.88 wheel and unpacks \
     nvidia/cu13/bin/ptxas into .tools/), or set PTXAS to a CUDA 13.0 ptxas";

/// ptxas from `$PTXAS`, else `.tools/ptxas` under the workspace root, else PATH. `None` only when
/// `QD_SKIP_PTXAS=1`; otherwise a missing ptxas fails the test with the install command (D9).
pub fn ptxas() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("PTXAS") {
        Some(p) => vec![PathBuf::from(p)],
        None => {
            let mut v = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/ptxas")];
            if let Some(path) = std::env::var_os("PATH") {
                v.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
            }
            v
        }
    };
    if let Some(found) = candidates.into_iter().find(|p| p.is_file()) {
        return Some(found);
    }
    if std::env::var("QD_SKIP_PTXAS").as_deref() == Ok("1") {
        eprintln!("ptxas not found: skipped (QD_SKIP_PTXAS=1)");
        return None;
    }
    panic!("ptxas (CUDA 13.0) is needed to validate PTX (D9) but was not found. Install it with: {PTXAS_INSTALL}; QD_SKIP_PTXAS=1 skips");
}

/// A scratch folder for this test process.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qd-ptx-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Assembles `text` for `target`; `Err(stderr)` when ptxas rejects it.
pub fn try_assemble(ptxas: &Path, dir: &Path, name: &str, target: PtxTarget, text: &str) -> Result<(), String> {
    let file = dir.join(format!("{name}_{target}.ptx"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch={target}"))
        .arg(&file)
        .arg("-o")
        .arg(dir.join(format!("{name}_{target}.cubin")))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", ptxas.display()));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Assembles a kernel module for `target`, failing the test when ptxas rejects it.
pub fn assemble(name: &str, text: &str, target: PtxTarget) {
    let Some(ptxas) = ptxas() else { return };
    if let Err(e) = try_assemble(&ptxas, &scratch_dir("kernels"), name, target, text) {
        panic!("ptxas rejected {name} for {target}:\n{e}\n---\n{text}");
    }
}
