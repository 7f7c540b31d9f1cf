//! The sort's tile shape and how it is chosen from a target's limits.

use crate::target::Target;

/// Digit bits per pass: 256 digits, 4 passes for 32-bit keys, 8 for 64-bit ones.
pub(crate) const RADIX_BITS: u32 = 8;
/// The digit count.
pub(crate) const DIGITS: u32 = 1 << RADIX_BITS;
/// Threads per block of the histogram kernel: one per digit.
pub(crate) const HIST_BLOCK: u32 = DIGITS;

/// The shape of the sort's kernels. [`SortTuning::for_target`] gives the defaults; the benchmark
/// and the tests set others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortTuning {
    /// Threads per block of the onesweep passes (a multiple of the subgroup width).
    pub block: u32,
    /// Keys per thread of the onesweep passes: a tile is `block * keys_per_thread` keys.
    pub keys_per_thread: u32,
    /// Keys per thread and loop pass of the histogram kernel.
    pub hist_items: u32,
    /// Where workgroups have no forward-progress guarantee: how many times a tile reads a
    /// predecessor's digit counts before it counts that predecessor's keys itself (0: it never
    /// reads them and counts every predecessor, which only tests want).
    pub fallback_spins: u32,
}

impl SortTuning {
    /// The keys of one tile.
    ///
    /// ```
    /// use qd::algorithms::sort::SortTuning;
    /// let t = SortTuning { block: 256, keys_per_thread: 16, hist_items: 16, fallback_spins: 128 };
    /// assert_eq!(t.tile(), 4096);
    /// ```
    pub fn tile(&self) -> u32 {
        self.block * self.keys_per_thread
    }

    /// The default shape for keys of `key_bytes` bytes (with values of `value_bytes`, 0 for keys
    /// only) on `target`: tiles of at least 4096 keys. 32- and 64-lane subgroups take 384-thread
    /// blocks: of 24 keys for 4-byte keys alone, of 20 (CUB's 7680-key tile) with 4-byte values;
    /// else 256 threads of 16 keys. These were the fastest of the shapes measured for u32 keys and
    /// u32/u32 pairs on an H100 at 2^28 keys once the pass kernel kept two blocks per
    /// multiprocessor (D29,
    /// `docs/gpu-records/2026-11-28-h100-sort-occupancy/`; 8-byte keys and values were not
    /// measured). Narrower subgroups take 16 subgroups per block (the ranking keeps one set of
    /// digit counters per subgroup), with more keys each. Keys per thread drop, down to a
    /// 4096-key tile, until the pass kernel's shared memory fits the target.
    ///
    /// ```
    /// use qd::algorithms::sort::SortTuning;
    /// use qd::prelude::*;
    ///
    /// let target = Device::from_name("cpu:sg32").unwrap().target().clone();
    /// let keys = SortTuning::for_target(&target, 4, 0);
    /// assert_eq!((keys.block, keys.keys_per_thread), (384, 24));
    /// let pairs = SortTuning::for_target(&target, 8, 8);
    /// assert_eq!(pairs.block % target.subgroup_size(), 0);
    /// ```
    pub fn for_target(target: &Target, key_bytes: u32, value_bytes: u32) -> SortTuning {
        let sgs = target.subgroup_size();
        let (block, keys_per_thread) = if sgs >= 32 {
            match (key_bytes, value_bytes) {
                (4, 0) => (384, 24),
                (4, 4) => (384, 20),
                _ => (256, 16),
            }
        } else {
            let block = 16 * sgs;
            (block, (4096 / block).min(64))
        };
        let mut t = SortTuning { block, keys_per_thread, hist_items: 16, fallback_spins: 128 };
        let max = target.limits().max_shared_bytes;
        while t.pass_shared_bytes(sgs) > max && (t.keys_per_thread - 1) * t.block >= 4096 {
            t.keys_per_thread -= 1;
        }
        t
    }

    /// The shared memory of the pass kernel: the tile's exchange buffer, which also holds the
    /// ranking's counters (one per subgroup and digit), the tile's global digit offsets, the
    /// fallback's counts and the tile index.
    pub(crate) fn pass_shared_bytes(&self, subgroup_size: u32) -> u32 {
        let counters = self.block / subgroup_size * DIGITS;
        4 * (self.tile().max(counters) + 2 * DIGITS + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Device;

    /// Every default shape fits its target's shared memory with tiles of 4096 keys or more (the
    /// 384 x 24 tile needs 38.9 KB, over Metal's and lavapipe's 32 KB).
    #[test]
    fn default_shapes_fit_every_target() {
        let mut targets: Vec<Target> =
            ["cpu:sg4", "cpu:sg8", "cpu:sg32", "cpu:sg64", "cpu:sg32@metal", "cpu:sg64@amdgpu"]
                .iter()
                .map(|name| Device::from_name(name).unwrap().target().clone())
                .collect();
        // Vulkan devices with lavapipe's 32 KB (by limits only: a module path here would name a
        // backend outside the registries).
        targets.extend([8, 32].map(|sg| Target::cpu(sg).with_max_shared_bytes(32 * 1024)));
        for target in &targets {
            for (key_bytes, value_bytes) in [(4, 0), (4, 4), (8, 0), (8, 8)] {
                let t = SortTuning::for_target(target, key_bytes, value_bytes);
                let sgs = target.subgroup_size();
                assert!(t.tile() >= 4096, "{t:?} on {sgs} lanes");
                assert!(t.pass_shared_bytes(sgs) <= target.limits().max_shared_bytes, "{t:?} on {sgs} lanes");
            }
        }
    }
}
