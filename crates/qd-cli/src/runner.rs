//! Runs conformance cases: one random stream per case forked from the seed, a filter on case ids,
//! failures and skips reported by id, and the totals line D10 fixes.

use crate::conformance::{Case, CaseError, Outcome, Rng};
use qd::prelude::Device;
use std::io::{self, IsTerminal, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases that matched their host reference.
    pub passed: usize,
    /// Cases that did not, or that errored or panicked.
    pub failed: usize,
    /// Cases the backend cannot run.
    pub skipped: usize,
}

impl Tally {
    /// The exact last line of `qd conformance` (D10).
    pub fn line(&self) -> String {
        format!("{} passed, {} failed, {} skipped", self.passed, self.failed, self.skipped)
    }

    /// Whether the run counts as a success: nothing failed and something actually ran.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }
}

/// Pairs every case with its own random stream, forked from `seed` in list order.
///
/// Forking for every case of the full list before filtering keeps a case's inputs the same whatever
/// `--filter` selects, so a failure reproduces with `--seed N --filter <its id>`.
pub fn with_streams(cases: Vec<Case>, seed: u64) -> Vec<(Case, Rng)> {
    let mut master = Rng::new(seed);
    cases.into_iter().map(|c| (c, master.fork())).collect()
}

/// The cases whose id contains `filter` (all of them when there is no filter).
pub fn select<T>(cases: Vec<(Case, T)>, filter: Option<&str>) -> Vec<(Case, T)> {
    cases.into_iter().filter(|(c, _)| filter.is_none_or(|f| c.id.contains(f))).collect()
}

/// Runs `cases` on `device`, writing failures and a count of skips per reason to `out`, then the
/// totals line; `report`, when given, gets one `id<TAB>pass|fail|skip<TAB>detail` line per case
/// (used to compare the passing sets of two backends).
///
/// A progress line goes to stderr only when stderr is a terminal, so logs stay clean.
pub fn run(
    device: &Device,
    cases: Vec<(Case, Rng)>,
    out: &mut dyn Write,
    mut report: Option<&mut dyn Write>,
) -> io::Result<Tally> {
    let progress = io::stderr().is_terminal();
    let total = cases.len();
    let mut tally = Tally::default();
    let mut skip_reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for (k, (case, mut rng)) in cases.into_iter().enumerate() {
        if progress {
            eprint!("\r\x1b[K[{}/{total}] {}", k + 1, case.id);
        }
        // A panic in one case (a bug in the case or the library) must not hide the others' results.
        let result = catch_unwind(AssertUnwindSafe(|| (case.run)(device, &mut rng)))
            .unwrap_or_else(|payload| Err(format!("panicked: {}", panic_message(payload.as_ref())).into()));
        // What the capability check refused is a skip, with its reason.
        let result = match result {
            Err(CaseError::Unsupported(reason)) => Ok(Outcome::Skip(reason)),
            other => other,
        };
        let (status, detail) = match &result {
            Ok(Outcome::Pass) => ("pass", String::new()),
            Ok(Outcome::Skip(reason)) => ("skip", reason.clone()),
            Err(message) => ("fail", message.to_string()),
        };
        if let Some(r) = report.as_deref_mut() {
            writeln!(r, "{}\t{status}\t{}", case.id, detail.replace(['\t', '\n'], " "))?;
        }
        match result {
            Ok(Outcome::Pass) => tally.passed += 1,
            Ok(Outcome::Skip(reason)) => {
                tally.skipped += 1;
                *skip_reasons.entry(reason).or_default() += 1;
            }
            Err(message) => {
                tally.failed += 1;
                if progress {
                    eprint!("\r\x1b[K");
                }
                writeln!(out, "FAIL {}: {message}", case.id)?;
            }
        }
        out.flush()?;
    }
    if progress {
        eprint!("\r\x1b[K");
    }
    for (reason, n) in &skip_reasons {
        writeln!(out, "skipped {n}: {reason}")?;
    }
    writeln!(out, "{}", tally.line())?;
    Ok(tally)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// A seed from the OS's per-process randomness (no extra crate needed).
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str, outcome: Result<Outcome, String>) -> Case {
        Case::new(id, move |_, _| outcome.clone().map_err(CaseError::Failed))
    }

    #[test]
    fn streams_do_not_depend_on_the_filter() {
        let ids = ["a/x", "b/y", "a/z"];
        let mk = || ids.iter().map(|id| case(id, Ok(Outcome::Pass))).collect::<Vec<_>>();
        let all: Vec<u64> = with_streams(mk(), 7).into_iter().map(|(_, mut r)| r.next_u64()).collect();
        let some: Vec<u64> =
            select(with_streams(mk(), 7), Some("a/")).into_iter().map(|(_, mut r)| r.next_u64()).collect();
        assert_eq!(some, vec![all[0], all[2]]);
    }

    #[test]
    fn tally_counts_and_last_line() {
        let cases = vec![
            case("p", Ok(Outcome::Pass)),
            case("s", Ok(Outcome::Skip("no f64".into()))),
            case("f", Err("x[0] = 1, expected 2".into())),
            Case::new("panics", |_, _| panic!("boom")),
        ];
        let mut out = Vec::new();
        let mut report = Vec::new();
        let tally = run(&Device::cpu(), with_streams(cases, 1), &mut out, Some(&mut report)).unwrap();
        assert_eq!(tally, Tally { passed: 1, failed: 2, skipped: 1 });
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("FAIL f: x[0] = 1, expected 2"));
        assert!(text.contains("FAIL panics: panicked: boom"));
        assert!(text.contains("skipped 1: no f64"));
        let report = String::from_utf8(report).unwrap();
        assert_eq!(report.lines().count(), 4);
        assert!(report.contains("p\tpass\t") && report.contains("s\tskip\tno f64"));
        assert_eq!(text.lines().last(), Some("1 passed, 2 failed, 1 skipped"));
        assert!(!tally.ok());
    }

    #[test]
    fn all_skipped_is_not_ok() {
        assert!(!Tally { passed: 0, failed: 0, skipped: 3 }.ok());
        assert!(Tally { passed: 2, failed: 0, skipped: 3 }.ok());
    }
}
