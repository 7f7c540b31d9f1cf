//! Legalization as a rewrite: the atomics a target provides as a CAS loop
//! ([`Polyfill::CasLoop`], [`Polyfill::SubwordCasLoop`]) become that loop in the IR, written once
//! for every backend, the emulator included.

use super::{Feature, MemSpace, Polyfill, Support, Target};
use crate::ir::{
    AtomicOp, BinOp, Block, CmpOp, Const, DType, Inst, InstKind, Kernel, LoadKind, LocalDecl, LocalId, Ordering, Place,
    Scope, SrcLoc, StoreKind, UnOp, ValueId,
};

/// Rewrites every atomic `target` answers with a CAS-loop polyfill.
///
/// An element-wide loop ([`Polyfill::CasLoop`]: mul, float min/max, float adds a target lacks):
///
/// ```text
/// old = load x                        (plain: the loop's CAS checks it)
/// loop {
///     new = old <op> value
///     seen = cas(x, old, new)
///     if bits(seen) == bits(old) { break }
///     old = seen
/// }
/// ```
///
/// A loop on the aligned 32-bit word holding an 8- or 16-bit element
/// ([`Polyfill::SubwordCasLoop`]: read-modify-writes and compare-and-swap of narrow elements, and
/// ordered stores of them where the target has no store that narrow), with `word_shift` and
/// `atomic_cas_word`; its first CAS guesses the word is zero, so no separate read is needed:
///
/// ```text
/// shift = word_shift x ; w = 0
/// loop {
///     old = (w >> shift) & ones
///     new = old <op> value            (cas: old == expected ? desired : old; store: value)
///     seen = cas_word(x, w, (w & !(ones << shift)) | (bits(new) << shift))
///     if seen == w { break }
///     w = seen
/// }
/// ```
///
/// Both compare bit patterns, so a float `-0.0` or NaN in memory cannot loop forever. A seq_cst
/// atomic becomes a seq_cst fence before the loop and acquire-release CASes (D6). The result may
/// hold `atomic_cas` on float elements, which the front end refuses from users: here it is a
/// comparison of bits.
pub fn legalize_atomics(k: &mut Kernel, target: &Target) {
    let body = std::mem::take(&mut k.body);
    k.body = rewrite(k, target, body);
}

/// How `target` polyfills `feature`, when it does with a loop.
fn polyfill(target: &Target, feature: Feature) -> Option<Polyfill> {
    match target.support(feature) {
        Support::Polyfill { how: how @ (Polyfill::CasLoop | Polyfill::SubwordCasLoop) } => Some(how),
        _ => None,
    }
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
            _ => {}
        }
        match atomic_of(k, &inst.kind).and_then(|(feature, a)| Some((polyfill(target, feature)?, a))) {
            Some((how, a)) => {
                let mut b = Builder { k, loc: inst.loc, op: inst.op, insts: &mut insts };
                match how {
                    Polyfill::CasLoop => b.element_loop(a),
                    _ => b.word_loop(a),
                }
            }
            None => insts.push(inst),
        }
    }
    Block { insts }
}

/// What an atomic instruction does to its element.
#[derive(Clone, Copy)]
enum Update {
    /// `old <op> value` (exchange: `value`).
    Rmw(AtomicOp, ValueId),
    /// `old == expected ? desired : old`.
    Cas { expected: ValueId, desired: ValueId },
}

/// One atomic access to rewrite.
#[derive(Clone, Copy)]
struct Access {
    dst: Option<ValueId>,
    place: Place,
    update: Update,
    ordering: Ordering,
    scope: Scope,
}

/// The feature an atomic instruction needs and what it does (`None`: not an atomic on device or
/// shared memory).
fn atomic_of(k: &Kernel, kind: &InstKind) -> Option<(Feature, Access)> {
    let (place, access) = match *kind {
        InstKind::Atomic { dst, place, op, value, ordering, scope } => {
            (place, Access { dst, place, update: Update::Rmw(op, value), ordering, scope })
        }
        InstKind::Cas { dst, place, expected, desired, ordering, scope } => {
            (place, Access { dst: Some(dst), place, update: Update::Cas { expected, desired }, ordering, scope })
        }
        InstKind::Store { place, value, kind: StoreKind::Ordered(ordering, scope) } => {
            (place, Access { dst: None, place, update: Update::Rmw(AtomicOp::Exchange, value), ordering, scope })
        }
        _ => return None,
    };
    let t = k.array_dtype(place.array);
    let space = MemSpace::of(k.array_space(place.array))?;
    let feature = match (kind, access.update) {
        (InstKind::Store { .. }, _) => Feature::OrderedAccess(t, space),
        (_, Update::Rmw(op, _)) => Feature::AtomicRmw(op, t, space),
        (_, Update::Cas { .. }) => Feature::AtomicCas(t, space),
    };
    Some((feature, access))
}

/// Appends instructions at one source location, allocating values and locals in the kernel.
struct Builder<'a> {
    k: &'a mut Kernel,
    loc: SrcLoc,
    /// The library op of the rewritten atomic, which its loop's instructions keep.
    op: Option<&'static str>,
    insts: &'a mut Vec<Inst>,
}

impl Builder<'_> {
    fn value(&mut self, d: DType) -> ValueId {
        self.k.values.push(d);
        ValueId(self.k.values.len() as u32 - 1)
    }

    fn local(&mut self, d: DType) -> LocalId {
        self.k.locals.push(LocalDecl { dtype: d });
        LocalId(self.k.locals.len() as u32 - 1)
    }

    fn emit(&mut self, kind: InstKind) {
        self.insts.push(Inst { kind, loc: self.loc, op: self.op });
    }

    /// A new value of type `d` defined by `kind(dst)`.
    fn def(&mut self, d: DType, kind: impl FnOnce(ValueId) -> InstKind) -> ValueId {
        let dst = self.value(d);
        self.emit(kind(dst));
        dst
    }

    fn u32(&mut self, x: u32) -> ValueId {
        self.def(DType::U32, |dst| InstKind::Const { dst, value: Const { dtype: DType::U32, bits: u64::from(x) } })
    }

    fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId) -> ValueId {
        let d = self.k.dtype(a);
        self.def(d, |dst| InstKind::Binary { dst, op, a, b })
    }

    fn cast(&mut self, to: DType, a: ValueId) -> ValueId {
        self.def(to, |dst| InstKind::Cast { dst, a })
    }

    fn bit_cast(&mut self, to: DType, a: ValueId) -> ValueId {
        self.def(to, |dst| InstKind::BitCast { dst, a })
    }

    fn get(&mut self, local: LocalId) -> ValueId {
        let d = self.k.locals[local.0 as usize].dtype;
        self.def(d, |dst| InstKind::LocalGet { dst, local })
    }

    fn set(&mut self, local: LocalId, value: ValueId) {
        self.emit(InstKind::LocalSet { local, value });
    }

    /// The bits of `v` as an unsigned integer of its width (floats reinterpreted; others as they are).
    fn bits(&mut self, v: ValueId) -> ValueId {
        match self.k.dtype(v) {
            DType::F16 | DType::BF16 => self.bit_cast(DType::U16, v),
            DType::F32 => self.bit_cast(DType::U32, v),
            DType::F64 => self.bit_cast(DType::U64, v),
            _ => v,
        }
    }

    fn same_bits(&mut self, a: ValueId, b: ValueId) -> ValueId {
        let (a, b) = (self.bits(a), self.bits(b));
        self.def(DType::Bool, |dst| InstKind::Cmp { dst, op: CmpOp::Eq, a, b })
    }

    /// The new value of the element.
    fn updated(&mut self, update: Update, old: ValueId) -> ValueId {
        match update {
            Update::Rmw(op, value) => match op.binop() {
                Some(op) => self.binary(op, old, value),
                None => value,
            },
            Update::Cas { expected, desired } => {
                let t = self.k.dtype(old);
                let hit = self.same_bits(old, expected);
                self.def(t, |dst| InstKind::Select { dst, cond: hit, a: desired, b: old })
            }
        }
    }

    /// D6: a seq_cst read-modify-write is a seq_cst fence and then the access, so the fence goes
    /// once before the loop and each CAS is acquire-release.
    fn cas_ordering(&mut self, a: &Access) -> Ordering {
        match a.ordering {
            Ordering::SeqCst => {
                self.emit(InstKind::Fence { scope: a.scope, ordering: Ordering::SeqCst });
                Ordering::AcqRel
            }
            o => o,
        }
    }

    /// `if same { break }`.
    fn break_if(&mut self, same: ValueId) {
        let brk = Block { insts: vec![Inst { kind: InstKind::Break, loc: self.loc, op: self.op }] };
        self.emit(InstKind::If { cond: same, then_block: brk, else_block: Block::default() });
    }

    /// Builds `body` into a block of its own (the loop's body).
    fn block(&mut self, body: impl FnOnce(&mut Builder<'_>)) -> Block {
        let mut insts = Vec::new();
        body(&mut Builder { k: self.k, loc: self.loc, op: self.op, insts: &mut insts });
        Block { insts }
    }

    fn element_loop(&mut self, a: Access) {
        let t = self.k.array_dtype(a.place.array);
        let ordering = self.cas_ordering(&a);
        let old_l = self.local(t);
        let init = self.def(t, |dst| InstKind::Load { dst, place: a.place, kind: LoadKind::Plain });
        self.set(old_l, init);
        let body = self.block(|b| {
            let old = b.get(old_l);
            let new = b.updated(a.update, old);
            let seen = b.def(t, |dst| InstKind::Cas {
                dst,
                place: a.place,
                expected: old,
                desired: new,
                ordering,
                scope: a.scope,
            });
            b.set(old_l, seen);
            let same = b.same_bits(seen, old);
            b.break_if(same);
        });
        self.emit(InstKind::Loop { body });
        if let Some(dst) = a.dst {
            self.emit(InstKind::LocalGet { dst, local: old_l });
        }
    }

    fn word_loop(&mut self, a: Access) {
        let t = self.k.array_dtype(a.place.array);
        let bits = 8 * t.size_bytes() as u32;
        let ordering = self.cas_ordering(&a);
        let ones = self.u32((1 << bits) - 1);
        let shift = self.def(DType::U32, |dst| InstKind::WordShift { dst, place: a.place });
        let field = self.binary(BinOp::Shl, ones, shift);
        let rest = self.def(DType::U32, |dst| InstKind::Unary { dst, op: UnOp::Not, a: field });
        let (word_l, old_l) = (self.local(DType::U32), self.local(t));
        let zero = self.u32(0);
        self.set(word_l, zero);
        let body = self.block(|b| {
            let w = b.get(word_l);
            let shifted = b.binary(BinOp::Shr, w, shift);
            let old_bits = b.binary(BinOp::And, shifted, ones);
            let old = match t {
                DType::F16 | DType::BF16 => {
                    let h = b.cast(DType::U16, old_bits);
                    b.bit_cast(t, h)
                }
                _ => b.cast(t, old_bits),
            };
            b.set(old_l, old);
            let new = b.updated(a.update, old);
            let new_bits = match t {
                DType::F16 | DType::BF16 => {
                    let h = b.bit_cast(DType::U16, new);
                    b.cast(DType::U32, h)
                }
                _ => b.cast(DType::U32, new),
            };
            let new_bits = b.binary(BinOp::And, new_bits, ones);
            let placed = b.binary(BinOp::Shl, new_bits, shift);
            let kept = b.binary(BinOp::And, w, rest);
            let nw = b.binary(BinOp::Or, kept, placed);
            let seen = b.def(DType::U32, |dst| InstKind::WordCas {
                dst,
                place: a.place,
                expected: w,
                desired: nw,
                ordering,
                scope: a.scope,
            });
            b.set(word_l, seen);
            let same = b.same_bits(seen, w);
            b.break_if(same);
        });
        self.emit(InstKind::Loop { body });
        if let Some(dst) = a.dst {
            self.emit(InstKind::LocalGet { dst, local: old_l });
        }
    }
}
