//! Conformance cases for the NVIDIA-only families (`qd::nv`, seed 004): run on `cuda` and on the
//! emulator with 32-lane subgroups; skipped, with the capability check's reason, where the target
//! lacks a family (other subgroup widths, other backends, elect and try_wait before sm_90).

use super::{expect_eq, fail, Case, CaseResult, Outcome, Rng};
use qd::ir::NvSreg;
use qd::nv;
use qd::prelude::*;

/// 32-bit lanes of two warps, with values drawn from a small range so matches happen.
fn warp_values(rng: &mut Rng, range: i64) -> Vec<u32> {
    (0..64).map(|_| rng.range_i64(0, range) as u32).collect()
}

/// `match_any` and `match_all` of each lane's value (widened to u64 with `wide`).
pub fn match_kernel(wide: bool) -> Kernel {
    Kernel::range(if wide { "nv_match_u64" } else { "nv_match_u32" }, 64, move |k| {
        let a = k.array::<u32>("a");
        let any = k.array::<u32>("any");
        let all = k.array::<u32>("all");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            let (m, ok) = if wide {
                let w = v.cast::<u64>() << 33u64;
                any.set(i, nv::match_any(w));
                nv::match_all(w)
            } else {
                any.set(i, nv::match_any(v));
                nv::match_all(v)
            };
            all.set(i, m + ok.cast::<u32>());
        });
    })
}

fn match_case(d: &Device, rng: &mut Rng, wide: bool) -> CaseResult {
    let k = match_kernel(wide);
    // The second warp is all-equal, so match_all holds there.
    let mut a = warp_values(rng, 4);
    let x = a[32];
    a[32..].iter_mut().for_each(|v| *v = x);
    let da = d.array_from(&a).map_err(fail)?;
    let (any, all) = (d.zeros::<u32>(64).map_err(fail)?, d.zeros::<u32>(64).map_err(fail)?);
    d.launch(&k, &[da.arg(), any.arg(), all.arg()]).map_err(fail)?;
    let mut want_any = Vec::new();
    let mut want_all = Vec::new();
    for w in a.chunks(32) {
        let same = w.iter().all(|v| *v == w[0]);
        for v in w {
            want_any.push(w.iter().enumerate().filter(|(_, x)| *x == v).fold(0u32, |m, (j, _)| m | 1 << j));
            want_all.push(if same { u32::MAX.wrapping_add(1) } else { 0 });
        }
    }
    expect_eq("match_any", &any.to_vec().map_err(fail)?, &want_any)?;
    expect_eq("match_all mask + pred", &all.to_vec().map_err(fail)?, &want_all)?;
    Ok(Outcome::Pass)
}

/// `redux.sync` with `op` (`add`, `min`, `max`, `and`, `or`, `xor`) on u32 or (`signed`) i32.
pub fn redux_kernel(op: &'static str, signed: bool) -> Kernel {
    let name = format!("nv_redux_{op}_{}", if signed { "i32" } else { "u32" });
    Kernel::range(&name, 64, move |k| {
        let a = k.array::<u32>("a");
        let out = k.array::<u32>("out");
        k.parallel_for(0, a.len(), |i| {
            let v = a.get(i);
            let r = if signed {
                let s = v.cast::<i32>();
                match op {
                    "add" => nv::redux_add(s),
                    "min" => nv::redux_min(s),
                    "max" => nv::redux_max(s),
                    "and" => nv::redux_and(s),
                    "or" => nv::redux_or(s),
                    _ => nv::redux_xor(s),
                }
                .cast::<u32>()
            } else {
                match op {
                    "add" => nv::redux_add(v),
                    "min" => nv::redux_min(v),
                    "max" => nv::redux_max(v),
                    "and" => nv::redux_and(v),
                    "or" => nv::redux_or(v),
                    _ => nv::redux_xor(v),
                }
            };
            out.set(i, r);
        });
    })
}

fn redux_case(d: &Device, rng: &mut Rng, op: &'static str, signed: bool) -> CaseResult {
    let name = format!("nv_redux_{op}_{}", if signed { "i32" } else { "u32" });
    let k = redux_kernel(op, signed);
    let a: Vec<u32> = (0..64).map(|_| rng.next_u64() as u32).collect();
    let da = d.array_from(&a).map_err(fail)?;
    let out = d.zeros::<u32>(64).map_err(fail)?;
    d.launch(&k, &[da.arg(), out.arg()]).map_err(fail)?;
    let mut want = Vec::new();
    for w in a.chunks(32) {
        let r = match (op, signed) {
            ("add", _) => w.iter().fold(0u32, |x, v| x.wrapping_add(*v)),
            ("min", true) => *w.iter().min_by_key(|v| **v as i32).unwrap_or(&0),
            ("max", true) => *w.iter().max_by_key(|v| **v as i32).unwrap_or(&0),
            ("min", false) => *w.iter().min().unwrap_or(&0),
            ("max", false) => *w.iter().max().unwrap_or(&0),
            ("and", _) => w.iter().fold(!0, |x, v| x & v),
            ("or", _) => w.iter().fold(0, |x, v| x | v),
            _ => w.iter().fold(0, |x, v| x ^ v),
        };
        want.extend(std::iter::repeat_n(r, 32));
    }
    expect_eq(&name, &out.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// `elect` and the special registers, eight words per thread.
pub fn elect_and_sregs_kernel() -> Kernel {
    Kernel::explicit("nv_elect_sregs", 64, |k| {
        let out = k.array::<u32>("out");
        let t = block::thread_idx();
        let (leader, is_leader) = nv::elect();
        let base = t * 8;
        out.set(base, leader);
        out.set(base + 1, is_leader.cast::<u32>());
        out.set(base + 2, nv::laneid());
        out.set(base + 3, nv::sreg(NvSreg::LanemaskLt).cast::<u32>());
        out.set(base + 4, nv::sreg(NvSreg::LanemaskGe).cast::<u32>());
        out.set(base + 5, nv::sreg(NvSreg::Tid(0)).cast::<u32>());
        out.set(base + 6, nv::sreg(NvSreg::Ntid(0)).cast::<u32>());
        out.set(base + 7, nv::sreg(NvSreg::Warpsize).cast::<u32>());
    })
}

fn elect_and_sregs_case(d: &Device) -> CaseResult {
    let k = elect_and_sregs_kernel();
    let out = d.zeros::<u32>(64 * 8).map_err(fail)?;
    d.launch_grid(&k, 1, &[out.arg()]).map_err(fail)?;
    let mut want = Vec::new();
    for t in 0..64u32 {
        let lane = t % 32;
        let lt = (1u32 << lane).wrapping_sub(1);
        want.extend([0, (lane == 0) as u32, lane, lt, !lt, t, 64, 32]);
    }
    expect_eq("elect and special registers", &out.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// Two mbarrier phases: publish, arrive, wait on the phase, read a neighbour's value.
pub fn mbarrier_kernel() -> Kernel {
    Kernel::explicit("nv_mbarrier_phases", 128, |k| {
        let a = k.array::<u32>("a");
        let out = k.array::<u32>("out");
        let bar = block::shared_array::<u64>(1);
        let data = block::shared_array::<u32>(128);
        let t = block::thread_idx();
        if_(t.eq(0), || nv::mbarrier_init(bar.at(0), 128u32));
        nv::proxy_fence("mbarrier_init");
        block::sync();
        for phase in 0..2u32 {
            data.set(t, a.get(t) + phase);
            nv::mbarrier_arrive(bar.at(0));
            nv::mbarrier_wait_parity(bar.at(0), phase & 1);
            out.set(t + (phase * 128) as i32, data.get(127 - t));
            block::sync();
        }
    })
}

fn mbarrier_case(d: &Device, rng: &mut Rng) -> CaseResult {
    // Two phases: every thread publishes a value, arrives, waits for the phase, then reads a
    // neighbour's value; the second phase does the same with new values.
    let k = mbarrier_kernel();
    let a: Vec<u32> = (0..128).map(|_| rng.next_u64() as u32 >> 1).collect();
    let da = d.array_from(&a).map_err(fail)?;
    let out = d.zeros::<u32>(256).map_err(fail)?;
    d.launch_grid(&k, 3, &[da.arg(), out.arg()]).map_err(fail)?;
    let mut want = Vec::new();
    for phase in 0..2u32 {
        want.extend((0..128).map(|t| a[127 - t] + phase));
    }
    expect_eq("mbarrier phases", &out.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for (wide, ty) in [(false, "u32"), (true, "u64")] {
        cases.push(
            Case::new(format!("nv/match/{ty}"), move |d, rng| match_case(d, rng, wide))
                .launching(move || vec![match_kernel(wide)]),
        );
    }
    for op in ["add", "min", "max", "and", "or", "xor"] {
        for (signed, ty) in [(true, "i32"), (false, "u32")] {
            cases.push(
                Case::new(format!("nv/redux_{op}/{ty}"), move |d, rng| redux_case(d, rng, op, signed))
                    .launching(move || vec![redux_kernel(op, signed)]),
            );
        }
    }
    cases.push(
        Case::new("nv/elect_and_sregs", |d, _| elect_and_sregs_case(d)).launching(|| vec![elect_and_sregs_kernel()]),
    );
    cases.push(Case::new("nv/mbarrier_phases", mbarrier_case).launching(|| vec![mbarrier_kernel()]));
}
