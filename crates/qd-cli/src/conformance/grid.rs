//! Conformance cases for the grid page (seed 001): the decoupled look-back scan, its canonical
//! use of `grid::mem_fence`-free publication and of spin-waits on other blocks' states. The scan is
//! the library's (`qd::algorithms`, D20: one definition); where the target promises no forward
//! progress it takes the decoupled fallback, so these cases run on lavapipe too.

use super::{expect_eq, fail, Case, CaseError, CaseResult, Outcome, Rng};
use qd::algorithms::{kernels, Operator, Tuning, Workspace};
use qd::prelude::*;

fn lookback_case(d: &Device, rng: &mut Rng, log2_n: u32) -> CaseResult {
    let n = 1usize << log2_n;
    let input: Vec<i64> = (0..n).map(|_| rng.range_i64(-1000, 1000)).collect();
    let a = d.array_from(&input).map_err(fail)?;
    let out = d.zeros::<i64>(n).map_err(fail)?;
    Workspace::new(d).inclusive_scan(&a, &out, &Operator::add()).map_err(|e| match e {
        qd::algorithms::Error::Device { source, .. } => fail(*source),
        other => CaseError::Failed(other.to_string()),
    })?;
    let mut acc = 0i64;
    let want: Vec<i64> = input
        .iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect();
    expect_eq("inclusive prefix sum", &out.to_vec().map_err(fail)?, &want)?;
    Ok(Outcome::Pass)
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for log2_n in [12u32, 20] {
        cases.push(
            Case::new(format!("grid/lookback_scan/i64/n2^{log2_n}"), move |d, rng| lookback_case(d, rng, log2_n))
                .launching(|| vec![kernels::scan(&Operator::<i64>::add(), true, &Tuning::default())]),
        );
    }
}
