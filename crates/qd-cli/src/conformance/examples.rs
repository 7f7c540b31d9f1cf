//! Conformance cases: examples.

use super::Case;

/// Adds this module's cases.
pub fn register(_cases: &mut Vec<Case>) {}
