//! The NVPTX backend: PTX text printed from the IR (seed 004's emission contract, D7).
//!
//! This module holds the *printer contract*: one validated PTX line per call, with explicit
//! operands, so every literal line of seed 004 is a golden test (`tests/ptx_golden.rs`).
//!
//! * [`modifier`]: the atomic/reduction modifier record ([`AtomicModifier`]), the scope and
//!   ordering vocabulary, [`pack_atomic_modifier`] and [`syncscope_from_llvm`].
//! * [`printer`]: [`PtxPrinter`] for atom/red (and the seq_cst / unused-result lowering of
//!   [`PtxPrinter::atomic_rmw`]), ordered loads and stores, fences, proxy fences and CTA barriers.
//! * [`warp`]: `redux.sync`, `shfl.sync`, `vote.sync`, `match.sync`, `bar.warp.sync`.
//! * [`sreg`]: special-register reads.
//! * [`mbarrier`]: the mbarrier family.
//! * [`nvops`]: the forms only `qd::nv` reaches beyond those: cache policies and hinted loads,
//!   the cluster barrier, `mapa`, and `nvvm.breakpoint`.
//! * [`caps`]: targets, feature floors and the `.version` computation (D7).
//! * [`errors`]: [`PtxError`], the lowering-time diagnostics.
//! * [`lower`]: whole kernels from the IR to a PTX module ([`lower_kernel`]): arithmetic and
//!   control flow printed there, every instruction above through one [`PtxPrinter`], whose
//!   recorded features give the module's `.version`.
//!
//! Token order on `atom`/`red` follows D7 and the seed's literal lines: stem, ordering, scope,
//! operation, `.noftz`, vector width, type, address space, cache hint, operands. (The seed's prose
//! lists two other orders; its literal lines and D7 agree with each other, and ptxas accepts the
//! modifiers in any order, so the literal lines win.)

pub mod caps;
pub mod errors;
pub mod lower;
pub mod mbarrier;
pub mod modifier;
pub mod nvops;
pub mod printer;
pub mod sreg;
pub mod warp;

pub use caps::{capped_version, module_header, required_version, Feature, FeatureSet, PtxTarget, PtxVersion};
pub use errors::PtxError;
pub use lower::{lower_kernel, lower_kernel_sm, ParamAbi, PtxModule};
pub use mbarrier::{MbarrierModifier, MbarrierSpace};
pub use modifier::{
    pack_atomic_modifier, syncscope_from_llvm, unpack_atomic_modifier, AtomOp, AtomSpace, AtomType, AtomicModifier,
    AtomicOrder, L2CacheHint, NvptxScope, VectorWidth,
};
pub use printer::{hex_imm, BarRedOp, MembarLevel, ProxyKind, PtxPrinter, FULL_MASK};
pub use sreg::{is_thread_or_cta_sreg, sreg_mov_type, sreg_token};
pub use warp::{MatchMode, MatchType, ReduxKind, ReduxType, ShflMode, VoteMode};

/// The NVPTX backend's face ([`Backend`](super::Backend)): PTX for a CUDA target.
pub struct Ptx;

impl super::Backend for Ptx {
    type Artifact = PtxModule;
    const NAME: &'static str = "ptx";

    #[track_caller]
    fn lower(kernel: &crate::ir::Kernel, target: &super::Target) -> Result<PtxModule, crate::trace::TraceError> {
        let caller = crate::ir::SrcLoc::caller();
        let ptx = target.ptx_target().ok_or_else(|| super::wrong_target(kernel, Self::NAME, target, caller))?;
        crate::target::check(kernel, target, caller)?;
        lower_kernel(kernel, &ptx)
    }
}

/// How tools drive this backend (see [`super::EMITTERS`]): `ptx` (`sm_90`) or `ptx:sm_XX`, one of
/// the `.target`s [`PtxTarget::parse`] knows (`sm_90a` included), written as `.ptx` text.
pub const EMITTER: super::Emitter = super::Emitter {
    family: "ptx",
    about: "NVIDIA GPUs through PTX",
    extension: "ptx",
    binary: false,
    syntax: "ptx[:sm_XX]",
    examples: &["ptx:sm_90", "ptx:sm_80"],
    target: |detail| {
        let arch = detail.unwrap_or("sm_90");
        if !arch.starts_with("sm_") {
            return Err("the PTX architecture is sm_XX, e.g. ptx:sm_90".into());
        }
        PtxTarget::parse(arch).map(super::Target::ptx).map_err(|e| e.to_string())
    },
    emit: |kernel, target| <Ptx as super::Backend>::lower(kernel, target).map(|m| m.text.into_bytes()),
};
