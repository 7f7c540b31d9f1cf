//! llc and ld.lld: LLVM IR to an object for a GPU, and objects to a loadable code object.

use crate::{scratch, scratch::path_str, tool::LD_LLD, tool::LLC};
use std::path::{Path, PathBuf};

/// A found llc.
#[derive(Clone, Debug)]
pub struct Llc {
    path: PathBuf,
}

impl Llc {
    /// llc as [`crate::LLC`] finds it; `None` only when `QD_SKIP_LLC=1`.
    pub fn find() -> Option<Llc> {
        LLC.find().map(Llc::at)
    }

    /// An llc at a known path.
    pub fn at(path: PathBuf) -> Llc {
        Llc { path }
    }

    /// Compiles LLVM IR `text` for `triple` and `cpu` into an object file (`-filetype=obj`, plus
    /// `extra` arguments such as `-mattr=+wavefrontsize64`); `Ok` holds the object's path, which the
    /// caller may link or disassemble, then remove.
    pub fn compile(&self, name: &str, text: &str, triple: &str, cpu: &str, extra: &[&str]) -> Result<PathBuf, String> {
        let input = scratch::write(name, "ll", text.as_bytes());
        let output = input.with_extension("o");
        let (t, c) = (format!("-mtriple={triple}"), format!("-mcpu={cpu}"));
        let mut args = vec![t.as_str(), c.as_str(), "-filetype=obj"];
        args.extend_from_slice(extra);
        args.extend(["-o", path_str(&output), path_str(&input)]);
        let result = scratch::run(&self.path, &args);
        scratch::remove(&[&input]);
        result.map(|_| output).map_err(|e| format!("llc rejected {name} for {triple} {cpu}:\n{e}"))
    }
}

/// A found ld.lld.
#[derive(Clone, Debug)]
pub struct LdLld {
    path: PathBuf,
}

impl LdLld {
    /// ld.lld as [`crate::LD_LLD`] finds it; `None` only when `QD_SKIP_LD_LLD=1`.
    pub fn find() -> Option<LdLld> {
        LD_LLD.find().map(LdLld::at)
    }

    /// An ld.lld at a known path.
    pub fn at(path: PathBuf) -> LdLld {
        LdLld { path }
    }

    /// Links `objects` into a shared object (`-shared`, what a GPU code object is); `Ok` holds its path.
    pub fn link_shared(&self, name: &str, objects: &[&Path]) -> Result<PathBuf, String> {
        let output = scratch::path(name, "so");
        let mut args = vec!["-shared", "-o", path_str(&output)];
        args.extend(objects.iter().map(|o| path_str(o)));
        scratch::run(&self.path, &args).map(|_| output).map_err(|e| format!("ld.lld could not link {name}:\n{e}"))
    }
}
