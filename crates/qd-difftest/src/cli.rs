//! `qd difftest`: the command-line face of [`crate::session`] (the `qd` binary parses the flags).

use crate::regress::{load_dir, replay, Verdict};
use crate::run::Backend;
use crate::session::{available_gpus, ensure_references, run_session, Options, EMULATORS};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The backends a `--backend` list names (comma-separated device names; `emulators` stands for
/// [`EMULATORS`], `gpus` for every GPU of this machine), or those defaults when it is `None`, plus
/// the plain emulator of every width among them (each plan's reference).
pub fn backend_names(list: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    let items: Vec<&str> = match list {
        Some(l) => l.split(',').map(str::trim).filter(|s| !s.is_empty()).collect(),
        None => vec!["emulators", "gpus"],
    };
    for item in items {
        match item {
            "emulators" => names.extend(EMULATORS.iter().map(|s| s.to_string())),
            "gpus" => names.extend(available_gpus()),
            n => names.push(n.to_string()),
        }
    }
    names.dedup();
    names
}

/// Opens the backends `list` names and the plain emulator of each of their widths (the
/// references): `None` (said in `log`) when one cannot be opened.
fn open(list: Option<&str>, log: &mut dyn Write) -> io::Result<Option<(Vec<String>, Vec<Backend>)>> {
    let mut names = backend_names(list);
    let mut backends = Vec::new();
    for name in &names {
        match Backend::open(name) {
            Ok(b) => backends.push(b),
            Err(e) => {
                writeln!(log, "qd difftest: cannot open `{name}`: {e}")?;
                return Ok(None);
            }
        }
    }
    let widths: Vec<u32> = backends.iter().map(Backend::width).collect();
    let before = names.len();
    ensure_references(&mut names, &widths);
    for name in &names[before..] {
        backends.push(Backend::open(name).map_err(|e| io::Error::other(e.to_string()))?);
    }
    Ok(Some((names, backends)))
}

/// Opens the backends, runs the session and says whether it passed. A backend that cannot be
/// opened is an error naming it (so a CI run that names `vulkan` fails without a Vulkan device).
pub fn run(list: Option<&str>, opts: &Options, log: &mut dyn Write) -> io::Result<bool> {
    let Some((names, backends)) = open(list, log)? else {
        return Ok(false);
    };
    let list = names.join(",");
    match opts.replay {
        Some(s) => writeln!(log, "replaying case {s} on {list}")?,
        None => writeln!(log, "seed {} on {list} for up to {:.0} s", opts.seed, opts.time.as_secs_f64())?,
    }
    let tally = run_session(&backends, opts, log)?;
    Ok(tally.failures.is_empty())
}

/// Replays every saved regression case in `dir` ([`crate::regress`]) on the backends `list` names
/// (as [`run`] opens them, with the plain emulator of each width as the reference), printing each
/// device's verdict; passes when every device agrees with the reference or differs only where the
/// case's known driver bug says it does.
pub fn regressions(list: Option<&str>, dir: &Path, log: &mut dyn Write) -> io::Result<bool> {
    let Some((_, backends)) = open(list, log)? else {
        return Ok(false);
    };
    let cases = load_dir(dir)?;
    let mut ok = true;
    for (path, case) in &cases {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        match replay(case, &backends) {
            Err(e) => {
                ok = false;
                writeln!(log, "{file}: {e}")?;
            }
            Ok(verdicts) => {
                for (k, (device, v)) in verdicts.into_iter().enumerate() {
                    let (pass, what) = match v {
                        Verdict::Agrees if k == 0 => (true, "the reference".to_string()),
                        Verdict::Agrees => (true, "agrees".to_string()),
                        Verdict::Unsupported => (true, "unsupported (skipped)".to_string()),
                        Verdict::KnownBug => (true, "differs: its known driver bug".to_string()),
                        Verdict::Differs(what) => (false, format!("DIFFERS: {what}")),
                        Verdict::KnownBugGone => (false, "AGREES where its known driver bug was expected".to_string()),
                    };
                    ok &= pass;
                    writeln!(log, "{file}: {device:<24} {what}")?;
                }
            }
        }
    }
    writeln!(log, "{} regression cases from {}: {}", cases.len(), dir.display(), if ok { "passed" } else { "FAILED" })?;
    Ok(ok)
}

/// The default time a run takes when `--seconds` is not given.
pub const DEFAULT_SECONDS: u64 = 30;

/// Options from the command line's values.
pub fn options(
    seed: u64,
    seconds: Option<u64>,
    cases: Option<u64>,
    replay: Option<u64>,
    shrink_seconds: u64,
    save_dir: Option<PathBuf>,
) -> Options {
    Options {
        seed,
        time: Duration::from_secs(seconds.unwrap_or(DEFAULT_SECONDS)),
        cases,
        replay,
        shrink_time: Duration::from_secs(shrink_seconds),
        save_dir,
    }
}
