//! Legalization as a rewrite: the atomics a target provides as [`Polyfill::CasLoop`] become a
//! compare-and-swap loop in the IR, written once for every consumer of the kernel.

use super::{Feature, MemSpace, Polyfill, Support, Target};
use crate::ir::{
    AtomicOp, Block, CmpOp, DType, Inst, InstKind, Kernel, LoadKind, LocalDecl, LocalId, Ordering, Place, Scope,
    SrcLoc, ValueId,
};

/// Rewrites every atomic read-modify-write whose feature `target` answers
/// `Polyfill { how: CasLoop }` into
///
/// ```text
/// fence seq_cst                      (only for a seq_cst atomic, which then CASes acq_rel)
/// old = load x                       (plain: the loop's CAS checks it)
/// loop {
///     new = old <op> value
///     seen = cas(x, old, new)        (the atomic's ordering and scope)
///     if bits(seen) == bits(old) { break }
///     old = seen
/// }
/// dst = old
/// ```
///
/// comparing bit patterns, so a float `-0.0` or NaN in memory cannot loop forever. Sub-word
/// polyfills ([`Polyfill::SubwordCasLoop`]) stay with the backend, which addresses the word.
pub fn legalize_atomics(k: &mut Kernel, target: &Target) {
    let body = std::mem::take(&mut k.body);
    k.body = rewrite(k, target, body);
}

fn rewrite(k: &mut Kernel, target: &Target, block: Block) -> Block {
    let mut insts = Vec::with_capacity(block.insts.len());
    for mut inst in block.insts {
        match &mut inst.kind {
            InstKind::If { then_block, else_block, .. } => {
                *then_block = rewrite(k, target, std::mem::take(then_block));
                *else_block = rewrite(k, target, std::mem::take(else_block));
            }
            InstKind::Loop { body } | InstKind::GridStride { body, .. } => {
                *body = rewrite(k, target, std::mem::take(body));
            }
            InstKind::Atomic { dst, place, op, value, ordering, scope } => {
                let t = k.array_dtype(place.array);
                let space = MemSpace::of(k.array_space(place.array));
                let polyfilled = space.is_some_and(|s| {
                    target.support(Feature::AtomicRmw(*op, t, s)) == Support::polyfill(Polyfill::CasLoop)
                });
                if polyfilled {
                    let loop_ = CasLoop {
                        dst: *dst,
                        place: *place,
                        op: *op,
                        value: *value,
                        ordering: *ordering,
                        scope: *scope,
                    };
                    insts.extend(loop_.build(k, inst.loc));
                    continue;
                }
            }
            _ => {}
        }
        insts.push(inst);
    }
    Block { insts }
}

/// One atomic to rewrite.
struct CasLoop {
    dst: Option<ValueId>,
    place: Place,
    op: AtomicOp,
    value: ValueId,
    ordering: Ordering,
    scope: Scope,
}

impl CasLoop {
    fn build(self, k: &mut Kernel, loc: SrcLoc) -> Vec<Inst> {
        let t = k.array_dtype(self.place.array);
        let at = |kind| Inst { kind, loc };
        let local = LocalId(k.locals.len() as u32);
        k.locals.push(LocalDecl { dtype: t });
        let mut value = |d: DType| {
            k.values.push(d);
            ValueId(k.values.len() as u32 - 1)
        };
        let init = value(t);
        let old = value(t);
        let seen = value(t);
        let same = value(DType::Bool);
        let mut body = vec![at(InstKind::LocalGet { dst: old, local })];
        let new = match self.op.binop() {
            Some(op) => {
                let new = value(t);
                body.push(at(InstKind::Binary { dst: new, op, a: old, b: self.value }));
                new
            }
            None => self.value,
        };
        // D6's seq_cst read-modify-write is a seq_cst fence and then the access: the fence goes
        // once before the loop, and each CAS is acquire-release (at least what the access needs).
        let (fence, ordering) = match self.ordering {
            Ordering::SeqCst => {
                (Some(InstKind::Fence { scope: self.scope, ordering: Ordering::SeqCst }), Ordering::AcqRel)
            }
            o => (None, o),
        };
        body.push(at(InstKind::Cas {
            dst: seen,
            place: self.place,
            expected: old,
            desired: new,
            ordering,
            scope: self.scope,
        }));
        body.push(at(InstKind::LocalSet { local, value: seen }));
        let (a, b) = match bits_type(t) {
            Some(bits) => {
                let (sb, ob) = (value(bits), value(bits));
                body.push(at(InstKind::BitCast { dst: sb, a: seen }));
                body.push(at(InstKind::BitCast { dst: ob, a: old }));
                (sb, ob)
            }
            None => (seen, old),
        };
        body.push(at(InstKind::Cmp { dst: same, op: CmpOp::Eq, a, b }));
        body.push(at(InstKind::If {
            cond: same,
            then_block: Block { insts: vec![at(InstKind::Break)] },
            else_block: Block::default(),
        }));
        let mut out: Vec<Inst> = fence.into_iter().map(at).collect();
        out.extend([
            at(InstKind::Load { dst: init, place: self.place, kind: LoadKind::Plain }),
            at(InstKind::LocalSet { local, value: init }),
            at(InstKind::Loop { body: Block { insts: body } }),
        ]);
        if let Some(dst) = self.dst {
            out.push(at(InstKind::LocalGet { dst, local }));
        }
        out
    }
}

/// The unsigned type a float's bits are compared in (`None`: compare the values themselves).
fn bits_type(t: DType) -> Option<DType> {
    match t {
        DType::F16 | DType::BF16 => Some(DType::U16),
        DType::F32 => Some(DType::U32),
        DType::F64 => Some(DType::U64),
        _ => None,
    }
}
