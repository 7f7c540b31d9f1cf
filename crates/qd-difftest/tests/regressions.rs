//! Every saved regression case (`crates/qd-difftest/regressions/*.json`, D27) replays: each
//! passes every emitter's validator, and the emulator at every width and worn profile it has a
//! meaning on, and the Vulkan device when present (lavapipe in CI: `QD_REQUIRE_VULKAN=1` makes
//! its absence a failure), write the reference emulator's bits. A case marked as a known driver
//! bug must still differ on that driver (so a driver that fixes it is noticed) and agree
//! everywhere else.

mod common;

use common::Validators;
use qd_difftest::regress::{load_dir, replay, Verdict};
use qd_difftest::run::Backend;
use qd_difftest::session::EMULATORS;
use std::path::Path;

/// The emulators, and Vulkan device 0 when there is one (required with `QD_REQUIRE_VULKAN=1`; a
/// `qd` built without its `vulkan` feature has none).
fn backends() -> Vec<Backend> {
    let mut b: Vec<Backend> = EMULATORS.iter().map(|n| Backend::open(n).expect("the emulator opens")).collect();
    match Backend::open("vulkan") {
        Ok(v) => b.push(v),
        Err(e) if std::env::var("QD_REQUIRE_VULKAN").as_deref() != Ok("1") => {
            eprintln!("skipped on Vulkan: {e}; QD_REQUIRE_VULKAN=1 makes this a failure")
        }
        Err(e) => panic!("Vulkan required (QD_REQUIRE_VULKAN=1) but unavailable: {e}"),
    }
    b
}

#[test]
fn every_saved_regression_case_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let cases = load_dir(&dir).expect("the regression cases load");
    assert!(!cases.is_empty(), "no regression cases in {}", dir.display());
    let backends = backends();
    let tools = Validators::find();
    let mut problems = Vec::new();
    for (path, case) in &cases {
        let file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if let Some(k) = &case.known_bug {
            let finding = Path::new(env!("CARGO_MANIFEST_DIR")).join(&k.finding);
            assert!(finding.is_file(), "{file}: its finding {} is missing", finding.display());
        }
        if let Err(e) = tools.check(&case.program, case.program.shape.sizing) {
            problems.push(format!("{file}: a validator refused it: {e}"));
        }
        match replay(case, &backends) {
            Err(e) => problems.push(format!("{file}: {e}")),
            Ok(verdicts) => {
                for (device, v) in verdicts {
                    match v {
                        Verdict::Agrees | Verdict::Unsupported => {}
                        Verdict::KnownBug => eprintln!("{file}: {device} still shows its known driver bug"),
                        Verdict::Differs(what) => problems.push(format!("{file}: {device} differs: {what}")),
                        Verdict::KnownBugGone => problems.push(format!(
                            "{file}: {device} now agrees: the driver bug its finding describes is gone \
                             (update the finding and drop `known_bug`)"
                        )),
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `qd difftest --regressions DIR`: the same replay on the devices named, one line per case and
/// device, passing on the emulators.
#[test]
fn the_command_replays_the_saved_cases_on_the_devices_named() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut log = Vec::new();
    let ok = qd_difftest::cli::regressions(Some("cpu:sg8,cpu:sg32@cuda:sm_80"), &dir, &mut log).unwrap();
    let log = String::from_utf8_lossy(&log);
    assert!(ok, "{log}");
    assert!(log.contains("lavapipe-fence-in-divergent-loop.json: cpu:sg8 "), "{log}");
    assert!(log.contains("the reference") && log.contains("agrees"), "{log}");
    assert!(log.contains("regression cases from") && log.ends_with("passed\n"), "{log}");
    let mut log = Vec::new();
    assert!(!qd_difftest::cli::regressions(Some("no-such-device"), &dir, &mut log).unwrap());
    assert!(String::from_utf8_lossy(&log).contains("cannot open `no-such-device`"));
}
