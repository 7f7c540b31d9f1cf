//! One benchmark of one algorithm, dtype and size on one device: inputs, timed launches, the check.

use super::inputs::{check_all, close, draws, BenchType};
use super::{copy_kernel, Algo, BenchConfig, BenchResult, BLOCK, COPY_ITEMS};
use qd::algorithms::{self, Operator, Workspace};
use qd::prelude::*;

pub(super) fn run_typed<T: BenchType>(
    device: &Device,
    cfg: &BenchConfig,
    tick: &dyn Fn(),
) -> Result<BenchResult, String> {
    let n = 1usize << cfg.log2n;
    let size = T::DTYPE.size_bytes() as u64;
    let e = |e: QdError| e.to_string();
    let a = |e: algorithms::Error| e.to_string();
    let mut ws = Workspace::with_tuning(device, cfg.tuning);
    ws.set_timing(true);
    let poison = T::from_bits(0x5A5A_5A5A_5A5A_5A5A);
    // Runs `launch` warmup + reps times, keeping the timed launches' device time.
    let timed = |ws: &mut Workspace, launch: &mut dyn FnMut(&mut Workspace) -> Result<(), String>| {
        let mut times = Vec::new();
        for i in 0..cfg.warmup + cfg.reps {
            launch(ws)?;
            if i >= cfg.warmup {
                times.push(ws.last_device_time());
            }
            tick();
        }
        Ok::<_, String>(times)
    };
    let (times, bytes, check) = match cfg.algo {
        Algo::Copy => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let (input, output) = (device.array_from(&x).map_err(e)?, device.array_from(&vec![poison; n]).map_err(e)?);
            let kernel = copy_kernel::<T>(BLOCK, COPY_ITEMS);
            let grid = n.div_ceil((BLOCK * COPY_ITEMS) as usize) as u32;
            let mut times = Vec::new();
            for i in 0..cfg.warmup + cfg.reps {
                let t = device.launch_timed(&kernel, Some(grid), &[input.arg(), output.arg()]).map_err(e)?;
                if i >= cfg.warmup {
                    times.push(t);
                }
                tick();
            }
            let got = output.to_vec().map_err(e)?;
            (times, 2 * n as u64 * size, check_all("copy", &got, |i, g| *g == x[i]))
        }
        Algo::Reduce => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let input = device.array_from(&x).map_err(e)?;
            let out = device.array_from(&[poison]).map_err(e)?;
            let want = x.iter().fold(0i128, |acc, v| acc + v.grid());
            let want_int = x.iter().fold(T::ZERO, |acc, &v| acc.wrapping_add(v));
            let times = timed(&mut ws, &mut |ws| ws.reduce(&input, &out, &Operator::add()).map_err(a))?;
            let got = out.to_vec().map_err(e)?[0];
            // Blocks of at least 2^15 threads each fold n / 2^15 values, then trees of 64 levels at most.
            let depth = n.div_ceil(1 << 15) as f64 + 64.0;
            let ok = if T::EPS == 0.0 { got == want_int } else { close(got, want, depth) };
            (times, n as u64 * size, if ok { Ok(()) } else { Err(format!("sum = {got:?}")) })
        }
        Algo::Scan | Algo::ExclusiveScan => {
            let inclusive = cfg.algo == Algo::Scan;
            let x: Vec<T> = draws(cfg.seed, n).map(T::draw).collect();
            let input = device.array_from(&x).map_err(e)?;
            let output = device.array_from(&vec![poison; n]).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| {
                if inclusive {
                    ws.inclusive_scan(&input, &output, &Operator::add()).map_err(a)
                } else {
                    ws.exclusive_scan(&input, &output, &Operator::add()).map_err(a)
                }
            })?;
            let got = output.to_vec().map_err(e)?;
            // A prefix is a chain through every tile before it, the tile's items and trees.
            let depth = n.div_ceil(256 * 9) as f64 + 128.0;
            let (mut exact, mut acc) = (0i128, T::ZERO);
            let mut want = Vec::with_capacity(n);
            for &v in &x {
                if inclusive {
                    exact += v.grid();
                    acc = acc.wrapping_add(v);
                }
                want.push((exact, acc));
                if !inclusive {
                    exact += v.grid();
                    acc = acc.wrapping_add(v);
                }
            }
            let check =
                check_all(
                    "scan",
                    &got,
                    |i, g| if T::EPS == 0.0 { *g == want[i].1 } else { close(*g, want[i].0, depth) },
                );
            (times, 2 * n as u64 * size, check)
        }
        Algo::Select => {
            let mut r = draws(cfg.seed, 2 * n);
            let x: Vec<T> = r.by_ref().take(n).map(T::draw).collect();
            let flags: Vec<u8> = r.map(|v| (v >> 63) as u8).collect();
            let want: Vec<T> = x.iter().zip(&flags).filter(|(_, &f)| f != 0).map(|(&v, _)| v).collect();
            let (input, fa) = (device.array_from(&x).map_err(e)?, device.array_from(&flags).map_err(e)?);
            let output = device.array_from(&vec![poison; n]).map_err(e)?;
            let count = device.zeros::<u32>(1).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| ws.select_flagged(&input, &fa, &output, &count).map_err(a))?;
            let got_count = count.to_vec().map_err(e)?[0] as usize;
            let got = output.to_vec().map_err(e)?;
            let check = if got_count != want.len() {
                Err(format!("count = {got_count}, expected {}", want.len()))
            } else {
                check_all("selected", &got[..got_count], |i, g| *g == want[i])
            };
            (times, n as u64 * (size + 1) + want.len() as u64 * size, check)
        }
        Algo::ReduceByKey => {
            let mut r = draws(cfg.seed, 2 * n);
            let (mut key, mut left) = (0u32, 0u64);
            let keys: Vec<u32> = r
                .by_ref()
                .take(n)
                .map(|v| {
                    if left == 0 {
                        key = key.wrapping_add(1 + (v >> 62) as u32 % 2);
                        left = 1 + (v & 15);
                    }
                    left -= 1;
                    key
                })
                .collect();
            let vals: Vec<T> = r.map(T::small).collect();
            let (mut wk, mut wv) = (Vec::new(), Vec::<T>::new());
            for (i, (&k, &v)) in keys.iter().zip(&vals).enumerate() {
                if i == 0 || keys[i - 1] != k {
                    wk.push(k);
                    wv.push(v);
                } else if let Some(last) = wv.last_mut() {
                    *last = last.wrapping_add(v);
                }
            }
            let (ka, va) = (device.array_from(&keys).map_err(e)?, device.array_from(&vals).map_err(e)?);
            let uk = device.zeros::<u32>(n).map_err(e)?;
            let agg = device.array_from(&vec![poison; n]).map_err(e)?;
            let runs = device.zeros::<u32>(1).map_err(e)?;
            let times =
                timed(&mut ws, &mut |ws| ws.reduce_by_key(&ka, &va, &uk, &agg, &runs, &Operator::add()).map_err(a))?;
            let r = runs.to_vec().map_err(e)?[0] as usize;
            let check = if r != wk.len() {
                Err(format!("runs = {r}, expected {}", wk.len()))
            } else {
                let (gk, gv) = (uk.to_vec().map_err(e)?, agg.to_vec().map_err(e)?);
                check_all("unique keys", &gk[..r], |i, g| *g == wk[i])
                    .and_then(|()| check_all("aggregates", &gv[..r], |i, g| *g == wv[i]))
            };
            (times, n as u64 * (4 + size) + wk.len() as u64 * (4 + size), check)
        }
        Algo::Histogram => {
            let x: Vec<T> = draws(cfg.seed, n).map(T::sample).collect();
            let (lo, hi) = T::hist_bounds();
            let mut want = vec![0u32; 256];
            for &v in &x {
                if let Some(b) = v.bin_even(256, lo, hi) {
                    want[b as usize] += 1;
                }
            }
            let input = device.array_from(&x).map_err(e)?;
            let h = device.array_from(&[0x5A5A_5A5Au32; 256]).map_err(e)?;
            let times = timed(&mut ws, &mut |ws| ws.histogram_even(&input, &h, 256, lo, hi).map_err(a))?;
            let got = h.to_vec().map_err(e)?;
            (times, n as u64 * size, check_all("histogram", &got, |i, g| *g == want[i]))
        }
    };
    let registers = main_kernel::<T>(cfg).and_then(|k| device.compile(&k).ok()?.registers());
    Ok(BenchResult { config: cfg.clone(), device: device.name().to_string(), times, bytes, check, registers })
}

/// The kernel that does the work of `cfg.algo` (the one whose registers the summary line shows);
/// the library builds each kernel once per shape, so compiling it again finds the loaded code.
fn main_kernel<T: BenchType>(cfg: &BenchConfig) -> Option<Kernel> {
    use algorithms::kernels;
    let t = &cfg.tuning;
    Some(match cfg.algo {
        Algo::Copy => copy_kernel::<T>(BLOCK, COPY_ITEMS),
        Algo::Reduce => kernels::reduce(&Operator::<T>::add(), t),
        Algo::Scan => kernels::scan(&Operator::<T>::add(), true, t),
        Algo::ExclusiveScan => kernels::scan(&Operator::<T>::add(), false, t),
        Algo::Select => kernels::select_flagged::<T, u8>(t),
        Algo::ReduceByKey => kernels::reduce_by_key::<u32, T>(&Operator::add(), t),
        Algo::Histogram => {
            let (lo, hi) = T::hist_bounds();
            kernels::histogram_even(256, lo, hi, t)?
        }
    })
}
