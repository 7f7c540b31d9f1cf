//! Moving a tile of `block * items` elements between device memory, shared memory and registers.
//!
//! Loads and stores are *striped* (thread `t` touches `base + t + j * block`), so each subgroup
//! access reads consecutive elements; the algorithms work on *blocked* items (thread `t` owns
//! `base + t * items + j`, consecutive elements, as a scan needs), moving between the two through
//! shared memory. `items` is odd by default, so the blocked reads of 4-byte elements (stride `items`
//! words) touch every bank once.

use crate::simt::block;
use crate::target::{Feature, NvFeature};
use crate::trace::{if_, if_else, target, var, Array, Scalar, Val, Var};

/// Elements of `T` per 16-byte vector load where the target has them (`nv.load_vector`) and the
/// width divides `items`; `None`: one load per element.
pub(crate) fn vector_width<T: Scalar>(items: u32) -> Option<u32> {
    let bytes = T::DTYPE.size_bytes() as u32;
    let fits = matches!(bytes, 4 | 8) && items.is_multiple_of(16 / bytes);
    (fits && target().has(Feature::Nv(NvFeature::VectorLoad))).then_some(16 / bytes)
}

/// The `width` (2 or 4, from [`vector_width`]) elements of `a` from `first`, a multiple of
/// `width`, in one load.
#[track_caller]
pub(crate) fn load_vector<T: Scalar>(a: Array<T>, first: Val<i32>, width: u32) -> Vec<Val<T>> {
    match width {
        2 => crate::nv::load_vector::<T, 2>(a.at(first)).to_vec(),
        _ => crate::nv::load_vector::<T, 4>(a.at(first)).to_vec(),
    }
}

/// `a[first..first + into.len()]` into `into` (a thread's blocked items): 16-byte loads where the
/// target has them and they tile the items (`first` is then a multiple of their width), else one
/// at a time.
#[track_caller]
pub(crate) fn load_blocked<T: Scalar>(a: Array<T>, first: Val<i32>, into: &[Var<T>]) {
    match vector_width::<T>(into.len() as u32) {
        Some(w) => {
            for (c, chunk) in into.chunks(w as usize).enumerate() {
                for (v, x) in chunk.iter().zip(load_vector(a, first + c as i32 * w as i32, w)) {
                    v.set(x);
                }
            }
        }
        None => {
            for (j, v) in into.iter().enumerate() {
                v.set(a.get(first + j as i32));
            }
        }
    }
}

/// `items` loads of `a[first + j * block]`; with `guard = Some((n, fill))` a load at or past `n`
/// gives `fill`.
#[track_caller]
pub(crate) fn load_striped<T: Scalar>(
    a: Array<T>,
    first: Val<i32>,
    block: u32,
    items: u32,
    guard: Option<(Val<i32>, Val<T>)>,
) -> Vec<Val<T>> {
    (0..items)
        .map(|j| {
            let i = first + (j * block) as i32;
            match guard {
                None => a.get(i),
                Some((n, fill)) => {
                    let v = var(fill);
                    if_(i.lt(n), || v.set(a.get(i)));
                    v.get()
                }
            }
        })
        .collect()
}

/// Copies the tile at `base` of `input` (`n` elements in all) into `sh` in order, elements at or
/// past `n` as `fill`, and waits for the block: afterwards thread `t`'s items are
/// `sh[t * items + j]`. Full tiles take the unguarded loads.
#[track_caller]
pub(crate) fn tile_to_shared<T: Scalar>(
    input: Array<T>,
    sh: Array<T>,
    base: Val<i32>,
    n: Val<i32>,
    fill: Val<T>,
    block: u32,
    items: u32,
) {
    let t = block::thread_idx();
    let first = base + t;
    let full = (base + (block * items) as i32).le(n);
    let loaded: Vec<_> = (0..items).map(|_| var(fill)).collect();
    let load = |guard: bool| {
        for (v, x) in loaded.iter().zip(load_striped(input, first, block, items, guard.then_some((n, fill)))) {
            v.set(x);
        }
    };
    if_else(full, || load(false), || load(true));
    for (j, v) in loaded.iter().enumerate() {
        sh.set(t + (j as u32 * block) as i32, v.get());
    }
    block::sync();
}

/// Stores `value(k)` for the tile's elements `k = t + j * block` to `out[base + k]`, skipping those
/// at or past `n`.
#[track_caller]
pub(crate) fn store_striped<T: Scalar>(
    out: Array<T>,
    base: Val<i32>,
    n: Val<i32>,
    block: u32,
    items: u32,
    value: impl Fn(Val<i32>) -> Val<T>,
) {
    let t = block::thread_idx();
    let full = (base + (block * items) as i32).le(n);
    if_else(
        full,
        || {
            for j in 0..items {
                let k = t + (j * block) as i32;
                out.set(base + k, value(k));
            }
        },
        || {
            for j in 0..items {
                let k = t + (j * block) as i32;
                if_((base + k).lt(n), || out.set(base + k, value(k)));
            }
        },
    );
}
