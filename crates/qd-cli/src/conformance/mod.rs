//! The conformance suite: a table of cases (op × dtype × tile size), each with fresh random inputs
//! from a printed seed and a host reference, run unchanged on every backend.
//!
//! A case a backend cannot run reports [`Outcome::Skip`] with its reason; skips never count as passes.

pub mod block_algos;
pub mod examples;
pub mod grid;
pub mod nv;
pub mod rng;
pub mod subgroup;

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

/// Result of one case: an outcome, or a failure message.
pub type CaseResult = Result<Outcome, String>;

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
    subgroup::register(&mut cases);
    block_algos::register(&mut cases);
    nv::register(&mut cases);
    grid::register(&mut cases);
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

/// Maps any displayable error into a failure message.
pub fn fail<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}
