//! Scratch files for the tools' inputs and outputs, and running a tool.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh path `<temp>/qd-testkit-<pid>/<name>-<n>.<ext>`: unique within the process, so tests
/// running on several threads never share a file.
pub(crate) fn path(name: &str, ext: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("qd-testkit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create the scratch folder {}: {e}", dir.display()));
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    dir.join(format!("{safe}-{}.{ext}", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Writes `bytes` to a fresh scratch file.
pub(crate) fn write(name: &str, ext: &str, bytes: &[u8]) -> PathBuf {
    let p = path(name, ext);
    std::fs::write(&p, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
    p
}

/// Removes scratch files (a failure to remove is not the test's concern).
pub(crate) fn remove(paths: &[&Path]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

/// Runs `program` with `args`: `Ok(stdout)` on success, `Err` with the exit status and both
/// output streams otherwise (a program that cannot be started is an `Err` too).
pub(crate) fn run<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> Result<String, String> {
    let out =
        Command::new(program).args(args).output().map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{} exited with {}:\n{}{}",
            program.display(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
