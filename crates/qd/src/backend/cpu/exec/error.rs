//! The emulator's run-time errors: each names the kernel, the user's line when known, and what
//! went wrong.

use crate::ir::SrcLoc;

/// A run-time error found by the emulator.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("kernel `{kernel}`{}: {kind}", loc.map(|l| format!(" at {l}")).unwrap_or_default())]
pub struct EmuError {
    /// Kernel name.
    pub kernel: String,
    /// The user's line of the failing op, when known.
    pub loc: Option<SrcLoc>,
    /// What happened.
    pub kind: EmuErrorKind,
}

/// The kinds of run-time error.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmuErrorKind {
    /// A collective or barrier ran with some lanes missing.
    #[error("`{op}` ran under a partial mask in block {block}, subgroup {subgroup}: active lanes {active:#x}, expected {expected:#x} (every lane must execute it together)")]
    PartialMask {
        /// The op.
        op: String,
        /// Block id.
        block: u32,
        /// Subgroup within the block.
        subgroup: u32,
        /// Lanes present.
        active: u64,
        /// Lanes required.
        expected: u64,
    },
    /// Subgroups of one block waited at different barriers.
    #[error("subgroups of block {block} wait at different barriers ({first} and {second})")]
    BarrierMismatch {
        /// Block id.
        block: u32,
        /// One barrier.
        first: SrcLoc,
        /// Another.
        second: SrcLoc,
    },
    /// An index outside the array.
    #[error(
        "index {} is out of bounds for `{array}` of length {len} (`{op}`)",
        if *unsigned { (*index as u64).to_string() } else { index.to_string() }
    )]
    OutOfBounds {
        /// The op.
        op: String,
        /// Array name.
        array: String,
        /// The index (the bits of an unsigned one: read it as `u64` when `unsigned`).
        index: i64,
        /// The index has an unsigned type, so `index as u64` is its value (`u64::MAX` is not -1).
        unsigned: bool,
        /// Its length.
        len: usize,
    },
    /// A vector load whose first index is not a multiple of its width (on a GPU, a misaligned
    /// address: the launch faults).
    #[error(
        "index {index} of `{array}` is not a multiple of {width}: `{op}` loads {width} elements aligned to their size"
    )]
    Misaligned {
        /// The op.
        op: String,
        /// Array name.
        array: String,
        /// The first index.
        index: usize,
        /// Elements per load.
        width: usize,
    },
    /// Integer division or remainder by zero.
    #[error("integer division by zero (`{op}`)")]
    DivisionByZero {
        /// The op.
        op: String,
    },
    /// No progress anywhere for too long.
    #[error("no thread made progress for {seconds:.1} s: a spin-wait that never ends, last spinning on `{op}`")]
    Hang {
        /// The op spun on.
        op: String,
        /// Seconds without progress.
        seconds: f64,
    },
    /// The launch ran past the wall-clock cap.
    #[error(
        "the launch ran past its {:?} limit (Options::time_limit) while running {running}",
        std::time::Duration::from_secs_f64(*seconds)
    )]
    TimeLimit {
        /// The cap.
        seconds: f64,
        /// What was running: the loop that last went round (its op and the user's line) and the
        /// block, or the block about to start.
        running: String,
    },
    /// Strict mode: an implementation-defined value reached memory.
    #[error("strict mode: an implementation-defined value (e.g. an out-of-range shuffle source) reached memory through `{op}`")]
    Poison {
        /// The op.
        op: String,
    },
    /// Blocked lanes that can never continue (an emulator invariant broke or lanes wait forever).
    #[error("deadlock in block {block}: {detail}")]
    Deadlock {
        /// Block id.
        block: u32,
        /// What is waiting.
        detail: String,
    },
    /// A block's shared arrays, or its threads' per-thread arrays, exceed the emulator's memory
    /// budget (`memory::memory_budget`) for the blocks that run at once; nothing was allocated.
    #[error(
        "{} array `{array}` needs {bytes} bytes per block ({blocks} blocks run at once), over the emulator's memory \
         budget of {budget} bytes",
        if *shared { "shared" } else { "per-thread" }
    )]
    ArrayOverBudget {
        /// The largest array of the block (the one named).
        array: String,
        /// A shared array (else per-thread).
        shared: bool,
        /// Its bytes in one block (all lanes' copies of a per-thread array; `u64::MAX` when the
        /// size overflows).
        bytes: u64,
        /// Blocks that run at once (the workers).
        blocks: u32,
        /// The budget in bytes.
        budget: u64,
    },
    /// The arguments do not match the kernel.
    #[error("{0}")]
    BadArguments(String),
}
