//! IR passes: constant folding, common-subexpression elimination and dead-code elimination.
//!
//! They keep value ids stable (a replaced value's uses are renamed to the surviving one) and never
//! touch memory operations: loads may observe other threads (a volatile load never merges, D6), and
//! atomics, stores, barriers and fences always stay.

use super::eval;
use super::inst::*;
use super::types::{Const as ConstValue, DType};

/// Runs every pass to a fixpoint.
pub fn optimize(k: &mut Kernel) {
    loop {
        let before = count(&k.body);
        fold_constants(k);
        cse(k);
        dce(k);
        if count(&k.body) == before {
            break;
        }
    }
}

fn count(b: &Block) -> usize {
    let mut n = 0;
    b.walk(&mut |_| n += 1);
    n
}

/// Whether an instruction only computes a value from its operands (same inputs, same result).
fn is_pure(kind: &InstKind) -> bool {
    use InstKind::*;
    match kind {
        Const { .. } | Unary { .. } | Binary { .. } | Cmp { .. } | Select { .. } | Cast { .. } | BitCast { .. } => true,
        Fma { .. } | ArrayLen { .. } => true,
        Special { reg, .. } => !matches!(
            reg,
            super::inst::Special::Nv(
                NvSreg::Clock | NvSreg::Clock64 | NvSreg::GlobalTimer | NvSreg::Smid | NvSreg::Warpid
            )
        ),
        _ => false,
    }
}

/// Replaces constant expressions by their value (integer division by zero is left for run time).
pub fn fold_constants(k: &mut Kernel) {
    // The constant value of each value id, where it has one.
    let mut consts: Vec<Option<ConstValue>> = vec![None; k.values.len()];
    fold_block(&mut k.body, &mut consts, &k.values);
}

fn fold_block(b: &mut Block, consts: &mut [Option<ConstValue>], types: &[DType]) {
    use InstKind::*;
    for inst in &mut b.insts {
        let c = |v: &ValueId| consts[v.0 as usize].map(|c| c.bits);
        let ty = |v: &ValueId| types[v.0 as usize];
        let folded = match &inst.kind {
            Unary { dst, op, a } => c(a).and_then(|x| eval::unary(ty(a), *op, x).ok()).map(|bits| (*dst, bits)),
            Binary { dst, op, a, b } => match (c(a), c(b)) {
                (Some(x), Some(y)) => eval::binary(ty(a), *op, x, y).ok().map(|bits| (*dst, bits)),
                _ => None,
            },
            Cmp { dst, op, a, b } => match (c(a), c(b)) {
                (Some(x), Some(y)) => Some((*dst, eval::compare(ty(a), *op, x, y))),
                _ => None,
            },
            Cast { dst, a } => c(a).and_then(|x| eval::cast(ty(a), ty(dst), x).ok()).map(|bits| (*dst, bits)),
            Select { dst, cond, a, b } => match c(cond) {
                Some(p) => {
                    let pick = if p & 1 != 0 { a } else { b };
                    c(pick).map(|bits| (*dst, bits))
                }
                None => None,
            },
            _ => None,
        };
        if let Some((dst, bits)) = folded {
            inst.kind = Const { dst, value: ConstValue { dtype: types[dst.0 as usize], bits } };
        }
        if let Const { dst, value } = &inst.kind {
            consts[dst.0 as usize] = Some(*value);
        }
        for nested in blocks_mut(&mut inst.kind) {
            fold_block(nested, consts, types);
        }
    }
}

fn blocks_mut(kind: &mut InstKind) -> Vec<&mut Block> {
    match kind {
        InstKind::If { then_block, else_block, .. } => vec![then_block, else_block],
        InstKind::Loop { body } | InstKind::GridStride { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

/// Renames every operand of `kind` (not its results) through `f`.
pub fn map_uses(kind: &mut InstKind, f: &impl Fn(ValueId) -> ValueId) {
    use InstKind::*;
    let m = |v: &mut ValueId| *v = f(*v);
    match kind {
        Unary { a, .. } | Cast { a, .. } | BitCast { a, .. } => m(a),
        Binary { a, b, .. } | Cmp { a, b, .. } => {
            m(a);
            m(b);
        }
        Select { cond, a, b, .. } => {
            m(cond);
            m(a);
            m(b);
        }
        Fma { a, b, c, .. } => {
            m(a);
            m(b);
            m(c);
        }
        LocalSet { value, .. } => m(value),
        Load { place, .. } => m(&mut place.index),
        Store { place, value, .. } | Atomic { place, value, .. } => {
            m(&mut place.index);
            m(value);
        }
        Cas { place, expected, desired, .. } | WordCas { place, expected, desired, .. } => {
            m(&mut place.index);
            m(expected);
            m(desired);
        }
        WordShift { place, .. } => m(&mut place.index),
        Shuffle { value, lane, .. } | Broadcast { value, lane, .. } => {
            m(value);
            m(lane);
        }
        Ballot { pred, .. } | Vote { pred, .. } => m(pred),
        SubgroupReduce { value, .. } => m(value),
        BlockBarrier { reduce: Some((_, p, _)) } => m(p),
        Nv { args, place, .. } => {
            args.iter_mut().for_each(m);
            if let Some(p) = place {
                m(&mut p.index);
            }
        }
        If { cond, .. } => m(cond),
        GridStride { begin, end, .. } => {
            m(begin);
            m(end);
        }
        Const { .. } | Special { .. } | ArrayLen { .. } | LocalGet { .. } | BlockBarrier { reduce: None } => {}
        SubgroupBarrier | Fence { .. } | Loop { .. } | Break | Continue | Return => {}
    }
}

/// What a pure instruction computes, without its result: two pure instructions with equal keys
/// (and results of one type) compute the same value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum PureKey {
    Const(ConstValue),
    Unary(UnOp, ValueId),
    Binary(BinOp, ValueId, ValueId),
    Cmp(CmpOp, ValueId, ValueId),
    Select(ValueId, ValueId, ValueId),
    Cast(ValueId),
    BitCast(ValueId),
    Fma(ValueId, ValueId, ValueId),
    Special(Special),
    ArrayLen(ArrayRef),
}

/// The key and result of a pure instruction.
fn key(kind: &InstKind) -> Option<(PureKey, ValueId)> {
    if !is_pure(kind) {
        return None;
    }
    use InstKind as K;
    Some(match *kind {
        K::Const { dst, value } => (PureKey::Const(value), dst),
        K::Unary { dst, op, a } => (PureKey::Unary(op, a), dst),
        K::Binary { dst, op, a, b } => (PureKey::Binary(op, a, b), dst),
        K::Cmp { dst, op, a, b } => (PureKey::Cmp(op, a, b), dst),
        K::Select { dst, cond, a, b } => (PureKey::Select(cond, a, b), dst),
        K::Cast { dst, a } => (PureKey::Cast(a), dst),
        K::BitCast { dst, a } => (PureKey::BitCast(a), dst),
        K::Fma { dst, a, b, c } => (PureKey::Fma(a, b, c), dst),
        K::Special { dst, reg } => (PureKey::Special(reg), dst),
        K::ArrayLen { dst, array } => (PureKey::ArrayLen(array), dst),
        _ => return None,
    })
}

/// The values available at the current point: one map for every enclosing block, and a log of
/// what each open block added, undone when it closes. A lookup is one hash probe however deep the
/// nesting (searching a map per enclosing block made nested code quadratic, issue 12).
#[derive(Default)]
struct ScopedValues {
    map: rustc_hash::FxHashMap<(PureKey, DType), ValueId>,
    added: Vec<(PureKey, DType)>,
}

impl ScopedValues {
    fn open(&self) -> usize {
        self.added.len()
    }

    fn close(&mut self, mark: usize) {
        for k in self.added.drain(mark..) {
            self.map.remove(&k);
        }
    }
}

/// Reuses a value already computed in a dominating position (an enclosing block, earlier), in time
/// linear in the kernel.
pub fn cse(k: &mut Kernel) {
    // What each value is renamed to (itself unless a duplicate).
    let mut rename: Vec<ValueId> = (0..k.values.len() as u32).map(ValueId).collect();
    let mut values = ScopedValues::default();
    cse_block(&mut k.body, &mut values, &mut rename, &k.values);
}

fn cse_block(b: &mut Block, values: &mut ScopedValues, rename: &mut [ValueId], types: &[DType]) {
    for inst in &mut b.insts {
        map_uses(&mut inst.kind, &|v| rename[v.0 as usize]);
        if let Some((key, dst)) = key(&inst.kind) {
            let key = (key, types[dst.0 as usize]);
            match values.map.get(&key) {
                Some(prev) => {
                    rename[dst.0 as usize] = *prev;
                }
                None => {
                    values.map.insert(key, dst);
                    values.added.push(key);
                }
            }
        }
        for nested in blocks_mut(&mut inst.kind) {
            let mark = values.open();
            cse_block(nested, values, rename, types);
            values.close(mark);
        }
    }
}

/// Removes pure instructions whose results nobody reads, in time linear in the kernel: values read
/// by instructions that stay (and scalar parameters) are live, liveness flows from a pure
/// instruction's results to its operands, and pure instructions with no live result go. (Removing
/// unread instructions round by round would take one round per link of a dead chain.)
pub fn dce(k: &mut Kernel) {
    // The operands of the pure instruction defining each value.
    let mut operands: Vec<Option<Vec<ValueId>>> = vec![None; k.values.len()];
    let mut work: Vec<ValueId> = Vec::new();
    k.body.walk(&mut |i| {
        if is_pure(&i.kind) {
            for d in i.kind.defs() {
                operands[d.0 as usize] = Some(i.kind.uses());
            }
        } else {
            work.extend(i.kind.uses());
        }
    });
    for p in &k.params {
        if let Param::Scalar { value, .. } = p {
            work.push(*value);
        }
    }
    let mut live = vec![false; k.values.len()];
    while let Some(v) = work.pop() {
        if !std::mem::replace(&mut live[v.0 as usize], true) {
            work.extend(operands[v.0 as usize].take().unwrap_or_default());
        }
    }
    dce_block(&mut k.body, &live);
}

fn dce_block(b: &mut Block, live: &[bool]) {
    b.insts.retain(|i| !is_pure(&i.kind) || i.kind.defs().iter().any(|d| live[d.0 as usize]));
    for inst in &mut b.insts {
        for nested in blocks_mut(&mut inst.kind) {
            dce_block(nested, live);
        }
    }
}
