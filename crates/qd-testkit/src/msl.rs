//! The MSL check: no Apple compiler runs on Linux, so clang parses each emitted `.metal` file as
//! C++17 against a header of ours that declares the Metal builtins the printer uses.

use crate::{scratch, scratch::path_str, tool::CLANG};
use std::path::{Path, PathBuf};

/// A found clang, used as the MSL syntax check.
#[derive(Clone, Debug)]
pub struct MslCheck {
    clang: PathBuf,
}

impl MslCheck {
    /// clang as [`crate::CLANG`] finds it; `None` only when `QD_SKIP_CLANG=1`.
    pub fn find() -> Option<MslCheck> {
        CLANG.find().map(MslCheck::at)
    }

    /// A clang at a known path.
    pub fn at(clang: PathBuf) -> MslCheck {
        MslCheck { clang }
    }

    /// Parses `source` with `clang -x c++ -std=c++17 -fsyntax-only -Werror -include <header>`;
    /// `Err` holds clang's diagnostics.
    pub fn check(&self, name: &str, source: &str, header: &Path) -> Result<(), String> {
        let input = scratch::write(name, "metal", source.as_bytes());
        let args =
            ["-x", "c++", "-std=c++17", "-fsyntax-only", "-Werror", "-include", path_str(header), path_str(&input)];
        let result = scratch::run(&self.clang, &args);
        scratch::remove(&[&input]);
        result.map(|_| ()).map_err(|e| format!("the MSL check rejected {name}:\n{e}"))
    }
}
