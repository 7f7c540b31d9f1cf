//! The emulator's weak-memory mode (D26): the decoupled look-back scan passes with both its fences
//! on every seed, and fails (a wrong sum) on some seed with either side's `grid::mem_fence` left
//! out, which the sequentially consistent emulator can never show.
//!
//! The kernel is the conformance suite's `grid_lookback_scan` (`qd-cli`'s `conformance/grid.rs`)
//! with smaller blocks and a switch per fence; the suite's own kernels run in weak mode in
//! `scripts/test.sh`. The library's look-back (`qd::algorithms`, D20) has no fence to remove (its
//! values travel in the status words): the last test runs it in weak mode.

use qd::backend::cpu::{Memory, Options};
use qd::prelude::*;
use qd::trace::while_;

/// Threads per block: two 32-lane subgroups, small enough for 200 launches in a debug build.
const BLOCK: u32 = 64;
/// Tiles (blocks): more than the blocks weak mode runs at once, so tiles wait on running ones.
const TILES: usize = 16;

const INVALID: i32 = 0;
const AGGREGATE: i32 = 1;
const PREFIX: i32 = 2;

/// A fence of the look-back, or its absence.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fence {
    /// `grid::mem_fence`, as seed 001 writes it.
    Grid,
    /// `block::mem_fence`: orders the block's threads only.
    Block,
    /// Left out.
    Out,
}

impl Fence {
    fn emit(self) {
        match self {
            Fence::Grid => grid::mem_fence(),
            Fence::Block => block::mem_fence(),
            Fence::Out => {}
        }
    }
}

/// The look-back's fences.
#[derive(Clone, Copy, Debug)]
struct Fences {
    /// Between a tile's aggregate or prefix and the flag that publishes it.
    producer: Fence,
    /// Between seeing a predecessor's flag and reading the value it publishes.
    consumer: Fence,
}

const BOTH: Fences = Fences { producer: Fence::Grid, consumer: Fence::Grid };

/// The conformance suite's look-back scan (seed 001), with each fence optional.
fn lookback_scan(f: Fences) -> Kernel {
    Kernel::explicit("weak_lookback_scan", BLOCK, move |k| {
        k.requires(qd::target::Feature::SpinWait);
        let input = k.array::<i64>("input");
        let output = k.array::<i64>("output");
        let ticket = k.array::<i32>("ticket");
        let flags = k.array::<i32>("flags");
        let aggregates = k.array::<i64>("aggregates");
        let prefixes = k.array::<i64>("prefixes");
        let tile_slot = block::shared_array::<i32>(1);
        let carry = block::shared_array::<i64>(1);
        let t = block::thread_idx();
        if_(t.eq(0), || tile_slot.set(0, atomic_add(ticket.at(0), 1)));
        block::sync();
        let tile = tile_slot.get(0);
        let i = tile * BLOCK as i32 + t;
        let x = input.get(i);
        let inclusive = block::inclusive_add(x, BLOCK);
        let total = block::reduce_all_add(x, BLOCK);
        if_(t.eq(0), || {
            aggregates.set(tile, total);
            f.producer.emit();
            flags.set(tile, AGGREGATE);
            let prefix = var(0i64);
            let p = var(tile - 1);
            while_(
                || p.get().ge(0),
                || {
                    let q = p.get();
                    let seen = var(INVALID);
                    while_(
                        || {
                            seen.set(volatile_load(flags.at(q)));
                            seen.get().eq(INVALID)
                        },
                        || {},
                    );
                    f.consumer.emit();
                    if_else(
                        seen.get().eq(PREFIX),
                        || {
                            prefix.set(prefix.get() + volatile_load(prefixes.at(q)));
                            p.set(-1);
                        },
                        || {
                            prefix.set(prefix.get() + volatile_load(aggregates.at(q)));
                            p.set(q - 1);
                        },
                    );
                },
            );
            prefixes.set(tile, prefix.get() + total);
            f.producer.emit();
            flags.set(tile, PREFIX);
            carry.set(0, prefix.get());
        });
        block::sync();
        output.set(i, inclusive + carry.get(0));
    })
}

fn weak(seed: u64) -> Device {
    Device::cpu_with(32, Options { memory: Memory::Weak { seed }, ..Options::default() }).unwrap()
}

/// Runs the scan once on `d` with inputs drawn from `seed`: `Ok(())` when every sum and flag is
/// right, else what went wrong (a wrong sum, or the emulator's error).
fn scan_once(d: &Device, kernel: &Kernel, seed: u64) -> Result<(), String> {
    let n = TILES * BLOCK as usize;
    let mut rng = splitmix(seed);
    let input: Vec<i64> = (0..n).map(|_| (rng() % 2001) as i64 - 1000).collect();
    let a = d.array_from(&input).unwrap();
    let out = d.zeros::<i64>(n).unwrap();
    let ticket = d.zeros::<i32>(1).unwrap();
    let flags = d.zeros::<i32>(TILES).unwrap();
    let aggregates = d.zeros::<i64>(TILES).unwrap();
    let prefixes = d.zeros::<i64>(TILES).unwrap();
    let args = [a.arg(), out.arg(), ticket.arg(), flags.arg(), aggregates.arg(), prefixes.arg()];
    d.launch_grid(kernel, TILES as u32, &args).map_err(|e| e.to_string())?;
    let want: Vec<i64> = input
        .iter()
        .scan(0, |acc, x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    let got = out.to_vec().unwrap();
    if let Some(j) = (0..n).find(|&j| got[j] != want[j]) {
        return Err(format!("output[{j}] = {}, expected {}", got[j], want[j]));
    }
    assert_eq!(flags.to_vec().unwrap(), vec![PREFIX; TILES], "every tile ends with its prefix published");
    Ok(())
}

/// A small deterministic stream (splitmix64) for the inputs.
fn splitmix(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Failures of `f` over seeds `0..runs`, one fresh device per seed.
fn failures(f: Fences, runs: u64) -> Vec<(u64, String)> {
    let kernel = lookback_scan(f);
    (0..runs).filter_map(|seed| scan_once(&weak(seed), &kernel, seed).err().map(|e| (seed, e))).collect()
}

#[test]
fn the_lookback_scan_with_both_fences_passes_every_seed() {
    let failed = failures(BOTH, 200);
    assert!(failed.is_empty(), "the correct kernel failed in weak mode: {failed:?}");
}

#[test]
fn leaving_out_the_producer_fences_fails_for_some_seed() {
    let failed = failures(Fences { producer: Fence::Out, ..BOTH }, 20);
    assert!(!failed.is_empty(), "no seed of 20 exposed the missing producer-side fence");
}

#[test]
fn leaving_out_the_consumer_fence_fails_for_some_seed() {
    let failed = failures(Fences { consumer: Fence::Out, ..BOTH }, 20);
    assert!(!failed.is_empty(), "no seed of 20 exposed the missing consumer-side fence");
}

#[test]
fn the_sequential_emulator_never_shows_either_missing_fence() {
    // What weak mode adds: the default emulator passes both broken kernels.
    for f in [Fences { producer: Fence::Out, ..BOTH }, Fences { consumer: Fence::Out, ..BOTH }] {
        let kernel = lookback_scan(f);
        for seed in 0..3 {
            scan_once(&Device::cpu(), &kernel, seed).unwrap_or_else(|e| panic!("{f:?}, seed {seed}: {e}"));
        }
    }
}

#[test]
fn a_seed_repeats_its_launch() {
    // The same seed gives the same interleaving, hence the same wrong answer, run after run.
    let kernel = lookback_scan(Fences { consumer: Fence::Out, ..BOTH });
    let runs: Vec<_> =
        (0..2).map(|_| (0..8).map(|seed| scan_once(&weak(seed), &kernel, seed)).collect::<Vec<_>>()).collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn block_scope_fences_do_not_publish_to_other_blocks() {
    let failed = failures(Fences { producer: Fence::Block, consumer: Fence::Block }, 20);
    assert!(!failed.is_empty(), "block::mem_fence published to other blocks on every seed of 20");
}

#[test]
fn a_block_sees_its_own_global_stores_and_a_barrier_shares_them() {
    // Plain stores wait in the block's buffer, but the block's own threads read them at once:
    // each thread reads the element its neighbour wrote before the barrier.
    let kernel = Kernel::explicit("weak_own_stores", BLOCK, |k| {
        let a = k.array::<i32>("a");
        let b = k.array::<i32>("b");
        let t = block::thread_idx();
        let base = block::block_idx() * BLOCK as i32;
        a.set(base + t, base + t + 1);
        block::sync();
        let next = base + (t + 1) % BLOCK as i32;
        b.set(base + t, a.get(next) * 2);
    });
    let n = TILES * BLOCK as usize;
    let want: Vec<i32> = (0..n).map(|i| (i - i % BLOCK as usize + (i + 1) % BLOCK as usize + 1) as i32 * 2).collect();
    for seed in 0..20 {
        let d = weak(seed);
        let (a, b) = (d.zeros::<i32>(n).unwrap(), d.zeros::<i32>(n).unwrap());
        d.launch_grid(&kernel, TILES as u32, &[a.arg(), b.arg()]).unwrap();
        assert_eq!(b.to_vec().unwrap(), want, "seed {seed}");
    }
}

#[test]
fn the_library_look_back_scans_are_right_in_weak_mode() {
    // `qd::algorithms` (D20) passes its tile values through status words, with no fence between
    // value and flag: weak mode must not break it, on the look-back path (u64 words) and on the
    // decoupled fallback with tiles in reverse (the Metal profile's u32 words).
    use qd::algorithms::{Operator, TileOrder, Tuning, Workspace};
    let n = 2000;
    let mut next = splitmix(7);
    let x: Vec<i32> = (0..n).map(|_| next() as i32).collect();
    let want: Vec<i32> = x
        .iter()
        .scan(0i32, |acc, v| {
            *acc = acc.wrapping_add(*v);
            Some(*acc)
        })
        .collect();
    let small = Tuning { block: Some(64), items: Some(3), ..Tuning::default() };
    for seed in 0..4 {
        for (name, tuning) in [
            (format!("cpu+weak={seed}"), small),
            (
                format!("cpu:sg32@metal+weak={seed}"),
                Tuning { order: TileOrder::Reversed, force_fallback: true, ..small },
            ),
        ] {
            let d = Device::from_name(&name).unwrap();
            let mut ws = Workspace::with_tuning(&d, tuning);
            let (a, y) = (d.array_from(&x).unwrap(), d.zeros::<i32>(n).unwrap());
            // Twice: the second launch reads status words the first left (an older epoch).
            for _ in 0..2 {
                ws.inclusive_scan(&a, &y, &Operator::add()).unwrap();
                assert_eq!(y.to_vec().unwrap(), want, "{name}");
            }
        }
    }
}
