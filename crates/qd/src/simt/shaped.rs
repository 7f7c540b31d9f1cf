//! Shaped shared arrays (seed 000's `block.SharedArray` with a tuple shape): one flat shared
//! allocation, indexed row-major with one index per dimension.
//!
//! The shape exists only while tracing: an index is flattened to `((i0 * d1) + i1) * d2 + ...`, so
//! the IR and every backend see an ordinary shared array. On the emulator each access also reads
//! a per-thread probe array as long as each dimension, at that dimension's index: an index out of
//! its dimension is then the emulator's out-of-bounds error naming the dimension, even where the
//! flattened index would land inside the allocation. Other targets trace no probes (a GPU checks
//! no bounds, and the probes would be dead code there).

use crate::trace::{self, op_scope, trace_error, Array, Elem, IntoVal, Scalar, Val};

/// A block-shared array of shape `[d0, d1, ...]` (row-major: the last index varies fastest),
/// made by [`shared_array_shaped`].
pub struct ShapedArray<T, const N: usize> {
    flat: Array<T>,
    shape: [u32; N],
    /// Per dimension, the emulator's bounds probe (none on other targets).
    probes: Option<[Array<u8>; N]>,
}

impl<T, const N: usize> Clone for ShapedArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for ShapedArray<T, N> {}

/// Allocates a block-shared array of `shape` (row-major), one per block, uninitialised.
///
/// ```
/// use qd::prelude::*;
///
/// // Transpose 32×32 tiles through a padded shared tile (33 columns: no bank conflicts).
/// let transpose = Kernel::explicit("transpose", 32 * 32, |k| {
///     let src = k.array::<f32>("src");
///     let dst = k.array::<f32>("dst");
///     let tile = block::shared_array_shaped::<f32, 2>([32, 33]);
///     let (t, b) = (block::thread_idx(), block::block_idx());
///     let (row, col) = (t / 32, t % 32);
///     tile.set([row, col], src.get(b * 1024 + t));
///     block::sync();
///     dst.set(b * 1024 + t, tile.get([col, row]));
/// });
/// # transpose.trace(&qd::target::Target::cpu(32)).unwrap();
/// ```
///
/// An index outside its dimension is an error on the emulator naming the dimension, even when
/// the flattened index is inside the allocation (`[0, 40]` of a `[32, 33]` tile).
#[track_caller]
pub fn shared_array_shaped<T: Scalar, const N: usize>(shape: [u32; N]) -> ShapedArray<T, N> {
    let _op = op_scope("block.shared_array_shaped");
    let total = shape.iter().try_fold(1u32, |acc, &d| acc.checked_mul(d));
    let len = match total {
        _ if N == 0 => {
            trace_error("block.shared_array_shaped", "a shaped shared array needs at least one dimension");
            1
        }
        Some(n) => n,
        None => {
            trace_error(
                "block.shared_array_shaped",
                format!("the shape {shape:?} has more than {} elements", u32::MAX),
            );
            1
        }
    };
    let n = trace::with(|s| s.kernel.shared.len());
    let name = format!("shared{n}");
    let flat = trace::shared_array_named(&name, len);
    let probes = trace::target().is_emulated().then(|| {
        std::array::from_fn(|d| trace::local_array_named(&format!("{name} dimension {d} of {shape:?}"), shape[d]))
    });
    ShapedArray { flat, shape, probes }
}

impl<T: Scalar, const N: usize> ShapedArray<T, N> {
    /// The shape.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("shape", 32, |k| {
    ///     let out = k.array::<u32>("out");
    ///     let tile = block::shared_array_shaped::<f32, 2>([4, 8]);
    ///     let [rows, cols] = tile.shape(); // plain numbers while tracing
    ///     out.set(block::thread_idx(), rows * 100 + cols);
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<u32>(32).unwrap();
    /// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[0], 408);
    /// ```
    pub fn shape(self) -> [u32; N] {
        self.shape
    }

    /// The underlying flat shared array (row-major, `shape` multiplied out elements).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Write by [row, column], read back flat: row-major.
    /// let k = Kernel::explicit("flat", 32, |k| {
    ///     let out = k.array::<i32>("out");
    ///     let tile = block::shared_array_shaped::<i32, 2>([4, 8]);
    ///     let t = block::thread_idx();
    ///     tile.set([t / 8, t % 8], t * 10);
    ///     block::sync();
    ///     out.set(t, tile.flat().get(t));
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(32).unwrap();
    /// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[9], 90);
    /// ```
    pub fn flat(self) -> Array<T> {
        self.flat
    }

    /// The flattened index of `index`, with the emulator's per-dimension checks.
    #[track_caller]
    fn flatten<I: IntoVal<i32>>(self, index: [I; N]) -> Val<i32> {
        let index = index.map(IntoVal::into_val);
        if let Some(probes) = self.probes {
            // `get` is `#[track_caller]` too: the probe's load carries the user's line.
            for (probe, &i) in probes.iter().zip(&index) {
                probe.get(i);
            }
        }
        let Some(&first) = index.first() else {
            return Val::constant(0i32); // no dimension: refused while tracing
        };
        index.iter().zip(self.shape).skip(1).fold(first, |flat, (&i, extent)| flat * extent as i32 + i)
    }

    /// Element `index` (one index per dimension).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Count into a 2-D table of shared counters with atomics on its elements.
    /// let k = Kernel::explicit("table", 64, |k| {
    ///     let out = k.array::<i32>("out");
    ///     let table = block::shared_array_shaped::<i32, 2>([2, 2]);
    ///     let t = block::thread_idx();
    ///     if_(t.lt(4), || table.set([t / 2, t % 2], 0));
    ///     block::sync();
    ///     atomic_add(table.at([t % 2, (t / 2) % 2]), 1);
    ///     block::sync();
    ///     if_(t.lt(4), || out.set(t, table.get([t / 2, t % 2])));
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(4).unwrap();
    /// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [16; 4]);
    /// ```
    #[track_caller]
    pub fn at<I: IntoVal<i32>>(self, index: [I; N]) -> Elem<T> {
        self.flat.at(self.flatten(index))
    }

    /// Loads element `index`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("get", 16, |k| {
    ///     let out = k.array::<i32>("out");
    ///     let grid = block::shared_array_shaped::<i32, 2>([4, 4]);
    ///     let t = block::thread_idx();
    ///     grid.set([t / 4, t % 4], t);
    ///     block::sync();
    ///     out.set(t, grid.get([t % 4, t / 4])); // the transpose
    /// });
    /// let d = Device::cpu();
    /// let out = d.zeros::<i32>(16).unwrap();
    /// d.launch_grid(&k, 1, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[1], 4);
    /// ```
    #[track_caller]
    pub fn get<I: IntoVal<i32>>(self, index: [I; N]) -> Val<T> {
        self.flat.get(self.flatten(index))
    }

    /// Stores `v` to element `index`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // An index outside its dimension is an error on the emulator, even inside the allocation.
    /// let k = Kernel::explicit("oops", 16, |k| {
    ///     let cube = block::shared_array_shaped::<f32, 3>([2, 2, 4]);
    ///     let t = block::thread_idx();
    ///     cube.set([t / 8, (t / 4) % 2, t], 1.0f32); // t reaches 15, past the last dimension's 4
    /// });
    /// let err = Device::cpu().launch_grid(&k, 1, &[]).unwrap_err();
    /// assert!(err.to_string().contains("out of bounds"), "{err}");
    /// ```
    #[track_caller]
    pub fn set<I: IntoVal<i32>>(self, index: [I; N], v: impl IntoVal<T>) {
        self.flat.set(self.flatten(index), v)
    }
}
