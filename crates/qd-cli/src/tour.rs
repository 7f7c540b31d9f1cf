//! `qd tour`: the seed pages' examples, run on a device and checked against a host reference.
//!
//! Each example is a conformance [`Check`] (the same code `qd conformance` runs) with a name, what
//! it shows and the result the seed page documents. The inputs come from a fixed seed, so the
//! printed results are the same on every run.

use crate::conformance::examples::{self, Check, Split};
use crate::conformance::{CaseError, Rng};
use qd::prelude::{Device, Kernel};
use std::io::{self, Write};

/// Seed of the tour's inputs: fixed, so the output can be compared between runs and backends.
pub const TOUR_SEED: u64 = 2;

/// One example of the tour.
pub struct Example {
    /// Short name.
    pub name: &'static str,
    /// What the example demonstrates (the op and the pattern).
    pub shows: &'static str,
    /// The result the seed page documents.
    pub documented: &'static str,
    /// The kernel, its inputs and its host reference.
    pub check: Check,
}

fn example(name: &'static str, shows: &'static str, documented: &'static str, check: Check) -> Example {
    Example { name, shows, documented, check }
}

/// Every example, in tour order.
pub fn examples() -> Vec<Example> {
    vec![
        example(
            "broadcast_lane0",
            "a[i] = subgroup::shuffle(a[i], 0): every lane reads lane 0's value",
            "every lane in a subgroup holds the original value of its lane 0",
            examples::broadcast_lane0::<f32>(),
        ),
        example(
            "ballot_count_positive",
            "subgroup::ballot_first_n(a[i] > 0, min(32, group size)), stored by lane 0 at counts[i >> log2_group_size]",
            "counts[g] is a bitmask of the lanes of subgroup g with positive values; popcount on the host gives the count",
            examples::ballot_count_positive(),
        ),
        example(
            "identity_shuffle",
            "dst[i] = subgroup::shuffle(src[i], invocation_id()): each lane reads its own id",
            "dst[i] equals src[i] on every lane",
            examples::identity_shuffle::<f32>(),
        ),
        example(
            "swap_neighbours",
            "dst[i] = subgroup::shuffle(src[i], invocation_id() ^ 1)",
            "pairs (0,1), (2,3), ... swap their values",
            examples::swap_neighbours::<f32>(),
        ),
        example(
            "reverse4",
            "dst[i] = subgroup::shuffle(src[i], lane / 4 * 4 + 3 - lane % 4): an arbitrary per-lane gather",
            "within each group of 4 contiguous lanes the values are reversed",
            examples::reverse4::<f32>(),
        ),
        example(
            "reduce4",
            "v += subgroup::shuffle_down(v, 2); v += subgroup::shuffle_down(v, 1): a tree reduction",
            "lane 0 of each group of 4 holds the group's total (the other lanes are not meaningful)",
            examples::reduce4::<f32>(),
        ),
        example(
            "reservation_counter",
            "slot = atomic_add(counter.at(0), 1): an atomic hands out indices",
            "every thread gets a unique slot and the counter ends at the number of threads",
            examples::reservation_counter(),
        ),
        example(
            "shared_exchange",
            "shared[tid] = src[g]; block::sync(); dst[g] = shared[block_dim - 1 - tid]",
            "after the barrier every thread sees the others' writes: each block of 64 comes out reversed",
            examples::shared_exchange::<f32>(),
        ),
        example(
            "producer_consumer/block",
            "thread 0 writes data, block::mem_fence(), sets a shared flag; the rest of the block spins on volatile_load(flag)",
            "every consumer leaves its spin-wait and reads the producer's value",
            examples::producer_consumer(Split::Block),
        ),
        example(
            "producer_consumer/cross_subgroup",
            "the same with the consumers only in other subgroups of the block",
            "completes: the producer's subgroup runs while the consumers' subgroups spin",
            examples::producer_consumer(Split::CrossSubgroup),
        ),
        example(
            "producer_consumer/same_subgroup",
            "the same with the consumers only in the producer's own subgroup (divergent paths of one subgroup)",
            "completes: the producer's path makes progress while its sibling lanes spin (independent scheduling)",
            examples::producer_consumer(Split::SameSubgroup),
        ),
    ]
}

/// The tour's kernels (for `qd emit`).
pub fn kernels() -> Vec<Kernel> {
    examples().into_iter().map(|e| e.check.kernel().clone()).collect()
}

/// Runs every example on `device`, printing each to `out`; returns how many did not match their
/// host reference (or failed to run).
pub fn run(device: &Device, out: &mut dyn Write) -> io::Result<usize> {
    let mut rng = Rng::new(TOUR_SEED);
    let mut failures = 0;
    let list = examples();
    let n = list.len();
    writeln!(out, "qd tour on {} (subgroup size {}), seed {TOUR_SEED}", device.name(), device.subgroup_size())?;
    for e in list {
        // One stream per example, so adding an example does not change the others' inputs.
        let mut case_rng = rng.fork();
        writeln!(out)?;
        writeln!(out, "{}", e.name)?;
        writeln!(out, "  shows:      {}", e.shows)?;
        writeln!(out, "  documented: {}", e.documented)?;
        match e.check.run(device, &mut case_rng) {
            Ok(summary) => writeln!(out, "  result:     {summary}\n  ok: matches the host reference")?,
            // The capability check refused a kernel: the device's target lacks what it needs.
            Err(CaseError::Unsupported(reason)) => writeln!(out, "  skipped:    {reason}")?,
            Err(message) => {
                failures += 1;
                writeln!(out, "  MISMATCH:   {message}")?;
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "{} of {n} examples match their host reference", n - failures)?;
    Ok(failures)
}
