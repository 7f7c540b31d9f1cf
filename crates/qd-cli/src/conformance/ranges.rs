//! Conformance cases for the range loop's edges (D1, issue 12): `parallel_for` visits every index of
//! `begin..end` exactly once, including ranges that end at `i32::MAX`, start below zero, are empty,
//! or need several grid-stride passes per thread.

use super::{expect_eq, fail, Case, CaseResult, Outcome, Rng};
use qd::prelude::*;

/// Threads per block of the range kernels here.
const BLOCK: u32 = 64;

/// Counts the iterations of `begin..end` (scalar bounds) and marks each index relative to `begin`
/// in `seen`, guarded by its length so an index that wrapped would be counted but not written.
pub fn count_range() -> Kernel {
    Kernel::range("range_count", BLOCK, |k| {
        let count = k.array::<u32>("count");
        let seen = k.array::<u32>("seen");
        let begin = k.scalar::<i32>("begin");
        let end = k.scalar::<i32>("end");
        k.parallel_for(begin, end, |i| {
            atomic_add(count.at(0), 1u32);
            let j = i - begin;
            if_(j.ge(0) & j.lt(seen.len()), || {
                atomic_add(seen.at(j), 1u32);
            });
        });
    })
}

/// A range whose guard keeps a small array safe however large the range is.
pub fn guarded_range() -> Kernel {
    Kernel::range("range_guarded", BLOCK, |k| {
        let a = k.array::<i32>("a");
        let end = k.scalar::<i32>("end");
        k.parallel_for(0, end, |i| if_(i.lt(a.len()), || a.set(i, i + 1)));
    })
}

fn count_case(d: &Device, begin: i32, end: i32) -> CaseResult {
    let n = (end as i64 - begin as i64).max(0) as usize;
    let count = d.zeros::<u32>(1).map_err(fail)?;
    let seen = d.zeros::<u32>(n.max(1)).map_err(fail)?;
    let args = [count.arg(), seen.arg(), Arg::scalar(begin), Arg::scalar(end)];
    d.launch(&count_range(), &args).map_err(fail)?;
    expect_eq("iterations", &count.to_vec().map_err(fail)?, &[n as u32])?;
    let mut want = vec![1u32; n];
    want.resize(n.max(1), 0);
    expect_eq("visits per index", &seen.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

fn guarded_case(d: &Device, end: i32) -> CaseResult {
    let a = d.zeros::<i32>(100).map_err(fail)?;
    d.launch(&guarded_range(), &[a.arg(), Arg::scalar(end)]).map_err(fail)?;
    let want: Vec<i32> = (1..=100).collect();
    expect_eq("a", &a.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    // Past the grid cap (65 535 blocks) every thread takes several grid-stride passes.
    let past_cap = 65_535 * BLOCK as i32 + 1000;
    let ranges: [(&str, i32, i32); 7] = [
        ("near_max/10", i32::MAX - 10, i32::MAX),
        ("near_max/3000", i32::MAX - 3000, i32::MAX),
        ("near_max/past_grid_cap", i32::MAX - past_cap, i32::MAX),
        ("negative_begin", -1000, 24),
        ("near_min", i32::MIN, i32::MIN + 100),
        ("empty", 7, 7),
        ("reversed", 7, -7),
    ];
    for (name, begin, end) in ranges {
        cases.push(
            Case::new(format!("range/count/{name}"), move |d, _: &mut Rng| count_case(d, begin, end))
                .launching(|| vec![count_range()]),
        );
    }
    cases.push(
        Case::new("range/guarded/past_grid_cap", move |d, _: &mut Rng| guarded_case(d, past_cap))
            .launching(|| vec![guarded_range()]),
    );
}
