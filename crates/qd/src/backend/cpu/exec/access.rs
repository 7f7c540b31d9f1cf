//! Memory access for the executor: bounds-checked element indices, per-lane reads and writes of
//! global, shared and per-thread memory, and atomic read-modify-writes (which count as progress
//! when they change a value). In weak mode (D26) global accesses go through `weak.rs`.

use super::{width_mask, BlockExec, CpuArg, EmuError, EmuErrorKind};
use crate::ir::eval;
use crate::ir::*;
use std::sync::atomic::{AtomicU64, Ordering as MemOrd};

impl<'a, 'b> BlockExec<'a, 'b> {
    /// Index of lane `l` into `array`, bounds-checked.
    pub(super) fn index(
        &self,
        kind: &InstKind,
        loc: SrcLoc,
        sg: usize,
        place: &Place,
        l: usize,
    ) -> Result<usize, EmuError> {
        let k = &self.sh.prog.kernel;
        let d = k.dtype(place.index);
        let raw = self.reg(sg, place.index, l);
        let i = if d.is_signed_int() { eval::sext(d, raw) } else { raw as i64 };
        let len = self.array_len(place.array);
        if i < 0 || i as usize >= len {
            return Err(self.err(
                Some(loc),
                EmuErrorKind::OutOfBounds {
                    op: self.op_name(kind),
                    array: k.array_name(place.array).to_string(),
                    index: i,
                    unsigned: !d.is_signed_int(),
                    len,
                },
            ));
        }
        Ok(i as usize)
    }

    pub(super) fn array_len(&self, a: ArrayRef) -> usize {
        match a {
            ArrayRef::Param(i) => match &self.sh.args[i as usize] {
                CpuArg::Array(b) => b.len(),
                CpuArg::Scalar(_) => 0,
            },
            ArrayRef::Shared(i) => self.shared_mem[i as usize].len(),
            ArrayRef::Local(i) => self.sh.prog.kernel.local_arrays[i as usize].len as usize,
        }
    }

    fn cell(&self, a: ArrayRef, i: usize) -> &AtomicU64 {
        match a {
            ArrayRef::Param(p) => self.param_cell(p, i),
            ArrayRef::Shared(s) => self.shared_mem[s as usize].cell(i),
            ArrayRef::Local(_) => unreachable!("local arrays are not atomic cells"),
        }
    }

    /// Element `i` of global array parameter `p`: memory of the launch, not of the block.
    fn param_cell(&self, p: u32, i: usize) -> &'a AtomicU64 {
        let args: &'a [CpuArg] = self.sh.args;
        match &args[p as usize] {
            CpuArg::Array(b) => b.cell(i),
            CpuArg::Scalar(_) => unreachable!("scalar argument used as an array"),
        }
    }

    /// The cell of a global element when weak mode applies to it (D26).
    pub(super) fn weak_cell(&self, a: ArrayRef, i: usize) -> Option<&'a AtomicU64> {
        match a {
            ArrayRef::Param(p) if self.weak.is_some() => Some(self.param_cell(p, i)),
            _ => None,
        }
    }

    pub(super) fn mem_read(&mut self, sg: usize, a: ArrayRef, i: usize, l: usize, kind: LoadKind) -> u64 {
        if let ArrayRef::Local(j) = a {
            let len = self.sh.prog.kernel.local_arrays[j as usize].len as usize;
            return self.sgs[sg].local_arrays[j as usize][l * len + i];
        }
        if let Some(cell) = self.weak_cell(a, i) {
            return self.weak_load(cell, kind);
        }
        let order = match kind {
            LoadKind::Plain | LoadKind::Volatile | LoadKind::Ordered(Ordering::Relaxed, _) => MemOrd::Relaxed,
            LoadKind::Ordered(..) => MemOrd::Acquire,
        };
        self.cell(a, i).load(order)
    }

    pub(super) fn mem_write(&mut self, sg: usize, a: ArrayRef, i: usize, l: usize, bits: u64, kind: StoreKind) {
        if let ArrayRef::Local(j) = a {
            let len = self.sh.prog.kernel.local_arrays[j as usize].len as usize;
            self.sgs[sg].local_arrays[j as usize][l * len + i] = bits;
            return;
        }
        if let Some(cell) = self.weak_cell(a, i) {
            return self.weak_store(cell, bits, kind);
        }
        if self.cell(a, i).swap(bits, MemOrd::SeqCst) != bits {
            self.sh.progress.fetch_add(1, MemOrd::Relaxed);
        }
    }

    /// Atomic read-modify-write of one element with `ordering` at `scope`; returns the old value.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rmw(
        &mut self,
        sg: usize,
        a: ArrayRef,
        i: usize,
        l: usize,
        ordering: Ordering,
        scope: Scope,
        f: impl Fn(u64) -> u64,
    ) -> u64 {
        if let ArrayRef::Local(_) = a {
            let old = self.mem_read(sg, a, i, l, LoadKind::Plain);
            self.mem_write(sg, a, i, l, f(old), StoreKind::Plain);
            return old;
        }
        if let Some(cell) = self.weak_cell(a, i) {
            return self.weak_rmw(cell, ordering, scope, f);
        }
        let cell = self.cell(a, i);
        let mut old = cell.load(MemOrd::SeqCst);
        loop {
            let new = f(old);
            match cell.compare_exchange_weak(old, new, MemOrd::SeqCst, MemOrd::SeqCst) {
                Ok(_) => {
                    if new != old {
                        self.sh.progress.fetch_add(1, MemOrd::Relaxed);
                    }
                    return old;
                }
                Err(cur) => old = cur,
            }
        }
    }
}

impl BlockExec<'_, '_> {
    /// The word view of a narrow array: element `i`'s word starts at element `i - i % per`, and
    /// element `i` sits at bit `(i % per) * bits` (little-endian, as on every GPU). Returns
    /// `(first element, elements per word, bits per element)`.
    pub(super) fn word_of(&self, a: ArrayRef, i: usize) -> (usize, usize, u32) {
        let bits = 8 * self.sh.prog.kernel.array_dtype(a).size_bytes() as u32;
        let per = (32 / bits) as usize;
        (i - i % per, per, bits)
    }

    /// Compare-and-swap of the 32-bit word holding element `i` of a narrow device or shared array:
    /// the emulator keeps one cell per element, so the word is read from its elements, and when it
    /// equals `expected` each element `desired` changes is swapped in with its own compare-exchange
    /// (the word CAS of a GPU, for the one element a sub-word CAS loop changes: a concurrent change
    /// of that element fails it, changes of the others are kept). Returns the word it saw.
    pub(super) fn word_cas(
        &mut self,
        a: ArrayRef,
        i: usize,
        expected: u32,
        desired: u32,
        order: (Ordering, Scope),
    ) -> u32 {
        let (first, per, bits) = self.word_of(a, i);
        let len = self.array_len(a);
        let mask = (1u64 << bits) - 1;
        let elems = || (0..per).filter(move |k| first + k < len);
        if self.weak_cell(a, i).is_some() {
            // Weak mode runs on one thread: read the word's latest elements (after the block's own
            // buffered stores), then write the changed ones, each an atomic of the word's ordering.
            let mut seen = 0u32;
            for k in elems() {
                let cell = self.weak_cell(a, first + k).expect("a global array");
                let v = self.weak_rmw(cell, order.0, order.1, |v| v);
                seen |= ((v & mask) as u32) << (k as u32 * bits);
            }
            if seen == expected {
                for k in elems() {
                    let new = u64::from(desired >> (k as u32 * bits)) & mask;
                    let cell = self.weak_cell(a, first + k).expect("a global array");
                    self.weak_rmw(cell, Ordering::Relaxed, order.1, |_| new);
                }
            }
            return seen;
        }
        let word = |this: &Self| {
            elems().fold(0u32, |w, k| {
                w | (((this.cell(a, first + k).load(MemOrd::SeqCst) & mask) as u32) << (k as u32 * bits))
            })
        };
        let seen = word(self);
        if seen != expected {
            return seen;
        }
        for k in elems() {
            let field = |w: u32| u64::from(w >> (k as u32 * bits)) & mask;
            let (old, new) = (field(expected), field(desired));
            if old == new {
                continue;
            }
            if let Err(cur) = self.cell(a, first + k).compare_exchange(old, new, MemOrd::SeqCst, MemOrd::SeqCst) {
                // The word with the element as the failed exchange saw it, which differs from
                // `expected`: a fresh read could equal `expected` again (another thread changed
                // the element back in between) and the caller's loop would take its write as done.
                let shift = k as u32 * bits;
                let field_mask = (mask as u32) << shift;
                return (word(self) & !field_mask) | (((cur & mask) as u32) << shift);
            }
            self.sh.progress.fetch_add(1, MemOrd::Relaxed);
        }
        expected
    }
}

/// The new value of an atomic `op` (D5 arithmetic; float min/max are minNum/maxNum).
pub(super) fn atomic_apply(d: DType, op: AtomicOp, old: u64, y: u64) -> u64 {
    match op.binop() {
        Some(b) => eval::binary(d, b, old, y).unwrap_or(old),
        None => y & width_mask(d),
    }
}
