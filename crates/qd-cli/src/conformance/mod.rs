//! The conformance suite: a table of cases (op × dtype × tile size), each with fresh random inputs
//! from a printed seed and a host reference, run unchanged on every backend.
//!
//! A case is skipped only when the capability check refused one of its kernels for the device's
//! target ([`CaseError::Unsupported`], with the check's reason): cases never test a device's name
//! or capabilities themselves. Skips never count as passes.

pub mod algorithms;
pub mod atomic_extra;
pub mod block_algos;
pub mod examples;
pub mod flags;
pub mod grid;
pub mod nv;
pub mod ranges;
pub mod rng;
pub mod shaped;
pub mod sort;
pub mod subgroup;
pub mod vectors;

pub use rng::Rng;

use qd::prelude::{Device, Kernel};

/// What a case concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The device matched the host reference.
    Pass,
    /// The case cannot run on this device; the reason says why.
    Skip(String),
}

/// Why a case did not pass.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseError {
    /// A wrong result, or an error that is not a missing capability: the case failed.
    Failed(String),
    /// The device's target lacks a feature or limit one of the case's kernels needs; the text is
    /// the capability check's reason. The case is skipped.
    Unsupported(String),
}

impl From<String> for CaseError {
    fn from(message: String) -> CaseError {
        CaseError::Failed(message)
    }
}

impl From<&str> for CaseError {
    fn from(message: &str) -> CaseError {
        CaseError::Failed(message.to_string())
    }
}

impl From<qd::trace::TraceError> for CaseError {
    fn from(e: qd::trace::TraceError) -> CaseError {
        match e.unsupported {
            Some(_) => CaseError::Unsupported(e.message),
            None => CaseError::Failed(e.to_string()),
        }
    }
}

impl From<qd::runtime::Error> for CaseError {
    fn from(e: qd::runtime::Error) -> CaseError {
        match e {
            qd::runtime::Error::Trace(t) => t.into(),
            other => CaseError::Failed(other.to_string()),
        }
    }
}

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaseError::Failed(m) => f.write_str(m),
            CaseError::Unsupported(m) => write!(f, "unsupported: {m}"),
        }
    }
}

/// Result of one case: an outcome, or why it did not pass.
pub type CaseResult = Result<Outcome, CaseError>;

/// The body of a case: runs it on a device with a random stream.
pub type CaseFn = Box<dyn Fn(&Device, &mut Rng) -> CaseResult + Send + Sync>;

/// Builds the kernels a case launches (see [`Case::launching`]).
pub type KernelsFn = Box<dyn Fn() -> Vec<Kernel> + Send + Sync>;

/// One conformance case.
pub struct Case {
    /// Stable id, e.g. `subgroup/reduce_add_tiled/i32/L3`.
    pub id: String,
    /// Runs the case on a device with a random stream.
    pub run: CaseFn,
    /// The kernels the case launches, by name (see [`Case::launching`]).
    kernels: Option<KernelsFn>,
}

impl Case {
    /// A case from an id and a closure.
    pub fn new(id: impl Into<String>, run: impl Fn(&Device, &mut Rng) -> CaseResult + Send + Sync + 'static) -> Case {
        Case { id: id.into(), run: Box::new(run), kernels: None }
    }

    /// Names the kernels this case launches, built by the same constructors its run uses; where
    /// the run draws a compile-time constant at random (a shuffle offset, say) or sizes the block
    /// from the device, these use fixed values for a 32-lane subgroup. `qd emit` writes them and
    /// the snapshot tests pin their code, so every kernel the suite runs is reachable by name.
    pub fn launching(mut self, kernels: impl Fn() -> Vec<Kernel> + Send + Sync + 'static) -> Case {
        self.kernels = Some(Box::new(kernels));
        self
    }

    /// The kernels of [`Case::launching`] (none if the case did not name them).
    pub fn kernels(&self) -> Vec<Kernel> {
        self.kernels.as_ref().map(|f| f()).unwrap_or_default()
    }
}

/// Every case of the suite, in a stable order.
pub fn all_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    examples::register(&mut cases);
    atomic_extra::register(&mut cases);
    shaped::register(&mut cases);
    vectors::register(&mut cases);
    subgroup::register(&mut cases);
    block_algos::register(&mut cases);
    nv::register(&mut cases);
    grid::register(&mut cases);
    ranges::register(&mut cases);
    algorithms::register(&mut cases);
    sort::register(&mut cases);
    cases
}

/// Every kernel the suite launches, case by case (see [`Case::launching`]).
pub fn kernels() -> Vec<Kernel> {
    all_cases().iter().flat_map(Case::kernels).collect()
}

/// Compares two slices exactly, naming the first mismatch.
pub fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] = {:?}, expected {:?}", got[i], want[i])),
    }
}

/// Maps an error into a [`CaseError`]: a trace error the capability check raised is
/// [`CaseError::Unsupported`], anything else a failure.
pub fn fail<E: Into<CaseError>>(e: E) -> CaseError {
    e.into()
}
