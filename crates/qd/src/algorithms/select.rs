//! Stable stream compaction in one pass: the selected elements of each tile are ranked with a block
//! scan, gathered in shared memory, and stored (coalesced) after the tile's offset, which the
//! look-back finds from the counts of the tiles before it.

use super::lookback::{const_pieces, LookBack, Pieces};
use super::scan::{scan_totals, thread_total};
use super::tile::tile_to_shared;
use super::{check_len, check_out, device_err, Operator, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::{Arg, Device, DeviceArray};
use crate::simt::atomic::atomic_or;
use crate::simt::{block, subgroup};
use crate::trace::{if_, select, Array, Int, Kernel, KernelBuilder, Scalar, Val};
use std::fmt;
use std::sync::Arc;

/// Default items per thread (odd; the tile's values and its flag bits fit lavapipe's 32 KiB).
pub(crate) const ITEMS_4: u32 = 19;
pub(crate) const ITEMS_8: u32 = 9;

/// A traced test on one element: which elements [`select_if`](Workspace::select_if) keeps.
///
/// ```
/// use qd::algorithms::Predicate;
/// let positive = Predicate::<f32>::new("positive", |x| x.gt(0.0));
/// assert_eq!(positive.name(), "positive");
/// ```
#[derive(Clone)]
pub struct Predicate<T: Scalar> {
    name: String,
    f: Arc<dyn Fn(Val<T>) -> Val<bool> + Send + Sync>,
}

impl<T: Scalar> Predicate<T> {
    /// The predicate `f`, traced into the kernel; `name` goes into the kernel's name. Its kernels
    /// are compiled once per predicate value (clone it to reuse them).
    ///
    /// ```
    /// use qd::algorithms::{select_if, Predicate};
    /// use qd::prelude::*;
    /// let even = Predicate::new("even", |v: Val<i32>| (v % 2).eq(0));
    /// let d = Device::cpu();
    /// let x = d.array_from(&(0..10).collect::<Vec<i32>>()).unwrap();
    /// let out = d.zeros::<i32>(10).unwrap();
    /// let n = select_if(&d, &x, &out, &even).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[..n], [0, 2, 4, 6, 8]);
    /// ```
    pub fn new(name: &str, f: impl Fn(Val<T>) -> Val<bool> + Send + Sync + 'static) -> Predicate<T> {
        Predicate { name: name.to_string(), f: Arc::new(f) }
    }

    /// The name it was given.
    ///
    /// ```
    /// use qd::algorithms::Predicate;
    /// use qd::prelude::*;
    /// let p = Predicate::new("small", |v: Val<f32>| v.abs().lt(1.0f32));
    /// assert_eq!(p.name(), "small");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn key(&self) -> String {
        format!("{}@{:p}", self.name, Arc::as_ptr(&self.f) as *const u8)
    }

    fn ident(&self) -> String {
        self.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
    }
}

impl<T: Scalar> fmt::Debug for Predicate<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Predicate({}: {})", self.name, T::DTYPE)
    }
}

/// How a kernel decides which elements to keep.
#[derive(Clone)]
enum Rule<T: Scalar> {
    /// A flag array of this dtype (nonzero: keep).
    Flags(crate::ir::DType),
    Predicate(Predicate<T>),
}

/// A flag array of any integer dtype, read as "nonzero".
#[derive(Clone, Copy)]
enum FlagArray {
    U8(Array<u8>),
    I8(Array<i8>),
    U16(Array<u16>),
    I16(Array<i16>),
    U32(Array<u32>),
    I32(Array<i32>),
    U64(Array<u64>),
    I64(Array<i64>),
}

impl FlagArray {
    fn declare(k: &mut KernelBuilder, dtype: crate::ir::DType) -> FlagArray {
        use crate::ir::DType as D;
        match dtype {
            D::U8 => FlagArray::U8(k.array("flags")),
            D::I8 => FlagArray::I8(k.array("flags")),
            D::U16 => FlagArray::U16(k.array("flags")),
            D::I16 => FlagArray::I16(k.array("flags")),
            D::U32 => FlagArray::U32(k.array("flags")),
            D::I32 => FlagArray::I32(k.array("flags")),
            D::U64 => FlagArray::U64(k.array("flags")),
            _ => FlagArray::I64(k.array("flags")),
        }
    }

    /// `flags[i] != 0`.
    #[track_caller]
    fn nonzero(self, i: Val<i32>) -> Val<bool> {
        fn nz<F: Int>(a: Array<F>, i: Val<i32>) -> Val<bool> {
            a.get(i).ne(F::ZERO)
        }
        match self {
            FlagArray::U8(a) => nz(a, i),
            FlagArray::I8(a) => nz(a, i),
            FlagArray::U16(a) => nz(a, i),
            FlagArray::I16(a) => nz(a, i),
            FlagArray::U32(a) => nz(a, i),
            FlagArray::I32(a) => nz(a, i),
            FlagArray::U64(a) => nz(a, i),
            FlagArray::I64(a) => nz(a, i),
        }
    }
}

/// Compacts the elements of `input` the rule keeps into `output` in order, and writes their count
/// to `count[0]`, in one launch (a tile of `block * items` per block).
///
/// In a tile: the values go to shared memory (blocked); with flags, each subgroup ballots its
/// striped flags row by row into a bit mask in shared memory (one shared atomic or per subgroup and
/// row); each thread counts its kept items, the block scans the counts ([`scan_totals`]), and each
/// thread writes its kept values at their rank in the tile into shared memory while the look-back
/// adds up the counts of the tiles before. Then the tile's kept values are stored after that offset
/// (coalesced), and the last tile writes the total.
fn select_kernel<T: Scalar>(rule: &Rule<T>, block: u32, items: u32, tuning: &Tuning) -> Kernel {
    let default_items = if T::DTYPE.size_bytes() > 4 { ITEMS_8 } else { ITEMS_4 };
    let how = match rule {
        Rule::Flags(d) => format!("flagged_{d}"),
        Rule::Predicate(p) => format!("if_{}", p.ident()),
    };
    let name = format!("qd_select_{how}_{}{}", T::DTYPE, tuning.suffix(block, items, default_items));
    let (rule, order, force_fallback) = (rule.clone(), tuning.order, tuning.force_fallback);
    Kernel::explicit(&name, block, move |k| {
        let input = k.array::<T>("input");
        // The flag array, or `None` for a predicate.
        let flags = match &rule {
            Rule::Flags(d) => Some(FlagArray::declare(k, *d)),
            Rule::Predicate(_) => None,
        };
        let pred = |x: Val<T>| match &rule {
            Rule::Predicate(p) => (p.f)(x),
            Rule::Flags(_) => unreachable!("flags are read, not computed"),
        };
        let output = k.array::<T>("output");
        let count = k.array::<u32>("count");
        let lb = LookBack::declare(k, 1, order, force_fallback);
        let add = Operator::<u32>::add();
        let n = input.len();
        let t = block::thread_idx();
        let tile_len = (block * items) as i32;
        let tiles = (n + (tile_len - 1)) / tile_len;
        let tile = lb.take_tile(tiles);
        let base = tile * tile_len;
        let mine = t * items as i32;
        let sh = block::shared_array::<T>(block * items);
        // Which of thread t's items are kept: bit j of `kept[j / 32]` (one register for up to 32
        // items, not one per item: they stay live across the block scan's barrier, D33).
        let kept: Vec<Val<u32>> = match flags {
            Some(flags) => {
                // One spare word: a thread's bits are read as two words, the last one's past the end.
                let words = (block * items).div_ceil(32) + 1;
                let mask = block::shared_array::<u32>(words);
                for w in (0..words as i32).step_by(block as usize) {
                    if_((t + w).lt(words as i32), || mask.set(t + w, 0u32));
                }
                tile_to_shared(input, sh, base, n, Val::constant(T::from_bits(0)), block, items);
                // Row j: elements j * block + t; each subgroup's ballot covers `sg` consecutive bits.
                let sg = subgroup::group_size();
                let lane = subgroup::invocation_id();
                for j in 0..items as i32 {
                    let k = t + j * block as i32;
                    let keep = (base + k).lt(n) & flags.nonzero((base + k).min(n - 1));
                    let bits = subgroup::ballot(keep);
                    for half in 0..sg.div_ceil(32) {
                        let first = k - lane + 32 * half as i32;
                        let word = (bits >> (32 * half) as u64).cast::<u32>();
                        let word = if sg < 32 { word & ((1u32 << sg) - 1) } else { word };
                        if_(lane.eq(0), || {
                            atomic_or(mask.at(first >> 5), word << (first & 31).cast::<u32>());
                        });
                    }
                }
                block::sync();
                // Bits mine + 32 w .. of the tile's mask, from the two words holding them.
                (0..items.div_ceil(32) as i32)
                    .map(|w| {
                        let first = mine + 32 * w;
                        let lo = mask.get(first >> 5).cast::<u64>();
                        let hi = mask.get((first >> 5) + 1).cast::<u64>();
                        let bits = ((lo | (hi << 32u64)) >> (first & 31).cast::<u64>()).cast::<u32>();
                        let len = (items - 32 * w as u32).min(32);
                        if len < 32 {
                            bits & ((1u32 << len) - 1)
                        } else {
                            bits
                        }
                    })
                    .collect()
            }
            None => {
                tile_to_shared(input, sh, base, n, Val::constant(T::from_bits(0)), block, items);
                let mut bits = vec![Val::constant(0u32); items.div_ceil(32) as usize];
                for j in 0..items as i32 {
                    let keep = (base + mine + j).lt(n) & pred(sh.get(mine + j));
                    let w = (j / 32) as usize;
                    bits[w] = bits[w] | select(keep, 1u32 << (j % 32), 0u32);
                }
                bits
            }
        };
        let keeps = |j: i32| (kept[(j / 32) as usize] >> (j % 32) as u32 & 1u32).ne(0u32);
        let vals: Vec<Val<T>> = (0..items as i32).map(|j| sh.get(mine + j)).collect();
        let mine_kept = kept.iter().fold(Val::constant(0u32), |acc, w| acc + w.popc());
        let totals = scan_totals(&add, mine_kept, block);
        // Every thread has read its values (scan_totals' barrier): `sh` now takes the kept ones.
        let overlap = || {
            let mut rank = totals.exclusive;
            for (j, &v) in vals.iter().enumerate() {
                let keep = keeps(j as i32);
                if_(keep, || sh.set(rank.cast::<i32>(), v));
                rank += select(keep, 1u32, 0u32);
            }
        };
        let combine = |a: &[Val<u32>], b: &[Val<u32>]| -> Pieces { vec![a[0] + b[0]] };
        let aggregate_of = |q: Val<i32>| {
            let first = q * tile_len + mine;
            let keep = |j: i32| -> Val<u32> {
                let i = first + j;
                let k = match flags {
                    Some(flags) => flags.nonzero(i),
                    None => pred(input.get(i)),
                };
                select(k, 1u32, 0u32)
            };
            let totals = scan_totals(&add, thread_total(&add, keep, items), block);
            block::sync();
            vec![totals.aggregate]
        };
        let offset =
            lb.exclusive_prefix(tile, &[totals.aggregate], &const_pieces(0u32), &combine, overlap, &aggregate_of)[0];
        let kept_here = totals.aggregate.cast::<i32>();
        for j in 0..items as i32 {
            let e = t + j * block as i32;
            if_(e.lt(kept_here), || output.set(offset.cast::<i32>() + e, sh.get(e)));
        }
        if_(t.eq(0) & tile.eq(tiles - 1), || count.set(0, offset + totals.aggregate));
    })
}

/// The select kernel a call with `tuning` launches, with its block and items.
fn kernel<T: Scalar>(rule: &Rule<T>, tuning: &Tuning) -> (Kernel, u32, u32) {
    let (block, items) = tuning.resolve(if T::DTYPE.size_bytes() > 4 { ITEMS_8 } else { ITEMS_4 });
    let rule_key = match rule {
        Rule::Flags(d) => format!("flags:{d}"),
        Rule::Predicate(p) => p.key(),
    };
    let key = format!("select/{}/{rule_key}/{block}/{items}/{:?}/{}", T::DTYPE, tuning.order, tuning.force_fallback);
    (super::cached_kernel(key, || select_kernel(rule, block, items, tuning)), block, items)
}

/// The kernel of [`Workspace::select_flagged`] with flags of `F`.
pub(crate) fn flagged_kernel<T: Scalar, F: Int>(tuning: &Tuning) -> Kernel {
    kernel::<T>(&Rule::Flags(F::DTYPE), tuning).0
}

/// The kernel of [`Workspace::select_if`] with `predicate`.
pub(crate) fn if_kernel<T: Scalar>(predicate: &Predicate<T>, tuning: &Tuning) -> Kernel {
    kernel::<T>(&Rule::Predicate(predicate.clone()), tuning).0
}

impl Workspace {
    /// Copies the elements of `input` whose flag is nonzero to the front of `output`, in order, and
    /// writes how many to `count[0]`, in one launch (nothing is read back: the count stays on the
    /// device; [`select_flagged`] returns it to the host).
    ///
    /// `flags` has an integer dtype and at least `input.len()` elements; `output` holds at least
    /// `input.len()` (or as many as are kept) and is not `input`. Errors: short arrays, `input` over
    /// [`max_len`](super::max_len), and the device's.
    ///
    /// ```
    /// use qd::algorithms::Workspace;
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[10i64, 20, 30, 40, 50]).unwrap();
    /// let keep = d.array_from(&[1u8, 0, 0, 1, 1]).unwrap();
    /// let (out, count) = (d.zeros::<i64>(5).unwrap(), d.zeros::<u32>(1).unwrap());
    /// Workspace::new(&d).select_flagged(&x, &keep, &out, &count).unwrap();
    /// assert_eq!(count.to_vec().unwrap(), [3]);
    /// assert_eq!(out.to_vec().unwrap()[..3], [10, 40, 50]);
    /// ```
    #[track_caller]
    pub fn select_flagged<T: Scalar, F: Int>(
        &mut self,
        input: &DeviceArray<T>,
        flags: &DeviceArray<F>,
        output: &DeviceArray<T>,
        count: &DeviceArray<u32>,
    ) -> Result<()> {
        let at = SrcLoc::caller();
        check_out("select_flagged", "flags", flags.len(), input.len(), at)?;
        self.select_at("select_flagged", input, Rule::Flags(F::DTYPE), Some(flags.arg()), output, count, at)
    }

    /// Copies the elements of `input` for which `predicate` holds to the front of `output`, in
    /// order, and writes how many to `count[0]`, in one launch. As
    /// [`select_flagged`](Workspace::select_flagged) otherwise.
    ///
    /// ```
    /// use qd::algorithms::{Predicate, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[-1.0f32, 2.0, -3.0, 4.0]).unwrap();
    /// let (out, count) = (d.zeros::<f32>(4).unwrap(), d.zeros::<u32>(1).unwrap());
    /// let positive = Predicate::new("positive", |x: Val<f32>| x.gt(0.0));
    /// Workspace::new(&d).select_if(&x, &out, &count, &positive).unwrap();
    /// assert_eq!(count.to_vec().unwrap(), [2]);
    /// assert_eq!(out.to_vec().unwrap()[..2], [2.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn select_if<T: Scalar>(
        &mut self,
        input: &DeviceArray<T>,
        output: &DeviceArray<T>,
        count: &DeviceArray<u32>,
        predicate: &Predicate<T>,
    ) -> Result<()> {
        let at = SrcLoc::caller();
        self.select_at("select_if", input, Rule::Predicate(predicate.clone()), None, output, count, at)
    }

    #[allow(clippy::too_many_arguments)]
    fn select_at<T: Scalar>(
        &mut self,
        algo: &'static str,
        input: &DeviceArray<T>,
        rule: Rule<T>,
        flags: Option<Arg>,
        output: &DeviceArray<T>,
        count: &DeviceArray<u32>,
        at: SrcLoc,
    ) -> Result<()> {
        self.begin();
        let n = input.len();
        check_len::<T>(&self.device, algo, "input", n, at)?;
        check_out(algo, "output", output.len(), n, at)?;
        check_out(algo, "count", count.len(), 1, at)?;
        self.tuning.check(&self.device, algo, at)?;
        let err = device_err(algo, at);
        if n == 0 {
            // Nothing to launch: the count is 0 (the other elements of `count` are kept).
            let mut c = count.to_vec().map_err(&err)?;
            c[0] = 0;
            return count.write(&c).map_err(&err);
        }
        let (kernel, block, items) = kernel::<T>(&rule, &self.tuning);
        let tiles = n.div_ceil((block * items) as usize);
        let [state, ticket, epoch] = self.look_back_args(tiles, 1).map_err(&err)?;
        let mut args = vec![input.arg()];
        args.extend(flags);
        args.extend([output.arg(), count.arg(), state, ticket, epoch]);
        self.launch(&kernel, tiles as u32, &args).map_err(&err)
    }
}

/// Selects by flag like [`Workspace::select_flagged`], allocating the count and temporary storage,
/// and returns the count to the host.
///
/// ```
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[1u32, 2, 3]).unwrap();
/// let flags = d.array_from(&[0i32, 5, 0]).unwrap();
/// let out = d.zeros::<u32>(3).unwrap();
/// assert_eq!(qd::algorithms::select_flagged(&d, &x, &flags, &out).unwrap(), 1);
/// assert_eq!(out.to_vec().unwrap()[0], 2);
/// ```
#[track_caller]
pub fn select_flagged<T: Scalar, F: Int>(
    device: &Device,
    input: &DeviceArray<T>,
    flags: &DeviceArray<F>,
    output: &DeviceArray<T>,
) -> Result<usize> {
    let at = SrcLoc::caller();
    let err = device_err("select_flagged", at);
    let count = device.zeros::<u32>(1).map_err(&err)?;
    check_out("select_flagged", "flags", flags.len(), input.len(), at)?;
    Workspace::new(device).select_at(
        "select_flagged",
        input,
        Rule::Flags(F::DTYPE),
        Some(flags.arg()),
        output,
        &count,
        at,
    )?;
    Ok(count.to_vec().map_err(&err)?[0] as usize)
}

/// Selects by predicate like [`Workspace::select_if`], allocating the count and temporary storage,
/// and returns the count to the host.
///
/// ```
/// use qd::algorithms::Predicate;
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[7i32, 8, 9, 10]).unwrap();
/// let out = d.zeros::<i32>(4).unwrap();
/// let even = Predicate::new("even", |x: Val<i32>| (x & 1).eq(0));
/// assert_eq!(qd::algorithms::select_if(&d, &x, &out, &even).unwrap(), 2);
/// assert_eq!(out.to_vec().unwrap()[..2], [8, 10]);
/// ```
#[track_caller]
pub fn select_if<T: Scalar>(
    device: &Device,
    input: &DeviceArray<T>,
    output: &DeviceArray<T>,
    predicate: &Predicate<T>,
) -> Result<usize> {
    let at = SrcLoc::caller();
    let err = device_err("select_if", at);
    let count = device.zeros::<u32>(1).map_err(&err)?;
    Workspace::new(device).select_at(
        "select_if",
        input,
        Rule::Predicate(predicate.clone()),
        None,
        output,
        &count,
        at,
    )?;
    Ok(count.to_vec().map_err(&err)?[0] as usize)
}
