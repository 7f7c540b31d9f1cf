//! The device-wide radix sort on the emulator: both look-back paths, small tiles and the default
//! ones, bit ranges, descending order, and the argument errors. (The conformance suite runs the
//! case matrix on every backend: `crates/qd-cli/src/conformance/sort.rs`.)

use qd::algorithms::sort::{sort_keys, sort_pairs, SortKey, SortOptions, SortTuning, Sorter};
use qd::algorithms::Error;
use qd::prelude::*;

/// A small shape: 64-thread blocks of 4 keys (tiles of 256), so a few thousand keys make many tiles.
fn small() -> SortTuning {
    SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 1 }
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The host's stable sort of `(key, index)` by the ordered bits under `opts`.
fn expected<K: SortKey>(keys: &[K], opts: &SortOptions) -> Vec<usize> {
    let bits = opts.bits.clone().unwrap_or(0..K::DTYPE.bits());
    let width = bits.end - bits.start;
    let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    let key = |k: K| {
        let o = k.ordered_host();
        let o = if opts.descending { !o & if K::DTYPE.bits() == 64 { u64::MAX } else { u32::MAX as u64 } } else { o };
        (o >> bits.start) & mask
    };
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by_key(|&i| key(keys[i]));
    idx
}

fn check_pairs<K: SortKey>(d: &Device, sorter: &mut Sorter, keys: Vec<K>, opts: &SortOptions) {
    let n = keys.len();
    let ka = d.array_from(&keys).unwrap();
    let va = d.array_from(&(0..n as u32).collect::<Vec<_>>()).unwrap();
    sorter.sort_pairs(&ka, &va, opts).unwrap();
    let want = expected(&keys, opts);
    let got_v: Vec<usize> = va.to_vec().unwrap().into_iter().map(|v| v as usize).collect();
    assert_eq!(got_v, want, "values of {n} {} keys, {opts:?}", K::DTYPE);
    let got_k = ka.to_vec().unwrap();
    let want_k: Vec<u64> = want.iter().map(|&i| keys[i].to_bits()).collect();
    assert_eq!(got_k.iter().map(|k| k.to_bits()).collect::<Vec<_>>(), want_k, "keys of {n} {}", K::DTYPE);
}

#[test]
fn plain_look_back_sorts_u32_pairs_over_many_tiles() {
    let d = Device::cpu();
    let mut sorter = Sorter::new(&d).with_tuning(small());
    let mut seed = 7u64;
    for n in [2, 255, 256, 257, 3000] {
        let keys: Vec<u32> = (0..n).map(|_| xorshift(&mut seed) as u32).collect();
        check_pairs(&d, &mut sorter, keys, &SortOptions::new());
    }
}

#[test]
fn fallback_look_back_sorts_where_blocks_may_not_progress() {
    // The emulator wearing Metal's capability model: no forward-progress guarantee, so the tiles
    // take the fallback path. One read per word makes them count predecessors' keys whenever one
    // is late; none makes them count every predecessor, down to tile 0 (its digit starts).
    let metal = qd::backend::Target::cpu(32).wearing(&qd::backend::Target::metal());
    let d = Device::cpu_wearing(&metal, Default::default()).unwrap();
    assert!(!d.target().limits().block_forward_progress);
    let mut seed = 9u64;
    for spins in [1, 0] {
        let mut sorter = Sorter::new(&d).with_tuning(SortTuning { fallback_spins: spins, ..small() });
        let keys: Vec<i32> = (0..2000).map(|_| xorshift(&mut seed) as i32 >> 20).collect();
        check_pairs(&d, &mut sorter, keys, &SortOptions::new().descending());
    }
}

#[test]
fn default_tiles_and_u64_bit_ranges() {
    let d = Device::cpu();
    let mut seed = 3u64;
    let mut sorter = Sorter::new(&d);
    let tile = sorter.tuning_for::<u32, u32>(false).tile() as usize;
    assert!(tile >= 4096, "{tile}");
    let keys: Vec<u32> = (0..tile + 1).map(|_| xorshift(&mut seed) as u32).collect();
    check_pairs(&d, &mut sorter, keys, &SortOptions::new());
    let keys: Vec<u64> = (0..700).map(|_| xorshift(&mut seed)).collect();
    check_pairs(&d, &mut Sorter::new(&d).with_tuning(small()), keys, &SortOptions::new().bits(20..33));
}

#[test]
fn floats_order_signed_zeros_and_nans() {
    let d = Device::cpu();
    let keys = d.array_from(&[f32::NAN, 1.0, -0.0, f32::INFINITY, 0.0, -f32::NAN, f32::NEG_INFINITY, -0.0]).unwrap();
    sort_keys(&d, &keys, &SortOptions::new()).unwrap();
    let got: Vec<u32> = keys.to_vec().unwrap().iter().map(|k| k.to_bits()).collect();
    let want: Vec<u32> = [f32::NEG_INFINITY, -0.0, -0.0, 0.0, 1.0, f32::INFINITY, f32::NAN, -f32::NAN]
        .iter()
        .map(|k| k.to_bits())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_arguments_are_errors_naming_the_callers_line() {
    let d = Device::cpu();
    let keys = d.array_from(&[1u32, 2, 3]).unwrap();
    let vals = d.array_from(&[1u32, 2]).unwrap();
    let e = sort_pairs(&d, &keys, &vals, &SortOptions::new()).unwrap_err();
    match &e {
        Error::Invalid { algo, message, at } => {
            assert_eq!(*algo, "sort_pairs");
            assert!(message.contains("2 values for 3 keys"), "{e}");
            assert_eq!(at.file, file!());
        }
        other => panic!("{other}"),
    }
    let e = sort_keys(&d, &keys, &SortOptions::new().bits(8..40)).unwrap_err();
    assert!(e.to_string().contains("bit range 8..40") && e.to_string().contains("32 bits"), "{e}");
    // A shape the target cannot run is the trace error of the pass kernel.
    let bad = SortTuning { block: 48, ..small() };
    let e = Sorter::new(&d).with_tuning(bad).sort_keys(&keys, &SortOptions::new()).unwrap_err();
    assert!(matches!(e, Error::Device { .. }) && e.to_string().contains("block_dim"), "{e}");
}

#[test]
fn the_sort_is_right_in_the_emulators_weak_memory_mode() {
    // D26: stores wait in per-block buffers and reach other blocks late or out of order unless a
    // fence or an atomic orders them. The sort's blocks share only atomics (tickets, counts, the
    // look-back words) and the histogram's last-block ticket between fences, so every seed must
    // sort right, on the plain look-back and on the fallback (Metal's profile, with and without
    // reads of the predecessors' words).
    let mut seed = 11u64;
    let keys: Vec<u32> = (0..1500).map(|_| xorshift(&mut seed) as u32).collect();
    for s in 0..3 {
        for (name, spins) in [
            (format!("cpu+weak={s}"), 2),
            (format!("cpu:sg32@metal+weak={s}"), 2),
            (format!("cpu:sg32@metal+weak={s}"), 0),
        ] {
            let d = Device::from_name(&name).unwrap();
            let mut sorter = Sorter::new(&d).with_tuning(SortTuning { fallback_spins: spins, ..small() });
            // Twice through one sorter: the second sort starts from the state the first left.
            for _ in 0..2 {
                check_pairs(&d, &mut sorter, keys.clone(), &SortOptions::new());
            }
        }
    }
}
