//! AMD GPUs: LLVM IR text for `amdgcn-amd-amdhsa` printed from the IR (no LLVM bindings), compiled
//! by `llc -mcpu=gfxNNN -mattr=+wavefrontsize64` and linked by `ld.lld -shared` into a code object.
//!
//! * [`caps`]: the capability model's answers and limits per [`AmdgpuArch`] (wave64 everywhere);
//! * `printer`: the module, the kernel's signature and attributes, arrays, locals and structured
//!   control flow (the grid-stride loop counts in 64 bits);
//! * `expr`: types, constants, D5 arithmetic and casts;
//! * `memory`: addresses, loads, stores, atomics, CAS and the 32-bit word view (D6);
//! * `wave`: shuffles (`ds_bpermute`), broadcasts, ballots, votes, barriers and fences.
//!
//! ## The runtime ABI
//!
//! The kernel is `amdgpu_kernel void @qd_<name>(...)`; every kernel argument is 8 bytes, 8-aligned,
//! in parameter order: an array parameter is two arguments, its `ptr addrspace(1)` base then its
//! element count (`i64`); a scalar parameter is one `i64` holding its bits zero-extended (bool as
//! 0/1). So the kernarg segment of a kernel with `a` arrays and `s` scalars is `8 * (2a + s)` bytes.
//! Elements are stored at their natural size (bool as one byte). A workgroup is `block_dim`
//! threads (stated as `amdgpu-flat-work-group-size`="1,block_dim"); the grid is the D1 grid in
//! workgroups (`hipModuleLaunchKernel`'s grid, which HSA sees as `grid * block_dim` work-items).
//!
//! ## Locals
//!
//! The IR's local variables are promoted to SSA by the printer (phis at `if` joins and loop
//! headers, latches and exits): llc does not run mem2reg, and its AMDGPU pipeline moves `alloca`s
//! that live across a loop into LDS or scratch (checked with llc-19). Only per-thread arrays are
//! `alloca`s in the private address space (5). Decision D19 has the rest.

pub mod caps;
mod expr;
mod memory;
mod printer;
mod wave;

pub use caps::AmdgpuArch;

/// A lowered kernel: one LLVM IR module with one `amdgpu_kernel`.
#[derive(Clone, Debug)]
pub struct AmdgpuModule {
    /// The `.ll` text.
    pub text: String,
    /// The kernel symbol (`qd_` + the kernel's name, other characters as `_`).
    pub entry: String,
    /// The architecture it was printed for (`llc -mcpu`).
    pub arch: AmdgpuArch,
    /// Threads per workgroup (= the kernel's `block_dim`).
    pub block_dim: u32,
    /// Bytes of kernel arguments (8 per slot, see the module docs).
    pub kernarg_bytes: u32,
    /// Bytes of LDS the kernel declares.
    pub shared_bytes: u32,
}

/// The AMDGPU backend's face ([`Backend`](super::Backend)): LLVM IR for an AMDGPU target.
///
/// ```
/// use qd::backend::{amdgpu::{Amdgpu, AmdgpuArch}, Backend, Target};
/// use qd::prelude::*;
/// let k = Kernel::range("double", 64, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2.0f32));
/// });
/// let gpu = Target::amdgpu(AmdgpuArch::Gfx942);
/// let m = Amdgpu::lower(&k.trace(&gpu).unwrap(), &gpu).unwrap();
/// assert!(m.text.contains("define amdgpu_kernel void @qd_double("));
/// ```
pub struct Amdgpu;

impl super::Backend for Amdgpu {
    type Artifact = AmdgpuModule;
    const NAME: &'static str = "amdgpu";

    #[track_caller]
    fn lower(kernel: &crate::ir::Kernel, target: &super::Target) -> Result<AmdgpuModule, crate::trace::TraceError> {
        let caller = crate::ir::SrcLoc::caller();
        let arch = target.amdgpu_arch().ok_or_else(|| super::wrong_target(kernel, Self::NAME, target, caller))?;
        crate::target::check(kernel, target, caller)?;
        let mut k = kernel.clone();
        // The atomics the GPU lacks become CAS loops in the IR first (one rewrite for every backend).
        crate::target::legalize_atomics(&mut k, target);
        crate::ir::passes::optimize(&mut k);
        printer::print_kernel(&k, arch)
    }
}

/// How tools drive this backend (see [`super::EMITTERS`]): `amdgpu:gfxNNN` for one of the chips
/// [`AmdgpuArch`] knows, written as `.ll` (LLVM IR text).
pub const EMITTER: super::Emitter = super::Emitter {
    family: "amdgpu",
    about: "AMD GPUs through LLVM IR for amdgcn (wave64)",
    extension: "ll",
    binary: false,
    syntax: "amdgpu:gfxNNN",
    examples: &["amdgpu:gfx942"],
    target: |detail| match detail {
        None => Err("name the chip, e.g. amdgpu:gfx942".into()),
        Some(chip) => chip.parse::<AmdgpuArch>().map(super::Target::amdgpu),
    },
    emit: |kernel, target| <Amdgpu as super::Backend>::lower(kernel, target).map(|m| m.text.into_bytes()),
};
