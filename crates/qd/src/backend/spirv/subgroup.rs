//! Subgroup data movement: shuffles (D8: an out-of-range source gives the lane's own value) and
//! broadcasts, 64-bit values moved as two 32-bit halves.

use super::lower::{Lower, SCOPE_SUBGROUP};
use super::types::{reg_ty, Ty};
use crate::ir::*;
use rspirv::dr::Operand;
use rspirv::spirv::{Capability, Op, Word};

impl Lower<'_> {
    /// D8: an out-of-range source gives the lane's own value; `valid` says whether it was in range.
    pub(super) fn shuffle(
        &mut self,
        dst: ValueId,
        valid: Option<ValueId>,
        kind: ShuffleKind,
        value: ValueId,
        lane: ValueId,
    ) {
        let t = reg_ty(self.d(value));
        let (x, a) = (self.v(value), self.v(lane));
        let me = self.lane_id();
        let w = self.c32(self.target.subgroup_size);
        let (op, ok) = match kind {
            ShuffleKind::Idx => (Op::GroupNonUniformShuffle, self.op_t(Op::ULessThan, Ty::Bool, &[a, w])),
            ShuffleKind::Up => (Op::GroupNonUniformShuffleUp, self.op_t(Op::ULessThanEqual, Ty::Bool, &[a, me])),
            ShuffleKind::Down => {
                let room = self.op_t(Op::ISub, Ty::U32, &[w, me]);
                (Op::GroupNonUniformShuffleDown, self.op_t(Op::ULessThan, Ty::Bool, &[a, room]))
            }
            ShuffleKind::Xor => {
                let src = self.op_t(Op::BitwiseXor, Ty::U32, &[me, a]);
                (Op::GroupNonUniformShuffleXor, self.op_t(Op::ULessThan, Ty::Bool, &[src, w]))
            }
        };
        self.m.capability(if matches!(kind, ShuffleKind::Idx | ShuffleKind::Xor) {
            Capability::GroupNonUniformShuffle
        } else {
            Capability::GroupNonUniformShuffleRelative
        });
        let got = self.group_move(op, t, x, a);
        let r = self.op_t(Op::Select, t, &[ok, got, x]);
        self.set(dst, r);
        if let Some(p) = valid {
            self.set(p, ok);
        }
    }

    /// `OpGroupNonUniformBroadcast` needs a constant lane before SPIR-V 1.5: a constant lane uses
    /// it, any other (subgroup-uniform, checked by the verifier) lane is a shuffle.
    pub(super) fn broadcast(&mut self, dst: ValueId, value: ValueId, lane: ValueId) {
        let t = reg_ty(self.d(value));
        let x = self.v(value);
        let w = self.target.subgroup_size as u64;
        let r = match self.consts.get(&lane).copied() {
            Some(c) if c & 0xFFFF_FFFF < w => {
                self.m.capability(Capability::GroupNonUniformBallot);
                let l = self.v(lane);
                self.group_move(Op::GroupNonUniformBroadcast, t, x, l)
            }
            Some(_) => x,
            None => {
                self.m.capability(Capability::GroupNonUniformShuffle);
                let l = self.v(lane);
                let wc = self.c32(w as u32);
                let ok = self.op_t(Op::ULessThan, Ty::Bool, &[l, wc]);
                let got = self.group_move(Op::GroupNonUniformShuffle, t, x, l);
                self.op_t(Op::Select, t, &[ok, got, x])
            }
        };
        self.set(dst, r);
    }

    /// One subgroup data movement (`op`: a shuffle or broadcast taking the value and a lane or
    /// offset) of a value of type `t`. 64-bit values move as two 32-bit halves: the hardware moves
    /// 32 bits per lane anyway (NVIDIA's SHFL, AMD's ds_bpermute), and lavapipe's LLVM 15 crashes
    /// compiling some kernels that shuffle 64-bit values natively (e.g. a block scan of i64 on
    /// 8-lane subgroups: a segfault in type legalization on AMD EPYC hosts).
    fn group_move(&mut self, op: Op, t: Ty, x: Word, lane: Word) -> Word {
        let sg = self.scope(SCOPE_SUBGROUP);
        if !matches!(t, Ty::U64 | Ty::F64) {
            let ty = self.m.ty(t);
            return self.op(op, Some(ty), vec![Operand::IdScope(sg), Operand::IdRef(x), Operand::IdRef(lane)]);
        }
        let v2 = self.m.vector(Ty::U32, 2);
        let u32t = self.m.ty(Ty::U32);
        let pair = self.op(Op::Bitcast, Some(v2), vec![Operand::IdRef(x)]);
        let halves: Vec<Word> = (0..2)
            .map(|k| {
                let half =
                    self.op(Op::CompositeExtract, Some(u32t), vec![Operand::IdRef(pair), Operand::LiteralBit32(k)]);
                self.op(op, Some(u32t), vec![Operand::IdScope(sg), Operand::IdRef(half), Operand::IdRef(lane)])
            })
            .collect();
        let moved = self.op(Op::CompositeConstruct, Some(v2), halves.into_iter().map(Operand::IdRef).collect());
        self.op_t(Op::Bitcast, t, &[moved])
    }
}
