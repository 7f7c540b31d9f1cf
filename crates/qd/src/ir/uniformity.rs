//! Uniformity analysis (D3): how widely each value and each control point agrees across threads.
//!
//! The lattice is `Uniform < Block < Subgroup < Varying`: a `Block` value is the same on every thread of
//! a block, a `Subgroup` value on every lane of a subgroup. Control uniformity is the join of every
//! enclosing condition, of the exits taken inside the enclosing loops, and of earlier early returns.

use super::inst::*;

/// How widely a value or a control point agrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Uniformity {
    /// Same on every thread of the launch.
    Uniform,
    /// Same on every thread of a block.
    Block,
    /// Same on every lane of a subgroup.
    Subgroup,
    /// May differ between lanes.
    Varying,
}

impl std::fmt::Display for Uniformity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Uniformity::Uniform => "uniform",
            Uniformity::Block => "block-uniform",
            Uniformity::Subgroup => "subgroup-uniform: it differs between subgroups",
            Uniformity::Varying => "varying: it differs between threads",
        })
    }
}

impl Uniformity {
    /// Least upper bound.
    pub fn join(self, other: Uniformity) -> Uniformity {
        self.max(other)
    }
}

/// The analysis result.
#[derive(Clone, Debug)]
pub struct UniformityInfo {
    /// Per value.
    pub values: Vec<Uniformity>,
    /// Per local variable.
    pub locals: Vec<Uniformity>,
    /// Control uniformity at each instruction, in depth-first order (the order of [`Block::walk`]).
    pub control: Vec<Uniformity>,
}

/// Runs the analysis to a fixpoint.
pub fn analyze(k: &Kernel) -> UniformityInfo {
    let mut a = Analysis {
        values: vec![Uniformity::Uniform; k.values.len()],
        locals: vec![Uniformity::Uniform; k.locals.len()],
        control: Vec::new(),
        sticky: Uniformity::Uniform,
        changed: false,
    };
    for p in &k.params {
        if let Param::Scalar { value, .. } = p {
            a.values[value.0 as usize] = Uniformity::Uniform;
        }
    }
    loop {
        a.changed = false;
        a.control.clear();
        a.sticky = Uniformity::Uniform;
        a.block(&k.body, Uniformity::Uniform);
        if !a.changed {
            break;
        }
    }
    UniformityInfo { values: a.values, locals: a.locals, control: a.control }
}

struct Analysis {
    values: Vec<Uniformity>,
    locals: Vec<Uniformity>,
    control: Vec<Uniformity>,
    /// Join of the control levels at which an early `return` happened so far.
    sticky: Uniformity,
    changed: bool,
}

impl Analysis {
    fn val(&self, v: ValueId) -> Uniformity {
        self.values[v.0 as usize]
    }

    fn set(&mut self, v: ValueId, u: Uniformity) {
        let slot = &mut self.values[v.0 as usize];
        let new = slot.join(u);
        if new != *slot {
            *slot = new;
            self.changed = true;
        }
    }

    fn block(&mut self, b: &Block, ctl: Uniformity) {
        for inst in &b.insts {
            let ctl = ctl.join(self.sticky);
            self.control.push(ctl);
            self.inst(&inst.kind, ctl);
        }
    }

    fn inst(&mut self, kind: &InstKind, ctl: Uniformity) {
        use InstKind::*;
        use Uniformity::*;
        let join_uses = |s: &Self| kind.uses().iter().fold(Uniform, |u, v| u.join(s.val(*v)));
        match kind {
            Const { dst, .. } | ArrayLen { dst, .. } => self.set(*dst, Uniform),
            Unary { dst, .. }
            | Binary { dst, .. }
            | Cmp { dst, .. }
            | Select { dst, .. }
            | Cast { dst, .. }
            | BitCast { dst, .. }
            | Fma { dst, .. } => {
                let u = join_uses(self);
                self.set(*dst, u);
            }
            Special { dst, reg } => self.set(*dst, special(*reg)),
            LocalGet { dst, local } => {
                let u = self.locals[local.0 as usize];
                self.set(*dst, u);
            }
            LocalSet { local, value } => {
                let u = self.val(*value).join(ctl);
                let slot = &mut self.locals[local.0 as usize];
                if u.join(*slot) != *slot {
                    *slot = u.join(*slot);
                    self.changed = true;
                }
            }
            Load { dst, place, kind } => {
                let u = match (kind, place.array) {
                    (LoadKind::Plain, ArrayRef::Param(_)) => self.val(place.index),
                    (LoadKind::Plain, ArrayRef::Shared(_)) => self.val(place.index).join(Block),
                    _ => Varying,
                };
                self.set(*dst, u);
            }
            Store { .. } => {}
            Atomic { dst, .. } => {
                if let Some(d) = dst {
                    self.set(*d, Varying);
                }
            }
            Cas { dst, .. } | WordCas { dst, .. } | WordShift { dst, .. } => self.set(*dst, Varying),
            Shuffle { dst, valid, kind, lane, .. } => {
                let u = if *kind == ShuffleKind::Idx && self.val(*lane) <= Subgroup { Subgroup } else { Varying };
                self.set(*dst, u);
                if let Some(p) = valid {
                    self.set(*p, Varying);
                }
            }
            Broadcast { dst, lane, .. } => {
                let u = if self.val(*lane) <= Subgroup { Subgroup } else { Varying };
                self.set(*dst, u);
            }
            Ballot { dst, .. } | Vote { dst, .. } | SubgroupReduce { dst, scan: None, .. } => self.set(*dst, Subgroup),
            // Each lane's prefix is its own.
            SubgroupReduce { dst, scan: Some(_), .. } => self.set(*dst, Varying),
            BlockBarrier { reduce } => {
                if let Some((_, _, d)) = reduce {
                    self.set(*d, Block);
                }
            }
            SubgroupBarrier | Fence { .. } => {}
            Nv { op, dsts, .. } => {
                let u = match op {
                    NvOp::MatchAll | NvOp::Redux(_) | NvOp::ReduxF32(_) => Subgroup,
                    _ => Varying,
                };
                for d in dsts {
                    self.set(*d, u);
                }
            }
            If { cond, then_block, else_block } => {
                let inner = ctl.join(self.val(*cond));
                self.block(then_block, inner);
                self.block(else_block, inner);
            }
            Loop { body } => {
                let exits = self.exit_level(body, ctl, true);
                self.block(body, ctl.join(exits));
            }
            GridStride { index, body, .. } => {
                // D1: every thread of a block runs the same number of iterations (checked at launch).
                self.set(*index, Varying);
                self.block(body, ctl);
            }
            Break | Continue => {}
            Return => self.sticky = self.sticky.join(ctl),
        }
    }

    /// The highest control level at which the loop `body` is left early (break, continue, return).
    fn exit_level(&self, body: &Block, ctl: Uniformity, direct: bool) -> Uniformity {
        let mut level = Uniformity::Uniform;
        for inst in &body.insts {
            match &inst.kind {
                InstKind::Break | InstKind::Continue if direct => level = level.join(ctl),
                InstKind::Return => level = level.join(ctl),
                InstKind::If { cond, then_block, else_block } => {
                    let inner = ctl.join(self.val(*cond));
                    level = level
                        .join(self.exit_level(then_block, inner, direct))
                        .join(self.exit_level(else_block, inner, direct));
                }
                // Breaks of a nested loop leave that loop only; its returns still count.
                InstKind::Loop { body } => level = level.join(self.exit_level(body, ctl, false)),
                _ => {}
            }
        }
        level
    }
}

fn special(reg: Special) -> Uniformity {
    use Uniformity::*;
    match reg {
        Special::LaneId | Special::ThreadIdx | Special::GlobalThreadIdx => Varying,
        Special::BlockIdx => Block,
        Special::SubgroupSize | Special::BlockDim | Special::GridDim => Uniform,
        Special::Nv(s) => match s {
            NvSreg::Ntid(_)
            | NvSreg::Nctaid(_)
            | NvSreg::Warpsize
            | NvSreg::NClusterId(_)
            | NvSreg::ClusterNctaid(_)
            | NvSreg::ClusterNctarank
            | NvSreg::Nsmid
            | NvSreg::Nwarpid
            | NvSreg::Gridid
            | NvSreg::EnvReg(_)
            | NvSreg::DynamicSmemSize => Uniform,
            NvSreg::Ctaid(_)
            | NvSreg::ClusterId(_)
            | NvSreg::ClusterCtaid(_)
            | NvSreg::ClusterCtarank
            | NvSreg::Smid => Block,
            NvSreg::Warpid => Subgroup,
            _ => Varying,
        },
    }
}
