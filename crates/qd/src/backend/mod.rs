//! Backends: one folder each, of the same shape (`mod.rs` with the entry point, `caps.rs` with the
//! capability model's answers, the lowering split by topic, a printer, emitter or executor).
//!
//! * [`cpu`]: the lane-exact SIMT emulator (D8);
//! * [`ptx`]: NVIDIA GPUs through PTX (seed 004, D7);
//! * [`spirv`]: Vulkan through SPIR-V;
//! * [`metal`]: Apple GPUs through MSL (docs/metal.md);
//! * [`amdgpu`]: AMD GPUs through LLVM IR for amdgcn (wave64).
//!
//! What a backend can do is asked of the [`Target`] (the capability layer, `crate::target`);
//! nothing outside `backend/`, `runtime/` and that layer tests which backend it is. Every code
//! generator has the same face, [`Backend::lower`]: a kernel traced for a target in, the backend's
//! artifact out, with the CAS-loop rewrite of `crate::target` applied first.
//!
//! Tools find the code generators through one table, [`EMITTERS`]: each backend folder exports an
//! `EMITTER` ([`Emitter`]) saying which target names it takes and how it writes a file, and
//! `qd emit`, `qd info` and the snapshot tests read the table. A new code generator is its folder
//! plus one `pub mod` line and one entry here (its runtime is the same in `runtime/mod.rs`).

pub mod amdgpu;
pub mod cpu;
pub mod metal;
pub mod ptx;
pub mod spirv;

pub use crate::target::Target;

use crate::ir::{Kernel, SrcLoc};
use crate::trace::TraceError;

/// Every code generator, in the order tools list them (the IR dump is not a backend).
pub const EMITTERS: &[Emitter] = &[ptx::EMITTER, spirv::EMITTER, metal::EMITTER, amdgpu::EMITTER];

/// The code generator of a target family (`ptx`, `spirv`, `msl`, `amdgpu`), if there is one.
///
/// ```
/// let ptx = qd::backend::emitter("ptx").unwrap();
/// assert_eq!(ptx.extension, "ptx");
/// assert!(qd::backend::emitter("llvm").is_none());
/// ```
pub fn emitter(family: &str) -> Option<&'static Emitter> {
    EMITTERS.iter().find(|e| e.family == family)
}

/// How tools drive one code generator: the target names it takes and how it writes a kernel as a
/// file. One per backend folder (its `EMITTER`), listed in [`EMITTERS`].
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("double", 64, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2.0f32));
/// });
/// let msl = qd::backend::emitter("msl").unwrap();
/// let target = (msl.target)(None).unwrap();
/// let file = (msl.emit)(&k.trace(&target).unwrap(), &target).unwrap();
/// assert!(String::from_utf8(file).unwrap().contains("kernel void"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Emitter {
    /// The target family, the part of a target name before `:` (`ptx` in `ptx:sm_90`).
    pub family: &'static str,
    /// What the family's devices are, for `qd info`.
    pub about: &'static str,
    /// The extension of the files it writes, without the dot.
    pub extension: &'static str,
    /// Whether those files are binary (SPIR-V words) rather than text.
    pub binary: bool,
    /// The accepted names, for messages: `ptx[:sm_XX]`.
    pub syntax: &'static str,
    /// Target names tools show and test by default; the first is the one `qd info` lists.
    pub examples: &'static [&'static str],
    /// The target of a name's detail, the part after `:` (`None` for the bare family name), or
    /// why that detail is not one of this family's targets.
    pub target: fn(Option<&str>) -> Result<Target, String>,
    /// The file for a kernel traced for a target of this family, or why it cannot be written.
    pub emit: fn(&Kernel, &Target) -> Result<Vec<u8>, TraceError>,
}

/// The face every code generator shows the runtime and the tools.
///
/// ```
/// use qd::backend::{Backend, cpu::Emulator, ptx::Ptx, Target};
/// use qd::prelude::*;
/// let k = Kernel::range("double", 64, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2.0f32));
/// });
/// let cuda = Target::cuda(90);
/// let ptx = Ptx::lower(&k.trace(&cuda).unwrap(), &cuda).unwrap();
/// assert!(ptx.text.contains(".target sm_90"));
/// let cpu = Target::cpu(32);
/// assert!(Emulator::lower(&k.trace(&cpu).unwrap(), &cpu).is_ok());
/// // A kernel traced for one target is not lowered by another backend.
/// assert!(Ptx::lower(&k.trace(&cpu).unwrap(), &cpu).is_err());
/// ```
pub trait Backend {
    /// What lowering produces: PTX text, a SPIR-V module, an emulator program.
    type Artifact;
    /// The backend's name in messages (`ptx`, `spirv`, `msl`, `cpu`).
    const NAME: &'static str;
    /// Lowers `kernel`, traced for `target`: the capability check, the atomics `target` provides
    /// as CAS loops rewritten into the IR, then the backend's own lowering. A target this backend
    /// does not compile for is a [`TraceError`] at the caller's line.
    fn lower(kernel: &Kernel, target: &Target) -> Result<Self::Artifact, TraceError>;
}

/// The error for a kernel handed to a backend that does not compile for its target.
pub(crate) fn wrong_target(kernel: &Kernel, backend: &str, target: &Target, caller: SrcLoc) -> TraceError {
    TraceError {
        kernel: kernel.name.clone(),
        op: format!("{backend}.module"),
        loc: caller,
        message: format!(
            "the {backend} backend does not compile for {target}; trace the kernel for one of its targets"
        ),
        unsupported: None,
    }
}
