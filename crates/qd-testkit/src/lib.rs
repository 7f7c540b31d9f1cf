//! The external validators qd's tests run, found one way and run one way (decision D9 in
//! `docs/decisions.md`).
//!
//! Every test that checks emitted code with a vendor tool goes through this crate: ptxas for PTX,
//! spirv-val for SPIR-V, llc and ld.lld for AMDGPU LLVM IR, and clang with our MSL header for Metal.
//! Each tool is a [`Tool`]: an environment variable (what `scripts/test.sh` exports), then the
//! workspace's git-ignored `.tools/` folder, then `PATH`. A missing tool fails the test with a message
//! naming the tool and the command that installs it; only its opt-out variable (`QD_SKIP_PTXAS=1`,
//! `QD_SKIP_SPIRV_VAL=1`, …) turns that into a skip, printed on stderr.
//!
//! The crate does not depend on `qd`: it takes text and words, so both `qd` and `qd-cli` tests use it.
//!
//! ```no_run
//! // Assemble a PTX module for sm_90, failing the test with ptxas's message if it is rejected.
//! if let Some(ptxas) = qd_testkit::Ptxas::find() {
//!     ptxas.assemble("k", "sm_90", ".version 8.0\n.target sm_90\n.address_size 64\n").unwrap();
//! }
//! ```

mod llvm;
mod msl;
mod parallel;
mod ptxas;
mod scratch;
mod spirv;
mod tool;

pub use llvm::{LdLld, Llc};
pub use msl::MslCheck;
pub use parallel::par_map;
pub use ptxas::Ptxas;
pub use spirv::SpirvVal;
pub use tool::{Missing, Tool, CLANG, LD_LLD, LLC, PTXAS, SPIRV_DIS, SPIRV_VAL, TOOLS};
