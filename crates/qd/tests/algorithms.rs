//! The device-wide algorithms (`qd::algorithms`) on the emulator: every dtype, sizes around the
//! tile, both look-back paths, the typed errors. The conformance suite (`algorithms/*`) runs the
//! same algorithms on every device with adversarial inputs.

use qd::algorithms::{self, Error, Operator, Predicate, Sample, TileOrder, Tuning, Workspace};
use qd::prelude::*;

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn inclusive<T: Copy>(x: &[T], id: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = id;
    x.iter()
        .map(|&v| {
            acc = f(acc, v);
            acc
        })
        .collect()
}

fn exclusive<T: Copy>(x: &[T], id: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = id;
    x.iter()
        .map(|&v| {
            let before = acc;
            acc = f(acc, v);
            before
        })
        .collect()
}

/// Small tiles (64 threads x 3 items) so a few hundred elements span many tiles.
fn small() -> Tuning {
    Tuning { block: Some(64), items: Some(3), ..Tuning::default() }
}

#[test]
fn scans_and_reduce_are_exact_on_integers_at_sizes_around_the_tile() {
    let d = Device::cpu();
    let mut next = rng(1);
    let mut ws = Workspace::with_tuning(&d, small());
    for n in [0usize, 1, 2, 63, 191, 192, 193, 1000, 4099] {
        let x: Vec<i32> = (0..n).map(|_| next() as i32).collect();
        let input = d.array_from(&x).unwrap();
        let out = d.zeros::<i32>(n).unwrap();
        ws.inclusive_scan(&input, &out, &Operator::add()).unwrap();
        assert_eq!(out.to_vec().unwrap(), inclusive(&x, 0, i32::wrapping_add), "inclusive add, n = {n}");
        ws.exclusive_scan(&input, &out, &Operator::max()).unwrap();
        assert_eq!(out.to_vec().unwrap(), exclusive(&x, i32::MIN, i32::max), "exclusive max, n = {n}");
        let r = d.zeros::<i32>(1).unwrap();
        ws.reduce(&input, &r, &Operator::min()).unwrap();
        assert_eq!(r.to_vec().unwrap()[0], x.iter().copied().fold(i32::MAX, i32::min), "min, n = {n}");
    }
}

#[test]
fn every_dtype_scans_with_a_custom_operator() {
    let d = Device::from_name("cpu:sg16").unwrap();
    let mut ws = Workspace::with_tuning(&d, small());
    let n = 777;
    let mut next = rng(2);
    let x: Vec<u64> = (0..n).map(|_| next()).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<u64>(n).unwrap();
    ws.inclusive_scan(&a, &y, &Operator::custom("xor", 0, |a, b| a ^ b)).unwrap();
    assert_eq!(y.to_vec().unwrap(), inclusive(&x, 0, |a, b| a ^ b));
    let x: Vec<i64> = x.iter().map(|&v| v as i64 >> 20).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<i64>(n).unwrap();
    ws.exclusive_scan(&a, &y, &Operator::add()).unwrap();
    assert_eq!(y.to_vec().unwrap(), exclusive(&x, 0, |a, b| a + b));
    // Small integers in floats add exactly in any order.
    let x: Vec<f32> = (0..n).map(|_| (next() % 64) as f32).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<f32>(n).unwrap();
    ws.inclusive_scan(&a, &y, &Operator::add()).unwrap();
    assert_eq!(y.to_vec().unwrap(), inclusive(&x, 0.0, |a, b| a + b));
    let x: Vec<f64> = (0..n).map(|_| (next() % 1000) as f64 - 500.0).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<f64>(n).unwrap();
    ws.inclusive_scan(&a, &y, &Operator::min()).unwrap();
    assert_eq!(y.to_vec().unwrap(), inclusive(&x, f64::INFINITY, f64::min));
    let x: Vec<u32> = (0..n).map(|_| next() as u32).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<u32>(n).unwrap();
    ws.exclusive_scan(&a, &y, &Operator::custom("or", 0, |a, b| a | b)).unwrap();
    assert_eq!(y.to_vec().unwrap(), exclusive(&x, 0, |a, b| a | b));
}

#[test]
fn the_fallback_finishes_when_tiles_come_in_reverse() {
    // Reversed: every block waits on tiles whose blocks start after it, so only the fallback
    // (computing a missing predecessor's aggregate itself) finishes. Also on the Metal profile,
    // whose tile states are u32 words (no 64-bit atomics).
    for name in ["cpu:sg8", "cpu:sg32@metal"] {
        let d = Device::from_name(name).unwrap();
        for order in [TileOrder::Reversed, TileOrder::Ticket] {
            let tuning = Tuning { order, force_fallback: true, ..small() };
            let mut ws = Workspace::with_tuning(&d, tuning);
            let mut next = rng(3);
            let n = 2000;
            let x: Vec<i32> = (0..n).map(|_| next() as i32).collect();
            let a = d.array_from(&x).unwrap();
            let y = d.zeros::<i32>(n).unwrap();
            for _ in 0..2 {
                ws.inclusive_scan(&a, &y, &Operator::add()).unwrap();
                assert_eq!(y.to_vec().unwrap(), inclusive(&x, 0, i32::wrapping_add), "{name} {order:?}");
            }
        }
    }
}

#[test]
fn epochs_let_many_launches_share_one_state_array() {
    let d = Device::cpu();
    let mut ws = Workspace::with_tuning(&d, small());
    let x: Vec<u32> = (0..500).collect();
    let a = d.array_from(&x).unwrap();
    let y = d.zeros::<u32>(500).unwrap();
    let want = inclusive(&x, 0, u32::wrapping_add);
    for _ in 0..20 {
        ws.inclusive_scan(&a, &y, &Operator::add()).unwrap();
    }
    assert_eq!(y.to_vec().unwrap(), want);
    let held = ws.bytes();
    ws.inclusive_scan(&a, &y, &Operator::add()).unwrap();
    assert_eq!(ws.bytes(), held, "a repeated call allocates nothing");
}

#[test]
fn bad_calls_are_typed_errors_with_the_callers_line() {
    let d = Device::cpu();
    let x = d.array_from(&[1i32, 2, 3]).unwrap();
    let short = d.zeros::<i32>(2).unwrap();
    let e = algorithms::inclusive_scan(&d, &x, &short, &Operator::add()).unwrap_err();
    assert!(matches!(e, Error::TooShort { need: 3, len: 2, .. }), "{e}");
    assert!(e.to_string().contains("tests/algorithms.rs"), "{e}");
    let empty = d.zeros::<i32>(0).unwrap();
    let e = Workspace::new(&d).reduce(&x, &empty, &Operator::add()).unwrap_err();
    assert!(matches!(e, Error::TooShort { .. }), "{e}");
    let mut ws = Workspace::with_tuning(&d, Tuning { block: Some(100), ..Tuning::default() });
    let e = ws.inclusive_scan(&x, &x.clone(), &Operator::add()).unwrap_err();
    assert!(e.to_string().contains("multiple of the subgroup size"), "{e}");
}

#[test]
fn select_keeps_flagged_and_predicated_elements_in_order() {
    for (name, tuning) in [
        ("cpu:sg8", small()),
        ("cpu:sg64", Tuning { block: Some(128), items: Some(5), ..Tuning::default() }),
        ("cpu:sg16", Tuning { order: TileOrder::Reversed, ..small() }),
        ("cpu:sg32@metal", Tuning { force_fallback: true, ..small() }),
        // More than 32 items: a thread's kept bits take two words.
        ("cpu:sg32", Tuning { block: Some(32), items: Some(37), ..Tuning::default() }),
    ] {
        let d = Device::from_name(name).unwrap();
        let mut ws = Workspace::with_tuning(&d, tuning);
        let mut next = rng(4);
        for n in [0usize, 1, 191, 1500] {
            let x: Vec<i32> = (0..n).map(|_| next() as i32).collect();
            let flags: Vec<u8> = (0..n).map(|_| next().is_multiple_of(3) as u8 * 7).collect();
            let (a, f) = (d.array_from(&x).unwrap(), d.array_from(&flags).unwrap());
            let out = d.zeros::<i32>(n).unwrap();
            let count = d.array_from(&[99u32]).unwrap();
            ws.select_flagged(&a, &f, &out, &count).unwrap();
            let want: Vec<i32> = x.iter().zip(&flags).filter(|&(_, &f)| f != 0).map(|(&v, _)| v).collect();
            assert_eq!(count.to_vec().unwrap(), [want.len() as u32], "{name} n = {n}");
            assert_eq!(out.to_vec().unwrap()[..want.len()], want[..], "{name} n = {n}");
            let odd = Predicate::new("odd", |v: Val<i32>| (v & 1).ne(0));
            ws.select_if(&a, &out, &count, &odd).unwrap();
            let want: Vec<i32> = x.iter().copied().filter(|v| v & 1 != 0).collect();
            assert_eq!(count.to_vec().unwrap(), [want.len() as u32], "{name} n = {n}");
            assert_eq!(out.to_vec().unwrap()[..want.len()], want[..], "{name} n = {n}");
        }
    }
}

fn host_histogram<T: Sample>(x: &[T], bins: u32, lower: T, upper: T) -> Vec<u32> {
    let mut h = vec![0u32; bins as usize];
    for &v in x {
        if let Some(b) = v.bin_even(bins, lower, upper) {
            h[b as usize] += 1;
        }
    }
    h
}

#[test]
fn histogram_even_counts_integer_and_float_samples_and_drops_the_rest() {
    let d = Device::from_name("cpu:sg16").unwrap();
    let mut ws = Workspace::with_tuning(&d, Tuning { block: Some(64), items: Some(4), ..Tuning::default() });
    let mut next = rng(5);
    let n = 3001;
    let x: Vec<i16> = (0..n).map(|_| next() as i16).collect();
    let a = d.array_from(&x).unwrap();
    let h = d.zeros::<u32>(300).unwrap();
    for (bins, lo, hi) in [(7u32, -1000i16, 1000), (256, i16::MIN, i16::MAX), (300, 0, 3)] {
        ws.histogram_even(&a, &h, bins, lo, hi).unwrap();
        assert_eq!(h.to_vec().unwrap()[..bins as usize], host_histogram(&x, bins, lo, hi)[..], "{bins} [{lo}, {hi})");
    }
    // 64-bit samples take 64-bit arithmetic where (upper - lower) * bins needs it.
    let x: Vec<u64> = (0..n).map(|_| next()).collect();
    let a = d.array_from(&x).unwrap();
    ws.histogram_even(&a, &h, 100, 1 << 40, u64::MAX / 1000).unwrap();
    assert_eq!(h.to_vec().unwrap()[..100], host_histogram(&x, 100, 1 << 40, u64::MAX / 1000)[..]);
    let e = ws.histogram_even(&a, &h, 2, 0, u64::MAX).unwrap_err();
    assert!(e.to_string().contains("overflows 64 bits"), "{e}");
    let x: Vec<f32> = (0..n).map(|_| (next() % 20000) as f32 / 7000.0 - 0.5).chain([f32::NAN, 1.0]).collect();
    let a = d.array_from(&x).unwrap();
    for _ in 0..2 {
        ws.histogram_even(&a, &h, 10, 0.0, 1.0).unwrap();
        assert_eq!(h.to_vec().unwrap()[..10], host_histogram(&x, 10, 0.0f32, 1.0)[..]);
    }
    let e = ws.histogram_even(&a, &h, 0, 0.0, 1.0).unwrap_err();
    assert!(matches!(e, Error::Invalid { .. }), "{e}");
    let e = ws.histogram_even(&a, &h, 10, 1.0, 1.0).unwrap_err();
    assert!(e.to_string().contains("is empty"), "{e}");
    let e = ws.histogram_even(&a, &h, algorithms::MAX_BINS + 1, 0.0, 1.0).unwrap_err();
    assert!(e.to_string().contains("4096"), "{e}");
}

/// Runs of equal keys: (first key, sum of values) per run.
fn host_runs<K: PartialEq + Copy, V: Copy>(k: &[K], v: &[V], id: V, f: impl Fn(V, V) -> V) -> (Vec<K>, Vec<V>) {
    let (mut keys, mut aggs) = (Vec::new(), Vec::<V>::new());
    for (i, (&key, &val)) in k.iter().zip(v).enumerate() {
        if i == 0 || k[i - 1] != key {
            keys.push(key);
            aggs.push(f(id, val));
        } else {
            let last = aggs.last_mut().unwrap();
            *last = f(*last, val);
        }
    }
    (keys, aggs)
}

#[test]
fn reduce_by_key_reduces_runs_of_equal_keys() {
    for (name, tuning) in [
        ("cpu:sg8", small()),
        ("cpu:sg32", Tuning::default()),
        ("cpu:sg16", Tuning { order: TileOrder::Reversed, ..small() }),
        ("cpu:sg32@metal", Tuning { force_fallback: true, ..small() }),
    ] {
        let d = Device::from_name(name).unwrap();
        let mut ws = Workspace::with_tuning(&d, tuning);
        let mut next = rng(6);
        for (n, run) in [(0usize, 1u64), (1, 1), (700, 1), (700, 9), (2500, 400), (1000, 100_000)] {
            let mut key = 0u32;
            let k: Vec<u32> = (0..n)
                .map(|_| {
                    if next().is_multiple_of(run) {
                        key = key.wrapping_add(1 + (next() % 3) as u32);
                    }
                    key % 4
                })
                .collect();
            let v: Vec<i64> = (0..n).map(|_| (next() % 100) as i64 - 50).collect();
            let (ka, va) = (d.array_from(&k).unwrap(), d.array_from(&v).unwrap());
            let (uk, agg) = (d.zeros::<u32>(n).unwrap(), d.zeros::<i64>(n).unwrap());
            let runs = d.array_from(&[77u32]).unwrap();
            ws.reduce_by_key(&ka, &va, &uk, &agg, &runs, &Operator::add()).unwrap();
            let (wk, wa) = host_runs(&k, &v, 0, |a, b| a + b);
            let r = wk.len();
            assert_eq!(runs.to_vec().unwrap(), [r as u32], "{name} n = {n} run {run}");
            assert_eq!(uk.to_vec().unwrap()[..r], wk[..], "{name} n = {n} run {run}");
            assert_eq!(agg.to_vec().unwrap()[..r], wa[..], "{name} n = {n} run {run}");
        }
    }
}

/// Keys equal under `==` but not bit for bit (-0.0 and +0.0) form one run, which is named by its
/// first key, also when a run crosses tiles or ends the input.
#[test]
fn reduce_by_key_names_each_run_by_its_first_key() {
    for (name, tuning) in [
        ("cpu:sg8", small()),
        ("cpu:sg32", Tuning::default()),
        ("cpu:sg32@metal", Tuning { force_fallback: true, ..small() }),
    ] {
        let d = Device::from_name(name).unwrap();
        let mut ws = Workspace::with_tuning(&d, tuning);
        // Runs alternate between starting with -0.0 and with +0.0, of lengths 1 to 7, with 1.0
        // between them; the input ends inside a run that started with -0.0.
        let mut k = Vec::new();
        let mut want = Vec::new();
        for r in 0..300usize {
            let (first, other) = if r % 2 == 0 { (-0.0f32, 0.0f32) } else { (0.0, -0.0) };
            want.extend([first, 1.0]);
            k.push(first);
            k.extend(std::iter::repeat_n(other, r % 7));
            k.push(1.0);
        }
        k.extend([-0.0, 0.0, 0.0]);
        want.push(-0.0);
        let n = k.len();
        let v = vec![1u32; n];
        let (ka, va) = (d.array_from(&k).unwrap(), d.array_from(&v).unwrap());
        let (uk, agg, runs) = (d.zeros::<f32>(n).unwrap(), d.zeros::<u32>(n).unwrap(), d.zeros::<u32>(1).unwrap());
        ws.reduce_by_key(&ka, &va, &uk, &agg, &runs, &Operator::add()).unwrap();
        assert_eq!(runs.to_vec().unwrap(), [want.len() as u32], "{name}");
        let got: Vec<u32> = uk.to_vec().unwrap()[..want.len()].iter().map(|x| x.to_bits()).collect();
        let want_bits: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
        let first_wrong = got.iter().zip(&want_bits).position(|(g, w)| g != w);
        assert_eq!(first_wrong, None, "{name}: run {first_wrong:?} named wrongly");
        assert_eq!(agg.to_vec().unwrap()[want.len() - 1], 3, "{name}");
    }
}
