//! The differential tester tests itself (D27): the generator reaches every IR instruction kind and
//! every op family of D27's list, its programs pass every emitter's validator, the emulator widths
//! agree on them, and a real mismatch is caught, shrunk and reported. The long runs (lavapipe in
//! CI, CUDA and NVIDIA Vulkan in the GPU record) are `qd difftest`.

mod common;

use common::{kernel, Validators};
use proptest::strategy::ValueTree;
use qd::backend::amdgpu::AmdgpuArch;
use qd::backend::spirv::SpirvCaps;
use qd::backend::Target;
use qd::ir::DType;
use qd_difftest::coverage::{families, Coverage};
use qd_difftest::gen::GenConfig;
use qd_difftest::program::{Program, Shape, Sizing, VALUE_TYPES};
use qd_difftest::regress::{load_dir, replay, Case, Verdict};
use qd_difftest::run::Backend;
use qd_difftest::session::{case, case_seed, plans, run_plans, run_session, Options, Plan, EMULATORS};
use std::collections::BTreeSet;
use std::time::Duration;

fn emulators() -> Vec<Backend> {
    EMULATORS.iter().map(|n| Backend::open(n).expect("the emulator opens")).collect()
}

/// The programs of cases `0..n` of a run seeded `seed` on the emulators, with their plans.
fn programs(seed: u64, n: u64) -> Vec<(Plan, Program)> {
    let backends = emulators();
    let plans = plans(&backends);
    (0..n)
        .map(|k| {
            let (plan, tree) = case(&plans, case_seed(seed, k));
            (plan, tree.current())
        })
        .collect()
}

/// The targets whose library paths and lowerings a program of `sizing` meets: the emulator at its
/// widths, Metal, CUDA, AMDGPU and Vulkan (lavapipe's features) where their widths fit.
fn targets(sizing: Sizing) -> Vec<Target> {
    let mut t: Vec<Target> = [4, 8, 16, 32, 64].into_iter().filter(|&w| sizing.runs_at(w)).map(Target::cpu).collect();
    if sizing.runs_at(32) {
        t.extend([Target::metal(), Target::cuda(80), Target::cuda(90)]);
    }
    if sizing.runs_at(64) {
        t.push(Target::amdgpu(AmdgpuArch::Gfx942));
    }
    t.extend([8, 32].into_iter().filter(|&w| sizing.runs_at(w)).map(|w| Target::vulkan(w, &SpirvCaps::lavapipe())));
    t
}

/// D27's families: every one must appear in the first 1000 programs of a fixed seed.
fn expected_families() -> Vec<String> {
    let mut f: Vec<String> = Vec::new();
    let numeric: Vec<DType> = VALUE_TYPES.iter().copied().filter(|d| *d != DType::Bool).collect();
    for d in &numeric {
        for op in ["add", "sub", "mul", "min", "max"] {
            f.push(format!("binary.{op}.{d}"));
        }
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            f.push(format!("cmp.{op}.{d}"));
        }
        for from in VALUE_TYPES.iter().filter(|t| *t != d) {
            f.push(format!("cast.{from}.{d}"));
        }
        if d.is_int() {
            for op in ["div", "rem", "and", "or", "xor", "shl", "shr"] {
                f.push(format!("binary.{op}.{d}"));
            }
            f.push(format!("unary.not.{d}"));
            f.push(format!("const.{d}.max"));
            f.push(format!("const.{d}.min"));
        }
        if d.is_signed_int() || d.is_float() {
            f.push(format!("unary.neg.{d}"));
            f.push(format!("unary.abs.{d}"));
        }
        if d.is_float() {
            f.extend([format!("fma.{d}"), format!("float_div.{d}"), format!("sqrt.{d}")]);
        }
        if d.bits() < 64 || d.is_float() {
            f.push(format!("own.rmw(add).{d}"));
        }
    }
    for d in ["i32", "u32", "i64", "u64"] {
        f.push(format!("unary.popc.{d}"));
        f.push(format!("unary.clz.{d}"));
    }
    for op in ["and", "or", "xor"] {
        f.push(format!("binary.{op}.bool"));
    }
    for op in ["add", "mul", "min", "max", "and", "or", "xor", "exchange"] {
        f.push(format!("own.rmw({op}).i32"));
    }
    f.extend(
        ["own.sub.i32", "own.cas.i32", "own.loadacquire.i32", "own.rmw(mul).f32", "own.rmw(exchange).f64"]
            .map(String::from),
    );
    for t in [1, 2, 4, 8, 16, 32, 64] {
        for fam in ["shuffle", "ballot", "vote", "reduce", "scan", "sort"] {
            f.push(format!("{fam}.tile{t}"));
        }
    }
    for m in ["idx", "up", "down", "xor"] {
        f.push(format!("shuffle.{m}"));
    }
    for op in ["add", "min", "max"] {
        for form in ["lane0", "all", "segmented"] {
            f.push(format!("reduce.{form}.{op}"));
        }
        for form in ["reduce", "reduceall", "inclusive", "exclusive"] {
            f.push(format!("block.{form}.{op}"));
        }
    }
    for op in ["add", "mul", "min", "max", "and", "or", "xor"] {
        f.push(format!("scan.inclusive.{op}"));
        f.push(format!("scan.exclusive.{op}"));
        f.push(format!("shared.atomic_{op}"));
        f.push(format!("global.atomic_{op}.i32"));
    }
    f.extend(
        ["global.atomic_add.f32", "global.atomic_max.f64", "global.atomic_or.i8", "global.atomic_add.u16"]
            .map(String::from),
    );
    for s in ["index", "threadidx", "blockidx", "blockdim", "griddim", "globalthreadidx", "lane"] {
        f.push(format!("special.{s}"));
    }
    f.extend(
        [
            "broadcast",
            "elect",
            "vote.all",
            "vote.any",
            "vote.equal",
            "block.vote.all",
            "block.vote.any",
            "block.vote.count",
            "shared.swap",
            "local_array",
            "if",
            "loop",
            "break",
            "continue",
            "return",
            "explicit",
            "range.near_i32_max",
            "range.negative",
            "block.sync",
            "subgroup.sync",
            "fence.subgroup",
            "fence.block",
            "fence.device",
            "load.volatile",
            "store.volatile",
            "store.release",
            "bit_cast",
        ]
        .map(String::from),
    );
    f
}

#[test]
fn a_thousand_programs_reach_every_instruction_kind_and_every_family() {
    let mut coverage = Coverage::default();
    let mut seen = BTreeSet::new();
    let all = programs(27, 1000);
    for (j, (plan, p)) in all.into_iter().enumerate() {
        seen.extend(families(&p));
        // One target per program, in turn (tracing all of them would take minutes in a debug
        // build). A target may refuse a program (f64 on Metal...): the others still count.
        // Metal's profile (the one-instruction subgroup reductions) and CUDA's (the one-instruction
        // votes) as well, in turn, for the programs they can run.
        let targets = targets(plan.cfg.sizing);
        let mut these = vec![targets[j % targets.len()].clone()];
        if plan.cfg.sizing.runs_at(32) {
            these.push(if j % 2 == 0 { Target::metal() } else { Target::cuda(80) });
        }
        let k = kernel(&p);
        for target in &these {
            if let Ok(mut ir) = k.trace(target) {
                qd::target::legalize_atomics(&mut ir, target);
                coverage.add_kernel(&ir);
            }
        }
    }
    assert_eq!(coverage.missing(), Vec::<&str>::new(), "IR instruction kinds no program reached");
    let missing: Vec<String> = expected_families().into_iter().filter(|f| !seen.contains(f)).collect();
    assert!(missing.is_empty(), "op families no program reached: {missing:?}");
}

/// Emits a program for every target it fits and runs the target's validator (ptxas, spirv-val,
/// the MSL check, llc + ld.lld), where the tool is present (D9).
#[test]
fn generated_programs_pass_every_emitter_and_validator() {
    let tools = Validators::find();
    let cases = programs(2027, 24);
    let results = qd_testkit::par_map(&cases, |(plan, p)| tools.check(p, plan.cfg.sizing));
    let mut total = 0;
    for (r, (_, p)) in results.into_iter().zip(&cases) {
        match r {
            Ok(n) => total += n,
            Err(e) => panic!("{e}\nthe program: {p:?}"),
        }
    }
    assert!(total >= cases.len(), "only {total} modules emitted for {} programs", cases.len());
}

#[test]
fn the_emulator_widths_and_worn_targets_agree_on_random_programs() {
    let backends = emulators();
    let opts = Options {
        seed: 1,
        time: Duration::from_secs(600),
        cases: Some(8),
        replay: None,
        shrink_time: Duration::from_secs(60),
        save_dir: None,
    };
    let mut log = Vec::new();
    let tally = run_session(&backends, &opts, &mut log).unwrap();
    let log = String::from_utf8_lossy(&log);
    assert!(tally.failures.is_empty(), "{log}");
    assert_eq!(tally.cases, 8);
    assert!(tally.compared >= 5, "{log}");
}

/// A program written for 8-lane subgroups (raw lane ids, broadcasts) run at 16 lanes too must
/// disagree: the runner catches it, shrinks it, prints the seed and the IR, and saves the shrunk
/// program, which replays as the same disagreement.
#[test]
fn a_mismatch_is_caught_shrunk_reported_and_saved() {
    let backends = vec![Backend::open("cpu:sg8").unwrap(), Backend::open("cpu:sg16").unwrap()];
    let wrong = Plan { cfg: GenConfig { sizing: Sizing::Exact { width: 8 }, block_multiple: 16 }, runners: vec![0, 1] };
    let dir = std::env::temp_dir().join(format!("qd-difftest-saved-{}", std::process::id()));
    let opts = Options {
        seed: 5,
        time: Duration::from_secs(600),
        cases: Some(30),
        replay: None,
        shrink_time: Duration::from_secs(10),
        save_dir: Some(dir.clone()),
    };
    let mut log = Vec::new();
    let tally = run_plans(&backends, &[wrong], &opts, &mut log).unwrap();
    let log = String::from_utf8_lossy(&log);
    assert!(!tally.failures.is_empty(), "no mismatch found:\n{log}");
    assert!(log.contains("MISMATCH cpu:sg8 vs cpu:sg16"), "{log}");
    assert!(log.contains("replay: qd difftest --backend cpu:sg8,cpu:sg16 --replay"), "{log}");
    assert!(log.contains("kernel difftest"), "no IR printed:\n{log}");
    assert!(log.contains("passed, ") && log.contains(" failed"), "{log}");
    assert!(log.contains("saved as a regression case"), "{log}");

    let saved = load_dir(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(saved.len(), tally.failures.len());
    let (_, case) = &saved[0];
    assert_eq!(case.case_seed, Some(tally.failures[0].0));
    assert!(case.found.starts_with("MISMATCH cpu:sg8 vs cpu:sg16"), "{}", case.found);
    // The saved program is exact at 8 lanes: replayed as written (no plan), only cpu:sg8 runs it.
    assert_eq!(replay(case, &backends).unwrap(), vec![("cpu:sg8".to_string(), Verdict::Agrees)]);
    // Run at 16 lanes anyway (what the planted plan did), it still disagrees.
    let wide = Case {
        program: Program {
            shape: Shape { sizing: Sizing::Portable { log2_tile: 0 }, ..case.program.shape },
            ..case.program.clone()
        },
        ..case.clone()
    };
    let verdicts = replay(&wide, &backends).unwrap();
    assert!(matches!(verdicts[1], (ref d, Verdict::Differs(_)) if d == "cpu:sg16"), "{verdicts:?}");
}
