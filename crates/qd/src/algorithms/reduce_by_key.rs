//! Reduce-by-key in one pass: a segmented scan whose values are pairs (runs started so far, the
//! reduction of the current run), passed between tiles by the look-back like any other value.

use super::lookback::{const_pieces, from_pieces, pieces_of, select_pieces, to_pieces, Combine, LookBack, Pieces};
use super::tile::tiles_to_shared;
use super::{check_len, check_out, device_err, Operator, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::{Device, DeviceArray};
use crate::simt::{block, subgroup};
use crate::trace::{if_, select, var, while_, Kernel, Scalar, Shuffle, Val, Var};

/// Shared memory the tile's keys and values may take (within lavapipe's 32 KiB, with room for the
/// scan's slots).
const TILE_BYTES: u32 = 30 * 1024;

/// Default items per thread for keys of `key_bytes` and values of `value_bytes`: the largest odd
/// count up to 15 whose tile fits [`TILE_BYTES`] with `block` threads.
pub(crate) fn default_items(block: u32, key_bytes: usize, value_bytes: usize) -> u32 {
    let fit = TILE_BYTES / (block * (key_bytes + value_bytes) as u32);
    let odd = if fit.is_multiple_of(2) { fit.saturating_sub(1) } else { fit };
    odd.clamp(1, 15)
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
/// In a tile (keys and values blocked through shared memory): each element is the pair (1 if a run
/// starts there, its value); each thread folds its pairs, the block scans the thread pairs
/// ([`scan_pieces`]) and the look-back gives the pair of everything before the tile.
///
/// The runs leave in two phases, as CUB's. Each thread writes to shared memory, at ranks within
/// the tile, the key of every run that starts in its items and the reduction of every run that
/// ends there (a start at `i > 0` ends the run before it: its reduction is the running pair's
/// value before `i`). After a barrier the block copies the tile's runs out in order, so
/// consecutive threads store consecutive runs. Written directly, a subgroup's stores would land one
/// per thread `items` elements apart (on an H100, 5 of every 32 bytes stored were used). The
/// reduction of the input's last run, which no start ends, is written by the thread holding `n - 1`.
fn reduce_by_key_kernel<K: Scalar, V: Shuffle>(op: &Operator<V>, block: u32, items: u32, tuning: &Tuning) -> Kernel {
    let default = default_items(block, K::DTYPE.size_bytes(), V::DTYPE.size_bytes());
    let name =
        format!("qd_reduce_by_key_{}_{}_{}{}", op.ident(), K::DTYPE, V::DTYPE, tuning.suffix(block, items, default));
    let (op, order, force_fallback) = (op.clone(), tuning.order, tuning.force_fallback);
    Kernel::explicit(&name, block, move |k| {
        let op = &op;
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
        tiles_to_shared(
            (keys, sh_k, Val::constant(K::from_bits(0))),
            (values, sh_v, op.identity_val()),
            base,
            n,
            block,
            items,
        );
        let combine = |a: &[Val<u32>], b: &[Val<u32>]| pair(op, a, b);
        let mut identity = const_pieces(0u32);
        identity.extend(const_pieces(op.identity()));
        // Whether element `i` (`key` after `before`) starts a run: the first element, or a key
        // that differs from the one before; never past `n`.
        let starts = |i: Val<i32>, key: Val<K>, before: Val<K>| i.lt(n) & (i.eq(0) | key.ne(before));
        let pair_at = |head: Val<bool>, value: Val<V>| {
            let mut p = vec![select(head, 1u32, 0u32)];
            p.extend(to_pieces(value));
            p
        };
        // Thread `t`'s pairs (`prev` is the key before the thread's first item).
        let pairs = |first: Val<i32>, key: &dyn Fn(i32) -> Val<K>, prev: Val<K>, value: &dyn Fn(i32) -> Val<V>| {
            let mut out = Vec::new();
            for j in 0..items as i32 {
                let before = if j == 0 { prev } else { key(j - 1) };
                out.push(pair_at(starts(first + j, key(j), before), value(j)));
            }
            out
        };
        let fold = |ps: Vec<Pieces>| ps.into_iter().reduce(|a, b| combine(&a, &b)).expect("items >= 1");
        let prev_key = || select(t.gt(0), sh_k.get((mine - 1).max(0)), keys.get((base - 1).max(0)));
        // The thread's pairs, read from the tile in shared memory (which stays as loaded until
        // the scatter).
        let own = pairs(base + mine, &|j| sh_k.get(mine + j), prev_key(), &|j| sh_v.get(mine + j));
        let (exclusive, aggregate) = scan_pieces(&fold(own), &identity, &combine, block);
        let aggregate_of = |q: Val<i32>| {
            let first = q * tile_len + mine;
            let ps = pairs(first, &|j| keys.get(first + j), keys.get((first - 1).max(0)), &|j| values.get(first + j));
            let (_, agg) = scan_pieces(&fold(ps), &identity, &combine, block);
            block::sync();
            agg
        };
        // The thread's items move to registers while the look-back waits, so that after its
        // closing barrier the tile's shared memory is free to take the runs.
        let prev = var(Val::constant(K::from_bits(0)));
        let ks: Vec<Var<K>> = (0..items).map(|_| var(Val::constant(K::from_bits(0)))).collect();
        let vs: Vec<Var<V>> = (0..items).map(|_| var(op.identity_val())).collect();
        let to_registers = || {
            prev.set(prev_key());
            for (j, (k, v)) in ks.iter().zip(&vs).enumerate() {
                k.set(sh_k.get(mine + j as i32));
                v.set(sh_v.get(mine + j as i32));
            }
        };
        let carry = lb.exclusive_prefix(tile, &aggregate, &identity, &combine, to_registers, &aggregate_of);
        let (prev, ks, vs): (Val<K>, Vec<Val<K>>, Vec<Val<V>>) =
            (prev.get(), ks.iter().map(|k| k.get()).collect(), vs.iter().map(|v| v.get()).collect());
        // Rank `r` is run `carry[0] - 1 + r`: a start puts its own key at rank `r + 1` and the
        // reduction of the run it ends at rank `r` (tile 0's first start ends no run: what it puts
        // at rank 0 is never copied out). The key is the run's first, which a later key equal
        // under `==` (+0.0 after -0.0) need not be bit for bit.
        let mut running = combine(&carry, &exclusive);
        for j in 0..items as i32 {
            let i = base + mine + j;
            let before = if j == 0 { prev } else { ks[j as usize - 1] };
            let head = starts(i, ks[j as usize], before);
            let rank = (running[0] - carry[0]).cast::<i32>();
            let ended = from_pieces::<V>(&running[1..]);
            if_(head, || {
                sh_k.set(rank + 1, ks[j as usize]);
                sh_v.set(rank, ended);
            });
            running = combine(&running, &pair_at(head, vs[j as usize]));
            // The input's last run ends at `n - 1`, with no start after it.
            if_(i.eq(n - 1), || aggregates.set(running[0].cast::<i32>() - 1, from_pieces::<V>(&running[1..])));
        }
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
    // Half an SM's 2048 threads: the items held across the look-back would take ptxas to 71
    // registers at 256 x 15 (three blocks per SM); asked for four, it fits them in 64 without
    // spilling. Only PTX reads the hint.
    .min_blocks_per_sm((1024 / block).max(1))
}

/// The kernel a call with `tuning` launches, with its block and items.
pub(crate) fn kernel<K: Scalar, V: Shuffle>(op: &Operator<V>, tuning: &Tuning) -> (Kernel, u32, u32) {
    let block = tuning.block.unwrap_or(super::BLOCK);
    let (block, items) = tuning.resolve(default_items(block, K::DTYPE.size_bytes(), V::DTYPE.size_bytes()));
    let key = format!(
        "reduce_by_key/{}/{}/{}/{block}/{items}/{:?}/{}",
        K::DTYPE,
        V::DTYPE,
        op.key(),
        tuning.order,
        tuning.force_fallback
    );
    (super::cached_kernel(key, || reduce_by_key_kernel::<K, V>(op, block, items, tuning)), block, items)
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
        let (kernel, block, items) = kernel::<K, V>(op, &self.tuning);
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
