//! Warp-level collectives (seed 004): `redux.sync`, `shfl.sync`, `vote.sync`, `match.sync`,
//! `bar.warp.sync`, plus `activemask` and `elect.sync`. The last operand of each `.sync` form is
//! the membership mask ([`FULL_MASK`](super::FULL_MASK) for the whole warp).

use super::caps::Feature;
use super::errors::PtxError;
use super::printer::PtxPrinter;

/// `shfl.sync` source addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShflMode {
    /// `.idx`: read lane `b` (within the segment).
    Idx,
    /// `.up`: read lane `lane - b`.
    Up,
    /// `.down`: read lane `lane + b`.
    Down,
    /// `.bfly`: read lane `lane ^ b`.
    Bfly,
}

impl ShflMode {
    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            ShflMode::Idx => "idx",
            ShflMode::Up => "up",
            ShflMode::Down => "down",
            ShflMode::Bfly => "bfly",
        }
    }

    /// The `c` operand for a logical width of `width` lanes (a power of two ≤ 32): the segment
    /// mask `32 - width` in bits 8..13 and, except for `.up`, the clamp `0x1F` (ptx.md §4.1).
    pub fn c_operand(self, width: u32) -> u32 {
        let seg = (32 - width.clamp(1, 32)) << 8;
        match self {
            ShflMode::Up => seg,
            _ => seg | 0x1F,
        }
    }
}

/// `vote.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// `.all.pred`.
    All,
    /// `.any.pred`.
    Any,
    /// `.uni.pred`.
    Uni,
    /// `.ballot.b32` (returns the 32-bit mask).
    Ballot,
}

/// `match.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchMode {
    /// `.any`: mask of lanes with the same value (no predicate output).
    Any,
    /// `.all`: the mask if every lane agrees (else 0), plus an optional all-equal predicate.
    All,
}

/// The value type `match.sync` compares (the mask result is always 32-bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchType {
    /// `.b32`.
    B32,
    /// `.b64`.
    B64,
}

/// The seed's `nvvm.redux.sync` kind enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduxKind {
    /// `.add` (`.s32` or `.u32`).
    Add,
    /// Unsigned minimum: `.min.u32`.
    UMin,
    /// Unsigned maximum: `.max.u32`.
    UMax,
    /// Minimum (`.s32`, or `.u32`).
    Min,
    /// Maximum (`.s32`, or `.u32`).
    Max,
    /// `.and.b32`.
    And,
    /// `.or.b32`.
    Or,
    /// `.xor.b32`.
    Xor,
    /// `.min.f32` (sm_100a-class targets).
    FMin,
    /// `.max.f32` (sm_100a-class targets).
    FMax,
    /// `.min.abs.NaN.f32` (sm_100a-class targets).
    FMinAbsNan,
    /// `.max.abs.NaN.f32` (sm_100a-class targets).
    FMaxAbsNan,
}

/// The type suffix of `redux.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduxType {
    /// `.u32`.
    U32,
    /// `.s32`.
    S32,
    /// `.b32`.
    B32,
    /// `.f32`.
    F32,
}

impl ReduxType {
    fn name(self) -> &'static str {
        match self {
            ReduxType::U32 => "u32",
            ReduxType::S32 => "s32",
            ReduxType::B32 => "b32",
            ReduxType::F32 => "f32",
        }
    }
}

impl PtxPrinter {
    /// `shfl.sync.<mode>.b32 d[|p], a, b, c, mask;` with the optional validity predicate `valid`.
    ///
    /// `shfl.sync.bfly.b32 %r0|%p0, %r1, 0x10, 0x1F, 0xFFFFFFFF;`
    #[allow(clippy::too_many_arguments)] // one parameter per PTX operand, in PTX's order
    pub fn shfl_sync(
        &mut self,
        mode: ShflMode,
        dst: &str,
        valid: Option<&str>,
        a: &str,
        b: &str,
        c: &str,
        mask: &str,
    ) -> Result<String, PtxError> {
        self.require(&[Feature::ShflSync])?;
        let d = dest(dst, valid);
        Ok(format!("shfl.sync.{}.b32 {d}, {a}, {b}, {c}, {mask};", mode.name()))
    }

    /// `vote.sync.{all,any,uni}.pred d, a, mask;` or `vote.sync.ballot.b32 d, a, mask;` (`a` is a
    /// predicate, optionally negated as `!%p1`).
    pub fn vote_sync(&mut self, mode: VoteMode, dst: &str, pred: &str, mask: &str) -> Result<String, PtxError> {
        self.require(&[Feature::VoteSync])?;
        let m = match mode {
            VoteMode::All => "all.pred",
            VoteMode::Any => "any.pred",
            VoteMode::Uni => "uni.pred",
            VoteMode::Ballot => "ballot.b32",
        };
        Ok(format!("vote.sync.{m} {dst}, {pred}, {mask};"))
    }

    /// `match.sync.any.<ty> d, a, mask;` or `match.sync.all.<ty> d[|p], a, mask;` (sm_70).
    /// `match.any` takes no predicate output (ptxas: "Predicate output not allowed").
    pub fn match_sync(
        &mut self,
        mode: MatchMode,
        ty: MatchType,
        dst: &str,
        pred: Option<&str>,
        a: &str,
        mask: &str,
    ) -> Result<String, PtxError> {
        if mode == MatchMode::Any && pred.is_some() {
            return Err(PtxError::InvalidForm {
                inst: "match.sync.any".into(),
                reason: "match.any takes no predicate output".into(),
            });
        }
        self.require(&[Feature::MatchSync])?;
        let m = if mode == MatchMode::Any { "any" } else { "all" };
        let t = if ty == MatchType::B32 { "b32" } else { "b64" };
        Ok(format!("match.sync.{m}.{t} {}, {a}, {mask};", dest(dst, pred)))
    }

    /// `redux.sync.<op>.<type> d, a, mask;`. Integer forms need sm_80; the float min/max forms
    /// exist only on sm_100a/sm_103a (PTX 8.6; ptxas rejects them on sm_90, sm_100, sm_110a,
    /// sm_120a).
    ///
    /// `redux.sync.add.s32 %r0, %r1, 0xFFFFFFFF;`
    pub fn redux_sync(
        &mut self,
        kind: ReduxKind,
        ty: ReduxType,
        dst: &str,
        src: &str,
        mask: &str,
    ) -> Result<String, PtxError> {
        use ReduxKind::*;
        let (op, legal) = match kind {
            Add => ("add", matches!(ty, ReduxType::U32 | ReduxType::S32)),
            UMin => ("min", ty == ReduxType::U32),
            UMax => ("max", ty == ReduxType::U32),
            Min => ("min", matches!(ty, ReduxType::U32 | ReduxType::S32)),
            Max => ("max", matches!(ty, ReduxType::U32 | ReduxType::S32)),
            And => ("and", ty == ReduxType::B32),
            Or => ("or", ty == ReduxType::B32),
            Xor => ("xor", ty == ReduxType::B32),
            FMin => ("min", ty == ReduxType::F32),
            FMax => ("max", ty == ReduxType::F32),
            FMinAbsNan => ("min.abs.NaN", ty == ReduxType::F32),
            FMaxAbsNan => ("max.abs.NaN", ty == ReduxType::F32),
        };
        if !legal {
            return Err(PtxError::InvalidForm {
                inst: format!("redux.sync.{op}"),
                reason: format!("type .{} is not allowed (ptxas: Incorrect type)", ty.name()),
            });
        }
        if ty == ReduxType::F32 {
            self.require(&[Feature::ReduxSync, Feature::ReduxF32])?;
        } else {
            self.require(&[Feature::ReduxSync])?;
        }
        Ok(format!("redux.sync.{op}.{} {dst}, {src}, {mask};", ty.name()))
    }

    /// `bar.warp.sync mask;`
    pub fn bar_warp_sync(&mut self, mask: &str) -> Result<String, PtxError> {
        self.require(&[Feature::BarWarpSync])?;
        Ok(format!("bar.warp.sync {mask};"))
    }

    /// `activemask.b32 d;` (sm_30, PTX 6.2).
    pub fn activemask(&mut self, dst: &str) -> Result<String, PtxError> {
        self.require(&[Feature::Activemask])?;
        Ok(format!("activemask.b32 {dst};"))
    }

    /// `elect.sync d|p, mask;` (sm_90, PTX 8.0).
    pub fn elect_sync(&mut self, dst: &str, pred: &str, mask: &str) -> Result<String, PtxError> {
        self.require(&[Feature::ElectSync])?;
        Ok(format!("elect.sync {dst}|{pred}, {mask};"))
    }
}

fn dest(dst: &str, pred: Option<&str>) -> String {
    match pred {
        Some(p) => format!("{dst}|{p}"),
        None => dst.to_string(),
    }
}
