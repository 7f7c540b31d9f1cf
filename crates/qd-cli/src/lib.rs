//! The `qd` command's library: the conformance suite and its runner, the tour, and `emit`.
//!
//! The binary (`src/main.rs`) only parses the command line; everything it runs lives here so
//! that tests can call it directly.

pub mod bench;
pub mod bench_sort;
pub mod builtin;
pub mod conformance;
pub mod corpus;
pub mod emit;
pub mod guide;
pub mod plot;
pub mod runner;
pub mod tour;

/// `err` with the path it concerns in front (`out/k.ptx: Permission denied`), keeping its kind: a
/// file error the `qd` command prints then says which file.
pub fn io_error_at(path: &std::path::Path, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

// The README's Rust example is compiled and run as a doctest, so it cannot go stale.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
