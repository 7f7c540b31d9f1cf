//! Scratch files for the tools' inputs and outputs, and running a tool.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh path `<temp>/qd-testkit/<name>-<pid>-<n>.<ext>`: unique across processes and threads.
/// Callers remove what they create, whatever the outcome, so the folder does not grow.
pub(crate) fn path(name: &str, ext: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join("qd-testkit");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create the scratch folder {}: {e}", dir.display()));
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    dir.join(format!("{safe}-{}-{}.{ext}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)))
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
/// output streams when it rejects its input. A program that cannot be started panics: that is a
/// broken tool, never a rejection (a test expecting a rejection must not pass because of it).
pub(crate) fn run<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> Result<String, String> {
    let out =
        Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
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

/// A path as a tool argument (scratch paths are built from ASCII names; others must be UTF-8).
pub(crate) fn path_str(p: &Path) -> &str {
    p.to_str().unwrap_or_else(|| panic!("{} is not UTF-8", p.display()))
}
