//! Conformance cases for the grid page (seed 001): the decoupled look-back scan, its canonical
//! use of `grid::mem_fence` and of spin-waits on other blocks' flags.

use super::{expect_eq, fail, Case, CaseResult, Outcome, Rng};
use qd::prelude::*;

/// Threads per block of the look-back scan.
const BLOCK: u32 = 256;

/// Flag states of a block's tile (seed 001): nothing yet, its own aggregate, its inclusive prefix.
const INVALID: i32 = 0;
const AGGREGATE: i32 = 1;
const PREFIX: i32 = 2;

/// A device-wide inclusive sum: each block scans its tile, publishes its aggregate, then looks back
/// over its predecessors' flags until it finds an inclusive prefix (decoupled look-back). Tiles are
/// taken in the order blocks start, through an atomic ticket, so a block only waits on tiles
/// already taken by running blocks (forward progress on every GPU).
pub fn lookback_scan() -> Kernel {
    Kernel::explicit("grid_lookback_scan", BLOCK, |k| {
        // Blocks spin on their predecessors' flags: a target that ends loops after a fixed count
        // (lavapipe) could cut a wait short and give wrong sums, so it refuses the kernel.
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
            // Publish the aggregate: the fence orders it before the flag (the first fence of seed 001).
            aggregates.set(tile, total);
            grid::mem_fence();
            flags.set(tile, AGGREGATE);
            let prefix = var(0i64);
            let p = var(tile - 1);
            while_(
                || p.get().ge(0),
                || {
                    let q = p.get();
                    // Spin until the predecessor published something, keeping the flag seen: the
                    // data is read only after the fence that follows this observation (re-reading the
                    // flag after the fence would let the data read overtake it).
                    let seen = var(INVALID);
                    while_(
                        || {
                            seen.set(volatile_load(flags.at(q)));
                            seen.get().eq(INVALID)
                        },
                        || {},
                    );
                    grid::mem_fence();
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
            grid::mem_fence();
            flags.set(tile, PREFIX);
            carry.set(0, prefix.get());
        });
        block::sync();
        output.set(i, inclusive + carry.get(0));
    })
}

fn lookback_case(d: &Device, rng: &mut Rng, log2_n: u32) -> CaseResult {
    let n = 1usize << log2_n;
    let tiles = n / BLOCK as usize;
    let input: Vec<i64> = (0..n).map(|_| rng.range_i64(-1000, 1000)).collect();
    let a = d.array_from(&input).map_err(fail)?;
    let out = d.zeros::<i64>(n).map_err(fail)?;
    let ticket = d.zeros::<i32>(1).map_err(fail)?;
    let flags = d.zeros::<i32>(tiles).map_err(fail)?;
    let aggregates = d.zeros::<i64>(tiles).map_err(fail)?;
    let prefixes = d.zeros::<i64>(tiles).map_err(fail)?;
    let args = [a.arg(), out.arg(), ticket.arg(), flags.arg(), aggregates.arg(), prefixes.arg()];
    d.launch_grid(&lookback_scan(), tiles as u32, &args).map_err(fail)?;
    let mut acc = 0i64;
    let want: Vec<i64> = input
        .iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect();
    expect_eq("inclusive prefix sum", &out.to_vec().map_err(fail)?, &want)?;
    expect_eq("flags", &flags.to_vec().map_err(fail)?, &vec![PREFIX; tiles])?;
    Ok(Outcome::Pass)
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for log2_n in [12u32, 20] {
        cases.push(
            Case::new(format!("grid/lookback_scan/i64/n2^{log2_n}"), move |d, rng| lookback_case(d, rng, log2_n))
                .launching(|| vec![lookback_scan()]),
        );
    }
}
