//! Cross-lane operations, which need the whole subgroup: shuffles, broadcasts, ballots and votes,
//! and the NVIDIA families (match, redux, elect; mbarrier operations as atomic updates of the
//! emulator's barrier word).

use super::{full, lanes, BlockExec, EmuError, EmuErrorKind, Path, Subgroup};
use crate::ir::eval;
use crate::ir::*;
use std::sync::atomic::Ordering as MemOrd;

/// The mbarrier family's memory orderings, PTX's defaults: its arrivals release and its waits
/// acquire, at CTA scope (weak mode, D26: within the block).
const MBAR: (Ordering, Scope) = (Ordering::Release, Scope::Block);
const MBAR_WAIT: LoadKind = LoadKind::Ordered(Ordering::Acquire, Scope::Block);

impl<'a, 'b> BlockExec<'a, 'b> {
    /// The NVIDIA families (D8): warp collectives need the whole subgroup; mbarrier ops are atomic
    /// updates of the barrier word, one lane after another.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn nv(
        &mut self,
        kind: &InstKind,
        loc: SrcLoc,
        path: &Path,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), EmuError> {
        let w = self.width;
        let sgi = path.sg;
        let k = &self.sh.prog.kernel;
        let set = |this: &mut Self, v: ValueId, l: usize, x: u64| this.sgs[sgi].regs[v.0 as usize * w + l] = x;
        if kind.is_subgroup_collective() {
            let expected = full(w);
            if path.mask != expected || self.sgs[sgi].launched != expected {
                return Err(self.partial(kind, loc, path, expected));
            }
            let vals: Vec<u64> = (0..w).map(|l| args.first().map(|a| self.reg(sgi, *a, l)).unwrap_or(0)).collect();
            match op {
                NvOp::MatchAny => {
                    for l in 0..w {
                        let m = (0..w).filter(|&j| vals[j] == vals[l]).fold(0u64, |m, j| m | 1 << j);
                        set(self, dsts[0], l, m);
                    }
                }
                NvOp::MatchAll => {
                    let all = vals.iter().all(|v| *v == vals[0]);
                    for l in 0..w {
                        set(self, dsts[0], l, if all { expected } else { 0 });
                        set(self, dsts[1], l, all as u64);
                    }
                }
                NvOp::Redux(r) => {
                    let d = k.dtype(args[0]);
                    let mut acc = vals[0];
                    for v in &vals[1..] {
                        acc = eval::binary(d, r.binop(), acc, *v).map_err(|e| self.eval_err(kind, loc, e))?;
                    }
                    for l in 0..w {
                        set(self, dsts[0], l, acc);
                    }
                }
                NvOp::Elect => {
                    let leader = path.mask.trailing_zeros() as u64;
                    for l in 0..w {
                        set(self, dsts[0], l, leader);
                        set(self, dsts[1], l, (l as u64 == leader) as u64);
                    }
                }
                _ => unreachable!("only warp collectives are subgroup collectives"),
            }
            for d in dsts {
                self.sgs[sgi].poison[d.0 as usize] = 0;
            }
            return Ok(());
        }
        if let NvOp::ProxyFence(_) = op {
            std::sync::atomic::fence(MemOrd::SeqCst);
            return Ok(());
        }
        // A back-off hint: the emulator's scheduler already runs other threads while one spins.
        if let NvOp::Nanosleep = op {
            return Ok(());
        }
        let place = place.expect("mbarrier ops and loads carry their place");
        if let NvOp::LoadVector = op {
            return self.load_vector(kind, loc, path, dsts, place);
        }
        for l in lanes(path.mask) {
            let i = self.index(kind, loc, sgi, place, l)?;
            let arg = args.first().map(|a| self.reg(sgi, *a, l)).unwrap_or(0);
            let result = match op {
                NvOp::MbarrierInit => {
                    self.mem_write(sgi, place.array, i, l, mbar::init(arg), StoreKind::Volatile);
                    None
                }
                NvOp::MbarrierInval => {
                    self.mem_write(sgi, place.array, i, l, 0, StoreKind::Volatile);
                    None
                }
                NvOp::MbarrierArrive => {
                    Some(self.rmw(sgi, place.array, i, l, MBAR.0, MBAR.1, |s| mbar::arrive(s, 1, true)))
                }
                NvOp::MbarrierArriveNoComplete => {
                    Some(self.rmw(sgi, place.array, i, l, MBAR.0, MBAR.1, |s| mbar::arrive(s, arg, false)))
                }
                NvOp::MbarrierArriveExpectTx => Some(self.rmw(sgi, place.array, i, l, MBAR.0, MBAR.1, |s| {
                    mbar::arrive(mbar::add_tx(s, arg as i64), 1, true)
                })),
                NvOp::MbarrierExpectTx => {
                    self.rmw(sgi, place.array, i, l, MBAR.0, MBAR.1, |s| mbar::add_tx(s, arg as i64));
                    None
                }
                NvOp::MbarrierCompleteTx => {
                    self.rmw(sgi, place.array, i, l, MBAR.0, MBAR.1, |s| {
                        mbar::complete(mbar::add_tx(s, -(arg as i64)))
                    });
                    None
                }
                // The emulator has no L2: a hinted access is the plain one.
                NvOp::LoadL2Hint(_) => Some(self.mem_read(sgi, place.array, i, l, LoadKind::Plain)),
                NvOp::AtomicL2Hint(aop, _) => {
                    let d = self.sh.prog.kernel.array_dtype(place.array);
                    Some(self.rmw(sgi, place.array, i, l, Ordering::Relaxed, Scope::Device, |old| {
                        super::access::atomic_apply(d, *aop, old, arg)
                    }))
                }
                NvOp::PackedAdd(h) => {
                    let half = if *h == PackedHalf::F16x2 { DType::F16 } else { DType::BF16 };
                    Some(self.rmw(sgi, place.array, i, l, Ordering::Relaxed, Scope::Device, |old| {
                        packed_add(half, old, arg)
                    }))
                }
                NvOp::MbarrierTestWait | NvOp::MbarrierTryWaitParity | NvOp::MbarrierTryWaitParityHint => {
                    self.last_spin_op = Some((self.op_name(kind), loc));
                    let state = self.mem_read(sgi, place.array, i, l, MBAR_WAIT);
                    let waited_phase = if *op == NvOp::MbarrierTestWait { mbar::phase(arg) } else { arg & 1 };
                    Some((mbar::phase(state) != waited_phase) as u64)
                }
                _ => unreachable!("collectives handled above"),
            };
            if let (Some(r), Some(d)) = (result, dsts.first()) {
                set(self, *d, l, r);
            }
        }
        Ok(())
    }

    /// `nv.load_vector`: each lane's `dsts.len()` elements from `place`, whose index must be a
    /// multiple of the count and whose last element must be in the array.
    fn load_vector(
        &mut self,
        kind: &InstKind,
        loc: SrcLoc,
        path: &Path,
        dsts: &[ValueId],
        place: &Place,
    ) -> Result<(), EmuError> {
        let (sgi, width) = (path.sg, dsts.len());
        let len = self.array_len(place.array);
        for l in lanes(path.mask) {
            let i = self.index(kind, loc, sgi, place, l)?;
            if !i.is_multiple_of(width) || i + width > len {
                let (op, array) = (self.op_name(kind), self.sh.prog.kernel.array_name(place.array).to_string());
                let error = if i.is_multiple_of(width) {
                    EmuErrorKind::OutOfBounds { op, array, index: (i + width - 1) as i64, unsigned: false, len }
                } else {
                    EmuErrorKind::Misaligned { op, array, index: i, width }
                };
                return Err(self.err(Some(loc), error));
            }
            for (k, d) in dsts.iter().enumerate() {
                let x = self.mem_read(sgi, place.array, i + k, l, LoadKind::Plain);
                self.sgs[sgi].regs[d.0 as usize * self.width + l] = x;
            }
        }
        Ok(())
    }

    /// Cross-lane ops; the whole subgroup is active (checked by the caller).
    pub(super) fn collective(&mut self, kind: &InstKind, sgi: usize) {
        use InstKind::*;
        let w = self.width;
        let strict = self.sh.opts.strict;
        let sg = &mut self.sgs[sgi];
        let read = |sg: &Subgroup, v: ValueId, l: usize| sg.regs[v.0 as usize * w + l];
        match kind {
            Shuffle { dst, valid, kind: sk, value, lane } => {
                let mut out = vec![0u64; w];
                let mut ok = vec![true; w];
                let mut poison = 0u64;
                let vp = sg.poison[value.0 as usize];
                for l in 0..w {
                    let arg = read(sg, *lane, l) as u32 as i64;
                    let src = match sk {
                        ShuffleKind::Idx => arg,
                        ShuffleKind::Up => l as i64 - arg,
                        ShuffleKind::Down => l as i64 + arg,
                        ShuffleKind::Xor => (l as i64) ^ arg,
                    };
                    if (0..w as i64).contains(&src) {
                        out[l] = read(sg, *value, src as usize);
                        poison |= ((vp >> src) & 1) << l;
                    } else {
                        // Implementation-defined: CUDA gives the lane's own value (D8).
                        out[l] = read(sg, *value, l);
                        ok[l] = false;
                        if strict {
                            poison |= 1 << l;
                        }
                    }
                }
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = out[l];
                    if let Some(p) = valid {
                        sg.regs[p.0 as usize * w + l] = ok[l] as u64;
                    }
                }
                sg.poison[dst.0 as usize] = poison;
            }
            Broadcast { dst, value, lane } => {
                let vp = sg.poison[value.0 as usize];
                let mut poison = 0u64;
                let out: Vec<u64> = (0..w)
                    .map(|l| {
                        let src = read(sg, *lane, l) as u32 as usize;
                        if src < w {
                            poison |= ((vp >> src) & 1) << l;
                            read(sg, *value, src)
                        } else {
                            // Out of range: implementation-defined like a shuffle's source (D8).
                            if strict {
                                poison |= 1 << l;
                            }
                            read(sg, *value, l)
                        }
                    })
                    .collect();
                for (l, v) in out.into_iter().enumerate() {
                    sg.regs[dst.0 as usize * w + l] = v;
                }
                sg.poison[dst.0 as usize] = poison;
            }
            Ballot { dst, pred } => {
                let mut m = 0u64;
                for l in 0..w {
                    m |= (read(sg, *pred, l) & 1) << l;
                }
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = m;
                }
                sg.poison[dst.0 as usize] = 0;
            }
            Vote { dst, kind: vk, pred } => {
                let count = (0..w).filter(|&l| read(sg, *pred, l) & 1 != 0).count();
                let r = match vk {
                    VoteKind::All => count == w,
                    VoteKind::Any => count > 0,
                    VoteKind::Uni => count == 0 || count == w,
                } as u64;
                for l in 0..w {
                    sg.regs[dst.0 as usize * w + l] = r;
                }
                sg.poison[dst.0 as usize] = 0;
            }
            SubgroupReduce { dst, op, scan, value } => {
                let d = self.sh.prog.kernel.dtype(*value);
                // D5 on 32/64-bit integers (the verifier's rule): add wraps, nothing can fail.
                let fold = |a: u64, b: u64| eval::binary(d, op.binop(), a, b).expect("integer folds do not fail");
                let vp = sg.poison[value.0 as usize];
                let mut prefix = Vec::with_capacity(w);
                let mut acc: Option<u64> = None;
                for l in 0..w {
                    let before = acc;
                    let x = read(sg, *value, l);
                    acc = Some(before.map_or(x, |a| fold(a, x)));
                    prefix.push((before, acc));
                }
                // Each lane's result, and the lanes it folds (its poison comes from those).
                let result = |l: usize| match scan {
                    None => (acc, full(w)),
                    Some(ScanKind::Inclusive) => (prefix[l].1, full(l + 1)),
                    Some(ScanKind::Exclusive) => (prefix[l].0, full(l)),
                };
                let mut poison = 0u64;
                for l in 0..w {
                    let (r, covers) = result(l);
                    sg.regs[dst.0 as usize * w + l] = r.unwrap_or(0);
                    poison |= u64::from(vp & covers != 0) << l;
                }
                sg.poison[dst.0 as usize] = poison;
            }
            SubgroupBarrier => {}
            _ => unreachable!(),
        }
    }
}

/// The emulator's mbarrier word: pending arrivals (bits 0..20), expected arrivals (20..40),
/// outstanding transaction bytes as a signed 22-bit field (40..62), phase parity (bit 63).
mod mbar {
    const FIELD: u64 = (1 << 20) - 1;
    const TX: u64 = (1 << 22) - 1;

    pub fn init(count: u64) -> u64 {
        (count & FIELD) | ((count & FIELD) << 20)
    }

    pub fn phase(state: u64) -> u64 {
        state >> 63
    }

    fn tx(state: u64) -> i64 {
        (((state >> 40) & TX) << 42) as i64 >> 42
    }

    pub fn add_tx(state: u64, delta: i64) -> u64 {
        let t = (tx(state) + delta) as u64 & TX;
        (state & !(TX << 40)) | (t << 40)
    }

    /// Completes the phase when nothing is pending: flip the parity, re-arm the arrivals.
    pub fn complete(state: u64) -> u64 {
        let pending = state & FIELD;
        if pending == 0 && tx(state) == 0 {
            let expected = (state >> 20) & FIELD;
            (state & !FIELD & !(1 << 63)) | expected | ((phase(state) ^ 1) << 63)
        } else {
            state
        }
    }

    pub fn arrive(state: u64, count: u64, may_complete: bool) -> u64 {
        let pending = (state & FIELD).wrapping_sub(count) & FIELD;
        let s = (state & !FIELD) | pending;
        if may_complete {
            complete(s)
        } else {
            s
        }
    }
}

/// Adds two packed 16-bit floats (`half` each, low half in bits 0..16) as PTX's `.noftz` packed
/// add does: each half on its own, rounded to nearest (D5's 16-bit float add).
fn packed_add(half: DType, word: u64, value: u64) -> u64 {
    let add = |shift: u32| {
        let (a, b) = ((word >> shift) & 0xFFFF, (value >> shift) & 0xFFFF);
        eval::binary(half, BinOp::Add, a, b).unwrap_or(a) & 0xFFFF
    };
    add(0) | add(16) << 16
}
