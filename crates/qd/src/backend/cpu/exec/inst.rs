//! Straight-line instructions for the lanes of one path: strict-mode poison propagation, D5
//! arithmetic through `ir::eval`, special registers, loads, stores and atomics (through
//! `access.rs`), and the hand-off of collectives and the NVIDIA families (`collective.rs`).

use super::access::atomic_apply;
use super::{full, lanes, width_mask, BlockExec, EmuError, EmuErrorKind, LaunchGeometry, Path};
use crate::ir::eval;
use crate::ir::*;
use std::sync::atomic::Ordering as MemOrd;
use std::time::Instant;

impl<'a, 'b> BlockExec<'a, 'b> {
    /// Executes one straight-line instruction for the lanes of `path`.
    pub(super) fn exec(&mut self, kind: &InstKind, loc: SrcLoc, path: &Path) -> Result<(), EmuError> {
        use InstKind::*;
        let k = &self.sh.prog.kernel;
        let w = self.width;
        let sgi = path.sg;
        let mask = path.mask;
        // Poison propagation for lane-local ops: a lane's result is poisoned when any operand is.
        if self.sh.opts.strict {
            let uses = kind.uses();
            let mut p = 0u64;
            for u in &uses {
                p |= self.sgs[sgi].poison[u.0 as usize];
            }
            if let LocalGet { local, .. } = kind {
                p |= self.sgs[sgi].local_poison[local.0 as usize];
            }
            match kind {
                Store { value, .. } | Atomic { value, .. } if self.sgs[sgi].poison[value.0 as usize] & mask != 0 => {
                    return Err(self.err(Some(loc), EmuErrorKind::Poison { op: self.op_name(kind) }));
                }
                LocalSet { local, value } => {
                    let pv = self.sgs[sgi].poison[value.0 as usize] & mask;
                    let lp = &mut self.sgs[sgi].local_poison[local.0 as usize];
                    *lp = (*lp & !mask) | pv;
                }
                _ => {}
            }
            // A select's lane takes poison only from its condition and the operand it picks.
            if let Select { cond, a, b, .. } = kind {
                let sg = &self.sgs[sgi];
                let (pc, pa, pb) = (sg.poison[cond.0 as usize], sg.poison[a.0 as usize], sg.poison[b.0 as usize]);
                let mut chosen = 0u64;
                for l in lanes(mask) {
                    let picks_a = sg.regs[cond.0 as usize * w + l] & 1 != 0;
                    chosen |= (if picks_a { pa } else { pb }) & (1 << l);
                }
                p = pc | chosen;
            }
            if !kind.is_subgroup_collective() {
                for d in kind.defs() {
                    let slot = &mut self.sgs[sgi].poison[d.0 as usize];
                    *slot = (*slot & !mask) | (p & mask);
                }
            }
        }
        macro_rules! per_lane {
            ($dst:expr, |$l:ident| $body:expr) => {{
                let dst = $dst.0 as usize;
                for $l in lanes(mask) {
                    let r: u64 = $body;
                    self.sgs[sgi].regs[dst * w + $l] = r;
                }
            }};
        }
        match kind {
            Const { dst, value } => per_lane!(dst, |_l| value.bits),
            Unary { dst, op, a } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::unary(d, *op, self.reg(sgi, *a, l)).map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Binary { dst, op, a, b } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::binary(d, *op, self.reg(sgi, *a, l), self.reg(sgi, *b, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Cmp { dst, op, a, b } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::compare(d, *op, self.reg(sgi, *a, l), self.reg(sgi, *b, l)))
            }
            Select { dst, cond, a, b } => per_lane!(dst, |l| if self.reg(sgi, *cond, l) & 1 != 0 {
                self.reg(sgi, *a, l)
            } else {
                self.reg(sgi, *b, l)
            }),
            Cast { dst, a } => {
                let (from, to) = (k.dtype(*a), k.dtype(*dst));
                per_lane!(dst, |l| eval::cast(from, to, self.reg(sgi, *a, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            BitCast { dst, a } => per_lane!(dst, |l| self.reg(sgi, *a, l)),
            Fma { dst, a, b, c } => {
                let d = k.dtype(*a);
                per_lane!(dst, |l| eval::fma(d, self.reg(sgi, *a, l), self.reg(sgi, *b, l), self.reg(sgi, *c, l))
                    .map_err(|e| self.eval_err(kind, loc, e))?)
            }
            Special { dst, reg } => {
                let geo = self.sh.geo;
                let block = self.block as u64;
                let (nsg, start) = (self.sgs.len() as u64, self.sh.start);
                per_lane!(dst, |l| special_value(*reg, l, sgi, w, block, geo, nsg, start))
            }
            ArrayLen { dst, array } => {
                let n = self.array_len(*array) as u64;
                per_lane!(dst, |_l| n)
            }
            LocalGet { dst, local } => {
                per_lane!(dst, |l| self.sgs[sgi].locals[local.0 as usize * w + l])
            }
            LocalSet { local, value } => {
                for l in lanes(mask) {
                    let v = self.reg(sgi, *value, l);
                    self.sgs[sgi].locals[local.0 as usize * w + l] = v;
                }
            }
            Load { dst, place, kind: lk } => {
                if *lk != LoadKind::Plain {
                    self.last_spin_op = Some((self.op_name(kind), loc));
                }
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let v = self.mem_read(sgi, place.array, i, l, *lk);
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = v;
                }
            }
            Store { place, value, kind: sk } => {
                if matches!(sk, StoreKind::Ordered(o, _) if *o != Ordering::Relaxed) {
                    std::sync::atomic::fence(MemOrd::Release);
                }
                let m = width_mask(k.dtype(*value));
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let v = self.reg(sgi, *value, l) & m;
                    self.mem_write(sgi, place.array, i, l, v, *sk);
                }
            }
            Atomic { dst, place, op, value, ordering, scope } => {
                self.last_spin_op = Some((self.op_name(kind), loc));
                let d = k.array_dtype(place.array);
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let y = self.reg(sgi, *value, l);
                    let old = self.rmw(sgi, place.array, i, l, *ordering, *scope, |old| atomic_apply(d, *op, old, y));
                    if let Some(dst) = dst {
                        self.sgs[sgi].regs[dst.0 as usize * w + l] = old;
                    }
                }
            }
            Cas { dst, place, expected, desired, ordering, scope } => {
                self.last_spin_op = Some((self.op_name(kind), loc));
                let m = width_mask(k.array_dtype(place.array));
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let (e, n) = (self.reg(sgi, *expected, l) & m, self.reg(sgi, *desired, l) & m);
                    let cas = |old| if old == e { n } else { old };
                    let old = self.rmw(sgi, place.array, i, l, *ordering, *scope, cas);
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = old;
                }
            }
            WordShift { dst, place } => {
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let (first, _, bits) = self.word_of(place.array, i);
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = ((i - first) as u64) * u64::from(bits);
                }
            }
            WordCas { dst, place, expected, desired, ordering, scope } => {
                self.last_spin_op = Some((self.op_name(kind), loc));
                for l in lanes(mask) {
                    let i = self.index(kind, loc, sgi, place, l)?;
                    let (e, n) = (self.reg(sgi, *expected, l) as u32, self.reg(sgi, *desired, l) as u32);
                    let seen = self.word_cas(place.array, i, e, n, (*ordering, *scope));
                    self.sgs[sgi].regs[dst.0 as usize * w + l] = u64::from(seen);
                }
            }
            Shuffle { .. }
            | Broadcast { .. }
            | Ballot { .. }
            | Vote { .. }
            | SubgroupReduce { .. }
            | SubgroupBarrier => {
                let expected = full(w);
                if mask != expected || self.sgs[sgi].launched != expected {
                    return Err(self.partial(kind, loc, path, expected));
                }
                self.collective(kind, sgi);
            }
            Fence { scope, ordering } => {
                std::sync::atomic::fence(MemOrd::SeqCst);
                if self.weak.is_some() {
                    self.weak_fence(*scope, *ordering);
                }
            }
            Nv { op, dsts, args, place } => self.nv(kind, loc, path, op, dsts, args, place.as_ref())?,
            BlockBarrier { .. } | If { .. } | Loop { .. } | Break | Continue | Return | GridStride { .. } => {
                unreachable!("handled by the scheduler or rejected by program::compile")
            }
        }
        Ok(())
    }
}

/// Value of a special register for lane `l` of subgroup `sg`.
#[allow(clippy::too_many_arguments)]
fn special_value(
    reg: Special,
    l: usize,
    sg: usize,
    w: usize,
    block: u64,
    geo: LaunchGeometry,
    nsg: u64,
    start: Instant,
) -> u64 {
    let tid = (sg * w + l) as u64;
    let lane_bit = 1u64 << l;
    let below = lane_bit - 1;
    let lanes = full(w);
    match reg {
        Special::LaneId => l as u64,
        Special::SubgroupSize => w as u64,
        Special::ThreadIdx => tid,
        Special::BlockIdx => block,
        Special::BlockDim => geo.block_dim as u64,
        Special::GridDim => geo.grid as u64,
        Special::GlobalThreadIdx => (block * geo.block_dim as u64 + tid) & 0xFFFF_FFFF,
        Special::Nv(s) => match s {
            NvSreg::Tid(0) => tid,
            NvSreg::Ntid(0) => geo.block_dim as u64,
            NvSreg::Ctaid(0) | NvSreg::ClusterId(0) => block,
            NvSreg::Nctaid(0) | NvSreg::NClusterId(0) => geo.grid as u64,
            NvSreg::Tid(_) | NvSreg::Ctaid(_) | NvSreg::ClusterId(_) | NvSreg::ClusterCtaid(_) => 0,
            NvSreg::Ntid(_) | NvSreg::Nctaid(_) | NvSreg::NClusterId(_) | NvSreg::ClusterNctaid(_) => 1,
            NvSreg::ClusterCtarank | NvSreg::Smid | NvSreg::Gridid | NvSreg::EnvReg(_) => 0,
            NvSreg::DynamicSmemSize => 0,
            NvSreg::ClusterNctarank | NvSreg::Nsmid => 1,
            NvSreg::Warpid => sg as u64,
            NvSreg::Nwarpid => nsg,
            NvSreg::Laneid => l as u64,
            NvSreg::Warpsize => w as u64,
            NvSreg::LanemaskEq => lane_bit,
            NvSreg::LanemaskLt => below,
            NvSreg::LanemaskLe => below | lane_bit,
            NvSreg::LanemaskGt => lanes & !(below | lane_bit),
            NvSreg::LanemaskGe => lanes & !below,
            NvSreg::Clock => start.elapsed().as_nanos() as u64 & 0xFFFF_FFFF,
            NvSreg::Clock64 | NvSreg::GlobalTimer => start.elapsed().as_nanos() as u64,
        },
    }
}
