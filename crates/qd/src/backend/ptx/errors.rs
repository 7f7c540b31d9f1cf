//! Lowering-time diagnostics of the PTX printer.
//!
//! Every combination the printer refuses is refused here, before any text is produced, so the
//! token-emission step never has to recover from an invalid modifier word (seed 004). The first six
//! messages are the seed's own words; each `Display` text starts with them verbatim.

use thiserror::Error;

/// Why an instruction cannot be printed for the requested target.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PtxError {
    /// An ordering that a read-modify-write atomic cannot carry (LLVM `unordered`/`not_atomic`,
    /// an unknown name, or `seq_cst` handed straight to the `atom` printer instead of
    /// [`PtxPrinter::atomic_rmw`](super::PtxPrinter::atomic_rmw)).
    #[error("unsupported ordering for nvvm.atomic.rmw: {ordering}")]
    UnsupportedRmwOrdering {
        /// The ordering as it was given, plus a hint.
        ordering: String,
    },
    /// `red` takes only `.relaxed` and `.release` (ptxas rejects `red.acquire`/`red.acq_rel`).
    #[error("Invalid memory model ordering for nvvm.red: {ordering} (red takes relaxed or release)")]
    InvalidRedOrdering {
        /// The refused ordering.
        ordering: String,
    },
    /// `red` has no such operation (`cas`, `exch`).
    #[error("Invalid reduction op for nvvm.red: .{op}")]
    InvalidRedOp {
        /// The refused operation.
        op: String,
    },
    /// `red.<op>` does not take this type.
    #[error("Invalid reduction type for nvvm.red: .{op} does not take .{ty}")]
    InvalidRedType {
        /// The operation.
        op: String,
        /// The refused type.
        ty: String,
    },
    /// An LLVM syncscope name outside `""`, `singlethread`, `block`, `cluster`, `device`.
    #[error("unsupported NVPTX synchronization scope: {name:?}")]
    UnsupportedSyncScope {
        /// The refused name.
        name: String,
    },
    /// A fence with an ordering it cannot carry (relaxed).
    #[error("fence ordering must be acquire, release, acq_rel, or seq_cst (got {ordering})")]
    InvalidFenceOrdering {
        /// The refused ordering.
        ordering: String,
    },
    /// The cluster-tail bit asks for `.cta::cluster`, which ptxas 13.0 rejects ("Unknown modifier
    /// '.cta::cluster'"); D7 keeps the bit in the packed word but refuses to print it.
    #[error(
        "cluster-tail scope .cta::cluster does not assemble (ptxas: Unknown modifier '.cta::cluster'); \
         use .cluster scope instead"
    )]
    ClusterTailScope,
    /// `.L2::cache_hint` with a scope the seed does not allow (it allows only `.cta` and `.sys`;
    /// cluster cache hints are rejected outright, never silently downgraded).
    #[error("L2::cache_hint atomics accept only .cta and .sys scope, not {scope}")]
    CacheHintScope {
        /// The refused scope.
        scope: String,
    },
    /// `ld.v2`/`.v4` of a shape PTX has no form for (ptx.md: vectors of 2 or 4 elements, 16 bytes
    /// at most).
    #[error("no PTX vector load of {count} x .{ty} (2 or 4 elements of 4 or 8 bytes, 16 bytes at most)")]
    VectorLoadForm {
        /// Elements asked for.
        count: usize,
        /// The element type.
        ty: String,
    },
    /// `.L2::cache_hint` on a form ptxas refuses it on (`.cas`, shared memory).
    #[error("L2::cache_hint is not allowed on {form}")]
    CacheHintForm {
        /// The refused form.
        form: String,
    },
    /// `atom.<op>` does not take this type (ptxas's operation × type matrix, ptx.md §2.2).
    #[error("Invalid atomic type for nvvm.atomic.rmw: .{op} does not take .{ty}{detail}")]
    InvalidAtomType {
        /// The operation.
        op: String,
        /// The refused type.
        ty: String,
        /// Extra explanation (may be empty).
        detail: String,
    },
    /// No native PTX instruction: the caller lowers the operation as a CAS loop.
    #[error("no native PTX atomic for {op} on {ty}: lower it as a CAS loop")]
    NeedsCasLoop {
        /// The IR operation.
        op: String,
        /// The IR type.
        ty: String,
    },
    /// A state space the instruction does not accept.
    #[error("state space {space} is not allowed on {inst}")]
    InvalidSpace {
        /// The instruction.
        inst: String,
        /// The refused space.
        space: String,
    },
    /// A scope the instruction does not accept.
    #[error("scope {scope} is not allowed on {inst}")]
    InvalidScope {
        /// The instruction.
        inst: String,
        /// The refused scope.
        scope: String,
    },
    /// Any other illegal combination of modifiers or operands, with the reason.
    #[error("invalid {inst}: {reason}")]
    InvalidForm {
        /// The instruction.
        inst: String,
        /// Why it is refused.
        reason: String,
    },
    /// The target is too old for a feature (ptx.md's feature floors).
    #[error("{feature} requires .target sm_{min_sm} or higher (target is {target})")]
    TargetTooOld {
        /// The feature.
        feature: &'static str,
        /// The lowest SM that has it.
        min_sm: u32,
        /// The target.
        target: String,
    },
    /// An architecture-specific feature on a target that lacks it.
    #[error("{feature} is only supported on {targets} (target is {target})")]
    ArchSpecific {
        /// The feature.
        feature: &'static str,
        /// The targets that have it.
        targets: &'static str,
        /// The target.
        target: String,
    },
    /// The module needs a newer `.version` than the consumer accepts.
    #[error(".version {required} is required but the toolchain accepts at most {cap}")]
    VersionCap {
        /// What the target and features need.
        required: String,
        /// What the driver or ptxas accepts.
        cap: String,
    },
    /// A target name or SM number ptxas 13.0 does not know.
    #[error("unknown PTX target {target}")]
    UnknownTarget {
        /// The target as given.
        target: String,
    },
}
