//! Wave operations (seed 002): shuffles and dynamic broadcasts through `ds_bpermute`, constant
//! broadcasts through `readlane`, ballots, votes, barriers and fences (seeds 000, 001).

use super::caps;
use super::expr::{int_ty, ty};
use super::memory::syncscope;
use super::printer::Printer;
use crate::ir::{DType, Ordering, Scope, ShuffleKind, ValueId, VoteKind};

impl Printer<'_> {
    /// This lane's index in the wave: `mbcnt_hi(-1, mbcnt_lo(-1, 0))`.
    pub(super) fn lane_id(&mut self) -> String {
        let lo = self.intrinsic("i32", "llvm.amdgcn.mbcnt.lo", &[("i32", "-1".into()), ("i32", "0".into())]);
        let lo = self.emit(lo);
        let hi = self.intrinsic("i32", "llvm.amdgcn.mbcnt.hi", &[("i32", "-1".into()), ("i32", lo)]);
        self.emit(hi)
    }

    /// A lane operand as i32.
    fn lane_i32(&mut self, lane: ValueId) -> String {
        let d = self.d(lane);
        let x = self.v(lane);
        match d.bits() {
            32 => x,
            b if b > 32 => self.emit(format!("trunc {} {x} to i32", ty(d))),
            _ if d.is_signed_int() => self.emit(format!("sext {} {x} to i32", ty(d))),
            _ => self.emit(format!("zext {} {x} to i32", ty(d))),
        }
    }

    /// `x` (of type `d`) as 32-bit pieces, low first.
    fn pieces(&mut self, d: DType, x: &str) -> Vec<String> {
        let t = ty(d);
        let bits = int_ty(d.bits());
        let raw = if d.is_float() { self.emit(format!("bitcast {t} {x} to {bits}")) } else { x.to_string() };
        match d.bits() {
            32 => vec![raw],
            64 => {
                let lo = self.emit(format!("trunc i64 {raw} to i32"));
                let high = self.emit(format!("lshr i64 {raw}, 32"));
                let hi = self.emit(format!("trunc i64 {high} to i32"));
                vec![lo, hi]
            }
            _ => vec![self.emit(format!("zext {bits} {raw} to i32"))],
        }
    }

    /// Defines `dst` (of type `d`) from 32-bit pieces.
    fn assemble(&mut self, dst: ValueId, d: DType, pieces: &[String]) {
        let t = ty(d);
        let bits = int_ty(d.bits());
        let raw = match d.bits() {
            32 => pieces[0].clone(),
            64 => {
                let lo = self.emit(format!("zext i32 {} to i64", pieces[0]));
                let hi = self.emit(format!("zext i32 {} to i64", pieces[1]));
                let high = self.emit(format!("shl i64 {hi}, 32"));
                self.emit(format!("or i64 {high}, {lo}"))
            }
            _ => self.emit(format!("trunc i32 {} to {bits}", pieces[0])),
        };
        if d.is_float() {
            self.def(dst, format!("bitcast {bits} {raw} to {t}"));
        } else {
            self.copy(dst, &raw);
        }
    }

    /// One 32-bit piece read from lane `src` (i32) of every lane. The byte address goes through an
    /// empty `asm` that claims to produce a VGPR, so LLVM cannot prove the lane uniform and turn
    /// the `ds_bpermute` into a wave-global `v_readlane`. On RDNA, where a wave64 `ds_bpermute`
    /// reaches only its own half, the other half's value comes from `v_permlane64` and a second
    /// `ds_bpermute`, selected by whether `src` lies in the other half (seed 002).
    fn bpermute(&mut self, src: &str, me: &str, x: &str) -> String {
        let addr = self.emit(format!("shl i32 {src}, 2"));
        let addr = self.emit(format!("call i32 asm sideeffect \"\", \"=v,0\"(i32 {addr})"));
        let call = |p: &mut Self, v: &str| {
            let c = p.intrinsic("i32", "llvm.amdgcn.ds.bpermute", &[("i32", addr.clone()), ("i32", v.to_string())]);
            p.emit(c)
        };
        let own = call(self, x);
        if !caps::bpermute_is_half_wave(self.arch) {
            return own;
        }
        let swapped = self.intrinsic("i32", "llvm.amdgcn.permlane64.i32", &[("i32", x.to_string())]);
        let swapped = self.emit(swapped);
        let other = call(self, &swapped);
        let halves = self.emit(format!("xor i32 {src}, {me}"));
        let half_bit = self.emit(format!("and i32 {halves}, 32"));
        let same = self.emit(format!("icmp eq i32 {half_bit}, 0"));
        self.emit(format!("select i1 {same}, i32 {own}, i32 {other}"))
    }

    /// Every lane reads `value` from lane `src` (i32), piece by piece.
    fn read_lane(&mut self, dst: ValueId, value: ValueId, src: &str, me: &str) {
        let d = self.d(value);
        let x = if d == DType::Bool { self.emit(format!("zext i1 {} to i32", self.v(value))) } else { self.v(value) };
        let dt = if d == DType::Bool { DType::U32 } else { d };
        let pieces = self.pieces(dt, &x);
        let read: Vec<_> = pieces.iter().map(|p| self.bpermute(src, me, p)).collect();
        if d == DType::Bool {
            self.def(dst, format!("icmp ne i32 {}, 0", read[0]));
        } else {
            self.assemble(dst, d, &read);
        }
    }

    pub(super) fn shuffle(
        &mut self,
        dst: ValueId,
        valid: Option<ValueId>,
        kind: ShuffleKind,
        value: ValueId,
        lane: ValueId,
    ) {
        let me = self.lane_id();
        let arg = self.lane_i32(lane);
        let src = match kind {
            ShuffleKind::Idx => arg,
            ShuffleKind::Up => self.emit(format!("sub i32 {me}, {arg}")),
            ShuffleKind::Down => self.emit(format!("add i32 {me}, {arg}")),
            ShuffleKind::Xor => self.emit(format!("xor i32 {me}, {arg}")),
        };
        if let Some(valid) = valid {
            // A lane below 0 wraps to a large unsigned number: one unsigned compare covers both ends.
            self.def(valid, format!("icmp ult i32 {src}, {}", self.k.subgroup_size));
        }
        self.read_lane(dst, value, &src, &me);
    }

    /// A broadcast from a compile-time lane is `v_readlane` per piece; from a run-time lane,
    /// `ds_bpermute` (which reads from any lane, `DynamicBroadcastLane`).
    pub(super) fn broadcast(&mut self, dst: ValueId, value: ValueId, lane: ValueId) {
        let lane_text = self.v(lane);
        let constant = lane_text.parse::<u32>().ok().filter(|l| *l < self.k.subgroup_size);
        let Some(l) = constant else {
            let me = self.lane_id();
            let src = self.lane_i32(lane);
            return self.read_lane(dst, value, &src, &me);
        };
        let d = self.d(value);
        let x = if d == DType::Bool { self.emit(format!("zext i1 {} to i32", self.v(value))) } else { self.v(value) };
        let dt = if d == DType::Bool { DType::U32 } else { d };
        let pieces = self.pieces(dt, &x);
        let read: Vec<_> = pieces
            .into_iter()
            .map(|p| {
                let c = self.intrinsic("i32", "llvm.amdgcn.readlane.i32", &[("i32", p), ("i32", l.to_string())]);
                self.emit(c)
            })
            .collect();
        if d == DType::Bool {
            self.def(dst, format!("icmp ne i32 {}, 0", read[0]));
        } else {
            self.assemble(dst, d, &read);
        }
    }

    /// The 64-bit mask of lanes whose `pred` holds (`ballot.i32` cannot be selected under wave64).
    pub(super) fn ballot(&mut self, pred: &str) -> String {
        let c = self.intrinsic("i64", "llvm.amdgcn.ballot.i64", &[("i1", pred.to_string())]);
        self.emit(c)
    }

    pub(super) fn vote(&mut self, dst: ValueId, kind: VoteKind, pred: ValueId) {
        let mask = self.ballot(&self.v(pred));
        match kind {
            VoteKind::Any => self.def(dst, format!("icmp ne i64 {mask}, 0")),
            VoteKind::All | VoteKind::Uni => {
                // The ballot of `true` is the active lanes.
                let active = self.ballot("true");
                let all = self.emit(format!("icmp eq i64 {mask}, {active}"));
                if kind == VoteKind::All {
                    self.copy(dst, &all);
                } else {
                    let none = self.emit(format!("icmp eq i64 {mask}, 0"));
                    self.def(dst, format!("or i1 {all}, {none}"));
                }
            }
        }
    }

    /// `block.sync`: a workgroup release fence, `s_barrier`, a workgroup acquire fence (what HIP's
    /// `__syncthreads` is). LLVM drops the barrier itself when the workgroup is one wave.
    pub(super) fn block_barrier(&mut self) {
        self.declare("declare void @llvm.amdgcn.s.barrier()");
        self.line("fence syncscope(\"workgroup\") release");
        self.line("call void @llvm.amdgcn.s.barrier()");
        self.line("fence syncscope(\"workgroup\") acquire");
    }

    /// A fence: subgroup and block scope at the workgroup (a wave has no narrower fence that
    /// orders LDS and global memory, seed 002), device at the agent. A relaxed fence orders
    /// nothing in LLVM's model, so it prints as acq_rel (the IR's fences are at least that).
    pub(super) fn fence(&mut self, scope: Scope, order: Ordering) {
        let scope = if scope == Scope::Subgroup { Scope::Block } else { scope };
        let o = match order {
            Ordering::Relaxed | Ordering::AcqRel => "acq_rel",
            Ordering::Acquire => "acquire",
            Ordering::Release => "release",
            Ordering::SeqCst => "seq_cst",
        };
        self.line(format!("fence{} {o}", syncscope(scope)));
    }
}
