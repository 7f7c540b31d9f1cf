//! SIMD-group data movement, reductions, barriers and fences in MSL.
//!
//! `simd_shuffle*` and `simd_broadcast` have no 64-bit, bool or 8-bit overloads: 64-bit values
//! move as two 32-bit halves, bools and 8-bit integers as `ushort`/`short`, bf16 as its bits. An
//! out-of-range source gives the lane's own value (D8), as on the other backends. Fences are
//! `atomic_thread_fence` (MSL 3.2), never a barrier, so they stay legal in divergent code.

use super::expr::ty;
use super::printer::Printer;
use crate::ir::uniformity::Uniformity;
use crate::ir::*;
use crate::trace::TraceError;

/// The `mem_flags` every barrier and fence orders: D6 has a block barrier and a block fence order
/// device memory too.
const FLAGS: &str = "mem_flags::mem_device | mem_flags::mem_threadgroup";

impl Printer<'_> {
    /// `f(x, lane)` for a SIMD-group movement `f` of value `x` of type `d`, through the types the
    /// MSL overloads take.
    fn moved(&self, f: &str, d: DType, x: &str, lane: &str) -> String {
        match d {
            DType::I64 | DType::U64 => {
                let t = ty(d);
                format!(
                    "{t}(ulong({f}(uint(ulong({x})), {lane})) | (ulong({f}(uint(ulong({x}) >> 32), {lane})) << 32))"
                )
            }
            DType::Bool => format!("({f}(ushort({x}), {lane}) != 0)"),
            DType::I8 => format!("char({f}(short({x}), {lane}))"),
            DType::U8 => format!("uchar({f}(ushort({x}), {lane}))"),
            DType::BF16 => format!("as_type<bfloat>({f}(as_type<ushort>({x}), {lane}))"),
            _ => format!("{f}({x}, {lane})"),
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
        let (x, a, w) = (self.v(value), format!("uint({})", self.v(lane)), self.k.subgroup_size);
        let (f, ok) = match kind {
            ShuffleKind::Idx => ("simd_shuffle", format!("{a} < {w}u")),
            ShuffleKind::Up => ("simd_shuffle_up", format!("{a} <= qd_lane")),
            ShuffleKind::Down => ("simd_shuffle_down", format!("{a} < {w}u - qd_lane")),
            ShuffleKind::Xor => ("simd_shuffle_xor", format!("(qd_lane ^ {a}) < {w}u")),
        };
        let ok_name = format!("{}_ok", self.v(dst));
        self.line(format!("const bool {ok_name} = {ok};"));
        let got = self.moved(f, self.d(value), &x, &format!("ushort({a})"));
        let got = self.every_lane(dst, got);
        self.def(dst, format!("{ok_name} ? {got} : {x}"));
        if let Some(p) = valid {
            self.def(p, ok_name);
        }
    }

    /// A constant lane is `simd_broadcast`; a lane that may differ between lanes is `simd_shuffle`
    /// (`simd_broadcast` needs a SIMD-group-uniform lane); a lane outside the group gives the
    /// lane's own value.
    pub(super) fn broadcast(&mut self, dst: ValueId, value: ValueId, lane: ValueId) {
        let (x, d, w) = (self.v(value), self.d(value), self.k.subgroup_size);
        let e = match self.consts.get(&lane).copied() {
            Some(c) if (c & 0xFFFF_FFFF) < w as u64 => self.moved("simd_broadcast", d, &x, &format!("ushort({c})")),
            Some(_) => x,
            None => {
                let l = format!("uint({})", self.v(lane));
                let f = if self.uniformity[lane.0 as usize] <= Uniformity::Subgroup {
                    "simd_broadcast"
                } else {
                    "simd_shuffle"
                };
                let got = self.moved(f, d, &x, &format!("ushort({l})"));
                let got = self.every_lane(dst, got);
                format!("{l} < {w}u ? {got} : {x}")
            }
        };
        self.def(dst, e);
    }

    /// `moved` computed by every lane into `<dst>_got`: a SIMD-group function must not sit in
    /// one arm of a `?:`, where the lanes taking the other arm would not take part.
    fn every_lane(&mut self, dst: ValueId, moved: String) -> String {
        let name = format!("{}_got", self.v(dst));
        self.line(format!("const {} {name} = {moved};", ty(self.d(dst))));
        name
    }

    /// `simd_sum/min/max/and/or/xor(x)` and `simd_prefix_{inclusive,exclusive}_sum(x)` on a 32-bit
    /// integer. Sums go through `uint`, where overflow wraps (D5); min and max keep the signedness.
    pub(super) fn reduce(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        op: ReduxOp,
        scan: Option<ScanKind>,
        value: ValueId,
    ) -> Result<(), TraceError> {
        let d = self.d(value);
        if !matches!(d, DType::I32 | DType::U32) {
            return Err(self.refuse(
                inst,
                format!("MSL's SIMD-group reductions take no {d}; the library reduces with shuffle trees"),
            ));
        }
        let f = match (scan, op) {
            (None, ReduxOp::Add) => "simd_sum",
            (None, ReduxOp::Min) => "simd_min",
            (None, ReduxOp::Max) => "simd_max",
            (None, ReduxOp::And) => "simd_and",
            (None, ReduxOp::Or) => "simd_or",
            (None, ReduxOp::Xor) => "simd_xor",
            (Some(ScanKind::Inclusive), ReduxOp::Add) => "simd_prefix_inclusive_sum",
            (Some(ScanKind::Exclusive), ReduxOp::Add) => "simd_prefix_exclusive_sum",
            (Some(_), _) => {
                return Err(self.refuse(inst, "MSL has prefix scans of sums and products only (simd_prefix_*)"))
            }
        };
        let x = self.v(value);
        let e =
            if op == ReduxOp::Add && d == DType::I32 { format!("int({f}(uint({x})))") } else { format!("{f}({x})") };
        self.def(dst, e);
        Ok(())
    }

    pub(super) fn barrier(&mut self, f: &str) {
        self.line(format!("{f}({FLAGS});"));
    }

    /// A sequentially consistent fence at `scope`: threadgroup scope for subgroup and block fences
    /// (a SIMD-group fence is over-strict but correct, D6), device scope for grid fences.
    pub(super) fn fence(&mut self, scope: Scope) {
        let s = if scope >= Scope::Cluster { "thread_scope_device" } else { "thread_scope_threadgroup" };
        self.line(format!("atomic_thread_fence({FLAGS}, memory_order_seq_cst, {s});"));
    }
}
