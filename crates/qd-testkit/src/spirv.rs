//! spirv-val: validates SPIR-V binaries for a Vulkan environment.

use crate::{scratch, scratch::path_str, tool::SPIRV_DIS, tool::SPIRV_VAL};
use std::path::{Path, PathBuf};

/// A found spirv-val.
#[derive(Clone, Debug)]
pub struct SpirvVal {
    path: PathBuf,
}

impl SpirvVal {
    /// spirv-val as [`crate::SPIRV_VAL`] finds it; `None` only when
    /// `QD_SKIP_SPIRV_VAL=1` (else a missing spirv-val panics with its install command).
    pub fn find() -> Option<SpirvVal> {
        SPIRV_VAL.find().map(SpirvVal::at)
    }

    /// A spirv-val at a known path.
    pub fn at(path: PathBuf) -> SpirvVal {
        SpirvVal { path }
    }

    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Validates `words` for `target_env` (e.g. `vulkan1.1`); `Err` holds spirv-val's message and,
    /// when spirv-dis is at hand, the module's disassembly.
    pub fn validate(&self, name: &str, words: &[u32], target_env: &str) -> Result<(), String> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.validate_bytes(name, &bytes, target_env)
    }

    /// [`validate`](SpirvVal::validate) for a module already in bytes (little-endian words).
    pub fn validate_bytes(&self, name: &str, bytes: &[u8], target_env: &str) -> Result<(), String> {
        let input = scratch::write(name, "spv", bytes);
        let result = scratch::run(&self.path, &["--target-env", target_env, path_str(&input)]).map(|_| ());
        let result = result.map_err(|e| {
            let dis = SPIRV_DIS
                .locate()
                .ok()
                .and_then(|d| scratch::run(&d, &[path_str(&input)]).ok())
                .unwrap_or_else(|| "(no spirv-dis for a disassembly)".into());
            format!("spirv-val rejected {name} for {target_env}:\n{e}\n---\n{dis}")
        });
        scratch::remove(&[&input]);
        result
    }

    /// Like [`validate`](SpirvVal::validate) for `vulkan1.1`, failing the test on a rejection.
    pub fn assert_valid(&self, name: &str, words: &[u32]) {
        if let Err(e) = self.validate(name, words, "vulkan1.1") {
            panic!("{e}");
        }
    }
}
