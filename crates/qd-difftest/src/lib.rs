//! Differential testing of qd on random programs (decision D27 in `docs/decisions.md`).
//!
//! A proptest generator ([`gen`]) writes small kernels that are valid by construction: arithmetic on
//! every dtype with constants at the type limits, structured control flow, shuffles, ballots, votes,
//! reductions and scans at every tile size, block barriers under block-uniform control, shared
//! memory, and atomics whose results do not depend on thread order. [`build`] turns a program into a
//! qd kernel through the public front end; [`run`] runs it on a device; [`session`] runs cases from a
//! seed on the emulator at several widths (strict mode) and on every device given, compares every
//! written array bit for bit with the reference emulator, and shrinks a mismatch to a minimal kernel
//! printed as IR with its seed and saved as a regression case ([`regress`]), which
//! `tests/regressions.rs` replays.
//!
//! Results that may legitimately differ between backends are never made: see D27 for the list.
//!
//! ```
//! use qd_difftest::run::Backend;
//! use qd_difftest::session::{run_session, Options};
//! use std::time::Duration;
//!
//! let backends = vec![Backend::open("cpu:sg4").unwrap(), Backend::open("cpu:sg8").unwrap()];
//! let opts = Options { seed: 7, time: Duration::from_secs(60), cases: Some(3), replay: None, shrink_time: Duration::from_secs(10), save_dir: None };
//! let tally = run_session(&backends, &opts, &mut Vec::new()).unwrap();
//! assert_eq!(tally.cases, 3);
//! assert!(tally.failures.is_empty());
//! ```

pub mod build;
pub mod cli;
pub mod coverage;
pub mod dval;
pub mod floats;
pub mod gen;
pub mod program;
pub mod regress;
pub mod run;
pub mod session;
