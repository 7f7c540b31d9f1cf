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
pub mod runner;
pub mod tour;

// The README's Rust example is compiled and run as a doctest, so it cannot go stale.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
