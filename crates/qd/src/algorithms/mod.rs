//! Device-wide algorithms, called from the host on any [`Device`]: [`reduce`](Workspace::reduce),
//! [`inclusive_scan`](Workspace::inclusive_scan) and [`exclusive_scan`](Workspace::exclusive_scan)
//! (D20).
//!
//! Each is one kernel launch written with the SIMT primitives, for every dtype a subgroup shuffle
//! moves (i32, u32, i64, u64, f32, f64), and any `n` from 0 up to [`max_len`] (an [`Error::TooLong`]
//! above it). The scans are single-pass: tiles pass their prefixes on by decoupled look-back where
//! the device guarantees that started blocks progress, and by decoupled fallback where it does not
//! (the capability model's `Limits::block_forward_progress`, D13; see `lookback.rs`). The radix
//! sort is [`sort`] (D29), with its own per-digit look-back.
//!
//! Temporary storage lives in a [`Workspace`]: calls through one workspace reuse its device
//! arrays, so repeated calls allocate nothing; the free functions ([`reduce`], [`inclusive_scan`],
//! ...) make a workspace for one call. Kernels are traced once per algorithm, dtype, operator and
//! tuning, and compiled once per device.
//!
//! ```
//! use qd::algorithms::{self, Operator, Workspace};
//! use qd::prelude::*;
//!
//! let device = Device::cpu();
//! let input = device.array_from(&[3i32, 1, 4, 1, 5, 9, 2, 6]).unwrap();
//! assert_eq!(algorithms::reduce(&device, &input, &Operator::add()).unwrap(), 31);
//!
//! // Through a workspace: results stay on the device, nothing is allocated after the first call.
//! let mut ws = Workspace::new(&device);
//! let output = device.zeros::<i32>(8).unwrap();
//! ws.inclusive_scan(&input, &output, &Operator::max()).unwrap();
//! assert_eq!(output.to_vec().unwrap(), [3, 3, 4, 4, 5, 9, 9, 9]);
//! ws.exclusive_scan(&input, &output, &Operator::add()).unwrap();
//! assert_eq!(output.to_vec().unwrap(), [0, 3, 4, 8, 9, 14, 23, 25]);
//! ```

mod histogram;
pub(crate) mod lookback;
mod operator;
mod reduce;
mod reduce_by_key;
mod scan;
mod select;
pub mod sort;
pub(crate) mod tile;

pub use histogram::{histogram_even, Sample, MAX_BINS};
pub use operator::Operator;
pub use reduce_by_key::reduce_by_key;
pub use select::{select_flagged, select_if, Predicate};

use crate::ir::{DType, SrcLoc};
use crate::runtime::{Arg, Device, DeviceArray, Grid};
use crate::trace::{Kernel, Scalar, Shuffle};
use lookback::WordKind;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// What went wrong in an algorithm call: the algorithm, the caller's source line, and what.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An array is longer than the algorithms can index on this device ([`max_len`]).
    #[error("{algo} at {at}: {what} has {len} elements, over the {max} the algorithms handle on this device")]
    TooLong {
        /// The algorithm.
        algo: &'static str,
        /// Which array.
        what: &'static str,
        /// Its length.
        len: usize,
        /// [`max_len`] for its dtype.
        max: usize,
        /// The caller's source line.
        at: SrcLoc,
    },
    /// An output array is shorter than the result.
    #[error("{algo} at {at}: {what} has {len} elements, fewer than the {need} the result needs")]
    TooShort {
        /// The algorithm.
        algo: &'static str,
        /// Which array.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length needed.
        need: usize,
        /// The caller's source line.
        at: SrcLoc,
    },
    /// An argument or tuning value out of range.
    #[error("{algo} at {at}: {message}")]
    Invalid {
        /// The algorithm.
        algo: &'static str,
        /// What is wrong.
        message: String,
        /// The caller's source line.
        at: SrcLoc,
    },
    /// The device refused: a trace error (an operator or dtype the target lacks), an allocation,
    /// a launch.
    #[error("{algo} at {at}: {source}")]
    Device {
        /// The algorithm.
        algo: &'static str,
        /// The device's error (boxed: it is large, and rare).
        #[source]
        source: Box<crate::runtime::Error>,
        /// The caller's source line.
        at: SrcLoc,
    },
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, Error>;

/// The longest array of `T` the algorithms take on `device`: their indices are 32-bit (with room
/// for one tile past the end), and the device's buffer range bounds it too.
///
/// ```
/// use qd::prelude::*;
/// assert_eq!(qd::algorithms::max_len::<i32>(&Device::cpu()), i32::MAX as usize - 65536);
/// ```
pub fn max_len<T: Scalar>(device: &Device) -> usize {
    let by_index = i32::MAX as usize - (1 << 16);
    match device.target().limits().max_buffer_bytes {
        Some(bytes) => by_index.min((bytes / T::DTYPE.size_bytes() as u64) as usize),
        None => by_index,
    }
}

/// How a single-pass algorithm's blocks pick their tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TileOrder {
    /// In the order blocks start, through an atomic ticket: a block only waits on tiles that blocks
    /// already running took (the default).
    #[default]
    Ticket,
    /// `block_idx`: one atomic less per tile; relies on the device starting blocks in index order
    /// (NVIDIA does; CUB relies on it).
    BlockIdx,
    /// The last tile first: every block waits on tiles whose blocks start after it. Only the
    /// decoupled fallback finishes in this order (it is taken whatever the device); for testing it.
    Reversed,
}

impl TileOrder {
    fn suffix(self) -> &'static str {
        match self {
            TileOrder::Ticket => "",
            TileOrder::BlockIdx => "_blockidx",
            TileOrder::Reversed => "_reversed",
        }
    }
}

/// Launch shapes of the algorithms; the defaults suit every device. For benchmarks and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Threads per block (a multiple of the subgroup width, at most 1024); `None`: 256.
    pub block: Option<u32>,
    /// Items per thread (1 to 64); `None`: each algorithm's default for the dtype's size (for
    /// reduce-by-key, also for the target's shared memory).
    pub items: Option<u32>,
    /// How single-pass algorithms pick tiles.
    pub order: TileOrder,
    /// Take the decoupled fallback even where the device guarantees forward progress.
    pub force_fallback: bool,
}

/// Default threads per block.
pub const BLOCK: u32 = 256;

/// Grid-stride kernels' blocks on a GPU that does not report its occupancy (Vulkan, Metal,
/// AMDGPU here): enough to fill the largest current GPUs (an H100 holds 132 x 8 blocks of 256
/// threads). An oversized grid costs little, since every block gets the same number of tile
/// passes; 64 blocks left an H100 half idle (Vulkan reduce 1.7x CUDA's time at 2^26).
pub(crate) const UNKNOWN_GPU_RESIDENT: u32 = 1024;

/// Blocks that run at once: the driver's occupancy per multiprocessor times the multiprocessors
/// where the device says both (CUDA); [`UNKNOWN_GPU_RESIDENT`] on another device with its own
/// timers (a GPU); 64 on the CPU emulator, which runs a few blocks at a time anyway.
pub(crate) fn resident_estimate(per_sm: Option<u32>, info: &crate::runtime::DeviceInfo) -> u32 {
    match (per_sm, info.multiprocessors) {
        (Some(b), Some(m)) => (b * m).max(1),
        _ if info.device_timer => UNKNOWN_GPU_RESIDENT,
        _ => 64,
    }
}

impl Tuning {
    /// `(block, items)` with `default_items` where none is given.
    fn resolve(&self, default_items: u32) -> (u32, u32) {
        (self.block.unwrap_or(BLOCK), self.items.unwrap_or(default_items))
    }

    /// Checks the given block and items against `device`.
    fn check(&self, device: &Device, algo: &'static str, at: SrcLoc) -> Result<()> {
        let sg = device.subgroup_size();
        if let Some(block) = self.block.filter(|b| !(1..=1024).contains(b) || !b.is_multiple_of(sg)) {
            let message =
                format!("a block of {block} threads: it must be a multiple of the subgroup size ({sg}) up to 1024");
            return Err(Error::Invalid { algo, message, at });
        }
        if let Some(items) = self.items.filter(|i| !(1..=64).contains(i)) {
            return Err(Error::Invalid { algo, message: format!("{items} items per thread: 1 to 64 are allowed"), at });
        }
        Ok(())
    }

    /// The kernel-name suffix of a non-default shape.
    fn suffix(&self, block: u32, items: u32, default_items: u32) -> String {
        let mut s = String::new();
        if block != BLOCK {
            s.push_str(&format!("_b{block}"));
        }
        if items != default_items {
            s.push_str(&format!("_i{items}"));
        }
        s.push_str(self.order.suffix());
        if self.force_fallback {
            s.push_str("_fallback");
        }
        s
    }
}

/// The algorithms' kernels, by what tells them apart (algorithm, dtype, operator, shape): traced
/// once per process, so a device compiles each once.
static KERNELS: Mutex<Option<HashMap<String, Kernel>>> = Mutex::new(None);

fn cached_kernel(key: String, make: impl FnOnce() -> Kernel) -> Kernel {
    let mut map = KERNELS.lock().unwrap_or_else(|p| p.into_inner());
    map.get_or_insert_with(HashMap::new).entry(key).or_insert_with(make).clone()
}

/// Temporary storage and launch settings for the algorithms on one device.
///
/// Arrays are allocated on first use and kept (grown when a call needs more), so a second call of
/// the same size allocates nothing. A workspace is used by one call at a time (`&mut self`).
///
/// ```
/// use qd::algorithms::{Operator, Workspace};
/// use qd::prelude::*;
///
/// let device = Device::cpu();
/// let mut ws = Workspace::new(&device);
/// let x = device.array_from(&[1.5f32, -2.0, 4.0]).unwrap();
/// let out = device.zeros::<f32>(1).unwrap();
/// for _ in 0..3 {
///     ws.reduce(&x, &out, &Operator::min()).unwrap();
/// }
/// assert_eq!(out.to_vec().unwrap(), [-2.0]);
/// ```
pub struct Workspace {
    device: Device,
    tuning: Tuning,
    arrays: HashMap<(&'static str, DType), Box<dyn Any + Send + Sync>>,
    /// The epoch of the last launch on `tile_state` (0: none since it was zeroed).
    epoch: u32,
    /// Blocks of a kernel (by id) that fit on the device at once.
    resident: HashMap<u64, u32>,
    timing: bool,
    device_time: Duration,
}

impl Workspace {
    /// An empty workspace for `device`, with the default [`Tuning`].
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let mut ws = Workspace::new(&d);
    /// assert_eq!(ws.bytes(), 0); // nothing until the first call
    /// let x = d.array_from(&[1i32; 1000]).unwrap();
    /// let sum = d.zeros::<i32>(1).unwrap();
    /// ws.reduce(&x, &sum, &Operator::add()).unwrap();
    /// assert_eq!(sum.to_vec().unwrap(), [1000]);
    /// ```
    pub fn new(device: &Device) -> Workspace {
        Workspace::with_tuning(device, Tuning::default())
    }

    /// An empty workspace for `device` with `tuning`.
    ///
    /// ```
    /// use qd::algorithms::{Operator, Tuning, Workspace};
    /// use qd::prelude::*;
    /// // Blocks of 64 threads, 4 items per thread: tiles of 256 elements.
    /// let d = Device::cpu();
    /// let mut ws = Workspace::with_tuning(&d, Tuning { block: Some(64), items: Some(4), ..Tuning::default() });
    /// let x = d.array_from(&(0..1000).collect::<Vec<i32>>()).unwrap();
    /// let y = d.zeros::<i32>(1000).unwrap();
    /// ws.inclusive_scan(&x, &y, &Operator::add()).unwrap();
    /// assert_eq!(y.to_vec().unwrap()[999], 999 * 1000 / 2);
    /// // A block that is not a multiple of the subgroup width is refused, with the caller's line.
    /// let mut bad = Workspace::with_tuning(&d, Tuning { block: Some(48), ..Tuning::default() });
    /// assert!(bad.inclusive_scan(&x, &y, &Operator::add()).is_err());
    /// ```
    pub fn with_tuning(device: &Device, tuning: Tuning) -> Workspace {
        Workspace {
            device: device.clone(),
            tuning,
            arrays: HashMap::new(),
            epoch: 0,
            resident: HashMap::new(),
            timing: false,
            device_time: Duration::ZERO,
        }
    }

    /// The device the workspace runs on.
    ///
    /// ```
    /// use qd::algorithms::Workspace;
    /// use qd::prelude::*;
    /// let ws = Workspace::new(&Device::from_name("cpu:sg16").unwrap());
    /// assert_eq!(ws.device().name(), "cpu:sg16");
    /// ```
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The tuning in use.
    ///
    /// ```
    /// use qd::algorithms::{TileOrder, Tuning, Workspace};
    /// use qd::prelude::*;
    /// let ws = Workspace::with_tuning(&Device::cpu(), Tuning { order: TileOrder::BlockIdx, ..Tuning::default() });
    /// assert_eq!(ws.tuning().order, TileOrder::BlockIdx);
    /// assert_eq!(Workspace::new(&Device::cpu()).tuning(), Tuning::default());
    /// ```
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Times every launch with [`Device::launch_timed`] (CUDA events where the device has them), for
    /// [`last_device_time`](Workspace::last_device_time).
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let mut ws = Workspace::new(&d);
    /// ws.set_timing(true);
    /// let x = d.array_from(&[2.0f32; 4096]).unwrap();
    /// let out = d.zeros::<f32>(1).unwrap();
    /// ws.reduce(&x, &out, &Operator::add()).unwrap();
    /// println!("the reduction ran for {:?}", ws.last_device_time());
    /// ```
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on;
    }

    /// With timing on, the time the last call's kernels ran (every algorithm is one launch).
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// use std::time::Duration;
    /// let d = Device::cpu();
    /// let mut ws = Workspace::new(&d);
    /// assert_eq!(ws.last_device_time(), Duration::ZERO); // timing is off by default
    /// ws.set_timing(true);
    /// let x = d.array_from(&[1u32; 512]).unwrap();
    /// let y = d.zeros::<u32>(512).unwrap();
    /// ws.exclusive_scan(&x, &y, &Operator::add()).unwrap();
    /// assert!(ws.last_device_time() > Duration::ZERO);
    /// ```
    pub fn last_device_time(&self) -> Duration {
        self.device_time
    }

    /// Bytes of device memory the workspace holds.
    ///
    /// ```
    /// use qd::algorithms::{Operator, Workspace};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let mut ws = Workspace::new(&d);
    /// let x = d.array_from(&vec![1i64; 1 << 14]).unwrap();
    /// let y = d.zeros::<i64>(1 << 14).unwrap();
    /// ws.inclusive_scan(&x, &y, &Operator::add()).unwrap();
    /// let held = ws.bytes();
    /// assert!(held > 0);
    /// ws.inclusive_scan(&x, &y, &Operator::add()).unwrap();
    /// assert_eq!(ws.bytes(), held); // reused, not reallocated
    /// ```
    pub fn bytes(&self) -> usize {
        self.arrays.values().map(|a| held_bytes(a.as_ref())).sum()
    }

    /// A scratch array `name` of at least `len` elements (zeroed when allocated; contents kept
    /// between calls).
    fn scratch<T: Scalar>(&mut self, name: &'static str, len: usize) -> crate::runtime::Result<DeviceArray<T>> {
        let key = (name, T::DTYPE);
        if let Some(a) = self.arrays.get(&key).and_then(|a| a.downcast_ref::<DeviceArray<T>>())
            && a.len() >= len
        {
            return Ok(a.clone());
        }
        let a = self.device.zeros::<T>(len.max(1))?;
        if name == "tile_state" {
            self.epoch = 0;
        }
        self.arrays.insert(key, Box::new(a.clone()));
        Ok(a)
    }

    /// The look-back's arguments (`tile_state`, `ticket`, `epoch`) for `tiles` tiles of `pieces`
    /// 32-bit pieces: the next epoch, the state array zeroed when the epochs run out.
    fn look_back_args(&mut self, tiles: usize, pieces: usize) -> crate::runtime::Result<[Arg; 3]> {
        let kind = WordKind::for_target(self.device.target());
        let words = tiles * pieces * kind.words_per_piece();
        let state = match kind {
            WordKind::U64 => self.scratch::<u64>("tile_state", words)?.arg(),
            WordKind::U32 => self.scratch::<u32>("tile_state", words)?.arg(),
        };
        if self.epoch >= kind.max_epoch() {
            match kind {
                WordKind::U64 => zero(&self.scratch::<u64>("tile_state", words)?)?,
                WordKind::U32 => zero(&self.scratch::<u32>("tile_state", words)?)?,
            }
            self.epoch = 0;
        }
        self.epoch += 1;
        let ticket = self.scratch::<u32>("ticket", 1)?.arg();
        Ok([state, ticket, Arg::scalar(self.epoch)])
    }

    /// Blocks of `kernel` that run at once on the device ([`resident_estimate`]).
    fn resident_blocks(&mut self, kernel: &Kernel) -> crate::runtime::Result<u32> {
        if let Some(&r) = self.resident.get(&kernel.id()) {
            return Ok(r);
        }
        let per_sm = self.device.max_active_blocks_per_multiprocessor(kernel)?;
        let r = resident_estimate(per_sm, &self.device.info());
        self.resident.insert(kernel.id(), r);
        Ok(r)
    }

    /// Launches `kernel` on `grid` blocks (timed when asked). A failed launch may leave the ticket
    /// counter or the states mid-way, so they are dropped and allocated afresh by the next call.
    fn launch(&mut self, kernel: &Kernel, grid: Grid, args: &[Arg]) -> crate::runtime::Result<()> {
        let r = if self.timing {
            self.device.launch_timed(kernel, Some(grid), args).map(|d| self.device_time += d)
        } else {
            self.device.launch_grid(kernel, grid, args)
        };
        if r.is_err() {
            self.arrays.retain(|(name, _), _| !matches!(*name, "ticket" | "tile_state"));
        }
        r
    }

    /// Starts a call: resets the timer.
    fn begin(&mut self) {
        self.device_time = Duration::ZERO;
    }
}

fn zero<T: Scalar>(a: &DeviceArray<T>) -> crate::runtime::Result<()> {
    a.write(&vec![T::from_bits(0); a.len()])
}

fn held_bytes(a: &(dyn Any + Send + Sync)) -> usize {
    macro_rules! try_types {
        ($($t:ty),*) => {$(
            if let Some(a) = a.downcast_ref::<DeviceArray<$t>>() {
                return a.len() * std::mem::size_of::<$t>();
            }
        )*};
    }
    try_types!(u32, u64, i32, i64, f32, f64);
    0
}

/// Checks that `len` elements of `T` fit the algorithms on `device`.
fn check_len<T: Scalar>(device: &Device, algo: &'static str, what: &'static str, len: usize, at: SrcLoc) -> Result<()> {
    let max = max_len::<T>(device);
    if len > max {
        return Err(Error::TooLong { algo, what, len, max, at });
    }
    Ok(())
}

/// Checks that an output of `len` elements holds `need`.
fn check_out(algo: &'static str, what: &'static str, len: usize, need: usize, at: SrcLoc) -> Result<()> {
    if len < need {
        return Err(Error::TooShort { algo, what, len, need, at });
    }
    Ok(())
}

/// Wraps a device error with the algorithm and the caller's line.
fn device_err(algo: &'static str, at: SrcLoc) -> impl Fn(crate::runtime::Error) -> Error {
    move |source| Error::Device { algo, source: Box::new(source), at }
}

/// The sum (or `op`-reduction) of `input`, returned to the host; allocates its temporary storage.
/// See [`Workspace::reduce`].
///
/// ```
/// use qd::algorithms::{reduce, Operator};
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[2u64, 7, 1]).unwrap();
/// assert_eq!(reduce(&d, &x, &Operator::max()).unwrap(), 7);
/// let empty = d.zeros::<f64>(0).unwrap();
/// assert_eq!(reduce(&d, &empty, &Operator::min()).unwrap(), f64::INFINITY);
/// ```
#[track_caller]
pub fn reduce<T: Shuffle>(device: &Device, input: &DeviceArray<T>, op: &Operator<T>) -> Result<T> {
    let at = SrcLoc::caller();
    let out = device.zeros::<T>(1).map_err(device_err("reduce", at))?;
    Workspace::new(device).reduce_at(input, &out, op, at)?;
    Ok(out.to_vec().map_err(device_err("reduce", at))?[0])
}

/// The inclusive `op`-scan of `input` into `output`; allocates its temporary storage. See
/// [`Workspace::inclusive_scan`].
///
/// ```
/// use qd::algorithms::{inclusive_scan, Operator};
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[1.0f64, 2.0, 3.0]).unwrap();
/// let y = d.zeros::<f64>(3).unwrap();
/// inclusive_scan(&d, &x, &y, &Operator::add()).unwrap();
/// assert_eq!(y.to_vec().unwrap(), [1.0, 3.0, 6.0]);
/// ```
#[track_caller]
pub fn inclusive_scan<T: Shuffle>(
    device: &Device,
    input: &DeviceArray<T>,
    output: &DeviceArray<T>,
    op: &Operator<T>,
) -> Result<()> {
    Workspace::new(device).scan_at(input, output, op, true, SrcLoc::caller())
}

/// The exclusive `op`-scan of `input` into `output` (`output[0]` is the identity); allocates its
/// temporary storage. See [`Workspace::exclusive_scan`].
///
/// ```
/// use qd::algorithms::{exclusive_scan, Operator};
/// use qd::prelude::*;
/// let d = Device::cpu();
/// let x = d.array_from(&[5u32, 0, 2]).unwrap();
/// let y = d.zeros::<u32>(3).unwrap();
/// exclusive_scan(&d, &x, &y, &Operator::add()).unwrap();
/// assert_eq!(y.to_vec().unwrap(), [0, 5, 5]);
/// ```
#[track_caller]
pub fn exclusive_scan<T: Shuffle>(
    device: &Device,
    input: &DeviceArray<T>,
    output: &DeviceArray<T>,
    op: &Operator<T>,
) -> Result<()> {
    Workspace::new(device).scan_at(input, output, op, false, SrcLoc::caller())
}

/// The kernels the algorithms launch, by the same constructors (and cache) the calls use: for
/// `qd emit`, the snapshot tests and reading their code. A call with `tuning` launches exactly
/// these; the kernel code itself adapts to the target it is traced for (subgroup width, look-back
/// or fallback, status words).
///
/// ```
/// use qd::algorithms::{kernels, Operator, Tuning};
/// let k = kernels::scan(&Operator::<i32>::add(), true, &Tuning::default());
/// assert_eq!(k.name(), "qd_inclusive_scan_add_i32");
/// ```
pub mod kernels {
    use super::{histogram, scan, select, Operator, Predicate, Sample, Tuning};
    use crate::trace::{Int, Kernel, Scalar, Shuffle};

    /// [`Workspace::reduce`](super::Workspace::reduce)'s kernel.
    ///
    /// ```
    /// use qd::algorithms::{kernels, Operator, Tuning};
    /// use qd::prelude::*;
    /// // The kernel a reduction launches, to read its IR (or emit it for a GPU).
    /// let k = kernels::reduce(&Operator::<f32>::add(), &Tuning::default());
    /// assert!(k.name().starts_with("qd_reduce"), "{}", k.name());
    /// let ir = Device::cpu().trace(&k).unwrap();
    /// println!("{}", qd::ir::print_kernel(&ir));
    /// ```
    pub fn reduce<T: Shuffle>(op: &Operator<T>, tuning: &Tuning) -> Kernel {
        super::reduce::kernel(op, tuning).0
    }

    /// The kernel of [`Workspace::inclusive_scan`](super::Workspace::inclusive_scan) (or the
    /// exclusive one).
    ///
    /// ```
    /// use qd::algorithms::{kernels, Operator, Tuning};
    /// use qd::target::Target;
    /// // The exclusive max-scan's kernel, traced for an AMD GPU (wave64, the decoupled fallback).
    /// let k = kernels::scan(&Operator::<i32>::max(), false, &Tuning::default());
    /// let ir = k.trace(&Target::amdgpu(qd::backend::amdgpu::AmdgpuArch::Gfx942)).unwrap();
    /// assert_eq!(ir.subgroup_size, 64);
    /// ```
    pub fn scan<T: Shuffle>(op: &Operator<T>, inclusive: bool, tuning: &Tuning) -> Kernel {
        scan::kernel(op, inclusive, tuning).0
    }

    /// [`Workspace::select_flagged`](super::Workspace::select_flagged)'s kernel for flags of `F`.
    ///
    /// ```
    /// use qd::algorithms::{kernels, Tuning};
    /// use qd::target::Target;
    /// let k = kernels::select_flagged::<f32, u8>(&Tuning::default());
    /// assert!(k.trace(&Target::metal()).is_ok());
    /// ```
    pub fn select_flagged<T: Scalar, F: Int>(tuning: &Tuning) -> Kernel {
        select::flagged_kernel::<T, F>(tuning)
    }

    /// [`Workspace::select_if`](super::Workspace::select_if)'s kernel for `predicate`.
    ///
    /// ```
    /// use qd::algorithms::{kernels, Predicate, Tuning};
    /// use qd::prelude::*;
    /// let positive = Predicate::new("positive", |v: Val<f64>| v.gt(0.0));
    /// let k = kernels::select_if(&positive, &Tuning::default());
    /// assert!(k.name().contains("positive"), "{}", k.name());
    /// // f64 is refused where the target has none: while tracing, with the reason.
    /// assert!(k.trace(&qd::target::Target::metal()).is_err());
    /// ```
    pub fn select_if<T: Scalar>(predicate: &Predicate<T>, tuning: &Tuning) -> Kernel {
        select::if_kernel(predicate, tuning)
    }

    /// [`Workspace::reduce_by_key`](super::Workspace::reduce_by_key)'s kernel.
    ///
    /// ```
    /// use qd::algorithms::{kernels, Operator, Tuning};
    /// use qd::prelude::*;
    /// let k = kernels::reduce_by_key::<u32, f32>(&Operator::add(), &Tuning::default());
    /// assert!(Device::from_name("cpu:sg8").unwrap().trace(&k).is_ok());
    /// ```
    pub fn reduce_by_key<K: Scalar, V: Shuffle>(op: &Operator<V>, tuning: &Tuning) -> Kernel {
        super::reduce_by_key::kernel::<K, V>(op, tuning).0
    }

    /// [`Workspace::histogram_even`](super::Workspace::histogram_even)'s kernel for these bins
    /// (`None` where the call would refuse them).
    ///
    /// ```
    /// use qd::algorithms::{kernels, Tuning, MAX_BINS};
    /// let k = kernels::histogram_even(16, 0.0f32, 1.0, &Tuning::default()).unwrap();
    /// assert!(k.name().starts_with("qd_histogram"), "{}", k.name());
    /// assert!(kernels::histogram_even(MAX_BINS + 1, 0.0f32, 1.0, &Tuning::default()).is_none());
    /// ```
    pub fn histogram_even<T: Sample>(bins: u32, lower: T, upper: T, tuning: &Tuning) -> Option<Kernel> {
        histogram::even_kernel(bins, lower, upper, tuning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_estimate_fills_a_gpu_that_does_not_report_occupancy() {
        let emulator = Device::cpu().info();
        assert!(!emulator.device_timer);
        assert_eq!(resident_estimate(None, &emulator), 64);
        let gpu = crate::runtime::DeviceInfo { device_timer: true, ..emulator.clone() };
        assert_eq!(resident_estimate(None, &gpu), UNKNOWN_GPU_RESIDENT);
        let cuda = crate::runtime::DeviceInfo { multiprocessors: Some(132), ..gpu };
        assert_eq!(resident_estimate(Some(8), &cuda), 1056);
        assert_eq!(resident_estimate(Some(0), &cuda), 1);
    }
}
