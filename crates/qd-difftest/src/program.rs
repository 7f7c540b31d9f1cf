//! The programs the generator writes: a small typed language whose every program is a valid kernel
//! (D27). Data flows between statements only through typed variables declared up front, so removing
//! any statement (what shrinking does) leaves a valid program.

use qd::ir::uniformity::Uniformity;
use qd::ir::{AtomicOp, DType, Scope};
use serde::{Deserialize, Serialize};

/// Elements of every input array (a power of two: indices are masked into range).
pub const INPUT_LEN: u32 = 64;
/// Output slots per thread in every output array.
pub const SLOTS: u32 = 4;
/// Elements of every contended atomic array.
pub const ACC_LEN: u32 = 4;
/// Elements of every per-thread local array.
pub const LOCAL_LEN: u32 = 4;
/// The most iterations a generated loop runs (far below lavapipe's 65 535, D13).
pub const MAX_TRIP: u32 = 7;

/// Every dtype a generated value may have: bool and the numeric types, the first 13 of
/// [`DType::ALL`] (after them come the packed pairs and `b128`, which no generated value holds).
pub const VALUE_TYPES: [DType; 13] = {
    let mut out = [DType::Bool; 13];
    let mut i = 0;
    while i < out.len() {
        out[i] = DType::ALL[i];
        i += 1;
    }
    out
};

/// The types subgroup shuffles, reductions and scans move.
pub const SHUFFLE_TYPES: [DType; 6] = [DType::I32, DType::U32, DType::I64, DType::U64, DType::F32, DType::F64];

/// A generated kernel with its inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// Launch shape and which subgroup widths it may run on.
    pub shape: Shape,
    /// Scalar parameters (type and bits).
    pub params: Vec<(DType, u64)>,
    /// Read-only input arrays of [`INPUT_LEN`] elements.
    pub inputs: Vec<Data>,
    /// Variables: the only way values flow between statements.
    pub vars: Vec<VarDecl>,
    /// Output arrays: [`SLOTS`] elements per thread each.
    pub outputs: Vec<DType>,
    /// Arrays every thread updates with order-independent atomics (first [`ACC_LEN`] values).
    pub accs: Vec<Data>,
    /// Arrays with one element per thread, updated by that thread's atomics (element `t` starts
    /// as `data[t % INPUT_LEN]`).
    pub owns: Vec<Data>,
    /// The body (the `parallel_for` body of a range kernel).
    pub body: Vec<Stmt>,
    /// Explicit kernels: `if cond { return }` after the body, then more statements.
    pub tail: Option<Tail>,
}

/// An array's element type and contents (element bits).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Data {
    /// Element type.
    pub dtype: DType,
    /// Element bits.
    pub bits: Vec<u64>,
}

/// How the kernel is launched and which subgroup widths it is written for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Which subgroup widths give this program one meaning.
    pub sizing: Sizing,
    /// Threads per block (a multiple of every width it runs on).
    pub block_dim: u32,
    /// Blocks in the grid.
    pub blocks: u32,
    /// Range or explicit kernel.
    pub launch: Launch,
}

/// The subgroup widths a program's results do not depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sizing {
    /// Every collective works on aligned tiles of at most `2^log2_tile` lanes, so the results are
    /// the same at every width from `2^log2_tile` up.
    Portable {
        /// The largest tile.
        log2_tile: u32,
    },
    /// Written for one width: whole-subgroup ops (broadcast, raw ballots and lane ids) allowed.
    Exact {
        /// The subgroup width.
        width: u32,
    },
}

impl Sizing {
    /// The largest tile (log2) a collective may use.
    pub fn max_log2_tile(self) -> u32 {
        match self {
            Sizing::Portable { log2_tile } => log2_tile,
            Sizing::Exact { width } => width.trailing_zeros(),
        }
    }

    /// Whether a device with `width`-lane subgroups gives this program its meaning.
    pub fn runs_at(self, width: u32) -> bool {
        match self {
            Sizing::Portable { log2_tile } => width >= 1 << log2_tile,
            Sizing::Exact { width: w } => width == w,
        }
    }
}

/// Range or explicit kernel (D1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Launch {
    /// `parallel_for(begin, begin + n)` with `n = blocks * block_dim` (begin may sit near `i32::MAX`).
    Range {
        /// First index.
        begin: i32,
    },
    /// `launch_grid(blocks)`; the body may end with an early return.
    Explicit,
}

impl Shape {
    /// Threads in the launch.
    pub fn threads(&self) -> u32 {
        self.block_dim * self.blocks
    }
}

/// A variable: its type, how uniform every value it is given is, and its initial value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarDecl {
    /// Type.
    pub dtype: DType,
    /// An upper bound of the uniformity of every value assigned (and of the control it is
    /// assigned under): what the generator promises the IR's analysis (D3).
    pub class: Uniformity,
    /// Initial value's bits.
    pub init: u64,
}

/// The early return of an explicit kernel and what runs after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    /// Threads where this holds return.
    pub cond: Expr,
    /// Statements for the others (varying control: no collectives or barriers).
    pub body: Vec<Stmt>,
}

/// How an output is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoreMode {
    /// Plain store.
    Plain,
    /// Volatile store.
    Volatile,
    /// Release store at device scope.
    Release,
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stmt {
    /// `var = expr`.
    Assign(u16, Expr),
    /// `outputs[out][thread * SLOTS + slot] = expr`.
    Out {
        /// Output array.
        out: u16,
        /// Slot within the thread's.
        slot: u8,
        /// Value (of the array's type).
        value: Expr,
        /// Store kind.
        mode: StoreMode,
    },
    /// `if cond { then } else { els }`.
    If {
        /// Bool condition.
        cond: Expr,
        /// Then branch.
        then: Vec<Stmt>,
        /// Else branch.
        els: Vec<Stmt>,
    },
    /// `for j in 0..(trip & MAX_TRIP) { body }` (`trip` is a u32).
    Loop {
        /// Trip count before masking.
        trip: Expr,
        /// Body.
        body: Vec<Stmt>,
    },
    /// `if cond { break }` in the innermost loop.
    Break(Expr),
    /// `if cond { continue }` in the innermost loop.
    Continue(Expr),
    /// `block::sync()`.
    Sync,
    /// `subgroup::sync()`.
    SubgroupSync,
    /// A memory fence at a scope.
    Fence(Scope),
    /// `shared[t] = value; sync; var = shared[index % block_dim]; sync` (the var's type).
    SharedSwap {
        /// Destination variable.
        var: u16,
        /// This thread's contribution.
        value: Expr,
        /// Which thread's to read (any integer, reduced modulo the block).
        index: Expr,
    },
    /// A shared counter: set by thread 0, updated by every thread with `op`, read by all.
    SharedAtomic {
        /// Destination variable (the counter's type).
        var: u16,
        /// Initial value.
        init: Expr,
        /// Order-independent operation.
        op: AtomicOp,
        /// Operand.
        value: Expr,
    },
    /// `atomic op(accs[acc][slot & 3], value)` (old value unused; order-independent: every
    /// statement on one array applies the same operation).
    AccAtomic {
        /// Array.
        acc: u16,
        /// Element (masked into range).
        slot: Expr,
        /// Operation.
        op: AtomicOp,
        /// Operand.
        value: Expr,
    },
    /// A per-thread array: zeroed, `a[w & 3] = value`, `var = a[r & 3]`.
    Local {
        /// Destination variable (the array's type).
        var: u16,
        /// Written element.
        write: Expr,
        /// Value written.
        value: Expr,
        /// Read element.
        read: Expr,
    },
}

/// Threads' ids and launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Special {
    /// The range index `i` (range kernels) or the global thread index (explicit), i32.
    Index,
    /// `block::thread_idx()`, i32.
    ThreadIdx,
    /// `block::block_idx()`, i32.
    BlockIdx,
    /// `block::block_dim()`, i32.
    BlockDim,
    /// `block::grid_dim()`, i32.
    GridDim,
    /// `block::global_thread_idx()`, i32.
    GlobalThreadIdx,
    /// `subgroup::invocation_id()`, i32 (exact-width programs only).
    Lane,
    /// The lane within an aligned tile of `2^n` lanes, u32.
    TileLane(u8),
}

/// Vote kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteOp {
    /// All lanes' predicates hold.
    All,
    /// Some lane's predicate holds.
    Any,
    /// All lanes hold the same value (`all_equal_tiled`).
    Equal,
}

/// Reduction and scan operations of the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RedOp {
    /// Sum.
    Add,
    /// Product (scans only).
    Mul,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers; scans only).
    And,
    /// Bitwise or (integers; scans only).
    Or,
    /// Bitwise xor (integers; scans only).
    Xor,
}

/// Which result of a subgroup reduction a program reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceForm {
    /// `reduce_*_tiled`: valid in tile lane 0 (the others read 0).
    Lane0,
    /// `reduce_all_*_tiled`: every lane.
    All,
    /// `segmented_reduce_*_tiled` with this bool head flag.
    Segmented,
}

/// Block-wide votes (`sync_*_nonzero`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockVote {
    /// `sync_all_nonzero`.
    All,
    /// `sync_any_nonzero`.
    Any,
    /// `sync_count_nonzero`.
    Count,
}

/// Shuffle addressing (sources are always inside the tile; see [`Expr::Shuffle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShuffleMode {
    /// Lane `(tile base) + (arg & (tile - 1))`: `arg` is the expression operand.
    Idx,
    /// `shuffle_up` by a constant; lanes whose source is outside the tile keep their own value.
    Up(u8),
    /// `shuffle_down` by a constant, likewise.
    Down(u8),
    /// `shuffle_xor` with a constant mask below the tile size.
    Xor(u8),
}

/// How a per-thread atomic's old value is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OwnOp {
    /// A read-modify-write.
    Rmw(AtomicOp),
    /// `atomic_sub`.
    Sub,
    /// Compare and swap against the current value (when the bool operand holds) or another.
    Cas,
    /// An acquire load.
    LoadAcquire,
}

/// A typed expression. Its dtype follows from the node and the program's declarations
/// ([`Expr::dtype`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A constant.
    Const(DType, u64),
    /// A variable.
    Var(u16),
    /// A scalar parameter.
    Param(u16),
    /// An id or size.
    Special(Special),
    /// The index of the enclosing loop at this depth (0 = outermost), u32.
    LoopIndex(u8),
    /// `inputs[k].len()`, i32.
    Len(u16),
    /// `inputs[k][index & (INPUT_LEN-1)]`, indexed in `index_type`.
    Load {
        /// Input array.
        input: u16,
        /// Any integer.
        index: Box<Expr>,
        /// The index's dtype at the access (any integer type).
        index_type: DType,
        /// `volatile_load` instead of a plain load.
        volatile: bool,
    },
    /// One-operand arithmetic (`neg`, `not`, `abs`, `popc`, `clz`).
    Unary(qd::ir::UnOp, Box<Expr>),
    /// Two-operand arithmetic (integer division guarded against zero, float division and square
    /// roots only in their exact forms: see [`Expr::ExactDiv`], [`Expr::ExactSqrt`]).
    Binary(qd::ir::BinOp, Box<Expr>, Box<Expr>),
    /// A comparison (bool).
    Cmp(qd::ir::CmpOp, Box<Expr>, Box<Expr>),
    /// `select(cond, a, b)`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion to a dtype (D5).
    Cast(DType, Box<Expr>),
    /// Bit reinterpretation to a dtype of the same width.
    BitCast(DType, Box<Expr>),
    /// `fma(a, 2^k, c)`: the product is exact, so fused and unfused agree.
    Fma(Box<Expr>, i8, Box<Expr>),
    /// Float `(q * d) / d` for an integer-valued `q` and a small integer `d`, rounded to an
    /// integer: exact on every backend although division is not correctly rounded on Vulkan.
    ExactDiv(DType, Box<Expr>, u8),
    /// Float `sqrt(q * q)` for an integer-valued `q`, rounded to an integer.
    ExactSqrt(DType, Box<Expr>),
    /// A shuffle within the tile of `2^log2` lanes.
    Shuffle {
        /// Addressing.
        mode: ShuffleMode,
        /// Value moved (a shuffle type).
        value: Box<Expr>,
        /// Lane operand of `Idx` (u32); unused otherwise.
        arg: Box<Expr>,
        /// Tile size (log2).
        log2: u8,
    },
    /// `subgroup::broadcast(value, lane)` (exact-width programs).
    Broadcast(Box<Expr>, u8),
    /// The tile's ballot of a bool, shifted down to bit 0 (u64).
    Ballot(Box<Expr>, u8),
    /// A tiled vote (i32 0/1): `All`/`Any` of a bool, `Equal` of a shuffle type.
    Vote(VoteOp, Box<Expr>, u8),
    /// `subgroup::elect()` (exact-width programs), i32.
    Elect,
    /// A tiled reduction (add, min, max) of a shuffle type.
    Reduce {
        /// Operation.
        op: RedOp,
        /// Which result.
        form: ReduceForm,
        /// Value.
        value: Box<Expr>,
        /// Head flag of a segmented reduction (bool); unused otherwise.
        head: Box<Expr>,
        /// Tile size (log2).
        log2: u8,
    },
    /// A tiled inclusive or exclusive scan.
    Scan {
        /// Operation.
        op: RedOp,
        /// Exclusive.
        exclusive: bool,
        /// Value (a shuffle type; and/or/xor integers only).
        value: Box<Expr>,
        /// Tile size (log2).
        log2: u8,
    },
    /// `bitonic_sort_kv_tiled(key, value, log2)`, reading the key (`true`) or the value.
    Sort {
        /// Key (a shuffle type).
        key: Box<Expr>,
        /// Value (a shuffle type).
        value: Box<Expr>,
        /// Read the sorted key rather than the value.
        read_key: bool,
        /// Tile size (log2).
        log2: u8,
    },
    /// A block vote on an i32 (block-uniform control only).
    BlockVote(BlockVote, Box<Expr>),
    /// A block reduction (`all`: to every thread; else valid in thread 0, 0 elsewhere) or scan.
    Block {
        /// Operation (add, min, max).
        op: RedOp,
        /// What: reduce, reduce_all, inclusive or exclusive scan.
        form: BlockForm,
        /// Value (a shuffle type).
        value: Box<Expr>,
    },
    /// An atomic on this thread's own element of `owns[k]`, giving the old value.
    Own {
        /// Array.
        own: u16,
        /// Operation.
        op: OwnOp,
        /// Operand (the array's type; for CAS the desired value).
        value: Box<Expr>,
        /// CAS only: compare against the current value (else against `value` + 1).
        hit: Box<Expr>,
    },
}

/// Block reductions and scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockForm {
    /// `block::reduce_*` (thread 0).
    Reduce,
    /// `block::reduce_all_*`.
    ReduceAll,
    /// `block::inclusive_*`.
    Inclusive,
    /// `block::exclusive_*`.
    Exclusive,
}

impl Program {
    /// The dtype of `e` in this program.
    pub fn dtype(&self, e: &Expr) -> DType {
        use qd::ir::UnOp;
        match e {
            Expr::Const(d, _) | Expr::Cast(d, _) | Expr::BitCast(d, _) => *d,
            Expr::ExactDiv(d, _, _) | Expr::ExactSqrt(d, _) => *d,
            Expr::Var(v) => self.vars[*v as usize].dtype,
            Expr::Param(p) => self.params[*p as usize].0,
            Expr::Special(Special::TileLane(_)) | Expr::LoopIndex(_) => DType::U32,
            Expr::Special(_) | Expr::Len(_) | Expr::Vote(..) | Expr::Elect | Expr::BlockVote(..) => DType::I32,
            Expr::Load { input, .. } => self.inputs[*input as usize].dtype,
            Expr::Unary(UnOp::Popc | UnOp::Clz, _) => DType::U32,
            Expr::Unary(_, a) | Expr::Fma(a, _, _) => self.dtype(a),
            Expr::Binary(_, a, _) => self.dtype(a),
            Expr::Cmp(..) => DType::Bool,
            Expr::Select(_, a, _) => self.dtype(a),
            Expr::Shuffle { value, .. } | Expr::Broadcast(value, _) => self.dtype(value),
            Expr::Ballot(..) => DType::U64,
            Expr::Reduce { value, .. } | Expr::Scan { value, .. } | Expr::Block { value, .. } => self.dtype(value),
            Expr::Sort { key, value, read_key, .. } => self.dtype(if *read_key { key } else { value }),
            Expr::Own { own, .. } => self.owns[*own as usize].dtype,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_types_are_bool_and_every_numeric_type() {
        let want: Vec<DType> = DType::ALL.into_iter().filter(|d| *d == DType::Bool || d.is_numeric()).collect();
        assert_eq!(VALUE_TYPES.to_vec(), want);
    }
}
