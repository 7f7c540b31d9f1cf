//! ptxas: assembles PTX for an architecture.

use crate::{scratch, scratch::path_str, tool::PTXAS};
use std::path::{Path, PathBuf};

/// A found ptxas.
#[derive(Clone, Debug)]
pub struct Ptxas {
    path: PathBuf,
}

impl Ptxas {
    /// ptxas as [`crate::PTXAS`] finds it; `None` only when `QD_SKIP_PTXAS=1` (else a
    /// missing ptxas panics with its install command).
    pub fn find() -> Option<Ptxas> {
        PTXAS.find().map(Ptxas::at)
    }

    /// A ptxas at a known path.
    pub fn at(path: PathBuf) -> Ptxas {
        Ptxas { path }
    }

    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Assembles `text` for `arch` (`sm_90`, `sm_90a`, …); `Err` holds ptxas's message.
    pub fn assemble(&self, name: &str, arch: &str, text: &str) -> Result<(), String> {
        let input = scratch::write(name, "ptx", text.as_bytes());
        let output = input.with_extension("cubin");
        let arch_flag = format!("-arch={arch}");
        let args = [arch_flag.as_str(), path_str(&input), "-o", path_str(&output)];
        let result = scratch::run(&self.path, &args);
        scratch::remove(&[&input, &output]);
        result.map(|_| ()).map_err(|e| format!("ptxas rejected {name} for {arch}:\n{e}"))
    }

    /// Like [`assemble`](Ptxas::assemble), failing the test with the module when ptxas rejects it.
    pub fn assert_assembles(&self, name: &str, arch: &str, text: &str) {
        if let Err(e) = self.assemble(name, arch, text) {
            panic!("{e}\n---\n{text}");
        }
    }
}
