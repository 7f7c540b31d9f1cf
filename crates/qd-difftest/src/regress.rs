//! Saved regression cases (D27): a shrunk mismatch is written as JSON (the [`Program`] itself, not
//! its case seed, which regenerates the same program only while the generator is unchanged), and
//! [`replay`] runs a saved case again on the devices given.

use crate::program::Program;
use crate::run::{first_difference, run, Backend, Outcome};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// Where `qd difftest` saves its shrunk mismatches, relative to the repository root.
pub const DEFAULT_DIR: &str = "crates/qd-difftest/regressions";

/// A saved mismatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// What differed when it was found (`MISMATCH cpu:sg4 vs vulkan: out1[35] ...`).
    pub found: String,
    /// The case seed that generated it (meaningful only with the generator of the commit that
    /// found it; the program below is what replays); `None` for a hand-written case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_seed: Option<u64>,
    /// Set once the mismatch is explained as a driver's bug rather than qd's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_bug: Option<KnownBug>,
    /// The shrunk program, with its inputs.
    pub program: Program,
}

/// A mismatch explained as a bug of one driver (written up in `findings/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnownBug {
    /// Text the driver's description contains where the bug shows (`llvmpipe Mesa 22.3`): on that
    /// driver the case must still differ from the emulator, so a driver update that fixes it is
    /// noticed; every other device must agree.
    pub driver: String,
    /// The finding that explains it, relative to the crate (`findings/....md`).
    pub finding: String,
}

/// Writes `case` into `dir` (created if missing) as `case-<seed>.json` (`case.json` without a
/// seed); returns the path. Rename the file when the finding is written up.
///
/// ```
/// use qd_difftest::regress::{load_dir, save};
/// let saved = load_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")).unwrap();
/// let mut case = saved[0].1.clone();
/// case.case_seed = Some(42);
/// let dir = std::env::temp_dir().join(format!("qd-regress-doc-{}", std::process::id()));
/// let path = save(&dir, &case).unwrap();
/// assert!(path.ends_with("case-42.json"));
/// assert_eq!(load_dir(&dir).unwrap()[0].1, case); // the program comes back as it was
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn save(dir: &Path, case: &Case) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = match case.case_seed {
        Some(seed) => dir.join(format!("case-{seed}.json")),
        None => dir.join("case.json"),
    };
    let text = serde_json::to_string_pretty(case).map_err(io::Error::other)?;
    std::fs::write(&path, text + "\n")?;
    Ok(path)
}

/// Every `*.json` case in `dir`, sorted by file name; a file that does not parse is an error naming it.
pub fn load_dir(dir: &Path) -> io::Result<Vec<(PathBuf, Case)>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
    paths.retain(|p| p.extension().is_some_and(|x| x == "json"));
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p)?;
            let case = serde_json::from_str(&text)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", p.display())))?;
            Ok((p, case))
        })
        .collect()
}

/// Whether `p` has its one meaning on a device of `width` lanes (its sizing allows the width and
/// its blocks are whole subgroups).
pub fn runs_at(p: &Program, width: u32) -> bool {
    p.shape.sizing.runs_at(width) && p.shape.block_dim.is_multiple_of(width)
}

/// How one device did on a replayed case.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// It wrote the reference's bits.
    Agrees,
    /// It refused the program for a missing feature.
    Unsupported,
    /// It differs where the case's known driver bug says it does.
    KnownBug,
    /// It differs (or failed) and nothing explains it.
    Differs(String),
    /// The case's known driver bug no longer shows on this driver: the finding needs updating.
    KnownBugGone,
}

/// Runs `case` on every backend it has a meaning on and compares each with the reference: the
/// first plain emulator (`cpu:sgN`) among them that runs it. Returns each device's name and
/// verdict (the reference's own first), or an error when no plain emulator runs it or the
/// reference fails.
///
/// ```
/// use qd_difftest::regress::{load_dir, replay, Verdict};
/// use qd_difftest::run::Backend;
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
/// let backends = vec![Backend::open("cpu:sg8").unwrap(), Backend::open("cpu:sg32@cuda:sm_80").unwrap()];
/// for (_, case) in load_dir(&dir).unwrap() {
///     for (device, verdict) in replay(&case, &backends).unwrap() {
///         assert_eq!(verdict, Verdict::Agrees, "{device}"); // the emulators agree on every saved case
///     }
/// }
/// ```
pub fn replay(case: &Case, backends: &[Backend]) -> Result<Vec<(String, Verdict)>, String> {
    let p = &case.program;
    let runners: Vec<&Backend> = backends.iter().filter(|b| runs_at(p, b.width())).collect();
    let reference = runners
        .iter()
        .find(|b| b.is_emulator() && !b.name.contains('@'))
        .ok_or("no plain emulator among the devices runs this program")?;
    let base = match run(p, reference) {
        Outcome::Ran(d) => d,
        other => return Err(format!("the reference {} failed: {other:?}", reference.name)),
    };
    let mut verdicts = vec![(reference.name.clone(), Verdict::Agrees)];
    for b in runners.iter().filter(|b| b.name != reference.name) {
        let known = case.known_bug.as_ref().is_some_and(|k| {
            let info = b.device.info();
            info.driver.is_some_and(|d| d.contains(&k.driver)) || info.model.contains(&k.driver)
        });
        let diff = match run(p, b) {
            Outcome::Ran(d) => first_difference(p, &base, &d),
            Outcome::Unsupported(_) => {
                verdicts.push((b.name.clone(), Verdict::Unsupported));
                continue;
            }
            Outcome::Failed(e) => Some(format!("failed: {e}")),
        };
        let verdict = match (diff, known) {
            (None, false) => Verdict::Agrees,
            (None, true) => Verdict::KnownBugGone,
            (Some(_), true) => Verdict::KnownBug,
            (Some(what), false) => Verdict::Differs(what),
        };
        verdicts.push((b.name.clone(), verdict));
    }
    Ok(verdicts)
}
