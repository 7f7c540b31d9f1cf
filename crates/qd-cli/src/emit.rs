//! `qd emit`: target names (D10) and writing every built-in kernel for a target.

use crate::builtin;
use qd::backend::amdgpu::Amdgpu;
use qd::backend::metal::Metal;
use qd::backend::ptx::Ptx;
use qd::backend::spirv::{Spirv, SpirvCaps};
use qd::backend::Backend;
use qd::backend::Target;
use qd::prelude::{Device, Kernel};
use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

/// A code-generation target of `qd emit` (D10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmitTarget {
    /// The IR text dump (`.ir`).
    Ir,
    /// PTX for an `sm_XX` architecture (`.ptx`); plain `ptx` is `sm_90`.
    Ptx {
        /// The architecture, e.g. `sm_90`.
        arch: String,
    },
    /// SPIR-V for a subgroup size (`.spv`); plain `spirv` is 32 lanes.
    Spirv {
        /// Subgroup size.
        subgroup_size: u32,
    },
    /// Metal Shading Language (`.metal`).
    Msl,
    /// LLVM IR for an AMDGPU `gfxNNN` chip (`.ll`).
    Amdgpu {
        /// The chip, e.g. `gfx942`.
        chip: String,
    },
}

impl EmitTarget {
    /// File extension of the target's output.
    pub fn extension(&self) -> &'static str {
        match self {
            EmitTarget::Ir => "ir",
            EmitTarget::Ptx { .. } => "ptx",
            EmitTarget::Spirv { .. } => "spv",
            EmitTarget::Msl => "metal",
            EmitTarget::Amdgpu { .. } => "ll",
        }
    }
}

impl fmt::Display for EmitTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitTarget::Ir => f.write_str("ir"),
            EmitTarget::Ptx { arch } => write!(f, "ptx:{arch}"),
            EmitTarget::Spirv { subgroup_size } => write!(f, "spirv:sg{subgroup_size}"),
            EmitTarget::Msl => f.write_str("msl"),
            EmitTarget::Amdgpu { chip } => write!(f, "amdgpu:{chip}"),
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
        write!(
            f,
            "unknown target `{}`: {}; expected ir, ptx[:sm_XX], spirv[:sgN], msl or amdgpu:gfxNNN",
            self.name, self.reason
        )
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
        match (family, detail) {
            ("ir", None) => Ok(EmitTarget::Ir),
            ("msl", None) => Ok(EmitTarget::Msl),
            ("ptx", None) => Ok(EmitTarget::Ptx { arch: "sm_90".into() }),
            ("ptx", Some(arch)) => {
                // Only the `.target`s the PTX backend knows (sm_90a included): an unknown one would
                // refuse every kernel and write nothing.
                match arch.strip_prefix("sm_").map(|_| qd::backend::ptx::PtxTarget::parse(arch)) {
                    Some(Ok(_)) => Ok(EmitTarget::Ptx { arch: arch.to_string() }),
                    Some(Err(e)) => Err(err(&e.to_string())),
                    None => Err(err("the PTX architecture is sm_XX, e.g. ptx:sm_90")),
                }
            }
            ("spirv", None) => Ok(EmitTarget::Spirv { subgroup_size: 32 }),
            ("spirv", Some(sg)) => match sg.strip_prefix("sg").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n.is_power_of_two() && (4..=128).contains(&n) => Ok(EmitTarget::Spirv { subgroup_size: n }),
                _ => Err(err("the SPIR-V subgroup size is sgN with N a power of two from 4 to 128, e.g. spirv:sg32")),
            },
            ("amdgpu", Some(chip)) => {
                let digits = chip.strip_prefix("gfx").unwrap_or("");
                if digits.len() >= 3 && digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(EmitTarget::Amdgpu { chip: chip.to_string() })
                } else {
                    Err(err("the AMDGPU chip is gfxNNN, e.g. amdgpu:gfx942"))
                }
            }
            ("amdgpu", None) => Err(err("name the chip, e.g. amdgpu:gfx942")),
            ("ir" | "msl", Some(_)) => Err(err("this target takes no `:` suffix")),
            _ => Err(err("no such target family")),
        }
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
/// dump is traced for the default device, the 32-lane CPU emulator; PTX for CUDA; SPIR-V for a
/// Vulkan device with that subgroup width and lavapipe's features; MSL for [`Target::metal`].
pub fn emit_kernel(kernel: &Kernel, target: &EmitTarget) -> Result<Vec<u8>, String> {
    match target {
        EmitTarget::Ptx { arch } => ptx_of(kernel, arch).map(String::into_bytes),
        EmitTarget::Spirv { subgroup_size } => spirv_of(kernel, *subgroup_size),
        EmitTarget::Ir => {
            Device::cpu().trace(kernel).map(|ir| qd::ir::print_kernel(&ir).into_bytes()).map_err(|e| e.to_string())
        }
        EmitTarget::Msl => msl_of(kernel).map(String::into_bytes),
        EmitTarget::Amdgpu { chip } => amdgpu_of(kernel, chip).map(String::into_bytes),
    }
}

/// The SPIR-V binary (little-endian words) of `kernel` for a Vulkan device with `subgroup_size`-lane
/// subgroups and the features of lavapipe ([`SpirvCaps::lavapipe`]).
fn spirv_of(kernel: &Kernel, subgroup_size: u32) -> Result<Vec<u8>, String> {
    let target = Target::vulkan(subgroup_size, &SpirvCaps::lavapipe());
    let ir = kernel.trace(&target).map_err(|e| e.to_string())?;
    let module = Spirv::lower(&ir, &target).map_err(|e| e.to_string())?;
    Ok(module.words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

/// MSL source of `kernel` for an Apple GPU ([`Target::metal`]: MSL up to 3.2).
fn msl_of(kernel: &Kernel) -> Result<String, String> {
    let target = Target::metal();
    let ir = kernel.trace(&target).map_err(|e| e.to_string())?;
    Metal::lower(&ir, &target).map(|m| m.source).map_err(|e| e.to_string())
}

/// LLVM IR of `kernel` for the AMDGPU `chip` (`gfx942`, `gfx90a`, `gfx1100`, `gfx1201`).
fn amdgpu_of(kernel: &Kernel, chip: &str) -> Result<String, String> {
    let target = Target::amdgpu(chip.parse()?);
    let ir = kernel.trace(&target).map_err(|e| e.to_string())?;
    Amdgpu::lower(&ir, &target).map(|m| m.text).map_err(|e| e.to_string())
}

/// PTX text of `kernel` for `arch` (`sm_90`, `sm_90a`, `sm_80`, ...), traced for the CUDA target.
fn ptx_of(kernel: &Kernel, arch: &str) -> Result<String, String> {
    let target = Target::ptx(qd::backend::ptx::PtxTarget::parse(arch).map_err(|e| e.to_string())?);
    let ir = kernel.trace(&target).map_err(|e| e.to_string())?;
    Ptx::lower(&ir, &target).map(|m| m.text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_d10_target_names() {
        let ok = |s: &str| s.parse::<EmitTarget>().unwrap();
        assert_eq!(ok("ir"), EmitTarget::Ir);
        assert_eq!(ok("ptx"), EmitTarget::Ptx { arch: "sm_90".into() });
        assert_eq!(ok("ptx:sm_80"), EmitTarget::Ptx { arch: "sm_80".into() });
        assert_eq!(ok("ptx:sm_90a"), EmitTarget::Ptx { arch: "sm_90a".into() });
        assert_eq!(ok("spirv"), EmitTarget::Spirv { subgroup_size: 32 });
        assert_eq!(ok("spirv:sg8"), EmitTarget::Spirv { subgroup_size: 8 });
        assert_eq!(ok("msl"), EmitTarget::Msl);
        assert_eq!(ok("amdgpu:gfx942"), EmitTarget::Amdgpu { chip: "gfx942".into() });
        assert_eq!(ok("amdgpu:gfx90a").extension(), "ll");
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
            "ir:x",
        ] {
            assert!(bad.parse::<EmitTarget>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn target_names_print_back() {
        assert_eq!(EmitTarget::Spirv { subgroup_size: 8 }.to_string(), "spirv:sg8");
    }
}
