//! Device-wide reduction in one launch: blocks reduce tiles, the last block to finish reduces the
//! blocks' partials (no look-back, so no forward-progress assumption).

use super::tile::{load_striped, load_vector, vector_width};
use super::{check_len, check_out, device_err, Operator, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::DeviceArray;
use crate::simt::atomic::atomic_add;
use crate::simt::{block, grid};
use crate::trace::{if_, var, volatile_load, while_, Kernel, Shuffle, Val};

/// Default items per thread and tile pass: 32 four-byte or 16 eight-byte elements (128 bytes, eight
/// 16-byte loads in flight). On an H200 at 2^28 i32, 32 items read 1.3 to 1.6% faster than 16
/// (record `2026-11-28-h200-algorithms-s10`).
pub(crate) const ITEMS_4: u32 = 32;
pub(crate) const ITEMS_8: u32 = 16;

/// `op` over `v` as a balanced tree: independent operations, and for floats a shorter rounding chain
/// than a left fold.
fn tree<T: Shuffle>(op: &Operator<T>, mut v: Vec<Val<T>>) -> Val<T> {
    while v.len() > 1 {
        v = v.chunks(2).map(|c| if c.len() == 2 { op.apply(c[0], c[1]) } else { c[0] }).collect();
    }
    v[0]
}

/// `out[0] = op(input[0], ..., input[n-1])` (the identity for n = 0) in one launch.
///
/// Each block walks the full tiles of `block * items` elements `block_idx, block_idx + grid, ...`
/// (striped loads, all issued before the operations; 16-byte vector loads where the target has
/// them, as CUB's: on an H200 at 2^28 a hand-written kernel of this shape read 1.5 to 2% faster
/// with them), then the partial tile one element per thread
/// and pass; its block reduction goes to `partials[block_idx]`. Thread 0 then publishes it (fence,
/// atomic ticket on `counter[0]`, fence) and the block that draws the last ticket reduces the
/// partials, writes `out[0]` and resets the counter for the next launch.
///
/// Arrays: `input`, `out` (at least 1), `partials` (at least the grid), `counter` (1, zero before the
/// first launch).
pub(crate) fn reduce_kernel<T: Shuffle>(op: &Operator<T>, block: u32, items: u32) -> Kernel {
    let name = format!("qd_reduce_{}_{}{}", op.ident(), T::DTYPE, shape_suffix(block, items, T::DTYPE.size_bytes()));
    let op = op.clone();
    Kernel::explicit(&name, block, move |k| {
        let input = k.array::<T>("input");
        let out = k.array::<T>("out");
        let partials = k.array::<T>("partials");
        let counter = k.array::<u32>("counter");
        let t = block::thread_idx();
        let b = block::block_idx();
        let g = block::grid_dim();
        let n = input.len();
        let tile = (block * items) as i32;
        let full = n / tile;
        let width = vector_width::<T>(items);
        // Thread `t` loads vectors `t + j * block` of the tile: a subgroup's load covers
        // consecutive 16-byte vectors (the elements' order differs from the striped loads', which
        // a commutative reduction does not see).
        let vectors = |base: Val<i32>, w: u32| -> Vec<Val<T>> {
            (0..items / w).flat_map(|j| load_vector(input, base + (t + (j * block) as i32) * w as i32, w)).collect()
        };
        let acc = var(op.identity_val());
        let next = var(b);
        while_(
            || next.get().lt(full),
            || {
                let vals = match width {
                    Some(w) => vectors(next.get() * tile, w),
                    None => load_striped(input, next.get() * tile + t, block, items, None),
                };
                acc.set(op.apply(acc.get(), tree(&op, vals)));
                next.set(next.get() + g);
            },
        );
        let i = var(full * tile + b * block as i32 + t);
        while_(
            || i.get().lt(n),
            || {
                acc.set(op.apply(acc.get(), input.get(i.get())));
                i.set(i.get() + g * block as i32);
            },
        );
        let part = op.block_reduce(acc.get(), block);
        let last = block::shared_array::<i32>(1);
        if_(t.eq(0), || {
            partials.set(b, part);
            // Release the partial before the ticket; acquire the others' after it.
            grid::mem_fence();
            let ticket = atomic_add(counter.at(0), 1u32);
            grid::mem_fence();
            last.set(0, ticket.eq((g - 1).cast::<u32>()).to_i32());
        });
        block::sync();
        if_(last.get(0).ne(0), || {
            let s = var(op.identity_val());
            let j = var(t);
            while_(
                || j.get().lt(g),
                || {
                    s.set(op.apply(s.get(), volatile_load(partials.at(j.get()))));
                    j.set(j.get() + block as i32);
                },
            );
            let total = op.block_reduce(s.get(), block);
            if_(t.eq(0), || {
                out.set(0, total);
                counter.set(0, 0u32);
            });
        });
    })
}

/// `_b{block}_i{items}` for a shape other than the default.
fn shape_suffix(block: u32, items: u32, elem: usize) -> String {
    let default_items = if elem > 4 { ITEMS_8 } else { ITEMS_4 };
    let mut s = String::new();
    if block != super::BLOCK {
        s.push_str(&format!("_b{block}"));
    }
    if items != default_items {
        s.push_str(&format!("_i{items}"));
    }
    s
}

/// The grid for `n` elements: at most `resident` blocks, each given the same number of tile passes
/// (so no block runs one pass more than most others).
pub(crate) fn reduce_grid(n: usize, block: u32, items: u32, resident: u32) -> u32 {
    let tiles = n.div_ceil((block * items) as usize).max(1);
    let per_block = tiles.div_ceil(resident.max(1) as usize);
    tiles.div_ceil(per_block) as u32
}

/// The reduce kernel a call with `tuning` launches, with its block and items.
pub(crate) fn kernel<T: Shuffle>(op: &Operator<T>, tuning: &Tuning) -> (Kernel, u32, u32) {
    let (block, items) = tuning.resolve(if T::DTYPE.size_bytes() > 4 { ITEMS_8 } else { ITEMS_4 });
    let key = format!("reduce/{}/{}/{block}/{items}", T::DTYPE, op.key());
    (super::cached_kernel(key, || reduce_kernel(op, block, items)), block, items)
}

impl Workspace {
    /// Writes `op(input[0], ..., input[n-1])` to `out[0]` (the identity when `input` is empty), in
    /// one launch, without reading anything back.
    ///
    /// `op` must be associative and commutative (the blocks take elements in their own order).
    /// Errors: `out` empty ([`Error::TooShort`](super::Error::TooShort)), `input` over
    /// [`max_len`](super::max_len), and the device's (an operator or dtype the target lacks comes back
    /// as its trace error).
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&(1..=100).collect::<Vec<i64>>()).unwrap();
    /// let out = d.zeros::<i64>(1).unwrap();
    /// Workspace::new(&d).reduce(&x, &out, &Operator::add()).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5050]);
    /// ```
    #[track_caller]
    pub fn reduce<T: Shuffle>(&mut self, input: &DeviceArray<T>, out: &DeviceArray<T>, op: &Operator<T>) -> Result<()> {
        self.reduce_at(input, out, op, SrcLoc::caller())
    }

    pub(crate) fn reduce_at<T: Shuffle>(
        &mut self,
        input: &DeviceArray<T>,
        out: &DeviceArray<T>,
        op: &Operator<T>,
        at: SrcLoc,
    ) -> Result<()> {
        const ALGO: &str = "reduce";
        self.begin();
        let n = input.len();
        check_len::<T>(&self.device, ALGO, "input", n, at)?;
        check_out(ALGO, "out", out.len(), 1, at)?;
        self.tuning.check(&self.device, ALGO, at)?;
        let (kernel, block, items) = kernel::<T>(op, &self.tuning);
        let err = device_err(ALGO, at);
        let resident = self.resident_blocks(&kernel).map_err(&err)?;
        let grid = reduce_grid(n, block, items, resident);
        let partials = self.scratch::<T>("partials", grid as usize).map_err(&err)?;
        let counter = self.scratch::<u32>("ticket", 1).map_err(&err)?;
        let args = [input.arg(), out.arg(), partials.arg(), counter.arg()];
        self.launch(&kernel, grid, &args).map_err(&err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_grid_gives_every_block_the_same_passes() {
        assert_eq!(reduce_grid(0, 256, 16, 1056), 1);
        assert_eq!(reduce_grid(1, 256, 16, 1056), 1);
        // 2^26 elements = 16384 tiles of 4096: 16 passes for each of 1024 blocks.
        assert_eq!(reduce_grid(1 << 26, 256, 16, 1056), 1024);
        assert_eq!(reduce_grid(1 << 26, 256, 16, 0), 1);
        for n in [1usize, 4095, 4096, 4097, 1 << 20, 3 << 22] {
            let g = reduce_grid(n, 256, 16, 528) as usize;
            assert!((1..=528).contains(&g), "{n}: {g}");
            assert!(g >= n.div_ceil(4096).min(528) / 2, "{n}: {g}");
        }
    }
}
