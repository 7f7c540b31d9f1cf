//! Whole-program cubins for qd's disk cache from NVIDIA's `ptxas` (D23).
//!
//! No driver API hands back whole-program code: `cuModuleLoadDataEx` compiles whole-program but
//! keeps the result to itself (in the driver's JIT cache, whose lookup costs about 0.2 ms per
//! kernel), and the link API returns a cubin of relocatable code (the look-back scan: 64 registers
//! against 48, 4-6% slower). `ptxas` without `-c` compiles the same whole-program code as the JIT,
//! so where the CUDA toolkit (or its pip wheel) is installed, the cache stores `ptxas` cubins: the
//! JIT's registers and speed, and a warm first launch that only reads and loads a file.
//!
//! Where it is looked for, first match wins: `$QD_PTXAS` (empty or `0`: none, the link API is
//! used), `ptxas` on `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`, `/usr/local/cuda/bin`. Its size and
//! modification time are part of the cache key, so a new toolkit never reuses an old cubin.

// Every build compiles this (its finding and argument logic is tested without a GPU); only the
// `cuda` runtime calls it.
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// Environment variable naming the `ptxas` executable (empty or `0`: use none).
pub const PTXAS_VAR: &str = "QD_PTXAS";

/// Folders searched after `PATH`, each holding `ptxas` in `bin/`.
const TOOLKIT_VARS: [&str; 2] = ["CUDA_PATH", "CUDA_HOME"];
const DEFAULT_TOOLKIT: &str = "/usr/local/cuda";

/// The `ptxas` the environment names or that is installed, if any (see the module docs).
pub(crate) fn find_from_env() -> Option<PathBuf> {
    let var = std::env::var_os(PTXAS_VAR);
    let toolkits = TOOLKIT_VARS.iter().filter_map(std::env::var_os).map(PathBuf::from);
    find(var, std::env::var_os("PATH"), toolkits.chain([PathBuf::from(DEFAULT_TOOLKIT)]))
}

/// [`find_from_env`] with its inputs given: `var` (`QD_PTXAS`), `path` (`PATH`), toolkit folders.
fn find(var: Option<OsString>, path: Option<OsString>, toolkits: impl Iterator<Item = PathBuf>) -> Option<PathBuf> {
    if let Some(v) = var {
        // Named explicitly: that one or none (a wrong name is not silently replaced by another).
        return (!v.is_empty() && v != "0" && Path::new(&v).is_file()).then(|| PathBuf::from(v));
    }
    let on_path = path.iter().flat_map(std::env::split_paths).map(|d| d.join("ptxas"));
    on_path.chain(toolkits.map(|t| t.join("bin").join("ptxas"))).find(|p| p.is_file())
}

/// What makes one `ptxas` different from another for the cache key: its path, size and
/// modification time (a stat, not a process: the warm path must stay cheap).
pub(crate) fn identity(ptxas: &Path) -> Vec<u8> {
    let mut id = ptxas.as_os_str().as_encoded_bytes().to_vec();
    if let Ok(m) = std::fs::metadata(ptxas) {
        id.extend(m.len().to_le_bytes());
        let modified = m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).unwrap_or_default();
        id.extend(modified.as_nanos().to_le_bytes());
    }
    id
}

/// The `-arch` for a device of compute capability `sm`: `sm_XXa` when the PTX targets the
/// device's architecture-specific features (`.target sm_XXa`), else `sm_XX`.
pub(crate) fn arch(ptx: &str, sm: u32) -> String {
    let specific = format!("sm_{sm}a");
    let targets_specific = ptx
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".target"))
        .is_some_and(|t| t.split([',', ' ']).any(|w| w.trim() == specific));
    if targets_specific {
        specific
    } else {
        format!("sm_{sm}")
    }
}

/// Compiles `ptx` to a whole-program cubin for `sm` in a scratch folder under `scratch`; the
/// cubin and the wall time, or what went wrong (ptxas's own message when it refused).
pub(crate) fn compile(ptxas: &Path, ptx: &str, sm: u32, scratch: &Path) -> Result<(Vec<u8>, Duration), String> {
    let nanos = std::time::SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let dir = scratch.join(format!(".ptxas.{}.{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let (input, output) = (dir.join("kernel.ptx"), dir.join("kernel.cubin"));
        std::fs::write(&input, ptx).map_err(|e| format!("{}: {e}", input.display()))?;
        let start = Instant::now();
        let run = Command::new(ptxas)
            .arg(format!("-arch={}", arch(ptx, sm)))
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
        let wall = start.elapsed();
        if !run.status.success() {
            let log = String::from_utf8_lossy(&run.stderr);
            return Err(format!("{} failed ({}): {}", ptxas.display(), run.status, log.trim()));
        }
        let cubin = std::fs::read(&output).map_err(|e| format!("{}: {e}", output.display()))?;
        Ok((cubin, wall))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("qd-ptxas-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(d.join("bin")).unwrap();
        d
    }

    #[test]
    fn the_variable_wins_and_a_wrong_one_means_none() {
        let d = scratch("var");
        let exe = d.join("bin").join("ptxas");
        std::fs::write(&exe, "").unwrap();
        let named = Some(exe.clone().into_os_string());
        assert_eq!(find(named, None, std::iter::empty()), Some(exe.clone()));
        // Named but missing, empty or 0: none, even with one on PATH.
        let path = Some(d.join("bin").into_os_string());
        assert_eq!(find(Some(d.join("nope").into_os_string()), path.clone(), std::iter::empty()), None);
        assert_eq!(find(Some("0".into()), path.clone(), std::iter::empty()), None);
        assert_eq!(find(Some("".into()), path.clone(), std::iter::empty()), None);
        // Not named: PATH, then the toolkit folders.
        assert_eq!(find(None, path, std::iter::empty()), Some(exe.clone()));
        assert_eq!(find(None, None, [PathBuf::from("/nonexistent"), d.clone()].into_iter()), Some(exe));
        assert_eq!(find(None, None, std::iter::empty()), None);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_arch_follows_the_device_and_the_ptx_target() {
        assert_eq!(arch(".version 8.0\n.target sm_80\n", 90), "sm_90");
        assert_eq!(arch(".version 8.0\n.target sm_90a\n", 90), "sm_90a");
        assert_eq!(arch(".target sm_90a, debug\n", 90), "sm_90a");
        assert_eq!(arch(".target sm_90a\n", 100), "sm_100");
    }

    #[test]
    fn the_identity_changes_with_the_file() {
        let d = scratch("id");
        let exe = d.join("bin").join("ptxas");
        std::fs::write(&exe, "one").unwrap();
        let a = identity(&exe);
        std::fs::write(&exe, "longer").unwrap();
        assert_ne!(a, identity(&exe));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_refusal_carries_the_tools_message_and_leaves_no_files() {
        let d = scratch("refuse");
        let exe = d.join("bin").join("ptxas");
        std::fs::write(&exe, "#!/bin/sh\necho \"ptxas fatal: bad input\" >&2\nexit 1\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            let err = compile(&exe, ".target sm_90\n", 90, &d).unwrap_err();
            assert!(err.contains("ptxas fatal: bad input"), "{err}");
        }
        let err = compile(&d.join("missing"), "", 90, &d).unwrap_err();
        assert!(err.starts_with("cannot run"), "{err}");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["bin"], "{left:?}");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn compiles_a_whole_program_cubin_with_the_real_ptxas() {
        // The CUDA 13.0 ptxas the test command installs (missing: a failure, unless QD_SKIP_PTXAS=1).
        let Some(ptxas) = qd_testkit::PTXAS.find() else { return };
        let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { ret; }\n";
        let d = scratch("real");
        let (cubin, _) = compile(&ptxas, ptx, 90, &d).unwrap();
        assert!(cubin.starts_with(b"\x7fELF"));
        // A PTX error is ptxas's message, not a panic.
        let err = compile(&ptxas, ".version 8.0\n.target sm_80\nnonsense", 90, &d).unwrap_err();
        assert!(err.contains("failed"), "{err}");
        std::fs::remove_dir_all(d).unwrap();
    }
}
