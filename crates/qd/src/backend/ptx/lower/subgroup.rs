//! Warp-level and NVIDIA-specific lowering through the printer: shuffles, special registers, and
//! the `nv` families (match, redux, elect, proxy fences, the mbarrier family).

use super::{class, Class, Lower};
use crate::backend::ptx::errors::PtxError;
use crate::backend::ptx::mbarrier::{MbarrierModifier, MbarrierSpace};
use crate::backend::ptx::modifier::{AtomicOrder, NvptxScope};
use crate::backend::ptx::printer::{hex_imm, ProxyKind, FULL_MASK};
use crate::backend::ptx::warp::{MatchMode, MatchType, ReduxKind, ReduxType, ShflMode};
use crate::ir::*;
use crate::trace::TraceError;

impl Lower<'_> {
    /// `shfl.sync` of a 32-bit value, or of a 64-bit one as two 32-bit halves (the validity
    /// predicate comes from the low half). The `c` operand is the full-warp clamp (ptx.md §4.1).
    pub(super) fn shuffle(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        valid: Option<ValueId>,
        mode: ShflMode,
        value: ValueId,
        lane: ValueId,
    ) -> Result<(), TraceError> {
        let t = self.d(value);
        let (d, v, l) = (self.r(dst), self.r(value), self.r(lane));
        let pv = valid.map(|p| self.r(p));
        let c = hex_imm(u64::from(mode.c_operand(32)));
        match class(t) {
            Class::B32 => self.print(inst, |p| p.shfl_sync(mode, &d, pv.as_deref(), &v, &l, &c, FULL_MASK))?,
            Class::F32 => {
                let (a, b) = (self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b32 {a}, {v};"));
                self.print(inst, |p| p.shfl_sync(mode, &b, pv.as_deref(), &a, &l, &c, FULL_MASK))?;
                self.line(format!("mov.b32 {d}, {b};"));
            }
            Class::B64 | Class::F64 => {
                let (lo, hi, lo2, hi2) =
                    (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {v};"));
                self.print(inst, |p| p.shfl_sync(mode, &lo2, pv.as_deref(), &lo, &l, &c, FULL_MASK))?;
                self.print(inst, |p| p.shfl_sync(mode, &hi2, None, &hi, &l, &c, FULL_MASK))?;
                self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"));
            }
            Class::B16 | Class::Pred => return Err(self.err(inst, format!("subgroup shuffle of {t}"))),
        }
        Ok(())
    }

    pub(super) fn special(&mut self, inst: &Inst, dst: ValueId, reg: Special) -> Result<(), TraceError> {
        let d = self.r(dst);
        let sreg = match reg {
            Special::LaneId => NvSreg::Laneid,
            // A trace-time 32 on CUDA; the printer spells it as PTX's constant `WARP_SZ`.
            Special::SubgroupSize => NvSreg::Warpsize,
            Special::ThreadIdx => NvSreg::Tid(0),
            Special::BlockIdx => NvSreg::Ctaid(0),
            Special::BlockDim => NvSreg::Ntid(0),
            Special::GridDim => NvSreg::Nctaid(0),
            Special::GlobalThreadIdx => {
                let (a, b, c) = (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                for (r, sreg) in [(&a, NvSreg::Ctaid(0)), (&b, NvSreg::Ntid(0)), (&c, NvSreg::Tid(0))] {
                    self.print(inst, |p| p.sreg_read(r, sreg))?;
                }
                self.line(format!("mad.lo.u32 {d}, {a}, {b}, {c};"));
                return Ok(());
            }
            Special::Nv(r) => r,
        };
        self.print(inst, |p| p.sreg_read(&d, sreg))
    }

    /// The NVIDIA-only families (seed 004), printed by the printer contract.
    pub(super) fn nv(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        match op {
            NvOp::MatchAny | NvOp::MatchAll => {
                let v = self.r(args[0]);
                let ty = if self.d(args[0]).bits() == 64 { MatchType::B64 } else { MatchType::B32 };
                let d = self.r(dsts[0]);
                if *op == NvOp::MatchAny {
                    self.print(inst, |p| p.match_sync(MatchMode::Any, ty, &d, None, &v, FULL_MASK))?;
                } else {
                    let pred = self.r(dsts[1]);
                    self.print(inst, |p| p.match_sync(MatchMode::All, ty, &d, Some(&pred), &v, FULL_MASK))?;
                }
            }
            NvOp::Redux(r) => {
                let (d, v) = (self.r(dsts[0]), self.r(args[0]));
                let int = if self.d(args[0]).is_signed_int() { ReduxType::S32 } else { ReduxType::U32 };
                // The IR has integer reductions only; the float forms (sm_100a-class) stay the
                // printer's to gate.
                let (kind, ty) = match r {
                    ReduxOp::Add => (ReduxKind::Add, int),
                    ReduxOp::Min => (ReduxKind::Min, int),
                    ReduxOp::Max => (ReduxKind::Max, int),
                    ReduxOp::And => (ReduxKind::And, ReduxType::B32),
                    ReduxOp::Or => (ReduxKind::Or, ReduxType::B32),
                    ReduxOp::Xor => (ReduxKind::Xor, ReduxType::B32),
                };
                self.print(inst, |p| p.redux_sync(kind, ty, &d, &v, FULL_MASK))?;
            }
            NvOp::Elect => {
                let (d, pred) = (self.r(dsts[0]), self.r(dsts[1]));
                self.print(inst, |p| p.elect_sync(&d, &pred, FULL_MASK))?;
            }
            NvOp::ProxyFence(kind) if kind == "mbarrier_init" => self.print(inst, |p| p.fence_mbarrier_init())?,
            NvOp::ProxyFence(kind) => {
                let kind = ProxyKind::parse(kind).map_err(|e| self.ptx_err(inst, e))?;
                self.print(inst, |p| p.fence_proxy(kind))?;
            }
            _ => self.nv_more(inst, op, dsts, args, place)?,
        }
        Ok(())
    }

    /// The mbarrier family on a barrier in shared memory. The plain forms carry no ordering (the
    /// defaults, release arrive and acquire wait, at CTA scope); the transaction-count forms are
    /// spelled with their ordering and `.shared::cta`, as ptx.md shows them to assemble.
    pub(super) fn mbarrier(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        let Some(place) = place else {
            return Err(self.err(inst, "an mbarrier operation without its barrier"));
        };
        if self.k.array_space(place.array) != AddressSpace::Shared {
            return Err(self.err(
                inst,
                format!("an mbarrier lives in shared memory, not in `{}`", self.k.array_name(place.array)),
            ));
        }
        let (addr, _) = self.address(place);
        let addr = format!("[{addr}]");
        let arg = args.first().map(|a| self.r(*a)).unwrap_or_default();
        let dst = dsts.first().map(|d| self.r(*d)).unwrap_or_default();
        let (a, d) = (arg.as_str(), dst.as_str());
        let shared = MbarrierModifier::shared();
        let tx = |order| MbarrierModifier::new(MbarrierSpace::SharedCta).sem(order, NvptxScope::Cta);
        self.print(inst, |p| match op {
            NvOp::MbarrierInit => p.mbarrier_init(MbarrierSpace::Shared, &addr, a),
            NvOp::MbarrierInval => p.mbarrier_inval(MbarrierSpace::Shared, &addr),
            NvOp::MbarrierArrive => p.mbarrier_arrive(&shared, d, &addr, None),
            NvOp::MbarrierArriveNoComplete => p.mbarrier_arrive_no_complete(&shared, d, &addr, a),
            NvOp::MbarrierArriveExpectTx => p.mbarrier_arrive_expect_tx(&tx(AtomicOrder::Release), d, &addr, a),
            NvOp::MbarrierExpectTx => p.mbarrier_expect_tx(&tx(AtomicOrder::Relaxed), &addr, a),
            NvOp::MbarrierCompleteTx => p.mbarrier_complete_tx(&tx(AtomicOrder::Relaxed), &addr, a),
            NvOp::MbarrierTestWait => p.mbarrier_test_wait(&shared, false, d, &addr, a),
            NvOp::MbarrierTryWaitParity => p.mbarrier_try_wait(&shared, true, d, &addr, a, None),
            other => {
                Err(PtxError::InvalidForm { inst: format!("{other:?}"), reason: "not an mbarrier operation".into() })
            }
        })
    }
}
