//! The repository's own documents stay in step with the code: every decision the code cites (`D1`,
//! `D5`, …) has its section in `docs/decisions.md`, ARCHITECTURE.md points at the decisions and at
//! the GPU baseline, `docs/support.md` is the model's table, and the layering rule holds (no code
//! outside the backends, the runtime and the capability layer names the backend kind).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every file under `dir` with one of `exts`.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = entry.unwrap().path();
        if p.is_dir() {
            // Snapshots are emitted code, not prose that cites decisions.
            if p.file_name().is_some_and(|n| n != "out") {
                files(&p, exts, out);
            }
        } else if p.extension().and_then(|e| e.to_str()).is_some_and(|e| exts.contains(&e)) {
            out.push(p);
        }
    }
}

/// The decision numbers `text` cites: `D` plus 1–2 digits, not part of a longer word.
fn cited(text: &str) -> BTreeSet<u32> {
    let b = text.as_bytes();
    let mut out = BTreeSet::new();
    for i in 0..b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i] == b'D' && word_start {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let end = i + 1 + digits;
            let word_end = end == b.len() || !(b[end].is_ascii_alphanumeric() || b[end] == b'_');
            if (1..=2).contains(&digits) && word_end {
                out.insert(text[i + 1..end].parse().unwrap());
            }
        }
    }
    out
}

#[test]
fn every_cited_decision_has_a_section() {
    let decisions = read("docs/decisions.md");
    let mut sources = Vec::new();
    for dir in ["crates", "scripts"] {
        files(&root().join(dir), &["rs", "sh", "py"], &mut sources);
    }
    assert!(sources.len() > 50, "{} source files", sources.len());
    let mut missing = Vec::new();
    for f in &sources {
        let text = std::fs::read_to_string(f).unwrap();
        for d in cited(&text) {
            if !decisions.contains(&format!("\n## D{d} ")) {
                missing.push(format!("{}: D{d}", f.display()));
            }
        }
    }
    assert!(missing.is_empty(), "decisions cited but not in docs/decisions.md:\n{}", missing.join("\n"));
    for d in 1..=14 {
        assert!(decisions.contains(&format!("\n## D{d} ")), "docs/decisions.md lacks D{d}");
    }
}

#[test]
fn the_citation_scanner_finds_decisions_only() {
    assert_eq!(cited("per D1, (D12) and D5: not DType, D100 or AD3"), BTreeSet::from([1, 5, 12]));
}

#[test]
fn architecture_points_at_the_decisions_and_the_baseline() {
    let arch = read("ARCHITECTURE.md");
    assert!(arch.contains("docs/decisions.md"), "ARCHITECTURE.md must point at docs/decisions.md");
    let baseline = arch
        .lines()
        .find_map(|l| l.split('`').find(|w| w.starts_with("docs/gpu-records/") && w.contains("baseline")))
        .expect("ARCHITECTURE.md names the baseline record (a `docs/gpu-records/...baseline...` path)");
    assert!(root().join(baseline).exists(), "{baseline} does not exist");
}

/// `docs/support.md` is what `qd info --support` prints from the capability model.
#[test]
fn the_support_table_is_generated_from_the_model() {
    let committed = read("docs/support.md");
    let generated = qd::target::table::markdown(None);
    assert!(
        committed == generated,
        "docs/support.md differs from the model; regenerate it with `cargo run -p qd-cli -- info --support > docs/support.md` and review the diff"
    );
}

/// The backend kind is crate-private to `backend/`, `runtime/` and the capability layer: library
/// code (`simt/`, `trace/`, `ir/`, `nv.rs`) and the tools ask the target for features and limits.
#[test]
fn only_the_backends_the_runtime_and_the_capability_layer_name_the_backend_kind() {
    let root = root();
    let mut offenders = Vec::new();
    let mut stack = vec![root.join("crates/qd/src"), root.join("crates/qd-cli/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let allowed = ["crates/qd/src/backend/", "crates/qd/src/runtime/", "crates/qd/src/target/"];
            if allowed.iter().any(|a| rel.starts_with(a)) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("BackendKind") || text.contains(".backend ==") {
                offenders.push(rel);
            }
        }
    }
    assert!(offenders.is_empty(), "these files test which backend a target is: {offenders:?}");
}

/// A backend is registered in two files (D31): its code generator in `backend/mod.rs` (a `pub mod`
/// line and an entry of `EMITTERS`) and its runtime in `runtime/mod.rs` (a `mod` line and an entry
/// of `RUNTIMES`). Everything else (`qd emit`, `qd info`, `Device::from_name`, the device list)
/// reads those tables, so no other code names a backend's module or constructor. The backends'
/// own folders and the capability layer are exempt; comments are not code.
#[test]
fn a_backend_is_registered_in_two_files() {
    let root = root();
    let folders = |dir: &str| -> Vec<String> {
        std::fs::read_dir(root.join(dir))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    // A backend is a folder the registries list (`<name>::EMITTER`, `<name>::FAMILY`); other folders
    // (the emulator, always built with its own options; `runtime/device/`) are shared code.
    let registries = ["crates/qd/src/backend/mod.rs", "crates/qd/src/runtime/mod.rs"];
    let registered = format!("{}{}", read(registries[0]), read(registries[1]));
    let mut names: Vec<String> = folders("crates/qd/src/backend");
    names.extend(folders("crates/qd/src/runtime"));
    names.sort();
    names.dedup();
    names.retain(|n| registered.contains(&format!("{n}::EMITTER")) || registered.contains(&format!("{n}::FAMILY")));
    assert!(names.len() >= 4, "expected the registered backend folders, found {names:?}");

    let exempt = ["crates/qd/src/backend/", "crates/qd/src/runtime/", "crates/qd/src/target/"];
    let mut sources = Vec::new();
    files(&root.join("crates/qd/src"), &["rs"], &mut sources);
    files(&root.join("crates/qd-cli/src"), &["rs"], &mut sources);
    let mut offenders = Vec::new();
    for path in sources {
        let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let own_folder = exempt.iter().any(|e| rel.starts_with(e) && rel[e.len()..].contains('/'));
        if registries.contains(&rel.as_str()) || own_folder || rel.starts_with("crates/qd/src/target/") {
            continue;
        }
        for (n, line) in read(&rel).lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in &names {
                let module_path = line.match_indices(&format!("{name}::")).any(|(at, _)| {
                    at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric() && line.as_bytes()[at - 1] != b'_'
                });
                if module_path || line.contains(&format!("Device::{name}(")) {
                    offenders.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "code outside the registries names a backend:\n{}", offenders.join("\n"));
}

/// Each family page of the guide carries its "What's available" table as `qd info --guide-tables`
/// generates it from the capability model (every op traced for every column's target).
#[test]
fn the_guide_tables_are_generated_from_the_model() {
    let mut stale = Vec::new();
    for (family, file, _) in qd_cli::guide::families() {
        let page = read(&format!("docs/guide/{file}"));
        let generated = qd_cli::guide::splice(&page, family, &qd_cli::guide::table(family))
            .unwrap_or_else(|e| panic!("docs/guide/{file}: {e}"));
        if generated != page {
            stale.push(format!("docs/guide/{file}"));
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from the capability model; regenerate with `cargo run -p qd-cli -- info --guide-tables docs/guide` and review the diff",
        stale.join(", ")
    );
}

/// The guide's relative links (to other pages, the source, the records) point at files that exist,
/// so the pages read on GitHub as they do in rustdoc.
#[test]
fn the_guide_links_to_files_that_exist() {
    let dir = root().join("docs/guide");
    let mut pages = Vec::new();
    files(&dir, &["md"], &mut pages);
    assert!(pages.len() >= 12, "{} guide pages", pages.len());
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        // Reference definitions (`[label]: target`) and inline links (`](target)`).
        let defs = text.lines().filter_map(|l| l.strip_prefix('[')?.split_once("]: ").map(|(_, t)| t));
        let inline = text.split("](").skip(1).filter_map(|s| s.split(')').next());
        for target in defs.chain(inline) {
            let path = target.split('#').next().unwrap().trim();
            if path.is_empty() || path.contains("://") || path.contains("::") {
                continue; // a URL or an intra-doc path (rustdoc checks those)
            }
            if !page.parent().unwrap().join(path).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "guide links to missing files:\n{}", broken.join("\n"));
}

/// Every reference label a guide page defines (for GitHub: a relative path) also has its rustdoc
/// target in `crates/qd/src/guide/links.md`, which `qd::guide` puts before each page so that it
/// wins there; without it rustdoc would link to the Markdown file's path, which does not exist in
/// the generated documentation (and rustdoc does not warn about it).
#[test]
fn every_guide_link_label_has_a_rustdoc_target() {
    let links = read("crates/qd/src/guide/links.md");
    let rustdoc: BTreeSet<&str> = links.lines().filter_map(|l| l.split_once("]: ").map(|(label, _)| label)).collect();
    let mut pages = Vec::new();
    files(&root().join("docs/guide"), &["md"], &mut pages);
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for label in text.lines().filter(|l| l.starts_with('[')).filter_map(|l| l.split_once("]: ").map(|(l, _)| l)) {
            if !rustdoc.contains(label) {
                missing.push(format!("{}: {label}]", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "labels without a rustdoc target in crates/qd/src/guide/links.md:\n{}",
        missing.join("\n")
    );
}
