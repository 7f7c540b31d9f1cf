//! Single-pass inclusive and exclusive scans: one tile per block, prefixes between tiles by
//! decoupled look-back or decoupled fallback (`lookback.rs`).

use super::lookback::{const_pieces, from_pieces, pieces_of, to_pieces, LookBack, Pieces};
use super::tile::{store_striped, tile_to_shared};
use super::{check_len, check_out, device_err, Operator, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::DeviceArray;
use crate::simt::{block, subgroup};
use crate::trace::{if_, select, Array, Kernel, Shuffle, Val};

/// Default items per thread: odd, so the blocked reads of the tile in shared memory touch every
/// bank once. With addresses ptxas folds (D34), 23 was the fastest 4-byte count of 15, 19 and 23
/// on an H200 at 2^28 elements, 5% faster than 19 (`docs/gpu-records/2026-11-28-h200-algorithms-final/`);
/// 11 keeps 8-byte tiles at about the same bytes.
pub(crate) const ITEMS_4: u32 = 23;
pub(crate) const ITEMS_8: u32 = 11;

/// What a block knows about its thread totals after [`scan_totals`].
pub(crate) struct Totals<T: Shuffle> {
    /// `op` over the totals of the threads before this one in the block (the identity in thread 0).
    pub(crate) exclusive: Val<T>,
    /// `op` over every thread total: the tile's aggregate.
    pub(crate) aggregate: Val<T>,
}

/// The block-wide scan of one value per thread: a subgroup scan, one shared slot per subgroup,
/// one barrier. The aggregate is the subgroup totals folded left to right, which
/// [`tile_aggregate`] repeats exactly (the fallback's copy must be bit-identical).
#[track_caller]
pub(crate) fn scan_totals<T: Shuffle>(op: &Operator<T>, total: Val<T>, block: u32) -> Totals<T> {
    let sg = subgroup::group_size();
    let ns = block / sg;
    let lane = subgroup::invocation_id();
    let warp = block::thread_idx() >> subgroup::log2_group_size() as i32;
    let inclusive = op.subgroup_inclusive(total);
    let slots = block::shared_array::<T>(ns);
    if_(lane.eq(sg as i32 - 1), || slots.set(warp, inclusive));
    block::sync();
    let mut aggregate = slots.get(0);
    let mut before = op.identity_val();
    for w in 0..ns as i32 {
        let x = slots.get(w);
        if w > 0 {
            aggregate = op.apply(aggregate, x);
        }
        if w + 1 < ns as i32 {
            before = select(warp.gt(w), op.apply(before, x), before);
        }
    }
    let within = select(lane.eq(0), op.identity_val(), subgroup::shuffle_up(inclusive, 1u32));
    Totals { exclusive: op.apply(before, within), aggregate }
}

/// `op` over thread `t`'s items `x[t * items .. (t + 1) * items]` of a tile, from the left.
#[track_caller]
pub(crate) fn thread_total<T: Shuffle>(op: &Operator<T>, x: impl Fn(i32) -> Val<T>, items: u32) -> Val<T> {
    let mut total = x(0);
    for j in 1..items as i32 {
        total = op.apply(total, x(j));
    }
    total
}

/// The aggregate of the full tile `q` of `input`, computed as the tile's owner computes it (blocked
/// items read straight from device memory, [`thread_total`], then the fold of [`scan_totals`]):
/// the fallback's copy. Valid in every thread.
#[track_caller]
pub(crate) fn tile_aggregate<T: Shuffle>(
    op: &Operator<T>,
    input: Array<T>,
    q: Val<i32>,
    block: u32,
    items: u32,
) -> Val<T> {
    let first = q * (block * items) as i32 + block::thread_idx() * items as i32;
    let total = thread_total(op, |j| input.get(first + j), items);
    let totals = scan_totals(op, total, block);
    // Its slots are read again by the next fallback at this site.
    block::sync();
    totals.aggregate
}

/// An inclusive or exclusive `op`-scan of `input` into `output`, one tile of `block * items`
/// elements per block (launch `ceil(n / tile)` blocks).
///
/// In a tile: striped loads through shared memory to `items` consecutive elements per thread; each
/// thread folds its items and the block scans the thread totals ([`scan_totals`]). Each thread then
/// writes its items' block-local results back to shared memory while the look-back finds the
/// tile's exclusive prefix; after a barrier every thread stores its striped elements combined with
/// it (coalesced).
///
/// Arrays: `input`, `output` (at least n), then the look-back's (`tile_state`, `ticket`, `epoch`).
pub(crate) fn scan_kernel<T: Shuffle>(
    op: &Operator<T>,
    inclusive: bool,
    block: u32,
    items: u32,
    tuning: &Tuning,
) -> Kernel {
    let kind = if inclusive { "inclusive" } else { "exclusive" };
    let default_items = if T::DTYPE.size_bytes() > 4 { ITEMS_8 } else { ITEMS_4 };
    let name = format!("qd_{kind}_scan_{}_{}{}", op.ident(), T::DTYPE, tuning.suffix(block, items, default_items));
    let (op, order, force_fallback) = (op.clone(), tuning.order, tuning.force_fallback);
    Kernel::explicit(&name, block, move |k| {
        let op = &op;
        let input = k.array::<T>("input");
        let output = k.array::<T>("output");
        let lb = LookBack::declare(k, pieces_of::<T>(), order, force_fallback);
        let n = input.len();
        let tile_len = (block * items) as i32;
        let tiles = (n + (tile_len - 1)) / tile_len;
        let tile = lb.take_tile(tiles);
        let base = tile * tile_len;
        let sh = block::shared_array::<T>(block * items);
        tile_to_shared(input, sh, base, n, op.identity_val(), block, items);
        let mine = block::thread_idx() * items as i32;
        let total = thread_total(op, |j| sh.get(mine + j), items);
        let totals = scan_totals(op, total, block);
        // Each thread overwrites its own items with their block-local results (no barrier needed);
        // reading them again keeps `items` values out of registers across the barrier above.
        let overlap = || {
            let mut running = totals.exclusive;
            for j in 0..items as i32 {
                let x = sh.get(mine + j);
                let next = op.apply(running, x);
                sh.set(mine + j, if inclusive { next } else { running });
                running = next;
            }
        };
        let combine = |a: &[Val<u32>], b: &[Val<u32>]| -> Pieces {
            to_pieces(op.apply(from_pieces::<T>(a), from_pieces::<T>(b)))
        };
        let aggregate_of = |q: Val<i32>| to_pieces(tile_aggregate(op, input, q, block, items));
        let identity = const_pieces(op.identity());
        let prefix =
            lb.exclusive_prefix(tile, &to_pieces(totals.aggregate), &identity, &combine, overlap, &aggregate_of);
        let carry = from_pieces::<T>(&prefix);
        store_striped(output, base, n, block, items, |e| op.apply(carry, sh.get(e)));
    })
}

/// The scan kernel a call with `tuning` launches, with its block and items.
pub(crate) fn kernel<T: Shuffle>(op: &Operator<T>, inclusive: bool, tuning: &Tuning) -> (Kernel, u32, u32) {
    let (block, items) = tuning.resolve(if T::DTYPE.size_bytes() > 4 { ITEMS_8 } else { ITEMS_4 });
    let key = format!(
        "scan/{inclusive}/{}/{}/{block}/{items}/{:?}/{}",
        T::DTYPE,
        op.key(),
        tuning.order,
        tuning.force_fallback
    );
    (super::cached_kernel(key, || scan_kernel(op, inclusive, block, items, tuning)), block, items)
}

impl Workspace {
    /// Writes the inclusive `op`-scan of `input` to `output`: `output[i] = op(input[0], ...,
    /// input[i])`, in one launch.
    ///
    /// `op` must be associative (it need not commute). `output` holds at least `input.len()`
    /// elements and is not `input`. Errors: a short `output`, `input` over
    /// [`max_len`](super::max_len), a tuning out of range, and the device's.
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&vec![1u32; 1000]).unwrap();
    /// let y = d.zeros::<u32>(1000).unwrap();
    /// Workspace::new(&d).inclusive_scan(&x, &y, &Operator::add()).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), (1..=1000).collect::<Vec<u32>>());
    /// ```
    #[track_caller]
    pub fn inclusive_scan<T: Shuffle>(
        &mut self,
        input: &DeviceArray<T>,
        output: &DeviceArray<T>,
        op: &Operator<T>,
    ) -> Result<()> {
        self.scan_at(input, output, op, true, SrcLoc::caller())
    }

    /// Writes the exclusive `op`-scan of `input` to `output`: `output[0]` is the identity and
    /// `output[i] = op(input[0], ..., input[i - 1])`, in one launch. As
    /// [`inclusive_scan`](Workspace::inclusive_scan) otherwise.
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[4.0f32, -1.0, 2.5]).unwrap();
    /// let y = d.zeros::<f32>(3).unwrap();
    /// Workspace::new(&d).exclusive_scan(&x, &y, &Operator::min()).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [f32::INFINITY, 4.0, -1.0]);
    /// ```
    #[track_caller]
    pub fn exclusive_scan<T: Shuffle>(
        &mut self,
        input: &DeviceArray<T>,
        output: &DeviceArray<T>,
        op: &Operator<T>,
    ) -> Result<()> {
        self.scan_at(input, output, op, false, SrcLoc::caller())
    }

    pub(crate) fn scan_at<T: Shuffle>(
        &mut self,
        input: &DeviceArray<T>,
        output: &DeviceArray<T>,
        op: &Operator<T>,
        inclusive: bool,
        at: SrcLoc,
    ) -> Result<()> {
        let algo = if inclusive { "inclusive_scan" } else { "exclusive_scan" };
        self.begin();
        let n = input.len();
        check_len::<T>(&self.device, algo, "input", n, at)?;
        check_out(algo, "output", output.len(), n, at)?;
        self.tuning.check(&self.device, algo, at)?;
        if n == 0 {
            return Ok(());
        }
        let (kernel, block, items) = kernel::<T>(op, inclusive, &self.tuning);
        let tiles = n.div_ceil((block * items) as usize);
        let err = device_err(algo, at);
        let [state, ticket, epoch] = self.look_back_args(tiles, pieces_of::<T>()).map_err(&err)?;
        let args = [input.arg(), output.arg(), state, ticket, epoch];
        self.launch(&kernel, tiles as u32, &args).map_err(&err)
    }
}
