//! Measurements: `qd latency`, `qd bench`, and the warp kernels of the SASS table.
//!
//! * `qd latency`: the first-launch latency of a small kernel in this process, split into our part
//!   (trace, lowering, cache lookups, launch) and the driver's JIT. Cold latency is measured in a
//!   process with `QD_CACHE_DISABLE=1` and `CUDA_CACHE_DISABLE=1`; warm latency in a new process
//!   whose kernel a cache holds (CUDA: the driver's JIT cache, or qd's cubins with
//!   `QD_CUDA_CUBIN_CACHE=1`; Vulkan: the pipeline cache on disk). Run it several times and take
//!   the median: one process gives one first launch. `repeat_launch_us` is the host's cost of a
//!   repeated synchronous launch of the same kernel.
//! * `qd bench reduce|scan|copy`: device-wide algorithms timed with
//!   [`Device::launch_timed`] (CUDA events around the kernel, Vulkan timestamps around the
//!   dispatch; the host clock on the CPU emulator) and checked against the host, on one device or
//!   the same run on several (`--backend cuda,vulkan`, with [`compare_line`]s): [`reduce_kernel`] (a sum), [`scan_kernel`] (an
//!   inclusive sum with decoupled look-back) and [`copy_kernel`] (the bandwidth ceiling of the same
//!   loads and stores). `bench/cub_bench.cu` prints the same line for NVIDIA's CUB.

use qd::ir::StoreKind;
use qd::prelude::*;
use qd::runtime::DiskCacheUse;
use qd::trace::{IntoVal, Shuffle};
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// The small kernel measured: `y[i] = a * x[i] + y[i]` over 1024 elements.
pub fn saxpy() -> Kernel {
    Kernel::range("latency_saxpy", 256, |k| {
        let a = k.scalar::<f32>("a");
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    })
}

/// One measurement of a first launch.
#[derive(Clone, Debug)]
pub struct Latency {
    /// Device name.
    pub device: String,
    /// The first launch, wall time, compile included.
    pub first_launch: Duration,
    /// A second launch of the compiled kernel.
    pub second_launch: Duration,
    /// The median of [`REPEATS`] more launches of the compiled kernel (same arrays; 5 on the
    /// emulator): the host's cost of a repeated, synchronous launch of a small kernel.
    pub repeat_launch: Duration,
    /// Tracing.
    pub trace: Duration,
    /// Lowering (PTX generation).
    pub lower: Duration,
    /// Loading the module (JIT or cubin load).
    pub load: Duration,
    /// The driver's JIT time, when it ran.
    pub jit: Option<Duration>,
    /// How the disk cache took part.
    pub disk: DiskCacheUse,
}

impl Latency {
    /// The first launch minus the driver's JIT: the part this project controls.
    pub fn ours(&self) -> Duration {
        self.first_launch.saturating_sub(self.jit.unwrap_or_default())
    }
}

/// Launches after the second one that `qd latency` times (their median is `repeat_launch`).
pub const REPEATS: usize = 201;

/// Measures one first launch (and a second, and [`REPEATS`] more) of [`saxpy`] on `device`,
/// checking the result.
pub fn measure(device: &Device) -> Result<Latency, String> {
    let n = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let xa = device.array_from(&x).map_err(|e| e.to_string())?;
    let ya = device.array_from(&vec![1.0f32; n]).map_err(|e| e.to_string())?;
    let k = saxpy();
    let args = [Arg::scalar(2.0f32), xa.arg(), ya.arg()];
    let t0 = Instant::now();
    device.launch(&k, &args).map_err(|e| e.to_string())?;
    let first_launch = t0.elapsed();
    let stats = device.compile_stats().ok_or("no compile statistics were recorded")?;
    let t1 = Instant::now();
    device.launch(&k, &args).map_err(|e| e.to_string())?;
    let second_launch = t1.elapsed();
    let y = ya.to_vec().map_err(|e| e.to_string())?;
    if let Some(i) = (0..n).find(|&i| y[i] != 4.0 * i as f32 + 1.0) {
        return Err(format!("y[{i}] = {}, expected {}", y[i], 4.0 * i as f32 + 1.0));
    }
    // y = 2x + y again and again: the values grow, the launches do not change.
    // A few on the emulator, where a launch is the emulator's work, not the host's overhead.
    let count = if device.target().is_emulated() { 5 } else { REPEATS };
    let mut repeats = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        device.launch(&k, &args).map_err(|e| e.to_string())?;
        repeats.push(t.elapsed());
    }
    repeats.sort();
    Ok(Latency {
        device: device.name().to_string(),
        first_launch,
        second_launch,
        repeat_launch: repeats[count / 2],
        trace: stats.trace,
        lower: stats.lower,
        load: stats.load,
        jit: stats.jit,
        disk: stats.disk,
    })
}

/// Prints one measurement as a line of `key=value` fields (milliseconds).
pub fn report(l: &Latency, out: &mut dyn Write) -> io::Result<()> {
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    let disk = match &l.disk {
        DiskCacheUse::NotApplicable => "n/a".to_string(),
        DiskCacheUse::Disabled => "disabled".to_string(),
        DiskCacheUse::Driver => "driver".to_string(),
        DiskCacheUse::Hit(_) => "hit".to_string(),
        DiskCacheUse::Stored(_) => "stored".to_string(),
        DiskCacheUse::StoreFailed(why) => format!("store-failed({why})"),
    };
    writeln!(
        out,
        "latency device={} disk={disk} first_launch_ms={} ours_ms={} jit_ms={} trace_ms={} lower_ms={} load_ms={} second_launch_ms={} repeat_launch_us={:.2}",
        l.device,
        ms(l.first_launch),
        ms(l.ours()),
        l.jit.map(ms).unwrap_or_else(|| "none".into()),
        ms(l.trace),
        ms(l.lower),
        ms(l.load),
        ms(l.second_launch),
        l.repeat_launch.as_secs_f64() * 1e6,
    )
}

/// The kernels of this module that `qd emit` writes (so the snapshot tests pin their code and ptxas and
/// spirv-val check it): the warp primitives of issue 4's SASS table (`warp_*`, see [`warp_primitives`]),
/// then the device-wide kernels of `qd bench` (`bench_*`, see [`device_kernels`]).
pub fn warp_kernels() -> Vec<Kernel> {
    let mut kernels = warp_primitives();
    kernels.extend(device_kernels());
    kernels
}

/// The warp primitives of issue 4's SASS table, one full-warp operation per kernel on values loaded
/// from memory, in the same shape as `bench/warp_baselines.cu`: an explicit kernel, one element per
/// thread and no loop, so the counts are the primitive's alone (a grid-stride loop gets rotated by
/// ptxas, which copies its body).
pub fn warp_primitives() -> Vec<Kernel> {
    use qd::simt::subgroup;
    fn unary<T: Scalar>(name: &str, f: fn(Val<T>) -> Val<T>) -> Kernel {
        Kernel::explicit(name, 32, move |k| {
            let a = k.array::<T>("a");
            let out = k.array::<T>("out");
            let i = block::global_thread_idx();
            out.set(i, f(a.get(i)));
        })
    }
    vec![
        unary::<i32>("warp_reduce_add_i32", |v| subgroup::reduce_add(v)),
        unary::<f32>("warp_reduce_add_f32", |v| subgroup::reduce_add(v)),
        unary::<i32>("warp_reduce_all_add_i32", |v| subgroup::reduce_all_add(v)),
        unary::<f32>("warp_reduce_all_add_f32", |v| subgroup::reduce_all_add(v)),
        unary::<i32>("warp_inclusive_add_i32", |v| subgroup::inclusive_add(v)),
        unary::<i32>("warp_segmented_reduce_add_i32", |v| subgroup::segmented_reduce_add(v, (v & 7).eq(0))),
        Kernel::explicit("warp_bitonic_sort_kv_i32", 32, |k| {
            let keys = k.array::<i32>("keys");
            let vals = k.array::<i32>("vals");
            let i = block::global_thread_idx();
            let (key, val) = subgroup::bitonic_sort_kv(keys.get(i), vals.get(i));
            keys.set(i, key);
            vals.set(i, val);
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// Device-wide algorithms (`qd bench`)
// ---------------------------------------------------------------------------------------------

/// Default threads per block of [`reduce_kernel`] and [`copy_kernel`].
pub const BLOCK: u32 = 256;
/// Default threads per block of [`scan_kernel`].
pub const SCAN_BLOCK: u32 = 256;
/// Default items per thread and tile pass of [`reduce_kernel`].
pub const REDUCE_ITEMS: u32 = 16;
/// Default items per thread of [`scan_kernel`]: odd, so the blocked reads and writes of the tile in
/// shared memory (stride `items` words) touch 32 different banks. 19 was the fastest of 11 to 27 on
/// an H200 at 2^26 elements through the default (disk cache) JIT path; 23 with whole-program code
/// (docs/gpu-records/2026-11-22-h200/bench.md).
pub const SCAN_ITEMS: u32 = 19;
/// Default items per thread of [`copy_kernel`].
pub const COPY_ITEMS: u32 = 8;

/// Tile states of the scan's look-back, in the low two bits of a tile's status word: its own
/// aggregate, or its inclusive prefix. The bits above hold the launch's epoch.
const AGGREGATE: u32 = 1;
const PREFIX: u32 = 2;

/// `items` loads of `a[base + j * block]`: striped, so a subgroup's load reads consecutive
/// elements. With `guard`, a load past `n` gives `fill`.
#[track_caller]
fn load_striped<T: Scalar>(
    a: Array<T>,
    base: Val<i32>,
    block: u32,
    items: u32,
    guard: Option<(Val<i32>, T)>,
) -> Vec<Val<T>> {
    (0..items)
        .map(|j| {
            let i = base + (j * block) as i32;
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

/// A sum as a balanced tree (depth log2(len)): more independent adds, and for floats a shorter
/// rounding chain than a left fold.
fn tree_sum<T: Num>(mut v: Vec<Val<T>>) -> Val<T> {
    while v.len() > 1 {
        v = v.chunks(2).map(|c| if c.len() == 2 { c[0] + c[1] } else { c[0] }).collect();
    }
    v[0]
}

/// A device-wide sum: `out[0] = input[0] + ... + input[n-1]` in one launch.
///
/// Launched on `grid` blocks of `block` threads (see [`reduce_grid`]). Each block walks the full
/// tiles of `block * items` elements `block_idx, block_idx + grid, ...`; in a tile each thread loads
/// `items` striped elements (all loads issued before the adds, kept in registers) and adds their
/// tree sum to its accumulator; the partial tile is read element by element, guarded. The block's
/// sum ([`block::reduce_add`]) goes to `partials[block_idx]`; then thread 0 publishes it (fence,
/// atomic ticket on `counter[0]`, fence) and the block that draws the last ticket reads every
/// partial, reduces them, writes `out[0]` and resets `counter[0]` to zero for the next launch.
///
/// Arrays: `input` (n), `out` (1), `partials` (at least `grid`), `counter` (1, zero before the
/// first launch).
pub fn reduce_kernel<T: Shuffle>(block: u32, items: u32) -> Kernel {
    let name = format!("bench_reduce_{}", T::DTYPE);
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
        let acc = var(T::ZERO);
        let next = var(b);
        while_(
            || next.get().lt(full),
            || {
                let vals = load_striped(input, next.get() * tile + t, block, items, None);
                acc.set(acc.get() + tree_sum(vals));
                next.set(next.get() + g);
            },
        );
        // The partial tile, one element per thread and pass.
        let i = var(full * tile + b * block as i32 + t);
        while_(
            || i.get().lt(n),
            || {
                acc.set(acc.get() + input.get(i.get()));
                i.set(i.get() + g * block as i32);
            },
        );
        let part = block::reduce_add(acc.get(), block);
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
            let s = var(T::ZERO);
            let j = var(t);
            while_(
                || j.get().lt(g),
                || {
                    s.set(s.get() + volatile_load(partials.at(j.get())));
                    j.set(j.get() + block as i32);
                },
            );
            let total = block::reduce_add(s.get(), block);
            if_(t.eq(0), || {
                out.set(0, total);
                counter.set(0, 0u32);
            });
        });
    })
}

/// The grid of [`reduce_kernel`] for `n` elements: at most `resident` blocks, each given the same
/// number of tile passes (so no block runs one pass more than most others).
pub fn reduce_grid(n: usize, block: u32, items: u32, resident: u32) -> u32 {
    let tiles = n.div_ceil((block * items) as usize).max(1);
    let per_block = tiles.div_ceil(resident.max(1) as usize);
    tiles.div_ceil(per_block) as u32
}

/// How the scan's blocks pick their tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileOrder {
    /// In the order blocks start, through an atomic ticket: a block only waits on tiles taken by
    /// blocks already running, so the look-back makes progress on every device (the default).
    Ticket,
    /// `block_idx`: one atomic less per tile, but a block may wait on a tile whose block has not
    /// started; this relies on the device starting blocks in index order (CUB does on NVIDIA).
    BlockIdx,
}

/// A device-wide inclusive sum of i32 (wrapping) with decoupled look-back, one tile of
/// `block * items` elements per block (launch `ceil(n / tile)` blocks, see [`scan_tiles`]).
///
/// In a tile: striped loads (coalesced) into shared memory; each thread reads back `items`
/// consecutive elements (blocked; `items` odd, so no bank conflicts) and adds them, and the block
/// scans the thread totals (a subgroup scan, one shared slot per subgroup, one barrier). Each thread
/// reads its elements again and writes their block-local inclusive sums back while subgroup 0 looks
/// back: lane 0 publishes the tile's aggregate (or, for tile 0, its prefix), then the subgroup reads
/// the status words of up to one subgroup's width of predecessors at once, spins (a ballot) until
/// none is invalid, finds the nearest inclusive prefix with a ballot, and adds it and the
/// aggregates after it (a subgroup reduction), moving a subgroup's width further back until it met
/// a prefix. Lane 0 publishes the tile's inclusive prefix. After one more barrier every thread
/// stores its striped elements plus the tile's exclusive prefix (coalesced).
///
/// A tile's status and value travel in one u64 word (`status << 32 | value bits`), written and read
/// with one volatile access: a reader sees the value that was published with the flag it saw, with
/// no fence between them (on Vulkan this needs 64-bit atomics, which make a volatile u64 access one
/// atomic; without them it is a plain access the memory model does not keep whole). The status
/// holds the launch's `epoch` (`epoch << 2 | state`), so words of earlier launches read as invalid
/// and the state array needs no reset between launches: give each launch a larger epoch than the
/// last (starting at 1 on a zeroed array). With [`TileOrder::Ticket`] the block that draws the last
/// ticket resets `ticket[0]` to zero. On a device that cuts loops short the spin-wait can end early
/// and the sums be wrong (see [`scan_may_be_cut_short`]).
///
/// Arrays: `input` (n), `output` (n), `tile_state` (u64, at least the tile count), `ticket` (u32,
/// 1, zero before the first launch); scalar `epoch` (u32).
pub fn scan_kernel(block: u32, items: u32, order: TileOrder) -> Kernel {
    let suffix = match order {
        TileOrder::Ticket => "",
        TileOrder::BlockIdx => "_blockidx",
    };
    let name = format!("bench_scan_i32{suffix}");
    Kernel::explicit(&name, block, move |k| {
        let input = k.array::<i32>("input");
        let output = k.array::<i32>("output");
        let state = k.array::<u64>("tile_state");
        let ticket = k.array::<u32>("ticket");
        let epoch = k.scalar::<u32>("epoch");
        let n = input.len();
        let t = block::thread_idx();
        let tile_len = (block * items) as i32;
        let tiles = (n + (tile_len - 1)) / tile_len;
        let tile = match order {
            TileOrder::BlockIdx => block::block_idx(),
            TileOrder::Ticket => {
                let slot = block::shared_array::<i32>(1);
                if_(t.eq(0), || {
                    let taken = atomic_add(ticket.at(0), 1u32).cast::<i32>();
                    slot.set(0, taken);
                    // The last ticket: every block has drawn, so the counter can start over.
                    if_(taken.eq(tiles - 1), || ticket.set(0, 0u32));
                });
                block::sync();
                slot.get(0)
            }
        };
        let base = tile * tile_len;
        let full = (base + tile_len).le(n);
        let first = base + t;
        // 1. Striped loads, through shared memory, to `items` consecutive elements per thread.
        let tile_sh = block::shared_array::<i32>(block * items);
        let loaded: Vec<Var<i32>> = (0..items).map(|_| var(0i32)).collect();
        if_else(
            full,
            || {
                for (v, x) in loaded.iter().zip(load_striped(input, first, block, items, None)) {
                    v.set(x);
                }
            },
            || {
                for (v, x) in loaded.iter().zip(load_striped(input, first, block, items, Some((n, 0)))) {
                    v.set(x);
                }
            },
        );
        for (j, v) in loaded.iter().enumerate() {
            tile_sh.set(t + (j as u32 * block) as i32, v.get());
        }
        block::sync();
        let mine = t * items as i32;
        let mut total = tile_sh.get(mine);
        for j in 1..items as i32 {
            total += tile_sh.get(mine + j);
        }
        // 2. The block's scan of the thread totals: a subgroup scan, one slot per subgroup.
        let sg = subgroup::group_size();
        let ns = block / sg;
        let lane = subgroup::invocation_id();
        let warp = t >> subgroup::log2_group_size() as i32;
        let inclusive = subgroup::inclusive_add(total);
        let warp_totals = block::shared_array::<i32>(ns);
        if_(lane.eq(sg as i32 - 1), || warp_totals.set(warp, inclusive));
        block::sync();
        let mut before = Val::constant(0i32);
        let mut aggregate = Val::constant(0i32);
        for w in 0..ns as i32 {
            let x = warp_totals.get(w);
            aggregate += x;
            if w + 1 < ns as i32 {
                before += select(warp.gt(w), x, 0i32);
            }
        }
        let exclusive = before + inclusive - total;
        // Each thread reads its `items` elements again and overwrites them with their block-local
        // inclusive sums (only its own slots: no barrier needed). Reading twice keeps `items`
        // running sums out of registers across the barrier above.
        let mut running = exclusive;
        for j in 0..items as i32 {
            running += tile_sh.get(mine + j);
            tile_sh.set(mine + j, running);
        }
        // 3. Look-back by subgroup 0.
        let carry = block::shared_array::<i32>(1);
        let agg_status = (epoch << 2u32) | AGGREGATE;
        let prefix_status = (epoch << 2u32) | PREFIX;
        let pack =
            |status: Val<u32>, value: Val<i32>| (status.cast::<u64>() << 32u64) | value.bit_cast::<u32>().cast::<u64>();
        let in_first_subgroup = subgroup::broadcast(warp, 0u32).eq(0);
        if_(in_first_subgroup, || {
            if_(lane.eq(0), || {
                let status = select(tile.eq(0), prefix_status, agg_status);
                state.at(tile).store_with(pack(status, aggregate), StoreKind::Volatile);
            });
            let prefix = var(0i32);
            if_(tile.gt(0), || {
                let end = var(tile);
                loop_(|| {
                    // Lane l looks at tile end - 1 - l; tiles before 0 read as a prefix of 0.
                    let q = end.get() - 1 - lane;
                    let word = var(0u64);
                    while_(
                        || {
                            let w = select(
                                q.ge(0),
                                volatile_load(state.at(q.max(0))),
                                pack(prefix_status, 0i32.into_val()),
                            );
                            word.set(w);
                            // Statuses of earlier launches are below this launch's aggregate. (A
                            // ballot, not `any_true`: its result is subgroup-uniform on every
                            // target, where the portable vote is a shuffle butterfly.)
                            subgroup::ballot((w >> 32u64).cast::<u32>().lt(agg_status)).ne(0u64)
                        },
                        || {},
                    );
                    let w = word.get();
                    let is_prefix = (w >> 32u64).cast::<u32>().eq(prefix_status);
                    let value = w.cast::<u32>().bit_cast::<i32>();
                    // The nearest prefix (lowest lane) and the aggregates of the lanes below it.
                    let prefixes = subgroup::ballot(is_prefix);
                    let nearest = prefixes & (Val::constant(0u64) - prefixes);
                    let bit = Val::constant(1u64) << lane.cast::<u64>();
                    let counts = nearest.eq(0) | bit.le(nearest);
                    prefix.set(prefix.get() + subgroup::reduce_all_add(select(counts, value, 0i32)));
                    if_(prefixes.ne(0), break_);
                    end.set(end.get() - sg as i32);
                });
            });
            if_(lane.eq(0), || {
                if_(tile.gt(0), || {
                    state.at(tile).store_with(pack(prefix_status, prefix.get() + aggregate), StoreKind::Volatile);
                });
                carry.set(0, prefix.get());
            });
        });
        block::sync();
        // 4. Striped stores of the tile plus its exclusive prefix.
        let c = carry.get(0);
        if_else(
            full,
            || {
                for j in 0..items {
                    let o = (j * block) as i32;
                    output.set(first + o, tile_sh.get(t + o) + c);
                }
            },
            || {
                for j in 0..items {
                    let o = (j * block) as i32;
                    if_((first + o).lt(n), || output.set(first + o, tile_sh.get(t + o) + c));
                }
            },
        );
    })
}

/// The number of tiles (and blocks) of [`scan_kernel`] for `n` elements.
pub fn scan_tiles(n: usize, block: u32, items: u32) -> u32 {
    n.div_ceil((block * items) as usize).max(1) as u32
}

/// A copy `output[i] = input[i]` with the loads and stores of the kernels above (striped, `items`
/// per thread, one tile per block, launch [`scan_tiles`] blocks): the bandwidth ceiling of this IR's
/// 4-byte accesses, to compare with `cudaMemcpy`.
pub fn copy_kernel(block: u32, items: u32) -> Kernel {
    Kernel::explicit("bench_copy_i32", block, move |k| {
        let input = k.array::<i32>("input");
        let output = k.array::<i32>("output");
        let n = input.len();
        let tile_len = (block * items) as i32;
        let first = block::block_idx() * tile_len + block::thread_idx();
        if_else(
            (block::block_idx() * tile_len + tile_len).le(n),
            || {
                let vals = load_striped(input, first, block, items, None);
                for (j, v) in vals.into_iter().enumerate() {
                    output.set(first + (j as u32 * block) as i32, v);
                }
            },
            || {
                for j in 0..items {
                    let i = first + (j * block) as i32;
                    if_(i.lt(n), || output.set(i, input.get(i)));
                }
            },
        );
    })
}

/// The device-wide kernels with their default parameters (for emitting and inspecting them).
pub fn device_kernels() -> Vec<Kernel> {
    vec![
        reduce_kernel::<i32>(BLOCK, REDUCE_ITEMS),
        reduce_kernel::<f32>(BLOCK, REDUCE_ITEMS),
        scan_kernel(SCAN_BLOCK, SCAN_ITEMS, TileOrder::Ticket),
        scan_kernel(SCAN_BLOCK, SCAN_ITEMS, TileOrder::BlockIdx),
        copy_kernel(BLOCK, COPY_ITEMS),
    ]
}

/// The algorithm `qd bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// [`reduce_kernel`]: reads `n * 4` bytes.
    Reduce,
    /// [`scan_kernel`]: reads and writes `n * 4` bytes each.
    Scan,
    /// [`copy_kernel`]: reads and writes `n * 4` bytes each.
    Copy,
}

impl Algo {
    /// The name on the command line and in the summary line.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Reduce => "reduce",
            Algo::Scan => "scan",
            Algo::Copy => "copy",
        }
    }

    /// Bytes one launch must move through device memory for `n` elements of 4 bytes.
    pub fn bytes(self, n: usize) -> u64 {
        let n = n as u64 * 4;
        match self {
            Algo::Reduce => n,
            Algo::Scan | Algo::Copy => 2 * n,
        }
    }

    /// The default threads per block.
    pub fn default_block(self) -> u32 {
        match self {
            Algo::Scan => SCAN_BLOCK,
            Algo::Reduce | Algo::Copy => BLOCK,
        }
    }

    /// The default items per thread.
    pub fn default_items(self) -> u32 {
        match self {
            Algo::Reduce => REDUCE_ITEMS,
            Algo::Scan => SCAN_ITEMS,
            Algo::Copy => COPY_ITEMS,
        }
    }
}

/// The element type of a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchDtype {
    /// i32, wrapping arithmetic, checked exactly.
    I32,
    /// f32 (reduce only), checked within a rounding bound.
    F32,
}

impl BenchDtype {
    /// `i32` or `f32`.
    pub fn name(self) -> &'static str {
        match self {
            BenchDtype::I32 => "i32",
            BenchDtype::F32 => "f32",
        }
    }
}

/// One `qd bench` run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// What is measured.
    pub algo: Algo,
    /// Element type (`F32` for `Reduce` only).
    pub dtype: BenchDtype,
    /// `n = 2^log2n` elements (at most 2^30).
    pub log2n: u32,
    /// Timed launches (at least 1).
    pub reps: u32,
    /// Untimed launches before them (the first also compiles).
    pub warmup: u32,
    /// Seed of the random input.
    pub seed: u64,
    /// Items per thread (`None`: the algorithm's default).
    pub items: Option<u32>,
    /// Threads per block (`None`: the algorithm's default).
    pub block: Option<u32>,
    /// The scan's tile order.
    pub order: TileOrder,
    /// The reduction's resident blocks (`None`: what [`reduce_resident`] says for the device). A
    /// run across backends takes the first device's, so every backend runs the same grid.
    pub resident: Option<u32>,
}

impl BenchConfig {
    /// The defaults for `algo` on `device`: `(log2n, reps, warmup)`: 2^26 elements, 20 timed
    /// launches after 3 on a device with its own timer (CUDA events, Vulkan timestamps); 2^16, 3
    /// after 1 on the CPU emulator; 2^20, 5 after 1 on a device that cuts loops short (lavapipe: a
    /// smoke test, not a measurement) or times with the host clock. A scan on a device that cuts
    /// loops short ([`scan_may_be_cut_short`]) defaults to 2^12 elements, one tile, so no block waits
    /// on another.
    pub fn defaults_for(device: &Device, algo: Algo) -> (u32, u32, u32) {
        let info = device.info();
        if device.target().is_emulated() {
            (16, 3, 1)
        } else if info.loop_iteration_limit.is_some() {
            if algo == Algo::Scan {
                (12, 5, 1)
            } else {
                (20, 5, 1)
            }
        } else if info.device_timer {
            (26, 20, 3)
        } else {
            (20, 5, 1)
        }
    }
}

/// Why a scan of `n` elements on `device` may give wrong sums, when it may: the device ends every
/// loop of an invocation after a fixed number of iterations (lavapipe: 65535, see
/// [`qd::runtime::DeviceInfo::loop_iteration_limit`]), so the look-back's spin-wait on another block
/// can end before that block published, and the sum goes on with an invalid word. Only a scan of
/// more than one tile waits. (The conformance suite skips its look-back cases on such devices.)
pub fn scan_may_be_cut_short(device: &Device, n: usize, block: u32, items: u32) -> Option<String> {
    let limit = device.info().loop_iteration_limit?;
    (scan_tiles(n, block, items) > 1).then(|| {
        format!(
            "{} ends every loop after {limit} iterations: the look-back's spin-wait can be cut short and \
             give wrong sums (check=fail); one tile ({} elements) never waits",
            device.name(),
            block * items
        )
    })
}

/// The outcome of one `qd bench` run.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// What was run.
    pub config: BenchConfig,
    /// The device's name.
    pub device: String,
    /// Each timed launch.
    pub times: Vec<Duration>,
    /// `Ok` when every checked result matched the host's, else what differed.
    pub check: Result<(), String>,
    /// Registers per thread of the kernel, when the device says (CUDA).
    pub registers: Option<u32>,
}

impl BenchResult {
    /// The median launch time (the mean of the middle two for an even count).
    pub fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        match t.len() {
            0 => Duration::ZERO,
            l if l % 2 == 1 => t[l / 2],
            l => (t[l / 2 - 1] + t[l / 2]) / 2,
        }
    }

    /// The fastest launch.
    pub fn min(&self) -> Duration {
        self.times.iter().min().copied().unwrap_or_default()
    }

    /// Bytes moved per second at the median time, in GB/s (10^9 bytes).
    pub fn gbps(&self) -> f64 {
        let s = self.median().as_secs_f64();
        if s > 0.0 {
            self.config.algo.bytes(1usize << self.config.log2n) as f64 / s / 1e9
        } else {
            0.0
        }
    }

    /// The summary line: `bench reduce i32 n=2^26 device=cuda:0 median_ms=… min_ms=… gbps=…
    /// check=ok`, then `items=`, `block=` and `order=` when not the defaults, and `regs=` when the
    /// device says. Times in milliseconds with four
    /// decimals; GB/s with one decimal (three below 10).
    pub fn line(&self) -> String {
        let c = &self.config;
        let ms = |d: Duration| format!("{:.4}", d.as_secs_f64() * 1e3);
        let mut line = format!(
            "bench {} {} n=2^{} device={} median_ms={} min_ms={} gbps={} check={}",
            c.algo.name(),
            c.dtype.name(),
            c.log2n,
            self.device,
            ms(self.median()),
            ms(self.min()),
            // Three decimals below 10 GB/s, so the emulator's rates do not print as zero.
            match self.gbps() {
                g if g < 10.0 => format!("{g:.3}"),
                g => format!("{g:.1}"),
            },
            if self.check.is_ok() { "ok" } else { "fail" }
        );
        if let Some(items) = c.items.filter(|&i| i != c.algo.default_items()) {
            line.push_str(&format!(" items={items}"));
        }
        if let Some(block) = c.block.filter(|&b| b != c.algo.default_block()) {
            line.push_str(&format!(" block={block}"));
        }
        if c.algo == Algo::Scan && c.order == TileOrder::BlockIdx {
            line.push_str(" order=blockidx");
        }
        if let Some(r) = self.registers {
            line.push_str(&format!(" regs={r}"));
        }
        line
    }
}

/// How `other` compares with `base` (the same configuration on another device): `compare copy i32
/// n=2^26 vulkan:0/cuda:0 median=1.042 min=1.038`, each the ratio of `other`'s time to `base`'s.
pub fn compare_line(base: &BenchResult, other: &BenchResult) -> String {
    let ratio = |a: Duration, b: Duration| match b.as_secs_f64() {
        s if s > 0.0 => format!("{:.3}", a.as_secs_f64() / s),
        _ => "inf".to_string(),
    };
    let c = &other.config;
    format!(
        "compare {} {} n=2^{} {}/{} median={} min={}",
        c.algo.name(),
        c.dtype.name(),
        c.log2n,
        other.device,
        base.device,
        ratio(other.median(), base.median()),
        ratio(other.min(), base.min())
    )
}

/// Random inputs: i32 over the whole range; f32 uniform in [0, 1) (24 random bits).
fn random_i32(seed: u64, n: usize) -> Vec<i32> {
    let mut rng = crate::conformance::Rng::new(seed);
    (0..n).map(|_| (rng.next_u64() >> 32) as u32 as i32).collect()
}

fn random_unit_f32(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = crate::conformance::Rng::new(seed);
    (0..n).map(|_| (rng.next_u64() >> 40) as f32 / (1u32 << 24) as f32).collect()
}

/// The allowed error of an f32 sum of `n` values in [0, 1) against the exact sum `exact`: a sum
/// whose longest chain of dependent roundings has `d` additions is within `d * 2^-24 * sum|x|` of
/// the exact value (each rounding's relative error is at most 2^-24). Both this reduction and CUB's
/// spread `n` over at least 2^15 threads at the sizes measured (fewer only when `n` is small), and
/// end with short trees, so `d = ceil(n / 2^15) + 64` bounds them; `bench/cub_bench.cu` uses the
/// same bound. Inputs are non-negative, so `sum|x|` is the sum itself.
pub fn f32_sum_tolerance(n: usize, exact: f64) -> f64 {
    let d = n.div_ceil(1 << 15) as f64 + 64.0;
    d * f64::from(f32::EPSILON / 2.0) * exact.abs()
}

fn first_mismatch<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("{what}: {} elements, expected {}", got.len(), want.len())),
        Some(i) => Err(format!("{what}[{i}] = {:?}, expected {:?}", got[i], want[i])),
    }
}

/// Runs `warmup` untimed and `reps` timed launches of `launch` (given the launch's index, from
/// 0), checking after the warm-up and again after the timed launches.
fn timed_runs(
    cfg: &BenchConfig,
    mut launch: impl FnMut(u32) -> qd::runtime::Result<Duration>,
    check: impl Fn() -> Result<Result<(), String>, String>,
) -> Result<(Vec<Duration>, Result<(), String>), String> {
    for w in 0..cfg.warmup {
        launch(w).map_err(|e| e.to_string())?;
    }
    let mut verdict = match cfg.warmup {
        0 => Ok(()),
        _ => check()?.map_err(|e| format!("after the warm-up: {e}")),
    };
    let mut times = Vec::with_capacity(cfg.reps as usize);
    for r in 0..cfg.reps {
        times.push(launch(cfg.warmup + r).map_err(|e| e.to_string())?);
    }
    if verdict.is_ok() {
        verdict = check()?;
    }
    Ok((times, verdict))
}

/// Runs one benchmark on `device`: a fresh random input from `cfg.seed`, `cfg.warmup` untimed
/// launches, `cfg.reps` timed ones ([`Device::launch_timed`]), and the result checked against the
/// host after the warm-up and after the timed launches (outputs start poisoned, so an element no
/// launch wrote shows). `Err` is a device error or an unsupported configuration; a wrong result is
/// an `Ok` whose `check` is `Err`.
pub fn run_bench(device: &Device, cfg: &BenchConfig) -> Result<BenchResult, String> {
    if cfg.log2n > 30 {
        return Err(format!("--log2n {} is over 30", cfg.log2n));
    }
    if cfg.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    if cfg.dtype == BenchDtype::F32 && cfg.algo != Algo::Reduce {
        return Err(format!("{} runs on i32 only", cfg.algo.name()));
    }
    let items = cfg.items.unwrap_or(cfg.algo.default_items());
    if !(1..=64).contains(&items) {
        return Err(format!("--items {items} is outside 1..=64"));
    }
    let block = cfg.block.unwrap_or(cfg.algo.default_block());
    let sg = device.subgroup_size();
    if !(1..=1024).contains(&block) || !block.is_multiple_of(sg) {
        return Err(format!("--block-dim {block} must be a multiple of the subgroup size ({sg}) up to 1024"));
    }
    let n = 1usize << cfg.log2n;
    let e = |e: QdError| e.to_string();
    let (times, check, registers) = match (cfg.algo, cfg.dtype) {
        (Algo::Reduce, BenchDtype::I32) => {
            let data = random_i32(cfg.seed, n);
            let want = data.iter().fold(0i32, |a, &x| a.wrapping_add(x));
            bench_reduce(device, cfg, block, items, &data, move |got: i32| {
                if got == want {
                    Ok(())
                } else {
                    Err(format!("sum = {got}, expected {want}"))
                }
            })?
        }
        (Algo::Reduce, BenchDtype::F32) => {
            let data = random_unit_f32(cfg.seed, n);
            let exact: f64 = data.iter().map(|&x| f64::from(x)).sum();
            let tol = f32_sum_tolerance(n, exact);
            bench_reduce(device, cfg, block, items, &data, move |got: f32| {
                let err = (f64::from(got) - exact).abs();
                if err <= tol {
                    Ok(())
                } else {
                    Err(format!("sum = {got}, exact {exact}, error {err:.3e} over the bound {tol:.3e}"))
                }
            })?
        }
        (Algo::Scan, _) => {
            let data = random_i32(cfg.seed, n);
            let mut acc = 0i32;
            let want: Vec<i32> = data
                .iter()
                .map(|&x| {
                    acc = acc.wrapping_add(x);
                    acc
                })
                .collect();
            let tiles = scan_tiles(n, block, items);
            let kernel = scan_kernel(block, items, cfg.order);
            let input = device.array_from(&data).map_err(e)?;
            drop(data);
            let output = device.array_from(&vec![POISON; n]).map_err(e)?;
            let state = device.zeros::<u64>(tiles as usize).map_err(e)?;
            let ticket = device.zeros::<u32>(1).map_err(e)?;
            let (times, check) = timed_runs(
                cfg,
                |launch| {
                    // Epochs start at 1 on the zeroed state array and grow with every launch.
                    let args = [input.arg(), output.arg(), state.arg(), ticket.arg(), Arg::scalar(launch + 1)];
                    device.launch_timed(&kernel, Some(tiles), &args)
                },
                || Ok(first_mismatch("inclusive sum", &output.to_vec().map_err(e)?, &want)),
            )?;
            (times, check, registers(device, &kernel))
        }
        (Algo::Copy, _) => {
            let data = random_i32(cfg.seed, n);
            let kernel = copy_kernel(block, items);
            let input = device.array_from(&data).map_err(e)?;
            let output = device.array_from(&vec![POISON; n]).map_err(e)?;
            let grid = scan_tiles(n, block, items);
            let (times, check) = timed_runs(
                cfg,
                |_| device.launch_timed(&kernel, Some(grid), &[input.arg(), output.arg()]),
                || Ok(first_mismatch("copy", &output.to_vec().map_err(e)?, &data)),
            )?;
            (times, check, registers(device, &kernel))
        }
    };
    Ok(BenchResult { config: cfg.clone(), device: device.name().to_string(), times, check, registers })
}

/// Registers per thread of `kernel` as `device` compiled it, when it says (CUDA).
fn registers(device: &Device, kernel: &Kernel) -> Option<u32> {
    device.compile(kernel).ok().and_then(|c| c.registers())
}

/// What outputs hold before the first launch: a value no correct result is likely to be.
const POISON: i32 = 0x5A5A_5A5A;

/// How many blocks of the reduction ([`reduce_kernel`]) to launch at most on `device`: on CUDA the
/// blocks that fit on the device at once (the driver's occupancy for the compiled kernel times the
/// multiprocessors), so every block runs in the first wave; 64 on the CPU emulator; 1024 on other
/// GPUs, which do not say (a few waves on a small GPU, about one on an H100).
pub fn reduce_resident<T: Shuffle>(device: &Device, block: u32, items: u32) -> Result<u32, String> {
    let e = |e: QdError| e.to_string();
    let per_sm = device.max_active_blocks_per_multiprocessor(&reduce_kernel::<T>(block, items)).map_err(e)?;
    Ok(match (per_sm, device.info().multiprocessors) {
        (Some(b), Some(m)) => (b * m).max(1),
        _ if device.target().is_emulated() => 64,
        _ => 1024,
    })
}

/// What one algorithm's runs gave: the timed launches, the check's verdict, the kernel's registers.
type Measured = (Vec<Duration>, Result<(), String>, Option<u32>);

/// [`run_bench`] for the reduction of `data` (`T` = i32 or f32).
fn bench_reduce<T: Shuffle>(
    device: &Device,
    cfg: &BenchConfig,
    block: u32,
    items: u32,
    data: &[T],
    check: impl Fn(T) -> Result<(), String>,
) -> Result<Measured, String> {
    let e = |e: QdError| e.to_string();
    let kernel = reduce_kernel::<T>(block, items);
    let resident = match cfg.resident {
        Some(r) => r,
        None => reduce_resident::<T>(device, block, items)?,
    };
    let grid = reduce_grid(data.len(), block, items, resident);
    let input = device.array_from(data).map_err(e)?;
    let poison = T::from_bits(POISON as u32 as u64);
    let out = device.array_from(&[poison]).map_err(e)?;
    let partials = device.zeros::<T>(grid as usize).map_err(e)?;
    let counter = device.zeros::<u32>(1).map_err(e)?;
    let args = [input.arg(), out.arg(), partials.arg(), counter.arg()];
    let (times, verdict) = timed_runs(
        cfg,
        |_| device.launch_timed(&kernel, Some(grid), &args),
        || {
            let got = out.to_vec().map_err(e)?[0];
            // Poison the result again, so the next check sees only what later launches wrote.
            out.write(&[poison]).map_err(e)?;
            Ok(check(got))
        },
    )?;
    Ok((times, verdict, registers(device, &kernel)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_on_the_emulator() {
        let l = measure(&Device::cpu()).unwrap();
        let mut out = Vec::new();
        report(&l, &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("latency device=cpu disk=n/a"), "{line}");
        assert!(l.first_launch >= l.trace);
    }

    fn config(algo: Algo, dtype: BenchDtype, log2n: u32) -> BenchConfig {
        BenchConfig {
            algo,
            dtype,
            log2n,
            reps: 2,
            warmup: 1,
            seed: 11,
            items: None,
            block: None,
            order: TileOrder::Ticket,
            resident: None,
        }
    }

    #[test]
    fn every_algorithm_is_right_at_several_sizes_and_subgroup_widths() {
        for (device, log2n) in [("cpu:sg4", 9), ("cpu:sg16", 12), ("cpu:sg64", 13)] {
            let d = Device::from_name(device).unwrap();
            for (algo, dtype) in [
                (Algo::Reduce, BenchDtype::I32),
                (Algo::Reduce, BenchDtype::F32),
                (Algo::Scan, BenchDtype::I32),
                (Algo::Copy, BenchDtype::I32),
            ] {
                let r = run_bench(&d, &config(algo, dtype, log2n)).unwrap();
                assert_eq!(r.check, Ok(()), "{}", r.line());
                assert_eq!(r.times.len(), 2);
            }
        }
    }

    #[test]
    fn scan_variants_are_right_with_a_partial_tile() {
        let d = Device::cpu();
        for (block, items, order) in
            [(64, 1, TileOrder::Ticket), (128, 4, TileOrder::BlockIdx), (SCAN_BLOCK, SCAN_ITEMS, TileOrder::BlockIdx)]
        {
            let cfg = BenchConfig {
                block: Some(block),
                items: Some(items),
                order,
                ..config(Algo::Scan, BenchDtype::I32, 13)
            };
            let r = run_bench(&d, &cfg).unwrap();
            assert_eq!(r.check, Ok(()), "{}", r.line());
        }
    }

    #[test]
    fn reduce_grid_gives_every_block_the_same_passes() {
        assert_eq!(reduce_grid(1, BLOCK, REDUCE_ITEMS, 1056), 1);
        // 2^26 elements = 16384 tiles of 4096: 16 passes for each of 1024 blocks.
        assert_eq!(reduce_grid(1 << 26, BLOCK, REDUCE_ITEMS, 1056), 1024);
        assert_eq!(reduce_grid(1 << 26, BLOCK, REDUCE_ITEMS, 0), 1);
        for n in [1usize, 4095, 4096, 4097, 1 << 20, 3 << 22] {
            let g = reduce_grid(n, BLOCK, REDUCE_ITEMS, 528) as usize;
            assert!((1..=528).contains(&g), "{n}: {g}");
            let tiles = n.div_ceil(4096);
            assert!(g >= tiles.min(528) / 2, "{n}: {g}");
        }
    }

    #[test]
    fn summary_line_and_statistics() {
        let r = BenchResult {
            config: config(Algo::Scan, BenchDtype::I32, 20),
            device: "cpu".into(),
            times: [4, 1, 3, 2].map(Duration::from_millis).to_vec(),
            check: Ok(()),
            registers: None,
        };
        assert_eq!(r.median(), Duration::from_micros(2500));
        assert_eq!(r.min(), Duration::from_millis(1));
        // 2^20 elements read and written: 8 MiB in 2.5 ms.
        assert!((r.gbps() - 8.0 * 1048576.0 / 2.5e-3 / 1e9).abs() < 1e-9);
        assert_eq!(r.line(), "bench scan i32 n=2^20 device=cpu median_ms=2.5000 min_ms=1.0000 gbps=3.355 check=ok");
        let variant = BenchResult {
            config: BenchConfig { items: Some(7), order: TileOrder::BlockIdx, ..r.config.clone() },
            check: Err("no".into()),
            ..r.clone()
        };
        assert!(variant.line().ends_with("check=fail items=7 order=blockidx"), "{}", variant.line());
        // Against another device: its times over the first's.
        let other = BenchResult {
            device: "vulkan:0".into(),
            times: [8, 2, 6, 4].map(Duration::from_millis).to_vec(),
            registers: Some(40),
            ..r.clone()
        };
        assert!(other.line().ends_with("check=ok regs=40"), "{}", other.line());
        assert_eq!(compare_line(&r, &other), "compare scan i32 n=2^20 vulkan:0/cpu median=2.000 min=2.000");
    }

    #[test]
    fn f32_tolerance_follows_the_depth_bound() {
        // 2^26 values: d = 2048 + 64 additions, each within 2^-24.
        let t = f32_sum_tolerance(1 << 26, 1.0);
        assert!((t - 2112.0 / 16777216.0).abs() < 1e-15, "{t}");
        assert_eq!(f32_sum_tolerance(1, -2.0), 65.0 * 2.0 / 16777216.0);
    }

    #[test]
    fn defaults_and_the_loop_limit_warning() {
        let d = Device::cpu();
        assert_eq!(BenchConfig::defaults_for(&d, Algo::Scan), (16, 3, 1));
        // The emulator never cuts a loop short.
        assert_eq!(scan_may_be_cut_short(&d, 1 << 20, SCAN_BLOCK, SCAN_ITEMS), None);
    }

    #[test]
    fn bad_configurations_are_errors() {
        let d = Device::cpu();
        assert!(run_bench(&d, &config(Algo::Scan, BenchDtype::F32, 8)).unwrap_err().contains("i32 only"));
        assert!(run_bench(&d, &config(Algo::Copy, BenchDtype::I32, 31)).is_err());
        let cfg = BenchConfig { reps: 0, ..config(Algo::Copy, BenchDtype::I32, 8) };
        assert!(run_bench(&d, &cfg).is_err());
        let cfg = BenchConfig { items: Some(0), ..config(Algo::Copy, BenchDtype::I32, 8) };
        assert!(run_bench(&d, &cfg).is_err());
    }
}
