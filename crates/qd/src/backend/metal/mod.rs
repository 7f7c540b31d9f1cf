//! Apple GPUs through Metal: MSL source printed from the IR (no SPIR-V, no SPIRV-Cross), so the
//! memory model is ours to state (docs/metal.md says op by op where it differs from upstream's).
//!
//! Same inner shape as the other backends:
//!
//! * [`caps`]: the capability model's answers and limits ([`MslVersion`]: what each construct needs);
//! * `abi`: the runtime ABI ([`MslModule`], [`BufferAbi`]) and the version and coherence a kernel needs;
//! * `printer`: whole kernels (entry point, attributes, threadgroup and per-thread arrays, locals,
//!   structured control flow, the grid-stride loop);
//! * `expr`: types, constants, D5 arithmetic and casts;
//! * `memory`: loads, stores, atomics, the CAS loop and the 32-bit word view (D6);
//! * `simd`: shuffles, broadcasts, ballots, votes, barriers and fences.
//!
//! ## The runtime ABI
//!
//! `[[buffer(0)]]` is the parameter block, `constant ulong*`: one 64-bit slot per kernel parameter,
//! in order (an array's element count; a scalar's bits zero-extended, bool as 0/1), the same block
//! the Vulkan backend binds. Array parameter `j` (counting arrays only) is `[[buffer(1 + j)]]`,
//! `device T*` with the element's natural size (bool as one byte, `uchar`). Metal binds at most 31
//! buffers, so a kernel with more than 30 array parameters is a [`TraceError`](crate::trace::TraceError).
//! A threadgroup is `block_dim` threads; the grid is the D1 grid in threadgroups. The runtime must
//! compile with fast math off (`MTLMathModeSafe`), so float results follow D5.

mod abi;
pub mod caps;
mod expr;
mod memory;
mod printer;
mod simd;

pub use abi::{BufferAbi, MslModule, MAX_BUFFERS};
pub use caps::MslVersion;

/// The Metal backend's face ([`Backend`](super::Backend)): MSL source for a Metal target.
///
/// ```
/// use qd::backend::{metal::Metal, Backend, Target};
/// use qd::prelude::*;
/// let k = Kernel::range("double", 64, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * 2.0f32));
/// });
/// let metal = Target::metal();
/// let msl = Metal::lower(&k.trace(&metal).unwrap(), &metal).unwrap();
/// assert!(msl.source.contains("kernel void qd_double("));
/// ```
pub struct Metal;

impl super::Backend for Metal {
    type Artifact = MslModule;
    const NAME: &'static str = "msl";

    #[track_caller]
    fn lower(kernel: &crate::ir::Kernel, target: &super::Target) -> Result<MslModule, crate::trace::TraceError> {
        let caller = crate::ir::SrcLoc::caller();
        let max = target.msl_version().ok_or_else(|| super::wrong_target(kernel, Self::NAME, target, caller))?;
        crate::target::check(kernel, target, caller)?;
        let mut k = kernel.clone();
        // The atomics Metal lacks become CAS loops in the IR first (one rewrite for every backend).
        crate::target::legalize_atomics(&mut k, target);
        crate::ir::passes::optimize(&mut k);
        printer::print_kernel(&k, max, caller)
    }
}

/// How tools drive this backend (see [`super::EMITTERS`]): `msl`, for [`Target::metal`](super::Target::metal)
/// (MSL up to 3.2), written as `.metal` source.
pub const EMITTER: super::Emitter = super::Emitter {
    family: "msl",
    about: "Apple GPUs through Metal Shading Language",
    extension: "metal",
    binary: false,
    syntax: "msl",
    examples: &["msl"],
    target: |detail| match detail {
        None => Ok(super::Target::metal()),
        Some(_) => Err("this target takes no `:` suffix".into()),
    },
    emit: |kernel, target| <Metal as super::Backend>::lower(kernel, target).map(|m| m.source.into_bytes()),
};
