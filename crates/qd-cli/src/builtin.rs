//! Every built-in kernel, by name: the corpus, the tour's and the conformance suite's kernels and
//! the benchmark kernels. `qd emit` writes them all, and the snapshot tests
//! (`crates/qd-cli/tests/snapshots.rs`) pin each one's IR, PTX and SPIR-V.

use crate::{bench, conformance, corpus, tour};
use qd::prelude::Kernel;
use std::collections::BTreeMap;

/// Each source of built-in kernels with its kernels, in a fixed order.
pub fn sources() -> Vec<(&'static str, Vec<Kernel>)> {
    vec![
        ("corpus", corpus::all()),
        ("tour", tour::kernels()),
        ("conformance", conformance::kernels()),
        ("bench", bench::warp_kernels().into_iter().chain([bench::saxpy()]).collect()),
    ]
}

/// Every built-in kernel, one per name, sorted by name. A name used by two sources is one kernel
/// (the tour runs conformance checks); the test below checks that such kernels are the same.
pub fn kernels() -> Vec<Kernel> {
    let mut by_name = BTreeMap::new();
    for (_, kernels) in sources() {
        for k in kernels {
            by_name.entry(k.name().to_string()).or_insert(k);
        }
    }
    by_name.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use qd::prelude::Device;

    #[test]
    fn a_name_shared_by_two_kernels_means_the_same_kernel() {
        let device = Device::cpu();
        let mut seen: BTreeMap<String, (&str, String)> = BTreeMap::new();
        for (source, kernels) in sources() {
            for k in kernels {
                let ir = device.trace(&k).map(|ir| qd::ir::print_kernel(&ir)).unwrap_or_else(|e| e.to_string());
                if let Some((first, ir0)) = seen.get(k.name()) {
                    assert_eq!(ir0, &ir, "`{}` from {source} differs from the one in {first}", k.name());
                } else {
                    seen.insert(k.name().to_string(), (source, ir));
                }
            }
        }
        assert_eq!(seen.len(), kernels().len());
    }

    #[test]
    fn names_are_file_and_entry_point_names() {
        let kernels = kernels();
        assert!(kernels.len() > 1500, "{} kernels", kernels.len());
        for k in &kernels {
            let n = k.name();
            assert!(n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{n}");
            assert!(n.as_bytes()[0].is_ascii_alphabetic(), "{n}");
        }
    }

    #[test]
    fn every_conformance_case_names_its_kernels() {
        for case in conformance::all_cases() {
            assert!(!case.kernels().is_empty(), "{} names no kernel (Case::launching)", case.id);
        }
    }
}
