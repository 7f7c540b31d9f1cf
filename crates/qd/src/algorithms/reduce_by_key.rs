//! Reduce-by-key in one pass: a segmented scan whose values are pairs (runs started so far, the
//! reduction of the current run), passed between tiles by the look-back like any other value.

use super::lookback::{const_pieces, from_pieces, pieces_of, select_pieces, to_pieces, Combine, LookBack, Pieces};
use super::tile::load_blocked;
use super::{check_len, check_out, device_err, Operator, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::{Device, DeviceArray};
use crate::simt::{block, subgroup};
use crate::target::Target;
use crate::trace::{if_, if_else, select, target, var, while_, Kernel, Scalar, Shuffle, Val, Var};

/// Shared memory kept free of the tile's runs: the staged key one past the tile, the scan's slots
/// and the look-back's words.
const RESERVED_SHARED: u32 = 2 * 1024;

/// Most items per thread, and the bytes of pairs a thread may hold in registers through the scan
/// and the look-back: 20 pairs of 4-byte keys and values fit ptxas's 64 registers at four
/// 256-thread blocks per SM without spilling (23 spill). 20 is a multiple of 4, so where the
/// target has 16-byte loads a thread reads its keys and values four at a time.
const MAX_ITEMS: u32 = 20;
const MAX_HELD_BYTES: u32 = 20 * 8;

/// Default items per thread on `target` for keys of `key_bytes` and values of `value_bytes`: the
/// largest count up to [`MAX_ITEMS`] whose pairs fit [`MAX_HELD_BYTES`] and whose runs fit the
/// target's shared memory (tile keys and values, and one key more). 20 for 4-byte pairs on CUDA
/// and the emulator, 15 within lavapipe's and Metal's 32 KiB. (No count needs to be odd: no
/// thread reads its items from shared memory, where a stride of `items` words would conflict.)
pub(crate) fn default_items(target: &Target, block: u32, key_bytes: usize, value_bytes: usize) -> u32 {
    let pair = (key_bytes + value_bytes) as u32;
    let shared = target.limits().max_shared_bytes.saturating_sub(RESERVED_SHARED);
    (shared / (block * pair)).min(MAX_HELD_BYTES / pair).clamp(1, MAX_ITEMS)
}

/// `(c1, v1) + (c2, v2) = (c1 + c2, c2 > 0 ? v2 : op(v1, v2))`: the pair operator of a segmented
/// reduction (associative when `op` is), on packed pairs `[count, value pieces...]`.
#[track_caller]
fn pair<V: Shuffle>(op: &Operator<V>, a: &[Val<u32>], b: &[Val<u32>]) -> Pieces {
    let (va, vb) = (from_pieces::<V>(&a[1..]), from_pieces::<V>(&b[1..]));
    let v = select(b[0].gt(0u32), vb, op.apply(va, vb));
    let mut out = vec![a[0] + b[0]];
    out.extend(to_pieces(v));
    out
}

/// The block-wide scan of one packed value per thread under `combine`: `(exclusive, aggregate)`,
/// the aggregate folded left to right over the subgroups' totals (what the fallback repeats).
#[track_caller]
fn scan_pieces(x: &[Val<u32>], identity: &[Val<u32>], combine: Combine, block: u32) -> (Pieces, Pieces) {
    let sg = subgroup::group_size();
    let ns = block / sg;
    let p = x.len() as i32;
    let lane = subgroup::invocation_id();
    let warp = block::thread_idx() >> subgroup::log2_group_size() as i32;
    let mut v = x.to_vec();
    let mut off = 1u32;
    while off < sg {
        let before: Pieces = v.iter().map(|&y| subgroup::shuffle_up(y, off)).collect();
        v = select_pieces(lane.ge(off as i32), &combine(&before, &v), &v);
        off *= 2;
    }
    let slots = block::shared_array::<u32>(ns * p as u32);
    if_(lane.eq(sg as i32 - 1), || {
        for (i, &y) in v.iter().enumerate() {
            slots.set(warp * p + i as i32, y);
        }
    });
    block::sync();
    let slot = |w: i32| -> Pieces { (0..p).map(|i| slots.get(w * p + i)).collect() };
    let mut aggregate = slot(0);
    let mut before = identity.to_vec();
    for w in 0..ns as i32 {
        let s = slot(w);
        if w > 0 {
            aggregate = combine(&aggregate, &s);
        }
        if w + 1 < ns as i32 {
            before = select_pieces(warp.gt(w), &combine(&before, &s), &before);
        }
    }
    let shifted: Pieces = v.iter().map(|&y| subgroup::shuffle_up(y, 1u32)).collect();
    let within = select_pieces(lane.eq(0), identity, &shifted);
    (combine(&before, &within), aggregate)
}

/// For each run of consecutive equal keys: its first key to `unique_keys[r]` and the `op`-reduction
/// of its values to `aggregates[r]`, runs numbered in order; the number of runs to `num_runs[0]`.
///
/// In a tile, each thread reads its `items` consecutive keys and values straight into registers
/// (blocked, as CUB's `BLOCK_LOAD_DIRECT`: no trip through shared memory, whose stores, barrier
/// and two reads per item cost more than the cache lines the subgroup's strided reads share);
/// each element is the pair (1 if a run starts there, its value); each thread folds its pairs, the
/// block scans the thread pairs ([`scan_pieces`]) and the look-back gives the pair of everything
/// before the tile. Every tile but the last is full, so its items skip the tests against `n`.
///
/// The runs leave in two phases, as CUB's. Each thread writes to shared memory, at ranks within
/// the tile, the key of every run that starts in its items and the reduction of every run that
/// ends there (a start at `i > 0` ends the run before it: its reduction is the running pair's
/// value before `i`). After a barrier the block copies the tile's runs out in order, so
/// consecutive threads store consecutive runs. Written directly, a subgroup's stores would land one
/// per thread `items` elements apart (on an H100, 5 of every 32 bytes stored were used). The
/// reduction of the input's last run, which no start ends, is written by the thread holding `n - 1`
/// (only in the last tile).
fn reduce_by_key_kernel<K: Scalar, V: Shuffle>(op: &Operator<V>, block: u32, tuning: &Tuning) -> Kernel {
    // The default items are the target's (`default_items`): no suffix for them.
    let suffix = tuning.suffix(block, tuning.items.unwrap_or(0), 0);
    let name = format!("qd_reduce_by_key_{}_{}_{}{suffix}", op.ident(), K::DTYPE, V::DTYPE);
    let (op, order, force_fallback, items) = (op.clone(), tuning.order, tuning.force_fallback, tuning.items);
    Kernel::explicit(&name, block, move |k| {
        let op = &op;
        let items =
            items.unwrap_or_else(|| default_items(&target(), block, K::DTYPE.size_bytes(), V::DTYPE.size_bytes()));
        let keys = k.array::<K>("keys");
        let values = k.array::<V>("values");
        let unique_keys = k.array::<K>("unique_keys");
        let aggregates = k.array::<V>("aggregates");
        let num_runs = k.array::<u32>("num_runs");
        let lb = LookBack::declare(k, 1 + pieces_of::<V>(), order, force_fallback);
        let n = keys.len();
        let t = block::thread_idx();
        let tile_len = (block * items) as i32;
        let tiles = (n + (tile_len - 1)) / tile_len;
        let tile = lb.take_tile(tiles);
        let base = tile * tile_len;
        let mine = t * items as i32;
        // One slot more than the tile: the keys of the runs it starts sit one rank up (below).
        let sh_k = block::shared_array::<K>(block * items + 1);
        let sh_v = block::shared_array::<V>(block * items);
        let combine = |a: &[Val<u32>], b: &[Val<u32>]| pair(op, a, b);
        let mut identity = const_pieces(0u32);
        identity.extend(const_pieces(op.identity()));
        // Whether item `j` of a thread whose first element is `first` (`key` after `before`)
        // starts a run: the first element, or a key that differs from the one before; never past
        // `n`. Only item 0 can be element 0, and only a `guarded` tile (the last) reaches `n`: full
        // tiles skip both tests.
        let starts = |guarded: bool, first: Val<i32>, j: i32, key: Val<K>, before: Val<K>| {
            let mut head = key.ne(before);
            if j == 0 {
                head = head | first.eq(0);
            }
            if guarded {
                head = head & (first + j).lt(n);
            }
            head
        };
        // `running` followed by the element `value` (a run starts there when `head`): the pair
        // operator with a literal head, so no count is compared.
        let then = |running: &[Val<u32>], head: Val<bool>, value: Val<V>| -> Pieces {
            let v = select(head, value, op.apply(from_pieces::<V>(&running[1..]), value));
            let mut out = vec![running[0] + select(head, 1u32, 0u32)];
            out.extend(to_pieces(v));
            out
        };
        // The fold of thread `t`'s pairs (`prev` is the key before its first item).
        let fold = |guarded: bool,
                    first: Val<i32>,
                    key: &dyn Fn(i32) -> Val<K>,
                    prev: Val<K>,
                    value: &dyn Fn(i32) -> Val<V>| {
            let head = starts(guarded, first, 0, key(0), prev);
            let mut acc = vec![select(head, 1u32, 0u32)];
            acc.extend(to_pieces(value(0)));
            for j in 1..items as i32 {
                acc = then(&acc, starts(guarded, first, j, key(j), key(j - 1)), value(j));
            }
            acc
        };
        // Every tile but the last: all of its elements are before `n` (the last, full or not,
        // holds `n - 1`).
        let full = (base + tile_len).lt(n);
        let folded = |first: Val<i32>, key: &dyn Fn(i32) -> Val<K>, prev: Val<K>, value: &dyn Fn(i32) -> Val<V>| {
            let acc: Vec<Var<u32>> = identity.iter().map(|&x| var(x)).collect();
            let keep = |guarded: bool| {
                for (a, x) in acc.iter().zip(fold(guarded, first, key, prev, value)) {
                    a.set(x);
                }
            };
            if_else(full, || keep(false), || keep(true));
            acc.iter().map(|a| a.get()).collect::<Pieces>()
        };
        // The thread's items, read straight from device memory into registers (blocked: thread
        // `t` reads its `items` consecutive elements; the subgroup's reads of one item are `items`
        // elements apart, and the next items hit the same cache lines), and held through the scan
        // and the look-back until the scatter.
        let first = base + mine;
        let prev = var(keys.get((first - 1).min(n - 1).max(0)));
        let ks: Vec<Var<K>> = (0..items).map(|_| var(Val::constant(K::from_bits(0)))).collect();
        let vs: Vec<Var<V>> = (0..items).map(|_| var(op.identity_val())).collect();
        let load = |guarded: bool| {
            if guarded {
                for (j, (k, v)) in ks.iter().zip(&vs).enumerate() {
                    let i = first + j as i32;
                    if_(i.lt(n), || {
                        k.set(keys.get(i));
                        v.set(values.get(i));
                    });
                }
            } else {
                load_blocked(keys, first, &ks);
                load_blocked(values, first, &vs);
            }
        };
        if_else(full, || load(false), || load(true));
        let (prev, ks, vs): (Val<K>, Vec<Val<K>>, Vec<Val<V>>) =
            (prev.get(), ks.iter().map(|k| k.get()).collect(), vs.iter().map(|v| v.get()).collect());
        let own = folded(first, &|j| ks[j as usize], prev, &|j| vs[j as usize]);
        let (exclusive, aggregate) = scan_pieces(&own, &identity, &combine, block);
        let aggregate_of = |q: Val<i32>| {
            let first = q * tile_len + mine;
            // Another tile's: every test guarded (this tile's `full` is not that one's).
            let own =
                fold(true, first, &|j| keys.get(first + j), keys.get((first - 1).max(0)), &|j| values.get(first + j));
            let (_, agg) = scan_pieces(&own, &identity, &combine, block);
            block::sync();
            agg
        };
        let carry = lb.exclusive_prefix(tile, &aggregate, &identity, &combine, || {}, &aggregate_of);
        // Rank `r` is run `carry[0] - 1 + r`: a start puts its own key at rank `r + 1` and the
        // reduction of the run it ends at rank `r` (tile 0's first start ends no run: what it puts
        // at rank 0 is never copied out). The key is the run's first, which a later key equal
        // under `==` (+0.0 after -0.0) need not be bit for bit.
        let scatter = |guarded: bool| {
            let mut running = combine(&carry, &exclusive);
            for j in 0..items as i32 {
                let before = if j == 0 { prev } else { ks[j as usize - 1] };
                let head = starts(guarded, first, j, ks[j as usize], before);
                let rank = (running[0] - carry[0]).cast::<i32>();
                let ended = from_pieces::<V>(&running[1..]);
                if_(head, || {
                    sh_k.set(rank + 1, ks[j as usize]);
                    sh_v.set(rank, ended);
                });
                running = then(&running, head, vs[j as usize]);
                // The input's last run ends at `n - 1`, with no start after it (only the last
                // tile, which is the one guarded, holds `n - 1`).
                if guarded {
                    let last = from_pieces::<V>(&running[1..]);
                    if_((first + j).eq(n - 1), || aggregates.set(running[0].cast::<i32>() - 1, last));
                }
            }
        };
        if_else(full, || scatter(false), || scatter(true));
        block::sync();
        // Ranks 1 to `starts_here` hold keys, ranks 0 (1 in tile 0) to `starts_here - 1` reductions.
        let first_run = carry[0].cast::<i32>() - 1;
        let starts_here = aggregate[0].cast::<i32>();
        let rank = var(select(tile.eq(0), 1, 0) + t);
        while_(
            || rank.get().le(starts_here),
            || {
                let r = rank.get();
                if_(r.ge(1), || unique_keys.set(first_run + r, sh_k.get(r)));
                if_(r.lt(starts_here), || aggregates.set(first_run + r, sh_v.get(r)));
                rank.set(r + block as i32);
            },
        );
        if_(t.eq(0) & tile.eq(tiles - 1), || num_runs.set(0, carry[0] + aggregate[0]));
    })
    // Half an SM's 2048 threads: the items held across the look-back take ptxas to 72 registers
    // at 256 x 19 (three blocks per SM, 10% slower on an H200 at 2^28); asked for four, it fits
    // them in 64 without spilling. Only PTX reads the hint.
    .min_blocks_per_sm((1024 / block).max(1))
}

/// The kernel a call with `tuning` launches, with its block (its items are the tuning's, else
/// [`default_items`] for the target it is traced for).
pub(crate) fn kernel<K: Scalar, V: Shuffle>(op: &Operator<V>, tuning: &Tuning) -> (Kernel, u32) {
    let block = tuning.block.unwrap_or(super::BLOCK);
    let key = format!(
        "reduce_by_key/{}/{}/{}/{block}/{:?}/{:?}/{}",
        K::DTYPE,
        V::DTYPE,
        op.key(),
        tuning.items,
        tuning.order,
        tuning.force_fallback
    );
    (super::cached_kernel(key, || reduce_by_key_kernel::<K, V>(op, block, tuning)), block)
}

impl Workspace {
    /// For each run of consecutive equal keys in `keys` (compared with `==`: NaN keys are runs of
    /// their own), writes its first key to `unique_keys[r]` and the `op`-reduction of its `values`
    /// (in order) to `aggregates[r]`, and the number of runs to `num_runs[0]`, in one launch, as
    /// CUB's `DeviceReduce::ReduceByKey`.
    ///
    /// `op` must be associative. `values` has at least `keys.len()` elements; `unique_keys` and
    /// `aggregates` hold as many as there are runs (at most `keys.len()`: give that many when
    /// unknown). Errors: short arrays (the outputs are checked against `keys.len()`), `keys` over
    /// [`max_len`](super::max_len), and the device's.
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let keys = d.array_from(&[1u32, 1, 7, 7, 7, 1]).unwrap();
    /// let values = d.array_from(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    /// let (uk, agg, runs) = (d.zeros::<u32>(6).unwrap(), d.zeros::<f32>(6).unwrap(), d.zeros::<u32>(1).unwrap());
    /// Workspace::new(&d).reduce_by_key(&keys, &values, &uk, &agg, &runs, &Operator::add()).unwrap();
    /// assert_eq!(runs.to_vec().unwrap(), [3]);
    /// assert_eq!(uk.to_vec().unwrap()[..3], [1, 7, 1]);
    /// assert_eq!(agg.to_vec().unwrap()[..3], [3.0, 12.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn reduce_by_key<K: Scalar, V: Shuffle>(
        &mut self,
        keys: &DeviceArray<K>,
        values: &DeviceArray<V>,
        unique_keys: &DeviceArray<K>,
        aggregates: &DeviceArray<V>,
        num_runs: &DeviceArray<u32>,
        op: &Operator<V>,
    ) -> Result<()> {
        self.reduce_by_key_at(keys, values, unique_keys, aggregates, num_runs, op, SrcLoc::caller())
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_by_key_at<K: Scalar, V: Shuffle>(
        &mut self,
        keys: &DeviceArray<K>,
        values: &DeviceArray<V>,
        unique_keys: &DeviceArray<K>,
        aggregates: &DeviceArray<V>,
        num_runs: &DeviceArray<u32>,
        op: &Operator<V>,
        at: SrcLoc,
    ) -> Result<()> {
        const ALGO: &str = "reduce_by_key";
        self.begin();
        let n = keys.len();
        check_len::<K>(&self.device, ALGO, "keys", n, at)?;
        check_len::<V>(&self.device, ALGO, "values", n, at)?;
        check_out(ALGO, "values", values.len(), n, at)?;
        check_out(ALGO, "unique_keys", unique_keys.len(), n, at)?;
        check_out(ALGO, "aggregates", aggregates.len(), n, at)?;
        check_out(ALGO, "num_runs", num_runs.len(), 1, at)?;
        self.tuning.check(&self.device, ALGO, at)?;
        let err = device_err(ALGO, at);
        if n == 0 {
            let mut c = num_runs.to_vec().map_err(&err)?;
            c[0] = 0;
            return num_runs.write(&c).map_err(&err);
        }
        let (kernel, block) = kernel::<K, V>(op, &self.tuning);
        let items = self.tuning.items.unwrap_or_else(|| {
            default_items(self.device.target(), block, K::DTYPE.size_bytes(), V::DTYPE.size_bytes())
        });
        let tiles = n.div_ceil((block * items) as usize);
        let [state, ticket, epoch] = self.look_back_args(tiles, 1 + pieces_of::<V>()).map_err(&err)?;
        let args =
            [keys.arg(), values.arg(), unique_keys.arg(), aggregates.arg(), num_runs.arg(), state, ticket, epoch];
        self.launch(&kernel, tiles as u32, &args).map_err(&err)
    }
}

/// Reduces runs of equal keys like [`Workspace::reduce_by_key`], allocating the run count and
/// temporary storage, and returns the number of runs to the host.
///
/// ```
/// use qd::algorithms::Operator;
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let keys = d.array_from(&[0i32, 0, 0, 5]).unwrap();
/// let values = d.array_from(&[4i64, -1, 9, 2]).unwrap();
/// let (uk, agg) = (d.zeros::<i32>(4).unwrap(), d.zeros::<i64>(4).unwrap());
/// assert_eq!(qd::algorithms::reduce_by_key(&d, &keys, &values, &uk, &agg, &Operator::max()).unwrap(), 2);
/// assert_eq!(agg.to_vec().unwrap()[..2], [9, 2]);
/// ```
#[track_caller]
pub fn reduce_by_key<K: Scalar, V: Shuffle>(
    device: &Device,
    keys: &DeviceArray<K>,
    values: &DeviceArray<V>,
    unique_keys: &DeviceArray<K>,
    aggregates: &DeviceArray<V>,
    op: &Operator<V>,
) -> Result<usize> {
    let at = SrcLoc::caller();
    let err = device_err("reduce_by_key", at);
    let runs = device.zeros::<u32>(1).map_err(&err)?;
    Workspace::new(device).reduce_by_key_at(keys, values, unique_keys, aggregates, &runs, op, at)?;
    Ok(runs.to_vec().map_err(&err)?[0] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_items_fit_the_targets_shared_memory_and_registers() {
        let cuda = Target::cpu(32).with_max_shared_bytes(227 * 1024);
        let small = Target::cpu(32).with_max_shared_bytes(32 * 1024);
        assert_eq!(default_items(&cuda, 256, 4, 4), 20);
        assert_eq!(default_items(&small, 256, 4, 4), 15);
        assert_eq!(default_items(&cuda, 256, 4, 8), 13);
        assert_eq!(default_items(&cuda, 256, 8, 8), 10);
        assert_eq!(default_items(&small, 256, 8, 8), 7);
        assert_eq!(default_items(&small, 1024, 8, 8), 1);
        for (target, block, k, v) in [(&cuda, 256, 4, 4), (&small, 256, 4, 4), (&small, 1024, 8, 8), (&small, 64, 1, 8)]
        {
            let items = default_items(target, block, k, v);
            let shared = block * items * (k + v) as u32 + RESERVED_SHARED;
            assert!(shared <= target.limits().max_shared_bytes, "{block} x {items}: {shared} bytes");
        }
    }
}
