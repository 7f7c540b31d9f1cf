//! In-register bitonic key/value sort across the lanes of a tile (quadrants.md 3.3).

use super::{check_log2_size, lane_u32, log2_group_size, shuffle_xor, Shuffle};
use crate::trace::{op_scope, select, IntoVal, Val};

/// Sorts one `(key, value)` pair per lane within each aligned `2^log2_size`-lane tile, ascending on
/// the lexicographic order of `(key, value)`: after the call, tile lane `i` holds the tile's `i`-th
/// smallest pair. Returns `(key, value)`.
///
/// Ties on `key` are broken by ascending `value` (so equal keys come back in value order, not in
/// lane order: this is not a stable sort). Key and value dtypes are independent (each one of the
/// [`Shuffle`] types). Float keys compare as IEEE values; lanes with NaN keys end up in arbitrary
/// positions, but the result is always a permutation of the input pairs (both lanes of every
/// compare-exchange take the same decision). For fewer real pairs than lanes, pad the other lanes
/// with a key larger than every real one.
///
/// The standard bitonic network: `log2_size * (log2_size + 1) / 2` compare-exchange stages of two
/// shuffles each (30 shuffles for 32 lanes, 42 for 64), fully unrolled, no shared memory, no
/// barriers. `log2_size` above [`log2_group_size`] is a trace-time error.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn sort8(keys: &mut [f32], vals: &mut [i32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(keys.len()) {
///         let (key, val) = subgroup::bitonic_sort_kv_tiled(keys[i], vals[i], 3);
///         keys[i] = key;
///         vals[i] = val;
///     }
/// }
/// let d = Device::from_name("cpu:sg32").unwrap();
/// let k0 = [3.0f32, 1.0, 2.0, 1.0, 0.5, 9.0, 2.0, 1.0];
/// let mut keys = d.array_from(&[k0; 8].concat()).unwrap();
/// let mut vals = d.array_from(&(0..64).rev().collect::<Vec<i32>>()).unwrap();
/// sort8().launch(&d, (&mut keys, &mut vals)).unwrap();
/// assert_eq!(keys.to_vec().unwrap()[..8], [0.5, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 9.0]);
/// // The three 1.0 keys came from lanes 1, 3, 7 (values 62, 60, 56): ascending values.
/// assert_eq!(vals.to_vec().unwrap()[..8], [59, 56, 60, 62, 57, 61, 63, 58]);
/// ```
#[track_caller]
pub fn bitonic_sort_kv_tiled<K: Shuffle, V: Shuffle>(
    key: impl IntoVal<K>,
    value: impl IntoVal<V>,
    log2_size: u32,
) -> (Val<K>, Val<V>) {
    let name = "subgroup.bitonic_sort_kv_tiled";
    let _op = op_scope(name);
    let (mut key, mut value) = (key.into_val(), value.into_val());
    if !check_log2_size(name, log2_size) || log2_size == 0 {
        return (key, value);
    }
    let lane = lane_u32();
    let tile_mask = (1u32 << log2_size) - 1;
    let floats = K::DTYPE.is_float() || V::DTYPE.is_float();
    for k in 1..=log2_size {
        // Direction of this merge stage: masking with T-1 makes every tile ascend at the last stage.
        let dir_bit = (1u32 << k) & tile_mask;
        let ascending = (dir_bit != 0).then(|| (lane & dir_bit).eq(0u32));
        for j in (0..k).rev() {
            let bit = 1u32 << j;
            let pk = shuffle_xor(key, bit);
            let pv = shuffle_xor(value, bit);
            let low = (lane & bit).eq(0u32);
            // The lower lane of a pair keeps the smaller pair when ascending, the larger otherwise.
            let keep_min = match ascending {
                None => low,
                Some(asc) => low.eq(asc),
            };
            let same_key = pk.eq(key);
            let partner_less = pk.lt(key) | (same_key & pv.lt(value));
            let self_less = if floats {
                // With NaN, "neither less nor equal" does not mean "greater": compare again so both
                // lanes of the pair decide from the same comparison and pairs are never duplicated.
                key.lt(pk) | (same_key & value.lt(pv))
            } else {
                // Integers are totally ordered: greater is "neither less nor equal" (one compare
                // fewer, the hand-written network's form).
                !(partner_less | (same_key & pv.eq(value)))
            };
            let take = select(keep_min, partner_less, self_less);
            key = select(take, pk, key);
            value = select(take, pv, value);
        }
    }
    (key, value)
}

/// Sorts one `(key, value)` pair per lane across the whole subgroup, ascending on `(key, value)`:
/// `bitonic_sort_kv_tiled(key, value, log2_group_size())`. Returns `(key, value)`.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn sort(keys: &mut [u32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(keys.len()) {
///         let (key, _lane) = subgroup::bitonic_sort_kv(keys[i], subgroup::invocation_id());
///         keys[i] = key;
///     }
/// }
/// let d = Device::from_name("cpu:sg64").unwrap();
/// let mut keys = d.array_from(&(0..64u32).map(|i| (13 * i + 7) % 64).collect::<Vec<_>>()).unwrap();
/// sort().launch(&d, (&mut keys,)).unwrap();
/// assert_eq!(keys.to_vec().unwrap(), (0..64).collect::<Vec<u32>>());
/// ```
#[track_caller]
pub fn bitonic_sort_kv<K: Shuffle, V: Shuffle>(key: impl IntoVal<K>, value: impl IntoVal<V>) -> (Val<K>, Val<V>) {
    let _op = op_scope("subgroup.bitonic_sort_kv");
    bitonic_sort_kv_tiled(key, value, log2_group_size())
}
