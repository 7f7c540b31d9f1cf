//! A differential run: cases from a seed until a time or count limit, each program run on the
//! devices it has one meaning on and compared with the reference emulator; a mismatch is shrunk
//! and reported with its seed and the minimal kernel's IR.

use crate::coverage::Coverage;
use crate::gen::{program, GenConfig};
use crate::program::{Program, Sizing};
use crate::regress::{save, Case};
use crate::run::{first_difference, run, Backend, Outcome};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The devices `qd difftest` uses when none are named: every emulator width, the emulator
/// wearing the CUDA, Metal and AMDGPU capability models, and (added by [`available_gpus`]) the
/// GPUs of this machine.
pub const EMULATORS: [&str; 8] = [
    "cpu:sg4",
    "cpu:sg8",
    "cpu:sg16",
    "cpu:sg32",
    "cpu:sg64",
    "cpu:sg32@cuda:sm_80",
    "cpu:sg32@metal",
    "cpu:sg64@amdgpu:gfx942",
];

/// The GPUs this build can open on this machine (`cuda:N`, `vulkan:N`, ...).
pub fn available_gpus() -> Vec<String> {
    qd::runtime::available_devices().into_iter().filter(|n| !n.starts_with("cpu")).collect()
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The run's seed: case `k` has seed [`case_seed`]`(seed, k)`.
    pub seed: u64,
    /// Stop starting cases after this long.
    pub time: Duration,
    /// Stop after this many cases (whichever comes first).
    pub cases: Option<u64>,
    /// Run only this case seed (a failure's replay).
    pub replay: Option<u64>,
    /// Longest time spent shrinking one mismatch.
    pub shrink_time: Duration,
    /// Where each shrunk mismatch is saved as a regression case ([`crate::regress`]); `None`
    /// saves nothing.
    pub save_dir: Option<PathBuf>,
}

/// Which programs a case generates and the backends it compares.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What the generator writes.
    pub cfg: GenConfig,
    /// Indices of the backends that run it; the first is the reference (an emulator).
    pub runners: Vec<usize>,
}

/// Every plan the backends allow: a portable plan per tile size (run at every width that
/// large or larger) and an exact plan per width; the reference is the first plain emulator of the
/// plan's widths (named or not, [`ensure_references`] adds one).
pub fn plans(backends: &[Backend]) -> Vec<Plan> {
    let mut widths: Vec<u32> = backends.iter().map(Backend::width).collect();
    widths.sort_unstable();
    widths.dedup();
    let max_width = widths.last().copied().unwrap_or(1);
    let mut plans = Vec::new();
    let reference_first = |mut r: Vec<usize>| {
        r.sort_by_key(|&i| (!is_plain_emulator(&backends[i]), i));
        r
    };
    for log2_tile in 0..=max_width.trailing_zeros() {
        let sizing = Sizing::Portable { log2_tile };
        let runners: Vec<usize> = (0..backends.len()).filter(|&i| sizing.runs_at(backends[i].width())).collect();
        let widest = runners.iter().map(|&i| backends[i].width()).max().unwrap_or(1);
        plans.push(Plan { cfg: GenConfig { sizing, block_multiple: widest }, runners: reference_first(runners) });
    }
    for &width in &widths {
        let sizing = Sizing::Exact { width };
        let runners: Vec<usize> = (0..backends.len()).filter(|&i| backends[i].width() == width).collect();
        plans.push(Plan { cfg: GenConfig { sizing, block_multiple: width }, runners: reference_first(runners) });
    }
    plans.retain(|p| p.runners.first().is_some_and(|&r| is_plain_emulator(&backends[r])));
    plans
}

fn is_plain_emulator(b: &Backend) -> bool {
    b.is_emulator() && !b.name.contains('@')
}

/// Adds the plain emulator of each width the named backends have, so every plan has a reference.
pub fn ensure_references(names: &mut Vec<String>, widths: &[u32]) {
    for w in widths {
        let name = format!("cpu:sg{w}");
        if !names.contains(&name) {
            names.push(name);
        }
    }
}

/// The seed of case `k` of a run seeded `seed` (splitmix64).
pub fn case_seed(seed: u64, k: u64) -> u64 {
    let mut z = seed.wrapping_add(k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn rng(case_seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&case_seed.wrapping_add(i as u64).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// The plan and program (as a shrinkable tree) of a case.
pub fn case(plans: &[Plan], case_seed: u64) -> (Plan, impl ValueTree<Value = Program>) {
    // Plans that compare two devices or more are picked three times as often.
    let weights: Vec<u64> = plans.iter().map(|p| if p.runners.len() > 1 { 3 } else { 1 }).collect();
    let mut pick = case_seed % weights.iter().sum::<u64>().max(1);
    let mut chosen = 0;
    for (i, w) in weights.iter().enumerate() {
        if pick < *w {
            chosen = i;
            break;
        }
        pick -= w;
    }
    let plan = plans[chosen].clone();
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(case_seed));
    let tree = program(plan.cfg).new_tree(&mut runner).expect("the program strategy never rejects");
    (plan, tree)
}

/// Two devices disagreeing on a program (or the reference failing on it).
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The reference backend's name.
    pub reference: String,
    /// The other backend's name (the reference's own when it failed).
    pub other: String,
    /// What differs, or the error.
    pub what: String,
}

/// Runs `p` on the plan's runners: the first mismatch, and each runner's outcome.
pub fn check(
    p: &Program,
    plan: &Plan,
    backends: &[Backend],
    only: Option<usize>,
) -> (Option<Mismatch>, Vec<(usize, Outcome)>) {
    let reference = plan.runners[0];
    let ref_name = backends[reference].name.clone();
    let base = run(p, &backends[reference]);
    let mut outcomes = vec![(reference, base.clone())];
    let base_data = match &base {
        Outcome::Ran(d) => d.clone(),
        Outcome::Unsupported(why) | Outcome::Failed(why) => {
            let what = format!("the reference failed: {why}");
            return (Some(Mismatch { reference: ref_name.clone(), other: ref_name, what }), outcomes);
        }
    };
    let mut mismatch = None;
    for &i in &plan.runners[1..] {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let out = run(p, &backends[i]);
        let diff = match &out {
            Outcome::Ran(d) => first_difference(p, &base_data, d),
            Outcome::Failed(e) => Some(format!("failed: {e}")),
            Outcome::Unsupported(_) => None,
        };
        outcomes.push((i, out));
        if let (Some(what), None) = (diff, &mismatch) {
            mismatch = Some(Mismatch { reference: ref_name.clone(), other: backends[i].name.clone(), what });
        }
    }
    (mismatch, outcomes)
}

/// A run's counts.
#[derive(Debug, Default)]
pub struct Tally {
    /// Cases generated and run.
    pub cases: u64,
    /// Cases at least two devices ran and compared.
    pub compared: u64,
    /// Per backend: (ran, refused as unsupported).
    pub per_backend: BTreeMap<String, (u64, u64)>,
    /// Per refusal reason (first line), how often.
    pub refusals: BTreeMap<String, u64>,
    /// The failures (seed of the case, the shrunk mismatch).
    pub failures: Vec<(u64, Mismatch)>,
    /// IR instruction kinds seen.
    pub coverage: Coverage,
}

/// Runs cases as `opts` says on `backends` (the first plain emulator of each width is the
/// reference), writing each failure and a summary to `log`.
pub fn run_session(backends: &[Backend], opts: &Options, log: &mut dyn Write) -> io::Result<Tally> {
    run_plans(backends, &plans(backends), opts, log)
}

/// [`run_session`] with the plans given (each case picks one from its seed).
pub fn run_plans(backends: &[Backend], plans: &[Plan], opts: &Options, log: &mut dyn Write) -> io::Result<Tally> {
    let mut tally = Tally::default();
    let start = Instant::now();
    let backend_list = backends.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(",");
    for k in 0.. {
        let seed = match opts.replay {
            Some(s) if k == 0 => s,
            Some(_) => break,
            None => case_seed(opts.seed, k),
        };
        if opts.replay.is_none() && (start.elapsed() >= opts.time || opts.cases.is_some_and(|n| k >= n)) {
            break;
        }
        let (plan, mut tree) = case(plans, seed);
        let p = tree.current();
        let (mismatch, outcomes) = check(&p, &plan, backends, None);
        tally.cases += 1;
        let ran = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Ran(_))).count();
        if ran >= 2 {
            tally.compared += 1;
        }
        for (i, o) in &outcomes {
            let entry = tally.per_backend.entry(backends[*i].name.clone()).or_default();
            match o {
                Outcome::Ran(_) => entry.0 += 1,
                Outcome::Unsupported(why) => {
                    entry.1 += 1;
                    *tally.refusals.entry(reason(why)).or_default() += 1;
                }
                Outcome::Failed(_) => {}
            }
        }
        for (i, o) in &outcomes {
            if matches!(o, Outcome::Ran(_)) {
                tally.coverage.add_program(&p, &backends[*i].device);
            }
        }
        if let Some(m) = mismatch {
            let (small, m) = shrink(&mut tree, &plan, backends, m, opts.shrink_time);
            report(log, backends, &backend_list, seed, &plan, &small, &m)?;
            if let Some(dir) = &opts.save_dir {
                let found = format!("MISMATCH {} vs {}: {}", m.reference, m.other, m.what);
                let case = Case { found, case_seed: Some(seed), known_bug: None, program: small };
                match save(dir, &case) {
                    Ok(path) => writeln!(log, "  saved as a regression case: {}", path.display())?,
                    Err(e) => writeln!(log, "  (saving the regression case in {} failed: {e})", dir.display())?,
                }
            }
            tally.failures.push((seed, m));
        }
    }
    summary(log, &tally, start.elapsed(), opts)?;
    Ok(tally)
}

/// The first line of a refusal, without the kernel and source line (so equal reasons group).
fn reason(why: &str) -> String {
    let line = why.lines().next().unwrap_or(why);
    match line.split_once(": ").and_then(|(_, rest)| rest.split_once(": ")) {
        Some((_, tail)) => tail.to_string(),
        None => line.to_string(),
    }
}

/// Simplifies the program while the same two backends still disagree (or the reference still
/// fails), for at most `budget`.
fn shrink(
    tree: &mut impl ValueTree<Value = Program>,
    plan: &Plan,
    backends: &[Backend],
    first: Mismatch,
    budget: Duration,
) -> (Program, Mismatch) {
    let start = Instant::now();
    let other = backends.iter().position(|b| b.name == first.other);
    let only = other.filter(|&o| o != plan.runners[0]);
    let mut best = (tree.current(), first);
    if !tree.simplify() {
        return best;
    }
    while start.elapsed() < budget {
        let p = tree.current();
        let fails = check(&p, plan, backends, only).0;
        let more = match fails {
            Some(m) => {
                best = (p, m);
                tree.simplify()
            }
            None => tree.complicate(),
        };
        if !more {
            break;
        }
    }
    best
}

fn report(
    log: &mut dyn Write,
    backends: &[Backend],
    backend_list: &str,
    seed: u64,
    plan: &Plan,
    p: &Program,
    m: &Mismatch,
) -> io::Result<()> {
    writeln!(log, "MISMATCH {} vs {}: {}", m.reference, m.other, m.what)?;
    writeln!(
        log,
        "  case seed {seed} ({:?}, block_dim {}, {} blocks, {:?})",
        plan.cfg.sizing, p.shape.block_dim, p.shape.blocks, p.shape.launch
    )?;
    writeln!(log, "  replay: qd difftest --backend {backend_list} --replay {seed}")?;
    let device = backends.iter().find(|b| b.name == m.other).map(|b| &b.device);
    let kernel = crate::build::kernel("difftest", std::sync::Arc::new(p.clone()));
    if let Some(d) = device {
        match d.trace(&kernel) {
            Ok(ir) => {
                writeln!(log, "  the shrunk kernel as traced for {}:", m.other)?;
                for line in qd::ir::print_kernel(&ir).lines() {
                    writeln!(log, "    {line}")?;
                }
            }
            Err(e) => writeln!(log, "  (tracing the shrunk kernel for {} failed: {e})", m.other)?,
        }
    }
    writeln!(log, "  inputs and declarations: {:?}", (&p.params, &p.inputs, &p.vars, &p.accs, &p.owns))?;
    Ok(())
}

fn summary(log: &mut dyn Write, t: &Tally, took: Duration, opts: &Options) -> io::Result<()> {
    writeln!(
        log,
        "difftest: seed {}, {} cases in {:.1} s, {} compared on two devices or more",
        opts.seed,
        t.cases,
        took.as_secs_f64(),
        t.compared
    )?;
    for (name, (ran, refused)) in &t.per_backend {
        writeln!(log, "  {name:<24} ran {ran:>6}   refused (unsupported) {refused:>5}")?;
    }
    for (why, n) in &t.refusals {
        writeln!(log, "  refused {n:>5}x: {why}")?;
    }
    let missing = t.coverage.missing();
    writeln!(
        log,
        "  IR instruction kinds run: {} of {}{}",
        t.coverage.kinds.len(),
        crate::coverage::ALL_KINDS.len(),
        if missing.is_empty() { String::new() } else { format!(" (not run: {})", missing.join(", ")) }
    )?;
    writeln!(log, "{} passed, {} failed", t.cases - t.failures.len() as u64, t.failures.len())
}
