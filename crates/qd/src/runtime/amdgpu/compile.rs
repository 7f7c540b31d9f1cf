//! `.ll` to code object with ROCm's own LLVM (`$ROCM_PATH/llvm/bin/llc` and `ld.lld`), cached on
//! disk like the CUDA cubins (`disk_cache.rs`).

use crate::backend::amdgpu::AmdgpuModule;
use crate::runtime::disk_cache::{self, DiskCache};
use crate::runtime::{CompileStats, DiskCacheUse, Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bump when the code-object cache's layout or key changes.
const FORMAT_TAG: &[u8] = b"qd-hsaco-cache-v1\0";

/// ROCm's `llc` and `ld.lld`, and what `llc --version` says (part of the cache key).
#[derive(Clone, Debug)]
pub(super) struct Toolchain {
    llc: PathBuf,
    lld: PathBuf,
    version: String,
}

/// The folders searched for ROCm's LLVM, in order: `$ROCM_PATH/llvm/bin`, `/opt/rocm/llvm/bin`.
fn llvm_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(r) = std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
        dirs.push(PathBuf::from(r).join("llvm").join("bin"));
    }
    dirs.push(PathBuf::from("/opt/rocm/llvm/bin"));
    dirs
}

impl Toolchain {
    /// The first folder with both tools, or why there is none.
    pub(super) fn find() -> std::result::Result<Toolchain, String> {
        let dirs = llvm_dirs();
        for d in &dirs {
            let (llc, lld) = (d.join("llc"), d.join("ld.lld"));
            if llc.is_file() && lld.is_file() {
                let version = Command::new(&llc)
                    .arg("--version")
                    .output()
                    .map_err(|e| format!("cannot run {}: {e}", llc.display()))?;
                let version = String::from_utf8_lossy(&version.stdout).into_owned();
                return Ok(Toolchain { llc, lld, version });
            }
        }
        let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        Err(format!(
            "ROCm's llc and ld.lld were not found (looked in {}); they turn qd's LLVM IR into code objects: \
             install ROCm's LLVM (rocm-llvm) or set ROCM_PATH",
            list.join(", ")
        ))
    }

    /// The code object of `module`: from the disk cache when it holds one, else built and stored.
    pub(super) fn code_object(
        &self,
        module: &AmdgpuModule,
        cache: Option<&DiskCache>,
        kernel: &str,
        stats: &mut CompileStats,
    ) -> Result<Vec<u8>> {
        let Some(cache) = cache else {
            stats.disk = DiskCacheUse::Disabled;
            return self.build(module, kernel);
        };
        let arch = module.arch.name();
        let key = disk_cache::key_of(FORMAT_TAG, &[arch.as_bytes(), self.version.as_bytes(), module.text.as_bytes()]);
        let path = cache.path_for("amdgpu", arch, &key, "hsaco");
        if let Some(image) = cache.load(&path) {
            stats.disk = DiskCacheUse::Hit(path);
            return Ok(image);
        }
        let image = self.build(module, kernel)?;
        stats.disk = match cache.store(&path, &image) {
            Ok(()) => DiskCacheUse::Stored(path),
            Err(e) => DiskCacheUse::StoreFailed(format!("{}: {e}", path.display())),
        };
        Ok(image)
    }

    /// `llc` then `ld.lld -shared` in a private temporary folder.
    fn build(&self, module: &AmdgpuModule, kernel: &str) -> Result<Vec<u8>> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "qd-amdgpu-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |call: &str, e: std::io::Error| Error::Driver {
            kernel: kernel.to_string(),
            call: call.to_string(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(&dir).map_err(|e| io("<temporary folder>", e))?;
        let result = (|| {
            let (ll, obj, hsaco) = (dir.join("k.ll"), dir.join("k.o"), dir.join("k.hsaco"));
            std::fs::write(&ll, &module.text).map_err(|e| io("<write .ll>", e))?;
            let mcpu = format!("-mcpu={}", module.arch.name());
            run(
                kernel,
                &self.llc,
                &["-mtriple=amdgcn-amd-amdhsa", &mcpu, "-mattr=+wavefrontsize64", "-filetype=obj", "-o"],
                &obj,
                &ll,
            )?;
            run(kernel, &self.lld, &["-shared", "-o"], &hsaco, &obj)?;
            std::fs::read(&hsaco).map_err(|e| io("<read code object>", e))
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}

/// Runs `tool args out input`; a failure is an [`Error::Driver`] with the tool's output.
fn run(kernel: &str, tool: &Path, args: &[&str], out: &Path, input: &Path) -> Result<()> {
    let name = tool.file_name().map_or_else(|| tool.display().to_string(), |n| n.to_string_lossy().into_owned());
    let driver = |message: String| Error::Driver { kernel: kernel.to_string(), call: name.clone(), message };
    let output = Command::new(tool)
        .args(args)
        .arg(out)
        .arg(input)
        .output()
        .map_err(|e| driver(format!("cannot run {}: {e}", tool.display())))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(driver(format!(
            "{} exited with {}: {}",
            tool.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
