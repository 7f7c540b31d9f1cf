//! The vocabulary of [`InstKind::SubgroupReduce`](super::InstKind::SubgroupReduce): which fold a
//! full-subgroup reduction or scan applies, and which lanes each result covers.

use super::{BinOp, ReduxOp};

/// Which lanes' values a [`SubgroupReduce`](super::InstKind::SubgroupReduce) result folds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScanKind {
    /// Lanes `0..=l` for lane `l` (MSL `simd_prefix_inclusive_sum`).
    Inclusive,
    /// Lanes `0..l` for lane `l`, lane 0 getting the identity (MSL `simd_prefix_exclusive_sum`;
    /// a sum only, so the identity is 0).
    Exclusive,
}

impl ReduxOp {
    /// `add`, `min`, ... (mnemonics, feature names).
    pub fn name(self) -> &'static str {
        match self {
            ReduxOp::Add => "add",
            ReduxOp::Min => "min",
            ReduxOp::Max => "max",
            ReduxOp::And => "and",
            ReduxOp::Or => "or",
            ReduxOp::Xor => "xor",
        }
    }

    /// The arithmetic folded across the lanes (D5: integer add wraps).
    pub fn binop(self) -> BinOp {
        match self {
            ReduxOp::Add => BinOp::Add,
            ReduxOp::Min => BinOp::Min,
            ReduxOp::Max => BinOp::Max,
            ReduxOp::And => BinOp::And,
            ReduxOp::Or => BinOp::Or,
            ReduxOp::Xor => BinOp::Xor,
        }
    }
}

/// The op name users know the reduction by: `reduce_add`, `inclusive_add`, `exclusive_add`.
pub fn reduce_name(op: ReduxOp, scan: Option<ScanKind>) -> String {
    let form = match scan {
        None => "reduce",
        Some(ScanKind::Inclusive) => "inclusive",
        Some(ScanKind::Exclusive) => "exclusive",
    };
    format!("{form}_{}", op.name())
}
