//! Conformance cases of the device-wide radix sort (`qd::algorithms::sort`, issue 17): every key
//! type with random keys at the edge sizes (0, 1, tile - 1, tile, tile + 1, several tiles), all
//! equal, already sorted, reversed and few distinct keys, descending order, a bit range, 4- and
//! 8-byte values, and the default tile shape once. Most cases use a small tile
//! (64 threads x 4 keys), so several tiles (and the look-back between them) stay cheap on the
//! emulator; the host's stable sort of the ordered bits is the reference.

use super::{expect_eq, fail, Case, CaseError, Outcome, Rng};
use qd::algorithms::sort::{self, SortKey, SortOptions, SortTuning, SortValue, Sorter};
use qd::prelude::*;

/// The small shape of most cases: 256-key tiles.
const SMALL: SortTuning = SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 2 };

impl From<qd::algorithms::Error> for CaseError {
    fn from(e: qd::algorithms::Error) -> CaseError {
        match e {
            // A kernel the target refuses is a skip, as for any other case.
            qd::algorithms::Error::Device { source, .. } => (*source).into(),
            other => CaseError::Failed(other.to_string()),
        }
    }
}

/// Host-side key generation for a key type.
trait HostKey: SortKey {
    /// A random key: integers over their whole range; floats mostly finite values of both signs,
    /// with signed zeros, infinities and NaNs (of both signs) mixed in.
    fn random(rng: &mut Rng) -> Self;
    /// The `i`-th of a few distinct values.
    fn few(i: u64) -> Self;
}

macro_rules! host_int {
    ($($t:ty),*) => {$(
        impl HostKey for $t {
            fn random(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
            fn few(i: u64) -> Self {
                (i as $t).wrapping_mul(0x0101_0101 as $t).wrapping_sub(3 as $t)
            }
        }
    )*};
}
host_int!(u32, i32, u64, i64);

macro_rules! host_float {
    ($($t:ty),*) => {$(
        impl HostKey for $t {
            fn random(rng: &mut Rng) -> Self {
                let specials = [0.0, -0.0, <$t>::INFINITY, <$t>::NEG_INFINITY, <$t>::NAN, -<$t>::NAN];
                match rng.next_u64() % 16 {
                    0 => specials[(rng.next_u64() % specials.len() as u64) as usize],
                    _ => ((rng.unit_f64() - 0.5) * 1e6) as $t,
                }
            }
            fn few(i: u64) -> Self {
                [-2.5, 0.0, -0.0, 7.0, <$t>::NAN][(i % 5) as usize]
            }
        }
    )*};
}
host_float!(f32, f64);

/// The input patterns.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Random,
    AllEqual,
    Sorted,
    Reversed,
    FewDistinct,
}

fn keys_of<K: HostKey>(rng: &mut Rng, pattern: Pattern, n: usize) -> Vec<K> {
    let random: Vec<K> = (0..n).map(|_| K::random(rng)).collect();
    let by_order = |desc: bool| {
        let mut k = random.clone();
        k.sort_by_key(|x| x.ordered_host());
        if desc {
            k.reverse();
        }
        k
    };
    match pattern {
        Pattern::Random => random,
        Pattern::AllEqual => vec![random.first().copied().unwrap_or_else(|| K::few(1)); n],
        Pattern::Sorted => by_order(false),
        Pattern::Reversed => by_order(true),
        Pattern::FewDistinct => (0..n).map(|_| K::few(rng.next_u64() % 3)).collect(),
    }
}

/// The host's stable order of `keys` under `opts`: the input indices, sorted.
fn reference<K: SortKey>(keys: &[K], opts: &SortOptions) -> Vec<u32> {
    let key_bits = K::DTYPE.bits();
    let bits = opts.bits.clone().unwrap_or(0..key_bits);
    let width = bits.end - bits.start;
    let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    let all = if key_bits == 64 { u64::MAX } else { u32::MAX as u64 };
    let rank = |k: K| {
        let o = if opts.descending { !k.ordered_host() & all } else { k.ordered_host() };
        (o >> bits.start) & mask
    };
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    idx.sort_by_key(|&i| rank(keys[i as usize]));
    idx
}

/// Sorts `keys` (with values when `V` is given: each key's index, as `V`) and checks the keys'
/// bits and the values against the host.
fn check<K: SortKey, V: SortValue>(
    d: &Device,
    sorter: &mut Sorter,
    keys: &[K],
    opts: &SortOptions,
    pairs: bool,
) -> Result<(), CaseError> {
    let n = keys.len();
    let what = format!("{n} keys, {opts:?}");
    let ka = d.array_from(keys).map_err(fail)?;
    let want = reference(keys, opts);
    if pairs {
        let vals: Vec<V> = (0..n as u64).map(|i| V::from_bits(i)).collect();
        let va = d.array_from(&vals).map_err(fail)?;
        sorter.sort_pairs(&ka, &va, opts).map_err(fail)?;
        let got: Vec<u64> = va.to_vec().map_err(fail)?.iter().map(|v| v.to_bits()).collect();
        let want_v: Vec<u64> = want.iter().map(|&i| i as u64).collect();
        expect_eq(&format!("values ({what})"), &got, &want_v)?;
    } else {
        sorter.sort_keys(&ka, opts).map_err(fail)?;
    }
    let got: Vec<u64> = ka.to_vec().map_err(fail)?.iter().map(|k| k.to_bits()).collect();
    let want_k: Vec<u64> = want.iter().map(|&i| keys[i as usize].to_bits()).collect();
    expect_eq(&format!("keys ({what})"), &got, &want_k)?;
    Ok(())
}

/// The kernels a key type's cases launch with `tuning` (keys only, and pairs with `V`).
fn kernels_of<K: SortKey, V: SortValue>(tuning: SortTuning) -> Vec<Kernel> {
    let mut k = sort::sort_kernels::<K, u32>(tuning, false);
    k.extend(sort::sort_kernels::<K, V>(tuning, true));
    k
}

fn register_key<K: HostKey>(cases: &mut Vec<Case>) {
    let name = K::DTYPE.to_string();
    let tile = SMALL.tile() as usize;
    let id = |what: &str| format!("sort/{name}/{what}");
    // Pairs (values: the key's index as u32) at the edge sizes.
    cases.push(
        Case::new(id("sizes"), move |d, rng| {
            let mut s = Sorter::new(d).with_tuning(SMALL);
            for n in [0, 1, tile - 1, tile, tile + 1, 5 * tile + 3] {
                check::<K, u32>(d, &mut s, &keys_of::<K>(rng, Pattern::Random, n), &SortOptions::new(), true)?;
            }
            Ok(Outcome::Pass)
        })
        .launching(|| kernels_of::<K, u32>(SMALL)),
    );
    cases.push(
        Case::new(id("patterns"), move |d, rng| {
            let mut s = Sorter::new(d).with_tuning(SMALL);
            for p in [Pattern::AllEqual, Pattern::Sorted, Pattern::Reversed, Pattern::FewDistinct] {
                let keys = keys_of::<K>(rng, p, 4 * tile + 5);
                check::<K, u32>(d, &mut s, &keys, &SortOptions::new(), false).map_err(|e| match e {
                    CaseError::Failed(m) => CaseError::Failed(format!("{p:?}: {m}")),
                    unsupported => unsupported,
                })?;
            }
            Ok(Outcome::Pass)
        })
        .launching(|| kernels_of::<K, u32>(SMALL)),
    );
    cases.push(
        Case::new(id("descending"), move |d, rng| {
            let mut s = Sorter::new(d).with_tuning(SMALL);
            for p in [Pattern::Random, Pattern::FewDistinct] {
                let keys = keys_of::<K>(rng, p, 3 * tile + 1);
                check::<K, u32>(d, &mut s, &keys, &SortOptions::new().descending(), true)?;
            }
            Ok(Outcome::Pass)
        })
        .launching(|| kernels_of::<K, u32>(SMALL)),
    );
    cases.push(
        Case::new(id("bit_range"), move |d, rng| {
            let mut s = Sorter::new(d).with_tuning(SMALL);
            let top = K::DTYPE.bits();
            // Three passes from bit 3 (the last one 4 bits wide), and the top byte.
            for bits in [3..23, top - 8..top] {
                let keys = keys_of::<K>(rng, Pattern::Random, 2 * tile + 7);
                check::<K, u32>(d, &mut s, &keys, &SortOptions::new().bits(bits), false)?;
            }
            Ok(Outcome::Pass)
        })
        .launching(|| kernels_of::<K, u32>(SMALL)),
    );
}

/// The default tile shape of the device (at least 4096 keys) on one more than a tile.
fn register_default_tile(cases: &mut Vec<Case>) {
    cases.push(
        Case::new("sort/u32/default_tile_pairs", move |d, rng| {
            let mut s = Sorter::new(d);
            let tile = s.tuning_for::<u32, u32>(true).tile() as usize;
            check::<u32, u32>(d, &mut s, &keys_of::<u32>(rng, Pattern::Random, tile + 1), &SortOptions::new(), true)?;
            Ok(Outcome::Pass)
        })
        .launching(|| {
            sort::sort_kernels::<u32, u32>(SortTuning::for_target(&qd::backend::Target::cpu(32), 4, 4), true)
        }),
    );
}

/// Values of the other width: 8-byte values with 4-byte keys and the reverse.
fn register_wide<K: HostKey, V: SortValue>(cases: &mut Vec<Case>) {
    let id = format!("sort/{}/pairs_{}", K::DTYPE, V::DTYPE);
    cases.push(
        Case::new(id, move |d, rng| {
            let mut s = Sorter::new(d).with_tuning(SMALL);
            let n = 3 * SMALL.tile() as usize + 2;
            check::<K, V>(d, &mut s, &keys_of::<K>(rng, Pattern::Random, n), &SortOptions::new(), true)?;
            Ok(Outcome::Pass)
        })
        .launching(|| sort::sort_kernels::<K, V>(SMALL, true)),
    );
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    register_key::<u32>(cases);
    register_key::<i32>(cases);
    register_key::<f32>(cases);
    register_key::<u64>(cases);
    register_key::<i64>(cases);
    register_key::<f64>(cases);
    register_default_tile(cases);
    register_wide::<u32, f64>(cases);
    register_wide::<f64, f32>(cases);
}
