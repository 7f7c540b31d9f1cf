//! Device-wide LSD radix sort, onesweep style (issue 17, D28, D29): [`sort_keys`] and
//! [`sort_pairs`], or a [`Sorter`] that keeps its scratch memory between sorts.
//!
//! Keys `u32`, `i32`, `f32`, `u64`, `i64`, `f64` ([`SortKey`]); values any 4- or 8-byte scalar
//! ([`SortValue`]). The sort is stable, ascending or descending, over all of the key's bits or a
//! range of them ([`SortOptions`]). Floats sort by value with -0.0 before +0.0; every NaN sorts
//! after +inf (ascending) or before it (descending), NaNs keeping their input order and bits. This
//! differs from CUB's `DeviceRadixSort`, which orders NaNs by their bits, so negative NaNs come
//! first there. Errors are [`crate::algorithms::Error`]s naming `sort_keys` or `sort_pairs` and
//! the caller's line.
//!
//! How: one histogram launch counts every digit place (8-bit digits) of every key; then one launch
//! per digit place ranks tiles of at least 4096 keys ([`SortTuning`]) with
//! [`block::radix_rank_keys`](crate::simt::block::radix_rank_keys)'s steps, publishes each
//! tile's digit counts, looks back over the earlier tiles for each digit's offset (decoupled
//! look-back on CUDA, with fallback where blocks have no forward-progress guarantee: D13) and
//! writes the keys (and values) to their places. An odd number of passes ends with a copy.
//!
//! ```
//! use qd::algorithms::sort::{sort_pairs, SortOptions};
//! use qd::prelude::*;
//!
//! let d = Device::cpu();
//! let keys = d.array_from(&[3.5f32, -1.0, 2.0, -0.0, 0.0, f32::NAN, -7.25]).unwrap();
//! let vals = d.array_from(&[0u32, 1, 2, 3, 4, 5, 6]).unwrap();
//! sort_pairs(&d, &keys, &vals, &SortOptions::default()).unwrap();
//! assert_eq!(vals.to_vec().unwrap(), [6, 1, 3, 4, 2, 0, 5]);
//! ```

mod kernels;
mod keys;
mod lookback;
mod tuning;

pub use keys::{RadixBits, SortKey, SortValue};
pub use tuning::SortTuning;

use super::Error;
use crate::ir::{DType, SrcLoc};
use crate::runtime::{Arg, Device, DeviceArray, Error as DeviceError};
use crate::trace::{Int, Kernel, Scalar};
use kernels::Layout;
use std::any::Any;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tuning::{DIGITS, HIST_BLOCK, RADIX_BITS};

/// What to sort by and in which order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortOptions {
    /// Sort by these bits of the keys' ordered bits (see [`SortKey`]; bit 0 is the lowest) only;
    /// `None`: all of them. An empty range leaves the arrays as they are.
    pub bits: Option<Range<u32>>,
    /// Largest first (still stable: equal keys keep their input order).
    pub descending: bool,
}

impl SortOptions {
    /// Ascending over all bits (the default).
    ///
    /// ```
    /// use qd::algorithms::sort::SortOptions;
    /// assert_eq!(SortOptions::new(), SortOptions { bits: None, descending: false });
    /// ```
    pub fn new() -> SortOptions {
        SortOptions::default()
    }

    /// Largest first.
    ///
    /// ```
    /// use qd::algorithms::sort::{sort_keys, SortOptions};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let keys = d.array_from(&[2u32, 7, 1, 7]).unwrap();
    /// sort_keys(&d, &keys, &SortOptions::new().descending()).unwrap();
    /// assert_eq!(keys.to_vec().unwrap(), [7, 7, 2, 1]);
    /// ```
    pub fn descending(mut self) -> SortOptions {
        self.descending = true;
        self
    }

    /// Only the bits `bits` of the ordered bits.
    ///
    /// ```
    /// use qd::algorithms::sort::{sort_keys, SortOptions};
    /// use qd::prelude::*;
    ///
    /// // By the low byte only; equal low bytes keep their order (the sort is stable).
    /// let d = Device::cpu();
    /// let keys = d.array_from(&[0x301u32, 0x102, 0x201, 0x100]).unwrap();
    /// sort_keys(&d, &keys, &SortOptions::new().bits(0..8)).unwrap();
    /// assert_eq!(keys.to_vec().unwrap(), [0x100, 0x301, 0x201, 0x102]);
    /// ```
    pub fn bits(mut self, bits: Range<u32>) -> SortOptions {
        self.bits = Some(bits);
        self
    }
}

/// The largest key count: the look-back's counts have 30 bits.
pub const MAX_KEYS: usize = (1 << 30) - 1;

/// Sorts `keys` in place on `device` (see the module docs); allocates its scratch memory (use a
/// [`Sorter`] to keep it between sorts).
///
/// ```
/// use qd::algorithms::sort::{sort_keys, SortOptions};
/// use qd::prelude::*;
///
/// let d = Device::cpu();
/// let keys = d.array_from(&[4i32, -2, 9, 0, -2]).unwrap();
/// sort_keys(&d, &keys, &SortOptions::default()).unwrap();
/// assert_eq!(keys.to_vec().unwrap(), [-2, -2, 0, 4, 9]);
/// ```
#[track_caller]
pub fn sort_keys<K: SortKey>(device: &Device, keys: &DeviceArray<K>, options: &SortOptions) -> Result<(), Error> {
    Sorter::new(device).sort_keys(keys, options)
}

/// Sorts `keys` in place and moves `values` with them (`values[i]` belongs to `keys[i]`).
///
/// ```
/// use qd::algorithms::sort::{sort_pairs, SortOptions};
/// use qd::prelude::*;
///
/// let d = Device::cpu();
/// let keys = d.array_from(&[30u64, 10, 20]).unwrap();
/// let names = d.array_from(&[3.0f64, 1.0, 2.0]).unwrap();
/// sort_pairs(&d, &keys, &names, &SortOptions::default()).unwrap();
/// assert_eq!(names.to_vec().unwrap(), [1.0, 2.0, 3.0]);
///
/// // One value per key, else a typed error naming `sort_pairs`.
/// let short = d.array_from(&[1u32]).unwrap();
/// assert!(sort_pairs(&d, &keys, &short, &SortOptions::default()).is_err());
/// ```
#[track_caller]
pub fn sort_pairs<K: SortKey, V: SortValue>(
    device: &Device,
    keys: &DeviceArray<K>,
    values: &DeviceArray<V>,
    options: &SortOptions,
) -> Result<(), Error> {
    Sorter::new(device).sort_pairs(keys, values, options)
}

/// A sorter for one device: keeps its scratch arrays and state between sorts, so repeated sorts
/// allocate nothing; can time each launch (for benchmarks).
///
/// ```
/// use qd::algorithms::sort::{SortOptions, Sorter};
/// use qd::prelude::*;
///
/// let d = Device::cpu();
/// let mut sorter = Sorter::new(&d);
/// let keys = d.array_from(&[5i64, -3, 9, -3, 0]).unwrap();
/// sorter.sort_keys(&keys, &SortOptions::new().descending()).unwrap();
/// assert_eq!(keys.to_vec().unwrap(), [9, 5, 0, -3, -3]);
/// ```
pub struct Sorter {
    device: Device,
    tuning: Option<SortTuning>,
    /// The state words (dropped after a failure).
    state: Option<SortState>,
    /// Scratch arrays by use (0 keys, 1 values) and element type.
    scratch: HashMap<(u8, DType), Box<dyn Any>>,
    timed: bool,
    times: Vec<(String, Duration)>,
    /// The histogram's fences (always on, but in the test that shows they are needed).
    hist_fences: bool,
}

/// A sorter's state array and what of it is set between sorts.
struct SortState {
    words: DeviceArray<u32>,
    layout: Layout,
    /// Tiles of look-back region 0 whose words the last sort left set (its last pass used region
    /// 0); everything else [`Layout`] names is zero between sorts.
    dirty: u32,
}

impl Sorter {
    /// A sorter for `device`, with the default [`SortTuning`] for its target.
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let mut sorter = Sorter::new(&d);
    /// for round in 0..2u32 {
    ///     // The second sort reuses the first one's scratch arrays.
    ///     let keys = d.array_from(&[round + 2, round, round + 1]).unwrap();
    ///     sorter.sort_keys(&keys, &SortOptions::new()).unwrap();
    ///     assert_eq!(keys.to_vec().unwrap(), [round, round + 1, round + 2]);
    /// }
    /// ```
    pub fn new(device: &Device) -> Sorter {
        Sorter {
            device: device.clone(),
            tuning: None,
            state: None,
            scratch: HashMap::new(),
            timed: false,
            times: Vec::new(),
            hist_fences: true,
        }
    }

    /// Uses `tuning` instead of the target's default (a shape the target cannot run is an error
    /// when sorting).
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, SortTuning, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// // Small tiles: 64 threads of 4 keys, so 1000 keys make four tiles.
    /// let tuning = SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 16 };
    /// let mut sorter = Sorter::new(&d).with_tuning(tuning);
    /// let host: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
    /// let keys = d.array_from(&host).unwrap();
    /// sorter.sort_keys(&keys, &SortOptions::new()).unwrap();
    /// let mut want = host;
    /// want.sort();
    /// assert_eq!(keys.to_vec().unwrap(), want);
    /// ```
    pub fn with_tuning(mut self, tuning: SortTuning) -> Sorter {
        self.tuning = Some(tuning);
        self
    }

    /// The shape used for keys of `K` (with values of `V` when `pairs`).
    ///
    /// ```
    /// use qd::algorithms::sort::Sorter;
    /// use qd::prelude::*;
    ///
    /// let sorter = Sorter::new(&Device::cpu());
    /// let keys_only = sorter.tuning_for::<u32, u32>(false);
    /// assert!(keys_only.tile() >= 4096);
    /// ```
    pub fn tuning_for<K: SortKey, V: SortValue>(&self, pairs: bool) -> SortTuning {
        let vbytes = if pairs { V::DTYPE.bits() / 8 } else { 0 };
        self.tuning.unwrap_or_else(|| SortTuning::for_target(self.device.target(), K::DTYPE.bits() / 8, vbytes))
    }

    /// With `true`, each launch is timed ([`Device::launch_timed`]) and [`Sorter::times`] lists
    /// them after a sort.
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let mut sorter = Sorter::new(&d);
    /// sorter.set_timed(true);
    /// let keys = d.array_from(&[3u32, 1, 2]).unwrap();
    /// sorter.sort_keys(&keys, &SortOptions::new()).unwrap();
    /// // One histogram launch, then one launch per 8-bit digit place.
    /// assert_eq!(sorter.times().len(), 1 + 4);
    /// ```
    pub fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }

    /// The launches of the last sort with their times, when timed.
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let mut sorter = Sorter::new(&d);
    /// sorter.set_timed(true);
    /// let keys = d.array_from(&[3i64, 1, 2]).unwrap();
    /// sorter.sort_keys(&keys, &SortOptions::new().bits(0..8)).unwrap();
    /// // One pass over one digit place, so an odd pass count: the result is copied back.
    /// for (kernel, time) in sorter.times() {
    ///     println!("{kernel}: {time:?}");
    /// }
    /// assert_eq!(sorter.times().len(), 3);
    /// ```
    pub fn times(&self) -> &[(String, Duration)] {
        &self.times
    }

    /// Sorts `keys` in place.
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let keys = d.array_from(&[1.5f32, f32::NEG_INFINITY, -0.0, 0.0, -1.5]).unwrap();
    /// Sorter::new(&d).sort_keys(&keys, &SortOptions::new()).unwrap();
    /// let sorted = keys.to_vec().unwrap();
    /// assert_eq!(sorted, [f32::NEG_INFINITY, -1.5, -0.0, 0.0, 1.5]);
    /// assert!(sorted[2].is_sign_negative()); // -0.0 sorts before +0.0
    /// ```
    #[track_caller]
    pub fn sort_keys<K: SortKey>(&mut self, keys: &DeviceArray<K>, options: &SortOptions) -> Result<(), Error> {
        let loc = SrcLoc::caller();
        self.run::<K, u32>("sort_keys", keys, None, options, loc)
    }

    /// Sorts `keys` in place and moves `values` with them.
    ///
    /// ```
    /// use qd::algorithms::sort::{SortOptions, Sorter};
    /// use qd::prelude::*;
    ///
    /// let d = Device::cpu();
    /// let keys = d.array_from(&[2u32, 1, 2, 1]).unwrap();
    /// let order = d.array_from(&[0i32, 1, 2, 3]).unwrap();
    /// Sorter::new(&d).sort_pairs(&keys, &order, &SortOptions::new()).unwrap();
    /// // Stable: equal keys keep their input order.
    /// assert_eq!(order.to_vec().unwrap(), [1, 3, 0, 2]);
    /// ```
    #[track_caller]
    pub fn sort_pairs<K: SortKey, V: SortValue>(
        &mut self,
        keys: &DeviceArray<K>,
        values: &DeviceArray<V>,
        options: &SortOptions,
    ) -> Result<(), Error> {
        let loc = SrcLoc::caller();
        self.run::<K, V>("sort_pairs", keys, Some(values), options, loc)
    }

    fn run<K: SortKey, V: SortValue>(
        &mut self,
        op: &'static str,
        keys: &DeviceArray<K>,
        values: Option<&DeviceArray<V>>,
        options: &SortOptions,
        loc: SrcLoc,
    ) -> Result<(), Error> {
        let fail = |message: String| Error::Invalid { algo: op, message, at: loc };
        let n = keys.len();
        if let Some(v) = values
            && v.len() != n
        {
            return Err(fail(format!("{} values for {n} keys: give one value per key", v.len())));
        }
        if n > MAX_KEYS {
            // The look-back's counts have 30 bits.
            return Err(Error::TooLong { algo: op, what: "keys", len: n, max: MAX_KEYS, at: loc });
        }
        let key_bits = <K::Bits as RadixBits>::BITS;
        let bits = options.bits.clone().unwrap_or(0..key_bits);
        if bits.start > bits.end || bits.end > key_bits {
            return Err(fail(format!(
                "bit range {}..{} must be an ascending range inside the key's {key_bits} bits",
                bits.start, bits.end
            )));
        }
        if n <= 1 || bits.is_empty() {
            return Ok(());
        }
        self.times.clear();
        let result = self.sort_with::<K, V>(keys, values, bits, options.descending);
        if result.is_err() {
            // A launch that failed part-way may leave the state words set.
            self.state = None;
        }
        result.map_err(|source| Error::Device { algo: op, source: Box::new(source), at: loc })
    }

    fn sort_with<K: SortKey, V: SortValue>(
        &mut self,
        keys: &DeviceArray<K>,
        values: Option<&DeviceArray<V>>,
        bits: Range<u32>,
        descending: bool,
    ) -> Result<(), DeviceError> {
        let n = keys.len();
        let pairs = values.is_some();
        let tuning = self.tuning_for::<K, V>(pairs);
        let tiles = n.div_ceil(tuning.tile() as usize) as u32;
        let passes = (bits.end - bits.start).div_ceil(RADIX_BITS);
        let last_bits = bits.end - bits.start - (passes - 1) * RADIX_BITS;
        let last_mask = (1u32 << last_bits) - 1;
        let flip = if descending { <K::Bits as Int>::ALL_ONES } else { <K::Bits as Scalar>::from_bits(0) };
        let (state, layout, dirty) = self.state(tiles)?;
        let keys_alt = self.scratch::<K>(0, n)?;
        let values_alt = values.map(|_| self.scratch::<V>(1, n)).transpose()?;

        // The histogram: a grid that fills the device once, each block a share of the keys.
        let fences = self.hist_fences;
        let hist_key = if fences { "hist" } else { "hist_unfenced" };
        let hist =
            cached((hist_key, K::DTYPE, None, tuning), || kernels::histogram_kernel::<K>(tuning.hist_items, fences));
        let chunks = n.div_ceil((HIST_BLOCK * tuning.hist_items) as usize) as u32;
        let resident = self.resident_blocks(&hist)?;
        let grid = chunks.clamp(1, resident);
        // The tile tickets, and the look-back words the last sort left in region 0.
        let clear_from = layout.pass_ticket(0) as i32;
        let clear_to = (layout.lookback(0) + dirty as u64 * DIGITS as u64) as i32;
        let args = [
            keys.arg(),
            state.arg(),
            Arg::scalar(n as i32),
            Arg::scalar(passes as i32),
            Arg::scalar(bits.start),
            Arg::scalar(last_mask),
            Arg::scalar(flip),
            Arg::scalar(clear_from),
            Arg::scalar(clear_to),
        ];
        self.launch(&hist, grid, &args)?;

        // The passes, ping-ponging between the caller's arrays and the scratch ones.
        let pass = cached(("pass", K::DTYPE, values.map(|_| V::DTYPE), tuning), || {
            kernels::pass_kernel::<K, V>(tuning, pairs)
        });
        let mut from = (keys.arg(), values.map(|v| v.arg()));
        let mut to = (keys_alt.arg(), values_alt.as_ref().map(|v| v.arg()));
        for p in 0..passes {
            let mask = if p + 1 == passes { last_mask } else { DIGITS - 1 };
            let mut args = vec![from.0.clone(), to.0.clone()];
            if let (Some(a), Some(b)) = (&from.1, &to.1) {
                args.extend([a.clone(), b.clone()]);
            }
            args.extend([
                state.arg(),
                Arg::scalar(n as i32),
                Arg::scalar(bits.start + p * RADIX_BITS),
                Arg::scalar(mask),
                Arg::scalar(flip),
                Arg::scalar(layout.pass_ticket(p) as i32),
                Arg::scalar(layout.gstart(p) as i32),
                Arg::scalar(layout.lookback(p % 2) as i32),
                Arg::scalar(layout.lookback(1 - p % 2) as i32),
            ]);
            self.launch(&pass, tiles, &args)?;
            std::mem::swap(&mut from, &mut to);
        }
        if let Some(s) = &mut self.state {
            // The last pass cleared the other region; its own stays set.
            s.dirty = if passes % 2 == 1 { tiles } else { 0 };
        }
        if passes % 2 == 1 {
            let copy = cached(("copy", K::DTYPE, None, tuning), kernels::copy_kernel::<K>);
            self.launch_range(&copy, &[keys_alt.arg(), keys.arg(), Arg::scalar(n as i32)])?;
            if let (Some(v), Some(alt)) = (values, &values_alt) {
                let copy = cached(("copy", V::DTYPE, None, tuning), kernels::copy_kernel::<V>);
                self.launch_range(&copy, &[alt.arg(), v.arg(), Arg::scalar(n as i32)])?;
            }
        }
        Ok(())
    }

    /// The state array for sorts of up to `tiles` tiles, its layout and its set tiles of region 0;
    /// zeroed when (re)allocated.
    fn state(&mut self, tiles: u32) -> Result<(DeviceArray<u32>, Layout, u32), DeviceError> {
        if let Some(s) = &self.state
            && s.layout.tiles >= tiles
        {
            return Ok((s.words.clone(), s.layout, s.dirty));
        }
        let layout = Layout { tiles };
        let len = layout.len();
        if len > i32::MAX as u64 {
            return Err(DeviceError::Launch {
                kernel: "sort".into(),
                message: format!("{tiles} tiles need {len} state words, more than i32::MAX"),
            });
        }
        // Dropped first: the old array's memory is free for the new one.
        self.state = None;
        let words = self.device.zeros::<u32>(len as usize)?;
        self.state = Some(SortState { words: words.clone(), layout, dirty: 0 });
        Ok((words, layout, 0))
    }

    /// Scratch array `slot` (0 for keys, 1 for values): at least `len` elements of `T`.
    fn scratch<T: Scalar>(&mut self, slot: u8, len: usize) -> Result<DeviceArray<T>, DeviceError> {
        if let Some(a) = self.scratch.get(&(slot, T::DTYPE)).and_then(|a| a.downcast_ref::<DeviceArray<T>>())
            && a.len() >= len
        {
            return Ok(a.clone());
        }
        let a = self.device.zeros::<T>(len)?;
        self.scratch.insert((slot, T::DTYPE), Box::new(a.clone()));
        Ok(a)
    }

    /// Blocks of `kernel` that run at once on the whole device ([`super::resident_estimate`]).
    fn resident_blocks(&self, kernel: &Kernel) -> Result<u32, DeviceError> {
        let per_sm = self.device.max_active_blocks_per_multiprocessor(kernel)?;
        Ok(super::resident_estimate(per_sm, &self.device.info()))
    }

    fn launch(&mut self, kernel: &Kernel, grid: u32, args: &[Arg]) -> Result<(), DeviceError> {
        if self.timed {
            let t = self.device.launch_timed(kernel, Some(grid), args)?;
            self.times.push((kernel.name().to_string(), t));
            Ok(())
        } else {
            self.device.launch_grid(kernel, grid, args)
        }
    }

    fn launch_range(&mut self, kernel: &Kernel, args: &[Arg]) -> Result<(), DeviceError> {
        if self.timed {
            let t = self.device.launch_timed(kernel, None, args)?;
            self.times.push((kernel.name().to_string(), t));
            Ok(())
        } else {
            self.device.launch(kernel, args)
        }
    }
}

/// Which kernel, for which types and shape.
type KernelKey = (&'static str, DType, Option<DType>, SortTuning);

/// The sort's kernels are built once per process and shape, so every device's compile cache
/// (keyed by kernel identity) finds them again.
fn cached(key: KernelKey, make: impl FnOnce() -> Kernel) -> Kernel {
    static KERNELS: OnceLock<Mutex<HashMap<KernelKey, Kernel>>> = OnceLock::new();
    let map = KERNELS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(key).or_insert_with(make).clone()
}

/// The kernels a sort of `K` keys (with `V` values when `pairs`) launches with `tuning`: the
/// histogram, the pass, and the copies an odd pass count needs (for emitting and inspecting them).
///
/// ```
/// use qd::algorithms::sort::{sort_kernels, SortTuning};
/// use qd::prelude::*;
///
/// let tuning = SortTuning::for_target(Device::cpu().target(), 4, 4);
/// let kernels = sort_kernels::<u32, f32>(tuning, true);
/// // The histogram, the pass, the key copy and the value copy (f32 is not u32).
/// assert_eq!(kernels.len(), 4);
/// for k in &kernels {
///     println!("{}", k.name());
/// }
/// ```
pub fn sort_kernels<K: SortKey, V: SortValue>(tuning: SortTuning, pairs: bool) -> Vec<Kernel> {
    let mut out = vec![
        cached(("hist", K::DTYPE, None, tuning), || kernels::histogram_kernel::<K>(tuning.hist_items, true)),
        cached(("pass", K::DTYPE, pairs.then_some(V::DTYPE), tuning), || kernels::pass_kernel::<K, V>(tuning, pairs)),
        cached(("copy", K::DTYPE, None, tuning), kernels::copy_kernel::<K>),
    ];
    if pairs && V::DTYPE != K::DTYPE {
        out.push(cached(("copy", V::DTYPE, None, tuning), kernels::copy_kernel::<V>));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` pseudo-random keys from the xorshift state `x`.
    fn xorshift_keys(x: &mut u64, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                *x as u32
            })
            .collect()
    }

    /// Sorts 1500 keys on the weak-memory emulator (D26) with seed `seed`: `Ok` if right.
    fn weak_sort(seed: u64, fences: bool) -> Result<(), String> {
        let d = Device::from_name(&format!("cpu+weak={seed}")).map_err(|e| e.to_string())?;
        let tuning = SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 2 };
        let mut sorter = Sorter::new(&d).with_tuning(tuning);
        sorter.hist_fences = fences;
        let mut x = seed.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let keys = xorshift_keys(&mut x, 1500);
        let a = d.array_from(&keys).map_err(|e| e.to_string())?;
        sorter.sort_keys(&a, &SortOptions::new()).map_err(|e| e.to_string())?;
        let mut want = keys;
        want.sort_unstable();
        match a.to_vec().map_err(|e| e.to_string())? == want {
            true => Ok(()),
            false => Err(format!("seed {seed}: wrong order")),
        }
    }

    #[test]
    fn the_histograms_fences_are_needed_in_weak_memory_mode() {
        // With the fences around its last-block ticket, the histogram's last block sees every
        // block's counts on every seed; without them, some seed gives it stale counts and the
        // sort goes wrong (or a pass reads past its digit's range: an emulator error).
        for seed in 0..3 {
            assert_eq!(weak_sort(seed, true), Ok(()));
        }
        assert!((0..8).any(|seed| weak_sort(seed, false).is_err()), "no seed showed the missing fences");
    }

    /// One sorter through sorts whose last pass leaves look-back region 0 set (odd pass counts)
    /// or clear, of more tiles and fewer: each sort's first pass must find its region clear. (The
    /// weak-memory emulator interleaves blocks, so a tile can read a word its predecessor has not
    /// written yet.)
    #[test]
    fn the_state_stays_clear_across_pass_counts_and_sizes() {
        let d = Device::from_name("cpu+weak=7").unwrap();
        let tuning = SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 16 };
        let mut sorter = Sorter::new(&d).with_tuning(tuning);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for (n, bits) in [(3000, 0..8), (1000, 0..32), (5000, 0..24), (6000, 0..32), (2000, 8..16), (6000, 0..32)] {
            let keys = xorshift_keys(&mut x, n);
            let a = d.array_from(&keys).unwrap();
            sorter.sort_keys(&a, &SortOptions::new().bits(bits.clone())).unwrap();
            let mut want = keys;
            let field = |k: &u32| (((*k as u64) >> bits.start) & ((1u64 << (bits.end - bits.start)) - 1)) as u32;
            want.sort_by_key(field);
            assert_eq!(a.to_vec().unwrap(), want, "{n} keys, bits {bits:?}");
        }
    }
}
