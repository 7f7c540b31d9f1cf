//! What generated programs reach: the IR instruction kinds of their kernels (as each target
//! traces and legalizes them) and the op families of D27's list.

use crate::program::*;
use qd::ir::{self, InstKind};
use qd::prelude::Device;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Every IR instruction kind, by the name [`kind_name`] gives it.
pub const ALL_KINDS: [&str; 33] = [
    "const",
    "unary",
    "binary",
    "cmp",
    "select",
    "cast",
    "bit_cast",
    "fma",
    "special",
    "array_len",
    "local_get",
    "local_set",
    "load",
    "store",
    "atomic",
    "cas",
    "word_shift",
    "word_cas",
    "shuffle",
    "broadcast",
    "ballot",
    "vote",
    "subgroup_reduce",
    "block_barrier",
    "subgroup_barrier",
    "fence",
    "nv",
    "if",
    "loop",
    "break",
    "continue",
    "return",
    "grid_stride",
];

/// Kinds the generator never writes, and why.
pub const NOT_GENERATED: [(&str, &str); 1] = [(
    "nv",
    "the NVIDIA-only families run on CUDA alone, so there is nothing to compare them with; \
     crates/qd/tests/nv_ptx.rs and cuda_nv.rs test them",
)];

/// The name of an instruction's kind (an exhaustive match: a new kind must be named here).
pub fn kind_name(k: &InstKind) -> &'static str {
    match k {
        InstKind::Const { .. } => "const",
        InstKind::Unary { .. } => "unary",
        InstKind::Binary { .. } => "binary",
        InstKind::Cmp { .. } => "cmp",
        InstKind::Select { .. } => "select",
        InstKind::Cast { .. } => "cast",
        InstKind::BitCast { .. } => "bit_cast",
        InstKind::Fma { .. } => "fma",
        InstKind::Special { .. } => "special",
        InstKind::ArrayLen { .. } => "array_len",
        InstKind::LocalGet { .. } => "local_get",
        InstKind::LocalSet { .. } => "local_set",
        InstKind::Load { .. } => "load",
        InstKind::Store { .. } => "store",
        InstKind::Atomic { .. } => "atomic",
        InstKind::Cas { .. } => "cas",
        InstKind::WordShift { .. } => "word_shift",
        InstKind::WordCas { .. } => "word_cas",
        InstKind::Shuffle { .. } => "shuffle",
        InstKind::Broadcast { .. } => "broadcast",
        InstKind::Ballot { .. } => "ballot",
        InstKind::Vote { .. } => "vote",
        InstKind::SubgroupReduce { .. } => "subgroup_reduce",
        InstKind::BlockBarrier { .. } => "block_barrier",
        InstKind::SubgroupBarrier => "subgroup_barrier",
        InstKind::Fence { .. } => "fence",
        InstKind::Nv { .. } => "nv",
        InstKind::If { .. } => "if",
        InstKind::Loop { .. } => "loop",
        InstKind::Break => "break",
        InstKind::Continue => "continue",
        InstKind::Return => "return",
        InstKind::GridStride { .. } => "grid_stride",
    }
}

/// The instruction kinds seen so far.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    /// Kinds seen.
    pub kinds: BTreeSet<&'static str>,
}

impl Coverage {
    /// Adds the kinds of `k` (after the target's CAS-loop rewrite, which writes the word view).
    pub fn add_kernel(&mut self, k: &ir::Kernel) {
        k.body.walk(&mut |i| {
            self.kinds.insert(kind_name(&i.kind));
        });
    }

    /// Adds the kinds of `p` as traced and legalized for `device`'s target (nothing if it refuses).
    pub fn add_program(&mut self, p: &Program, device: &Device) {
        let kernel = crate::build::kernel("difftest", Arc::new(p.clone()));
        if let Ok(mut k) = device.trace(&kernel) {
            qd::target::legalize_atomics(&mut k, device.target());
            self.add_kernel(&k);
        }
    }

    /// Kinds not seen, other than those the generator never writes.
    pub fn missing(&self) -> Vec<&'static str> {
        ALL_KINDS
            .iter()
            .copied()
            .filter(|k| !self.kinds.contains(k) && !NOT_GENERATED.iter().any(|(n, _)| n == k))
            .collect()
    }
}

/// The op families of D27's list that `p` uses (tile sizes, dtypes and type-limit constants
/// included), for the coverage test.
pub fn families(p: &Program) -> BTreeSet<String> {
    let mut f = BTreeSet::new();
    match p.shape.launch {
        Launch::Range { begin } if begin > i32::MAX - 2048 => {
            f.insert("range.near_i32_max".to_string());
        }
        Launch::Range { begin } if begin < 0 => {
            f.insert("range.negative".to_string());
        }
        Launch::Range { .. } => {}
        Launch::Explicit => {
            f.insert("explicit".to_string());
        }
    }
    if p.tail.is_some() {
        f.insert("return".to_string());
    }
    let mut walker = Families { p, f: &mut f };
    walker.stmts(&p.body);
    if let Some(t) = &p.tail {
        walker.expr(&t.cond);
        walker.stmts(&t.body);
    }
    f
}

struct Families<'a> {
    p: &'a Program,
    f: &'a mut BTreeSet<String>,
}

impl Families<'_> {
    fn add(&mut self, s: String) {
        self.f.insert(s);
    }

    fn stmts(&mut self, s: &[Stmt]) {
        for st in s {
            self.stmt(st);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign(_, e) => self.expr(e),
            Stmt::Out { value, mode, .. } => {
                self.add(format!("store.{mode:?}").to_lowercase());
                self.expr(value);
            }
            Stmt::If { cond, then, els } => {
                self.add("if".into());
                self.expr(cond);
                self.stmts(then);
                self.stmts(els);
            }
            Stmt::Loop { trip, body } => {
                self.add("loop".into());
                self.expr(trip);
                self.stmts(body);
            }
            Stmt::Break(c) => {
                self.add("break".into());
                self.expr(c);
            }
            Stmt::Continue(c) => {
                self.add("continue".into());
                self.expr(c);
            }
            Stmt::Sync => self.add("block.sync".into()),
            Stmt::SubgroupSync => self.add("subgroup.sync".into()),
            Stmt::Fence(s) => self.add(format!("fence.{}", s.name())),
            Stmt::SharedSwap { value, index, .. } => {
                self.add("shared.swap".into());
                self.expr(value);
                self.expr(index);
            }
            Stmt::SharedAtomic { init, op, value, .. } => {
                self.add(format!("shared.atomic_{}", op.name()));
                self.expr(init);
                self.expr(value);
            }
            Stmt::AccAtomic { acc, slot, op, value } => {
                self.add(format!("global.atomic_{}.{}", op.name(), self.p.accs[*acc as usize].dtype));
                self.expr(slot);
                self.expr(value);
            }
            Stmt::Local { write, value, read, .. } => {
                self.add("local_array".into());
                self.expr(write);
                self.expr(value);
                self.expr(read);
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        let d = self.p.dtype(e);
        match e {
            Expr::Const(d, bits) if d.is_int() => {
                let w = d.bits();
                let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                let (max, min) = if d.is_signed_int() { (mask >> 1, (mask >> 1) + 1) } else { (mask, 0) };
                if *bits == max {
                    self.add(format!("const.{d}.max"));
                }
                if *bits == min {
                    self.add(format!("const.{d}.min"));
                }
            }
            Expr::Special(s) => self.add(format!("special.{s:?}").to_lowercase()),
            Expr::Load { volatile: true, .. } => self.add("load.volatile".into()),
            Expr::Binary(op, ..) => self.add(format!("binary.{op:?}.{d}").to_lowercase()),
            Expr::Unary(op, a) => self.add(format!("unary.{op:?}.{}", self.p.dtype(a)).to_lowercase()),
            Expr::Cmp(op, a, _) => self.add(format!("cmp.{op:?}.{}", self.p.dtype(a)).to_lowercase()),
            Expr::Cast(to, a) => self.add(format!("cast.{}.{to}", self.p.dtype(a))),
            Expr::BitCast(..) => self.add("bit_cast".into()),
            Expr::Fma(..) => self.add(format!("fma.{d}")),
            Expr::ExactDiv(..) => self.add(format!("float_div.{d}")),
            Expr::ExactSqrt(..) => self.add(format!("sqrt.{d}")),
            Expr::Shuffle { mode, log2, .. } => {
                let m = format!("{mode:?}").to_lowercase();
                let m = m.split('(').next().unwrap_or("");
                self.add(format!("shuffle.{m}"));
                self.add(format!("shuffle.tile{}", 1u32 << log2));
            }
            Expr::Broadcast(..) => self.add("broadcast".into()),
            Expr::Ballot(_, log2) => self.add(format!("ballot.tile{}", 1u32 << log2)),
            Expr::Vote(op, _, log2) => {
                self.add(format!("vote.{op:?}").to_lowercase());
                self.add(format!("vote.tile{}", 1u32 << log2));
            }
            Expr::Elect => self.add("elect".into()),
            Expr::Reduce { op, form, log2, .. } => {
                self.add(format!("reduce.{form:?}.{op:?}").to_lowercase());
                self.add(format!("reduce.tile{}", 1u32 << log2));
            }
            Expr::Scan { op, exclusive, log2, .. } => {
                self.add(format!("scan.{}.{op:?}", if *exclusive { "exclusive" } else { "inclusive" }).to_lowercase());
                self.add(format!("scan.tile{}", 1u32 << log2));
            }
            Expr::Sort { log2, .. } => self.add(format!("sort.tile{}", 1u32 << log2)),
            Expr::BlockVote(op, _) => self.add(format!("block.vote.{op:?}").to_lowercase()),
            Expr::Block { op, form, .. } => self.add(format!("block.{form:?}.{op:?}").to_lowercase()),
            Expr::Own { op, .. } => self.add(format!("own.{op:?}.{d}").to_lowercase()),
            _ => {}
        }
        for c in children(e) {
            self.expr(c);
        }
    }
}

/// The operands of an expression.
pub fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Load { index, .. } => vec![index],
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::BitCast(_, a) => vec![a],
        Expr::ExactDiv(_, a, _) | Expr::ExactSqrt(_, a) => vec![a],
        Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) | Expr::Fma(a, _, b) => vec![a, b],
        Expr::Select(c, a, b) => vec![c, a, b],
        Expr::Shuffle { value, arg, .. } => vec![value, arg],
        Expr::Broadcast(v, _) | Expr::Ballot(v, _) | Expr::Vote(_, v, _) => vec![v],
        Expr::Reduce { value, head, .. } => vec![value, head],
        Expr::Scan { value, .. } | Expr::Block { value, .. } | Expr::BlockVote(_, value) => vec![value],
        Expr::Sort { key, value, .. } => vec![key, value],
        Expr::Own { value, hit, .. } => vec![value, hit],
        _ => vec![],
    }
}
