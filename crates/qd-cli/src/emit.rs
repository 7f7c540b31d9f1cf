//! `qd emit`: target names (D10) and writing every built-in kernel for a target.

use crate::builtin;
use qd::backend::{Emitter, Target, EMITTERS};
use qd::prelude::{Device, Kernel};
use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

/// A target of `qd emit` (D10): the IR dump, or a code generator of [`EMITTERS`] with one of
/// its targets. Which families exist is the backend table's business, not this file's.
#[derive(Clone, Debug)]
pub enum EmitTarget {
    /// The IR text dump (`.ir`), traced for the default device (the 32-lane emulator).
    Ir,
    /// A code generator's output for one of its targets.
    Code {
        /// The code generator.
        emitter: &'static Emitter,
        /// The name as given, e.g. `ptx:sm_80` (a bare family name gets its default spelled out
        /// only where the family has one, so `ptx` stays `ptx`).
        name: String,
        /// The target kernels are traced and lowered for.
        target: Target,
    },
}

impl PartialEq for EmitTarget {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl EmitTarget {
    /// File extension of the target's output.
    pub fn extension(&self) -> &'static str {
        match self {
            EmitTarget::Ir => "ir",
            EmitTarget::Code { emitter, .. } => emitter.extension,
        }
    }

    /// Whether the output is binary (SPIR-V) rather than text.
    pub fn is_binary(&self) -> bool {
        matches!(self, EmitTarget::Code { emitter, .. } if emitter.binary)
    }

    /// The targets `qd info` lists: `ir`, then each code generator's examples.
    pub fn examples() -> impl Iterator<Item = &'static str> {
        std::iter::once("ir").chain(EMITTERS.iter().flat_map(|e| e.examples.iter().copied()))
    }
}

impl fmt::Display for EmitTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitTarget::Ir => f.write_str("ir"),
            EmitTarget::Code { name, .. } => f.write_str(name),
        }
    }
}

/// Why a target name does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetParseError {
    /// The name as given.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for TargetParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = std::iter::once("ir").chain(EMITTERS.iter().map(|e| e.syntax)).collect();
        write!(f, "unknown target `{}`: {}; expected {}", self.name, self.reason, names.join(", "))
    }
}

impl std::error::Error for TargetParseError {}

impl FromStr for EmitTarget {
    type Err = TargetParseError;

    fn from_str(name: &str) -> Result<EmitTarget, TargetParseError> {
        let err = |reason: &str| TargetParseError { name: name.to_string(), reason: reason.to_string() };
        let (family, detail) = match name.split_once(':') {
            Some((f, d)) => (f, Some(d)),
            None => (name, None),
        };
        if family == "ir" {
            return match detail {
                None => Ok(EmitTarget::Ir),
                Some(_) => Err(err("this target takes no `:` suffix")),
            };
        }
        let emitter = qd::backend::emitter(family).ok_or_else(|| err("no such target family"))?;
        // A target the code generator does not know would refuse every kernel and write nothing,
        // so the name is checked here, once.
        let target = (emitter.target)(detail).map_err(|reason| err(&reason))?;
        Ok(EmitTarget::Code { emitter, name: name.to_string(), target })
    }
}

/// What an emit run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitReport {
    /// Files written.
    pub written: usize,
    /// Kernels the target cannot express (one line each was printed).
    pub not_emitted: usize,
}

/// Writes `<kernel>.<ext>` into `dir` for every built-in kernel. A kernel the target cannot
/// express gets one line on `log` naming it and the reason, and no file (D10).
pub fn emit_all(target: &EmitTarget, dir: &Path, log: &mut dyn Write) -> io::Result<EmitReport> {
    std::fs::create_dir_all(dir).map_err(|e| crate::io_error_at(dir, e))?;
    let mut report = EmitReport::default();
    for kernel in builtin::kernels() {
        match emit_kernel(&kernel, target) {
            Ok(text) => {
                let path = dir.join(format!("{}.{}", kernel.name(), target.extension()));
                std::fs::write(&path, text).map_err(|e| crate::io_error_at(&path, e))?;
                report.written += 1;
            }
            Err(e) => {
                writeln!(log, "kernel `{}`: not emitted for {target}: {e}", kernel.name())?;
                report.not_emitted += 1;
            }
        }
    }
    Ok(report)
}

/// The file `qd emit` writes for `kernel` and `target`, or why the target cannot express it. The IR
/// dump is traced for the default device, the 32-lane CPU emulator; a code generator's file for the
/// target its name gave (e.g. SPIR-V for a Vulkan device with that subgroup width and lavapipe's
/// features).
pub fn emit_kernel(kernel: &Kernel, target: &EmitTarget) -> Result<Vec<u8>, String> {
    match target {
        EmitTarget::Ir => {
            Device::cpu().trace(kernel).map(|ir| qd::ir::print_kernel(&ir).into_bytes()).map_err(|e| e.to_string())
        }
        EmitTarget::Code { emitter, target, .. } => {
            let ir = kernel.trace(target).map_err(|e| e.to_string())?;
            (emitter.emit)(&ir, target).map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_d10_target_names() {
        let ok = |s: &str| s.parse::<EmitTarget>().unwrap();
        let target = |s: &str| match ok(s) {
            EmitTarget::Code { target, .. } => target,
            EmitTarget::Ir => panic!("{s} is a code generator's target"),
        };
        assert_eq!(ok("ir"), EmitTarget::Ir);
        assert_eq!(target("ptx"), target("ptx:sm_90"));
        assert_ne!(target("ptx:sm_80"), target("ptx:sm_90"));
        assert!(target("ptx:sm_90a").name().ends_with("sm_90a"), "{}", target("ptx:sm_90a").name());
        assert_eq!(target("spirv"), target("spirv:sg32"));
        assert_eq!(target("spirv:sg8").subgroup_size(), 8);
        assert_eq!(target("msl"), Target::metal());
        assert_eq!(target("amdgpu:gfx942").subgroup_size(), 64);
        assert_eq!(ok("amdgpu:gfx90a").extension(), "ll");
        assert!(ok("spirv:sg8").is_binary() && !ok("msl").is_binary());
        for bad in [
            "",
            "llvm",
            "ptx:90",
            "ptx:sm_",
            "ptx:sm_10",
            "ptx:sm_100f",
            "ptx:sm_99999999999",
            "spirv:sg3",
            "spirv:32",
            "amdgpu",
            "amdgpu:942",
            "amdgpu:gfx1234",
            "msl:3",
            "ir:x",
        ] {
            assert!(bad.parse::<EmitTarget>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn target_names_print_back() {
        for name in EmitTarget::examples() {
            assert_eq!(name.parse::<EmitTarget>().unwrap().to_string(), name);
        }
    }
}
