//! Histograms of evenly spaced bins in one launch: each block counts its samples in shared memory,
//! adds its counts to an accumulator in device memory, and the last block to finish moves the
//! accumulator to the output and clears it for the next launch.

use super::{check_len, check_out, device_err, Result, Tuning, Workspace};
use crate::ir::SrcLoc;
use crate::runtime::{Arg, Device, DeviceArray};
use crate::simt::atomic::atomic_add;
use crate::simt::{block, grid};
use crate::trace::{if_, var, volatile_load, while_, Kernel, Num, Val};

/// The most bins [`histogram_even`](Workspace::histogram_even) counts: one u32 counter per bin in
/// shared memory (16 KiB, within every target's shared memory).
pub const MAX_BINS: u32 = 4096;

/// Default items per thread.
const ITEMS: u32 = 8;

/// Sample types of [`histogram_even`](Workspace::histogram_even): the integers (8 to 64 bits) and
/// f32, f64. Sealed.
pub trait Sample: Num + private::Sealed {
    /// The bin `histogram_even` puts `self` in (`None`: outside `[lower, upper)`), computed on the
    /// host exactly as the kernel does: for reference results.
    ///
    /// ```
    /// use qd::algorithms::Sample;
    /// assert_eq!(5i32.bin_even(4, 0, 10), Some(2)); // bins [0,2.5) [2.5,5) [5,7.5) [7.5,10)
    /// assert_eq!(10i32.bin_even(4, 0, 10), None);
    /// assert_eq!(0.999f32.bin_even(10, 0.0, 1.0), Some(9));
    /// ```
    fn bin_even(self, bins: u32, lower: Self, upper: Self) -> Option<u32>;
}

mod private {
    /// The host arithmetic the launch parameters need.
    pub trait Sealed: Copy + std::fmt::Debug {
        /// `lower < upper`.
        fn below(self, upper: Self) -> bool;
        /// Floats: `bins / (upper - lower)` in the sample's precision; integers: 0.
        fn scale(bins: u32, lower: Self, upper: Self) -> Self;
        /// Integers: `upper - lower` exactly; floats: 0.
        fn range(lower: Self, upper: Self) -> u128;
    }
}

macro_rules! int_samples {
    ($($t:ty),*) => {$(
        impl private::Sealed for $t {
            fn below(self, upper: Self) -> bool { self < upper }
            fn scale(_: u32, _: Self, _: Self) -> Self { 0 }
            fn range(lower: Self, upper: Self) -> u128 { (upper as i128 - lower as i128) as u128 }
        }
        impl Sample for $t {
            fn bin_even(self, bins: u32, lower: Self, upper: Self) -> Option<u32> {
                if self < lower || self >= upper {
                    return None;
                }
                let d = (self as i128 - lower as i128) as u128;
                Some((d * bins as u128 / <$t as private::Sealed>::range(lower, upper)) as u32)
            }
        }
    )*};
}
int_samples!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_samples {
    ($($t:ty),*) => {$(
        impl private::Sealed for $t {
            fn below(self, upper: Self) -> bool { self < upper }
            fn scale(bins: u32, lower: Self, upper: Self) -> Self { bins as $t / (upper - lower) }
            fn range(_: Self, _: Self) -> u128 { 0 }
        }
        impl Sample for $t {
            fn bin_even(self, bins: u32, lower: Self, upper: Self) -> Option<u32> {
                if !(self >= lower && self < upper) {
                    return None;
                }
                let scale = <$t as private::Sealed>::scale(bins, lower, upper);
                // The kernel's float-to-u32 conversion truncates and saturates, as `as` does.
                Some((((self - lower) * scale) as u32).min(bins - 1))
            }
        }
    )*};
}
float_samples!(f32, f64);

/// How a kernel computes an integer sample's bin: `(x - lower) * bins / (upper - lower)` in 32-bit
/// arithmetic where the product fits, else in 64-bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Width {
    W32,
    W64,
}

/// `x` as the u64 whose difference with `lower`'s is `x - lower` exactly when `x >= lower`
/// (sign-extended for signed types).
#[track_caller]
fn widened<T: Sample>(x: Val<T>) -> Val<u64> {
    let d = T::DTYPE;
    if d.size_bytes() == 8 {
        x.bit_cast::<u64>()
    } else if d.is_signed_int() {
        x.cast::<i64>().bit_cast::<u64>()
    } else {
        x.cast::<u64>()
    }
}

/// The bin of `x` (meaningful where `lower <= x < upper`).
#[track_caller]
fn bin_of<T: Sample>(x: Val<T>, lower: Val<T>, scale: Val<T>, range: Val<u64>, bins: u32, width: Width) -> Val<u32> {
    if T::DTYPE.is_float() {
        ((x - lower) * scale).cast::<u32>().min(bins - 1)
    } else {
        let d = widened(x) - widened(lower);
        match width {
            Width::W32 => (d.cast::<u32>() * bins) / range.cast::<u32>(),
            Width::W64 => ((d * bins as u64) / range).cast::<u32>(),
        }
    }
}

/// Counts the samples of `samples` in `bins` even bins over `[lower, upper)` into `histogram`
/// (launched on the resident grid; `items` striped samples per thread and pass).
///
/// Arrays: `samples`, `histogram` (at least `bins`), `acc` (at least `bins`, zero before the first
/// launch: left zero by each), `counter` (1, zero); scalars `lower`, `upper`, `scale` (floats: `bins
/// / (upper - lower)`), `range` (integers: `upper - lower`).
fn histogram_kernel<T: Sample>(bins: u32, width: Width, block: u32, items: u32) -> Kernel {
    let w =
        if T::DTYPE.is_float() { String::new() } else { format!("_w{}", if width == Width::W32 { 32 } else { 64 }) };
    let name = format!("qd_histogram_even_{}_{bins}bins{w}", T::DTYPE);
    Kernel::explicit(&name, block, move |k| {
        let samples = k.array::<T>("samples");
        let histogram = k.array::<u32>("histogram");
        let acc = k.array::<u32>("acc");
        let counter = k.array::<u32>("counter");
        let lower = k.scalar::<T>("lower");
        let upper = k.scalar::<T>("upper");
        let scale = k.scalar::<T>("scale");
        let range = k.scalar::<u64>("range");
        let t = block::thread_idx();
        let b = block::block_idx();
        let g = block::grid_dim();
        let counts = block::shared_array::<u32>(bins);
        let each_bin = |f: &dyn Fn(Val<i32>)| {
            for first in (0..bins as i32).step_by(block as usize) {
                let i = t + first;
                if first + block as i32 <= bins as i32 {
                    f(i);
                } else {
                    if_(i.lt(bins as i32), || f(i));
                }
            }
        };
        each_bin(&|i| counts.set(i, 0u32));
        block::sync();
        let count = |x: Val<T>| {
            if_(x.ge(lower) & x.lt(upper), || {
                atomic_add(counts.at(bin_of(x, lower, scale, range, bins, width)), 1u32);
            });
        };
        let n = samples.len();
        let tile = (block * items) as i32;
        let full = n / tile;
        let next = var(b);
        while_(
            || next.get().lt(full),
            || {
                let first = next.get() * tile + t;
                let xs: Vec<Val<T>> = (0..items).map(|j| samples.get(first + (j * block) as i32)).collect();
                for x in xs {
                    count(x);
                }
                next.set(next.get() + g);
            },
        );
        let i = var(full * tile + b * block as i32 + t);
        while_(
            || i.get().lt(n),
            || {
                count(samples.get(i.get()));
                i.set(i.get() + g * block as i32);
            },
        );
        block::sync();
        each_bin(&|i| {
            let c = counts.get(i);
            if_(c.ne(0u32), || {
                atomic_add(acc.at(i), c);
            });
        });
        // Every thread's additions before the ticket; the others' before the last block reads.
        grid::mem_fence();
        block::sync();
        let last = block::shared_array::<i32>(1);
        if_(t.eq(0), || {
            let ticket = atomic_add(counter.at(0), 1u32);
            grid::mem_fence();
            last.set(0, ticket.eq((g - 1).cast::<u32>()).to_i32());
        });
        block::sync();
        if_(last.get(0).ne(0), || {
            each_bin(&|i| {
                histogram.set(i, volatile_load(acc.at(i)));
                acc.set(i, 0u32);
            });
            if_(t.eq(0), || counter.set(0, 0u32));
        });
    })
}

/// The scalars of a histogram launch and the integer width, or what is wrong with the range.
fn params<T: Sample>(bins: u32, lower: T, upper: T) -> std::result::Result<(Vec<Arg>, Width), String> {
    if bins == 0 || bins > MAX_BINS {
        return Err(format!("{bins} bins: 1 to {MAX_BINS} are supported (one shared-memory counter each)"));
    }
    if !lower.below(upper) {
        return Err(format!("the range [{lower:?}, {upper:?}) is empty"));
    }
    let product = T::range(lower, upper) * bins as u128;
    let width = if T::DTYPE.is_float() || product > u32::MAX as u128 { Width::W64 } else { Width::W32 };
    if product > u64::MAX as u128 {
        return Err(format!(
            "{bins} bins over [{lower:?}, {upper:?}): (upper - lower) * bins overflows 64 bits; use fewer bins or a narrower range"
        ));
    }
    let scale = T::scale(bins, lower, upper);
    let range = T::range(lower, upper) as u64;
    Ok((vec![Arg::scalar(lower), Arg::scalar(upper), Arg::scalar(scale), Arg::scalar(range)], width))
}

/// The kernel a call with `tuning` launches, with its block and items.
fn kernel<T: Sample>(bins: u32, width: Width, tuning: &Tuning) -> (Kernel, u32, u32) {
    let (block, items) = tuning.resolve(ITEMS);
    let key = format!("histogram/{}/{bins}/{width:?}/{block}/{items}", T::DTYPE);
    (super::cached_kernel(key, || histogram_kernel::<T>(bins, width, block, items)), block, items)
}

/// The kernel of [`Workspace::histogram_even`] for these bins (`None`: they are invalid).
pub(crate) fn even_kernel<T: Sample>(bins: u32, lower: T, upper: T, tuning: &Tuning) -> Option<Kernel> {
    let (_, width) = params(bins, lower, upper).ok()?;
    Some(kernel::<T>(bins, width, tuning).0)
}

impl Workspace {
    /// Counts the samples in each of `bins` evenly spaced bins over `[lower, upper)` into
    /// `histogram[0..bins]` (overwritten), in one launch. Bin `b` holds the samples `x` with
    /// `lower <= x < upper` and `(x - lower) * bins / (upper - lower)` (exact for integers) equal to
    /// `b`: see [`Sample::bin_even`]. Samples outside the range (and NaN) are dropped.
    ///
    /// `bins` is 1 to [`MAX_BINS`]; for integer samples `(upper - lower) * bins` must fit 64 bits.
    /// Errors: those ([`Error::Invalid`](super::Error::Invalid)), a short `histogram`, `samples` over
    /// [`max_len`](super::max_len), and the device's.
    ///
    /// ```
    /// use qd::algorithms::Workspace;
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[0u8, 1, 2, 3, 200, 255]).unwrap();
    /// let h = d.zeros::<u32>(2).unwrap();
    /// Workspace::new(&d).histogram_even(&x, &h, 2, 0, 4).unwrap();
    /// assert_eq!(h.to_vec().unwrap(), [2, 2]);
    /// ```
    #[track_caller]
    pub fn histogram_even<T: Sample>(
        &mut self,
        samples: &DeviceArray<T>,
        histogram: &DeviceArray<u32>,
        bins: u32,
        lower: T,
        upper: T,
    ) -> Result<()> {
        self.histogram_even_at(samples, histogram, bins, lower, upper, SrcLoc::caller())
    }

    fn histogram_even_at<T: Sample>(
        &mut self,
        samples: &DeviceArray<T>,
        histogram: &DeviceArray<u32>,
        bins: u32,
        lower: T,
        upper: T,
        at: SrcLoc,
    ) -> Result<()> {
        const ALGO: &str = "histogram_even";
        self.begin();
        let n = samples.len();
        check_len::<T>(&self.device, ALGO, "samples", n, at)?;
        let (scalars, width) =
            params(bins, lower, upper).map_err(|message| super::Error::Invalid { algo: ALGO, message, at })?;
        check_out(ALGO, "histogram", histogram.len(), bins as usize, at)?;
        self.tuning.check(&self.device, ALGO, at)?;
        let (kernel, block, items) = kernel::<T>(bins, width, &self.tuning);
        let err = device_err(ALGO, at);
        let resident = self.resident_blocks(&kernel).map_err(&err)?;
        let grid = super::reduce::reduce_grid(n, block, items, resident);
        let acc = self.scratch::<u32>("histogram_acc", bins as usize).map_err(&err)?;
        let counter = self.scratch::<u32>("ticket", 1).map_err(&err)?;
        let mut args = vec![samples.arg(), histogram.arg(), acc.arg(), counter.arg()];
        args.extend(scalars);
        self.launch(&kernel, grid, &args).map_err(&err)
    }
}

/// Counts samples like [`Workspace::histogram_even`], allocating its storage, and returns the
/// `bins` counts to the host.
///
/// ```
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[-1.0f64, 0.1, 0.2, 0.9, 1.0]).unwrap();
/// assert_eq!(qd::algorithms::histogram_even(&d, &x, 2, 0.0, 1.0).unwrap(), [2, 1]);
/// ```
#[track_caller]
pub fn histogram_even<T: Sample>(
    device: &Device,
    samples: &DeviceArray<T>,
    bins: u32,
    lower: T,
    upper: T,
) -> Result<Vec<u32>> {
    let at = SrcLoc::caller();
    let err = device_err("histogram_even", at);
    let h = device.zeros::<u32>(bins.clamp(1, MAX_BINS) as usize).map_err(&err)?;
    let mut ws = Workspace::new(device);
    ws.histogram_even_at(samples, &h, bins, lower, upper, at)?;
    h.to_vec().map_err(&err)
}
