//! The MSL check: no Apple compiler runs on Linux, so clang parses each emitted `.metal` file as
//! C++17 against a header of ours (`msl/metal_stdlib`, found through `#include <metal_stdlib>`)
//! that declares the Metal builtins the printer uses with the specification's overload sets, and
//! the address spaces as clang address spaces.
//!
//! One rewrite happens before clang sees the file: a `threadgroup` array declared in the kernel's
//! body (as MSL declares them) is checked as a `static` local, because clang refuses an automatic
//! variable in an address space. Nothing else in the source is changed.

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

    /// Our stand-in for `<metal_stdlib>`, checked in with this crate.
    pub fn header() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("msl/metal_stdlib")
    }

    /// [`MslCheck::check`] against [`MslCheck::header`].
    pub fn check_source(&self, name: &str, source: &str) -> Result<(), String> {
        self.check(name, source, &MslCheck::header())
    }

    /// Parses `source` with `clang -x c++ -std=c++17 -fsyntax-only -Werror -include <header>`,
    /// `<header>`'s folder on the include path; `Err` holds clang's diagnostics.
    pub fn check(&self, name: &str, source: &str, header: &Path) -> Result<(), String> {
        let input = scratch::write(name, "metal", with_static_threadgroup_arrays(source).as_bytes());
        let dir = header.parent().unwrap_or(Path::new("."));
        let args = [
            "-x",
            "c++",
            "-std=c++17",
            "-fsyntax-only",
            "-Werror",
            "-I",
            path_str(dir),
            "-include",
            path_str(header),
            path_str(&input),
        ];
        let result = scratch::run(&self.clang, &args);
        scratch::remove(&[&input]);
        result.map(|_| ()).map_err(|e| format!("the MSL check rejected {name}:\n{e}"))
    }
}

/// `threadgroup T name[N];` (optionally after `alignas(n)`) on a line of its own becomes
/// `static threadgroup T name[N];`: the one construct of MSL clang's C++ refuses outright.
fn with_static_threadgroup_arrays(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 64);
    for line in source.lines() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let (align, rest) = match body.strip_prefix("alignas(").and_then(|r| r.split_once(") ")) {
            Some((n, rest)) => (format!("alignas({n}) "), rest),
            None => (String::new(), body),
        };
        if rest.starts_with("threadgroup ") && rest.ends_with("];") {
            out.push_str(&format!("{indent}{align}static {rest}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_threadgroup_array_declarations_become_static() {
        let src = "    alignas(4) threadgroup uchar s0_x[16];\n    threadgroup int s1[4];\n    (threadgroup atomic_uint*)&s1[0];\n";
        assert_eq!(
            with_static_threadgroup_arrays(src),
            "    alignas(4) static threadgroup uchar s0_x[16];\n    static threadgroup int s1[4];\n    (threadgroup atomic_uint*)&s1[0];\n"
        );
    }
}
