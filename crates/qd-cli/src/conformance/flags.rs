//! The flag-and-fence patterns of the block and grid pages (producer/consumer, last block done),
//! with every spin-wait idiom the seeds describe and the deprecated fence aliases.

use super::examples::{download, random_blocks, random_vec, show, upload, Check, BLOCK};
use super::{expect_eq, fail};
use qd::prelude::*;
use qd::trace::for_range;

/// Where the consumers of [`producer_consumer`] sit relative to the producer (thread 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The block page's pattern: every other thread of the block consumes.
    Block,
    /// Consumers only in other subgroups (blocks of 128, so a 64-wide subgroup has a neighbour).
    CrossSubgroup,
    /// Consumers only in the producer's own subgroup: divergent paths of one subgroup.
    SameSubgroup,
}

impl Split {
    /// Every variant, in case order.
    pub const ALL: [Split; 3] = [Split::Block, Split::CrossSubgroup, Split::SameSubgroup];

    /// Name used in case ids and kernel names.
    pub fn name(self) -> &'static str {
        match self {
            Split::Block => "block",
            Split::CrossSubgroup => "cross_subgroup",
            Split::SameSubgroup => "same_subgroup",
        }
    }

    fn block_dim(self) -> u32 {
        match self {
            Split::CrossSubgroup => 2 * BLOCK,
            _ => BLOCK,
        }
    }

    /// Whether thread `t` of a block consumes, on the host.
    fn consumes(self, t: usize, sg: usize) -> bool {
        match self {
            Split::Block => t != 0,
            Split::CrossSubgroup => t >= sg,
            Split::SameSubgroup => t != 0 && t < sg,
        }
    }
}

/// The block page's producer/consumer: thread 0 writes the data, `block::mem_fence()`, sets a
/// shared flag; consumers spin on `volatile_load(flag)` and then read the data. It must complete
/// however producer and consumers are split over subgroups.
pub fn producer_consumer(split: Split) -> Check {
    producer_consumer_with(split, Wait::Volatile)
}

/// How the consumers of [`producer_consumer_with`] wait for the flag and order their data read
/// after it: the three spin-wait idioms of seeds 000 and 003, and the deprecated fence alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// `while volatile_load(flag) == 0 {}`, then `block::mem_fence()` (the block page).
    Volatile,
    /// `while flag == 0 { block::mem_fence() }`: a plain load that the fence in the loop keeps
    /// from being hoisted out of it.
    PlainLoadFence,
    /// `while atomic_or(flag, 0) == 0 {}`: an atomic read-modify-write that changes nothing.
    AtomicOr,
    /// [`Wait::Volatile`] with both fences spelled `block::mem_sync()`, the deprecated alias.
    MemSyncAlias,
}

impl Wait {
    /// Every variant, in case order.
    pub const ALL: [Wait; 4] = [Wait::Volatile, Wait::PlainLoadFence, Wait::AtomicOr, Wait::MemSyncAlias];

    /// Suffix of case ids and kernel names (none for the block page's own idiom).
    pub fn suffix(self) -> &'static str {
        match self {
            Wait::Volatile => "",
            Wait::PlainLoadFence => "/plain_load_fence",
            Wait::AtomicOr => "/atomic_or_zero",
            Wait::MemSyncAlias => "/mem_sync_alias",
        }
    }

    /// The producer's and consumers' block fence.
    fn fence(self) {
        match self {
            #[allow(deprecated)] // the point: the alias must still work
            Wait::MemSyncAlias => block::mem_sync(),
            _ => block::mem_fence(),
        }
    }
}

/// Spins until `flag[0]` is non-zero, the way `wait` says.
#[qd::func]
fn spin(#[comptime] wait: Wait, flag: &[i32]) {
    match wait {
        Wait::Volatile | Wait::MemSyncAlias => while volatile_load(&flag[0]) == 0 {},
        // The fence in the loop keeps the plain load from being hoisted out of it.
        Wait::PlainLoadFence => {
            while {
                let f = flag[0];
                block::mem_fence();
                f == 0
            } {}
        }
        Wait::AtomicOr => while atomic_or(&flag[0], 0) == 0 {},
    }
}

/// The block page's producer/consumer, with the consumers placed as `split` says.
#[qd::kernel(
    block_dim = split.block_dim(),
    name = format!("producer_consumer_{}{}", split.name(), wait.suffix().replace('/', "_"))
)]
fn flag_handoff(#[comptime] split: Split, #[comptime] wait: Wait, src: &[i32], out: &mut [i32]) {
    let data = block::shared_array::<i32>(1);
    let flag = block::shared_array::<i32>(1);
    let t = block::thread_idx();
    let g = block::global_thread_idx();
    // Shared memory starts undefined: clear the flag before anyone polls it.
    if t == 0 {
        flag[0] = 0;
    }
    block::sync();
    let sg = subgroup::group_size() as i32;
    let consumer = match split {
        Split::Block => t != 0,
        Split::CrossSubgroup => t >= sg,
        Split::SameSubgroup => t != 0 && t < sg,
    };
    if t == 0 {
        let value = src[block::block_idx()];
        data[0] = value;
        // The flag is published with an atomic, a strong store in the PTX memory model: a plain
        // store would race with the consumers' polling, formally (compute-sanitizer racecheck,
        // docs/gpu-records/2026-11-25-h100-sanitizers).
        wait.fence(); // the data write is ordered before the flag store
        atomic_exchange(&flag[0], 1);
        out[g] = value;
    } else if consumer {
        // block::sync() here would deadlock: the producer never reaches it.
        spin(wait, flag);
        wait.fence(); // the flag read is ordered before the data read
        out[g] = data[0];
    }
}

/// [`producer_consumer`] with the consumers waiting as `wait` says.
pub fn producer_consumer_with(split: Split, wait: Wait) -> Check {
    Check::typed(flag_handoff(split, wait), move |kernel, device, rng| {
        let b = split.block_dim() as usize;
        let blocks = random_blocks(rng);
        let src = random_vec(rng, blocks, |r| r.range_i64(0, 1000) as i32);
        let a = upload(device, &src)?;
        let mut out = upload(device, &vec![-1i32; blocks * b])?;
        kernel.launch_grid(device, blocks as u32, (&a, &mut out)).map_err(fail)?;
        let sg = device.subgroup_size() as usize;
        let want: Vec<i32> =
            (0..blocks * b).map(|g| if g % b == 0 || split.consumes(g % b, sg) { src[g / b] } else { -1 }).collect();
        let got = download(&out)?;
        expect_eq("out", &got, &want)?;
        let consumers = (0..b).filter(|&t| split.consumes(t, sg)).count();
        Ok(format!(
            "{}; {consumers} consumers per block of {b} completed; {}",
            show("src (one per block)", &src),
            show("out", &got)
        ))
    })
}

/// The last-block-done pattern: every thread publishes `a[g]` with `grid::mem_fence()`; thread 0
/// of each block then takes a ticket, and the block that takes the last one sums all of `a`.
pub fn last_block_done() -> Check {
    last_block_done_with(false)
}

/// [`last_block_done`], with the fences spelled `grid::memfence()` (the deprecated alias) when
/// `alias` is set.
pub fn last_block_done_with(alias: bool) -> Check {
    #[allow(deprecated)] // the point: the alias must still work
    let fence = if alias { grid::memfence } else { grid::mem_fence };
    let name = if alias { "last_block_done_memfence_alias" } else { "last_block_done" };
    let kernel = Kernel::explicit(name, BLOCK, move |k| {
        let src = k.array::<i32>("src");
        let a = k.array::<i32>("a");
        let counter = k.array::<i32>("counter");
        let total = k.array::<i32>("total");
        let t = block::thread_idx();
        let g = block::global_thread_idx();
        a.set(g, src.get(g));
        fence(); // a[g] is visible device-wide before this block is counted
        block::sync(); // every thread of the block has written and fenced
        if_(t.eq(0), || {
            let ticket = atomic_add(counter.at(0), 1);
            if_(ticket.eq(block::grid_dim() - 1), || {
                fence(); // the ticket is ordered before the reads of other blocks' data
                let sum = var(0i32);
                for_range(0, a.len(), |j| sum.set(sum.get() + volatile_load(a.at(j))));
                total.set(0, sum.get());
            });
        });
    });
    Check::new(kernel, |kernel, device, rng| {
        let blocks = random_blocks(rng);
        let src = random_vec(rng, blocks * BLOCK as usize, |r| r.next_u64() as i32);
        let s = upload(device, &src)?;
        let a = device.zeros::<i32>(src.len()).map_err(fail)?;
        let counter = device.zeros::<i32>(1).map_err(fail)?;
        let total = device.zeros::<i32>(1).map_err(fail)?;
        device.launch_grid(kernel, blocks as u32, &[s.arg(), a.arg(), counter.arg(), total.arg()]).map_err(fail)?;
        let want = src.iter().fold(0i32, |x, &y| x.wrapping_add(y));
        expect_eq("total", &download(&total)?, &[want])?;
        expect_eq("counter", &download(&counter)?, &[blocks as i32])?;
        Ok(format!("{blocks} blocks; total = {want}"))
    })
}
