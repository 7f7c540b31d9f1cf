//! `qd bench sort`: the device-wide radix sort (`qd::algorithms::sort`) timed on keys of a chosen
//! entropy, for each size, entropy and tile shape asked for, with the result checked on the host.
//! `bench/cub_sort.cu` prints the same line for CUB's `DeviceRadixSort` on the same keys.
//!
//! Keys are the AND of 1 to 5 random words (entropy 1.0, 0.811, 0.544, 0.337, 0.201: Thearling and
//! Smith, as CCCL's benchmarks draw them), word `x` of a seed's stream being [`key_word`]. Each
//! timed sort starts from the same input (copied back untimed). Times: `median_ms` is the median
//! over the timed sorts of the sum of the sort's launches, each between two events on CUDA
//! ([`Device::launch_timed`]; the host clock elsewhere), so the host's launch overhead and waits
//! between launches are outside it (CUB's events around its call include its gaps, about a
//! microsecond each); `wall_ms` is the host clock around the whole sort, those included.

use qd::algorithms::sort::{SortKey, SortOptions, SortTuning, SortValue, Sorter};
use qd::prelude::*;
use std::time::{Duration, Instant};

/// The key types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// u32
    U32,
    /// i32
    I32,
    /// f32 (random bits: some are NaNs)
    F32,
    /// u64
    U64,
    /// i64
    I64,
    /// f64
    F64,
}

/// The value types (none: keys only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// Keys only.
    None,
    /// u32 values.
    U32,
    /// u64 values.
    U64,
}

/// The entropies of [`SortBench::ands`], by the number of words AND-ed (1 to 5).
pub const ENTROPIES: [&str; 5] = ["1.0", "0.811", "0.544", "0.337", "0.201"];

/// One `qd bench sort` run: every size for every entropy and tile shape.
#[derive(Clone, Debug)]
pub struct SortBench {
    /// The key type.
    pub keys: KeyType,
    /// The value type.
    pub values: ValueType,
    /// Key counts.
    pub sizes: Vec<usize>,
    /// Words AND-ed per key (1 to 5), one entry per entropy.
    pub ands: Vec<u32>,
    /// Tile shapes (`None`: the device's default).
    pub tunings: Vec<Option<SortTuning>>,
    /// Timed sorts.
    pub reps: u32,
    /// Untimed sorts first (the first compiles).
    pub warmup: u32,
    /// The input's seed.
    pub seed: u64,
}

/// Word `x` of the key stream of `seed` (splitmix64's finalizer of the position, so threads can
/// draw any part of it; `bench/cub_sort.cu` has the same function).
pub fn key_word(seed: u64, x: u64) -> u64 {
    let mut z = (seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_add((x + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `n` keys' words: key `i` is the AND of words `i * ands .. (i + 1) * ands`, drawn on every
/// core.
pub fn key_words(n: usize, ands: u32, seed: u64) -> Vec<u64> {
    let mut out = vec![0u64; n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, w) in part.iter_mut().enumerate() {
                    let i = (c * chunk + j) as u64;
                    *w = (0..ands as u64).fold(!0u64, |acc, k| acc & key_word(seed, i * ands as u64 + k));
                }
            });
        }
    });
    out
}

/// Key types made from a random word (its low bits).
pub trait BenchKey: SortKey {
    /// The key of a word.
    fn from_word(w: u64) -> Self;
}

macro_rules! bench_key {
    ($($t:ty => $f:expr),*) => {$(
        impl BenchKey for $t {
            fn from_word(w: u64) -> Self {
                let f: fn(u64) -> $t = $f;
                f(w)
            }
        }
    )*};
}
bench_key!(
    u32 => |w| w as u32,
    i32 => |w| w as u32 as i32,
    f32 => |w| f32::from_bits(w as u32),
    u64 => |w| w,
    i64 => |w| w as i64,
    f64 => f64::from_bits
);

/// The outcome of one size, entropy and shape.
#[derive(Clone, Debug)]
pub struct SortResult {
    /// The summary line.
    pub line: String,
    /// `Ok`, or what was wrong with the sorted output.
    pub check: Result<(), String>,
}

/// Runs every size, entropy and shape of `b` on `device`, calling `report` after each.
pub fn run(device: &Device, b: &SortBench, report: &mut dyn FnMut(&SortResult)) -> Result<(), String> {
    if b.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    if let Some(a) = b.ands.iter().find(|a| !(1..=5).contains(*a)) {
        return Err(format!("{a} AND-ed words: the entropies are those of 1 to 5"));
    }
    macro_rules! with_keys {
        ($k:ty) => {
            match b.values {
                ValueType::None => run_typed::<$k, u32>(device, b, false, report),
                ValueType::U32 => run_typed::<$k, u32>(device, b, true, report),
                ValueType::U64 => run_typed::<$k, u64>(device, b, true, report),
            }
        };
    }
    match b.keys {
        KeyType::U32 => with_keys!(u32),
        KeyType::I32 => with_keys!(i32),
        KeyType::F32 => with_keys!(f32),
        KeyType::U64 => with_keys!(u64),
        KeyType::I64 => with_keys!(i64),
        KeyType::F64 => with_keys!(f64),
    }
}

/// A copy kernel for restoring the input between timed sorts.
fn restore_kernel<T: Num>() -> Kernel {
    Kernel::range(&format!("bench_sort_restore_{}", T::DTYPE), 256, |k| {
        let input = k.array::<T>("input");
        let output = k.array::<T>("output");
        k.parallel_for(0, input.len(), |i| output.set(i, input.get(i)));
    })
}

fn run_typed<K: BenchKey, V: SortValue>(
    device: &Device,
    b: &SortBench,
    pairs: bool,
    report: &mut dyn FnMut(&SortResult),
) -> Result<(), String> {
    let e = |e: QdError| e.to_string();
    let restore_k = restore_kernel::<K>();
    let restore_v = restore_kernel::<V>();
    for &ands in &b.ands {
        for &n in &b.sizes {
            let keys: Vec<K> = key_words(n, ands, b.seed).into_iter().map(K::from_word).collect();
            let src = device.array_from(&keys).map_err(e)?;
            let work = device.zeros::<K>(n).map_err(e)?;
            let vals: Vec<V> = (0..n as u64).map(V::from_bits).collect();
            let src_v = device.array_from(&vals).map_err(e)?;
            let work_v = device.zeros::<V>(n).map_err(e)?;
            drop(vals);
            for tuning in &b.tunings {
                let mut sorter = Sorter::new(device);
                if let Some(t) = tuning {
                    sorter = sorter.with_tuning(*t);
                }
                let shape = sorter.tuning_for::<K, V>(pairs);
                let pass = &qd::algorithms::sort::sort_kernels::<K, V>(shape, pairs)[1];
                let occupancy = match device.max_active_blocks_per_multiprocessor(pass).map_err(e)? {
                    Some(b) => format!(" blocks_per_sm={b}"),
                    None => String::new(),
                };
                sorter.set_timed(true);
                let mut sums = Vec::new();
                let mut walls = Vec::new();
                let mut hist = Vec::new();
                let mut passes = Vec::new();
                for r in 0..b.warmup + b.reps {
                    device.launch(&restore_k, &[src.arg(), work.arg()]).map_err(e)?;
                    if pairs {
                        device.launch(&restore_v, &[src_v.arg(), work_v.arg()]).map_err(e)?;
                    }
                    let t0 = Instant::now();
                    if pairs {
                        sorter.sort_pairs(&work, &work_v, &SortOptions::new())
                    } else {
                        sorter.sort_keys(&work, &SortOptions::new())
                    }
                    .map_err(|e| e.to_string())?;
                    let wall = t0.elapsed();
                    if r >= b.warmup {
                        walls.push(wall);
                        sums.push(sorter.times().iter().map(|(_, t)| *t).sum::<Duration>());
                        let times = sorter.times();
                        hist.push(times.first().map(|(_, t)| *t).unwrap_or_default());
                        let p: Vec<Duration> = times.iter().skip(1).map(|(_, t)| *t).collect();
                        passes.push(p.iter().sum::<Duration>() / p.len().max(1) as u32);
                    }
                }
                let got = work.to_vec().map_err(e)?;
                let got_v = if pairs { Some(work_v.to_vec().map_err(e)?) } else { None };
                let check = check_sorted(&keys, &got, got_v.as_deref());
                let med = median(&sums);
                let ms = |d: Duration| format!("{:.4}", d.as_secs_f64() * 1e3);
                let entropy = ENTROPIES[ands as usize - 1];
                let values = if pairs { V::DTYPE.to_string() } else { "none".into() };
                let line = format!(
                    "bench sort {} values={values} n={n} entropy={entropy} device={} median_ms={} min_ms={} gkeys={:.2} \
                     wall_ms={} hist_ms={} pass_ms={} check={} tuning={}x{}{occupancy}",
                    K::DTYPE,
                    device.name(),
                    ms(med),
                    ms(sums.iter().min().copied().unwrap_or_default()),
                    n as f64 / med.as_secs_f64().max(1e-12) / 1e9,
                    ms(median(&walls)),
                    ms(median(&hist)),
                    ms(median(&passes)),
                    if check.is_ok() { "ok" } else { "fail" },
                    shape.block,
                    shape.keys_per_thread,
                );
                report(&SortResult { line, check });
            }
        }
    }
    Ok(())
}

/// The median (the mean of the middle two for an even count).
fn median(t: &[Duration]) -> Duration {
    let mut t = t.to_vec();
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        l if l % 2 == 1 => t[l / 2],
        l => (t[l / 2 - 1] + t[l / 2]) / 2,
    }
}

/// Checks a sort's output against its input in O(n): sorted by the ordered bits; with values (each
/// key's input index), every index once, each key the input's key at its value, equal keys in
/// input order; without, the same count and sum of hashed key bits as the input.
pub fn check_sorted<K: SortKey, V: SortValue>(input: &[K], keys: &[K], values: Option<&[V]>) -> Result<(), String> {
    if let Some(i) = (1..keys.len()).find(|&i| keys[i - 1].ordered_host() > keys[i].ordered_host()) {
        return Err(format!("keys[{i}] = {:?} after {:?}", keys[i], keys[i - 1]));
    }
    match values {
        Some(values) => {
            let mut seen = vec![false; input.len()];
            for (i, v) in values.iter().enumerate() {
                let v = v.to_bits() as usize;
                let stable = i == 0 || keys[i - 1].to_bits() != keys[i].to_bits() || values[i - 1].to_bits() < v as u64;
                if v >= input.len() || seen[v] || input[v].to_bits() != keys[i].to_bits() || !stable {
                    return Err(format!(
                        "values[{i}] = {v}: not the input index of keys[{i}] = {:?} in order",
                        keys[i]
                    ));
                }
                seen[v] = true;
            }
        }
        None => {
            let hash = |k: &K| {
                let x = k.to_bits().wrapping_mul(0xff51_afd7_ed55_8ccd);
                x ^ (x >> 33)
            };
            let sum = |s: &[K]| s.iter().map(hash).fold(0u64, u64::wrapping_add);
            if input.len() != keys.len() || sum(input) != sum(keys) {
                return Err("the sorted keys are not the input's keys".into());
            }
        }
    }
    Ok(())
}

/// Parses `--sizes`: comma-separated items `N`, `2^A`, `2^A-2^B` or `2^A..2^B` (every power of two
/// from A to B).
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    let pow = |t: &str| -> Result<usize, String> {
        match t.strip_prefix("2^") {
            Some(e) => e.parse::<u32>().ok().filter(|e| *e < 31).map(|e| 1usize << e),
            None => t.parse::<usize>().ok(),
        }
        .ok_or_else(|| format!("`{t}` in --sizes is not N or 2^A (A < 31)"))
    };
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if let Some((a, b)) = item.split_once("..") {
            let (a, b) = (pow(a)?, pow(b)?);
            if !a.is_power_of_two() || !b.is_power_of_two() || a > b {
                return Err(format!("`{item}` in --sizes: a range goes from one power of two up to another"));
            }
            let mut x = a;
            while x <= b {
                out.push(x);
                x *= 2;
            }
        } else if let Some((a, b)) = item.split_once('-') {
            let (a, b) = (pow(a)?, pow(b)?);
            out.push(a.checked_sub(b).ok_or_else(|| format!("`{item}` in --sizes is negative"))?);
        } else {
            out.push(pow(item)?);
        }
    }
    Ok(out)
}

/// Parses `--entropy`: comma-separated entries of [`ENTROPIES`], as AND counts.
pub fn parse_entropies(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .map(str::trim)
        .map(|e| {
            ENTROPIES
                .iter()
                .position(|x| *x == e)
                .map(|i| i as u32 + 1)
                .ok_or_else(|| format!("entropy `{e}` is not one of {}", ENTROPIES.join(", ")))
        })
        .collect()
}

/// Parses `--tunings`: comma-separated `BLOCKxKEYS` (threads per block, keys per thread) or
/// `default`.
pub fn parse_tunings(s: &str, fallback_spins: u32) -> Result<Vec<Option<SortTuning>>, String> {
    s.split(',')
        .map(str::trim)
        .map(|t| {
            if t == "default" {
                return Ok(None);
            }
            let (b, k) = t.split_once('x').ok_or_else(|| format!("tuning `{t}` is not BLOCKxKEYS or default"))?;
            let num = |x: &str| x.parse::<u32>().map_err(|_| format!("tuning `{t}` is not BLOCKxKEYS or default"));
            Ok(Some(SortTuning { block: num(b)?, keys_per_thread: num(k)?, hist_items: 16, fallback_spins }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_and_checks_on_the_emulator() {
        let d = Device::cpu();
        let b = SortBench {
            keys: KeyType::U32,
            values: ValueType::U32,
            sizes: vec![600],
            ands: vec![5],
            tunings: vec![Some(SortTuning { block: 64, keys_per_thread: 4, hist_items: 4, fallback_spins: 2 })],
            reps: 1,
            warmup: 0,
            seed: 5,
        };
        let mut lines = Vec::new();
        run(&d, &b, &mut |r| {
            assert_eq!(r.check, Ok(()), "{}", r.line);
            lines.push(r.line.clone());
        })
        .unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("bench sort u32 values=u32 n=600 entropy=0.201 device=cpu "), "{}", lines[0]);
        assert!(lines[0].ends_with("check=ok tuning=64x4"), "{}", lines[0]);
    }

    #[test]
    fn the_check_finds_unsorted_unstable_and_foreign_outputs() {
        let input = [3u32, 1, 3, 2];
        assert_eq!(check_sorted::<u32, u32>(&input, &[1, 2, 3, 3], Some(&[1, 3, 0, 2])), Ok(()));
        assert!(check_sorted::<u32, u32>(&input, &[1, 2, 3, 3], Some(&[1, 3, 2, 0])).is_err());
        assert!(check_sorted::<u32, u32>(&input, &[2, 1, 3, 3], None).is_err());
        assert!(check_sorted::<u32, u32>(&input, &[1, 2, 3, 4], None).is_err());
        assert_eq!(check_sorted::<u32, u32>(&input, &[1, 2, 3, 3], None), Ok(()));
    }

    #[test]
    fn keys_and_arguments() {
        // The same words as bench/cub_sort.cu's key_word (splitmix64 of the position).
        assert_eq!(key_words(3, 1, 7), (0..3).map(|x| key_word(7, x)).collect::<Vec<_>>());
        assert_eq!(key_words(2, 2, 7)[1], key_word(7, 2) & key_word(7, 3));
        assert_eq!(parse_sizes("2^16..2^18,2^28-2^20,5").unwrap(), [65536, 131072, 262144, (1 << 28) - (1 << 20), 5]);
        assert!(parse_sizes("2^3..2^1").is_err());
        assert_eq!(parse_entropies("1.0,0.201").unwrap(), [1, 5]);
        assert!(parse_entropies("0.5").is_err());
        let t = parse_tunings("default,256x16", 128).unwrap();
        assert_eq!(t[0], None);
        assert_eq!(t[1].unwrap().tile(), 4096);
        assert!(parse_tunings("256", 128).is_err());
    }
}
