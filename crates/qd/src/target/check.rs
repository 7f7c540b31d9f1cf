//! The one capability check: every instruction's requirements against the target's answers.

use super::{Feature, Support, Target};
use crate::ir::{Kernel, Param, SrcLoc};
use crate::trace::TraceError;

/// Rejects what `target` cannot compile in `k`: each instruction's
/// [`requirements`](crate::ir::Inst::requirements) that the target answers
/// [`Support::Unsupported`] (or only as a library path), scalar parameters of types it lacks, and
/// shared memory over its limit. The error names the op, the target, the feature, why, and the
/// user's line, and carries the feature in [`TraceError::unsupported`]. `caller` locates
/// module-level problems (parameters, shared memory of a kernel with no instructions).
pub fn check(k: &Kernel, target: &Target, caller: SrcLoc) -> Result<(), TraceError> {
    let mut answers: rustc_hash::FxHashMap<Feature, Support> = Default::default();
    let mut ask = |f: Feature| answers.entry(f).or_insert_with(|| target.support(f)).clone();
    let refuse = |op: String, loc: SrcLoc, feature: Feature, support: Support, context: String| {
        let why = match support {
            Support::Unsupported { why } => why,
            Support::Polyfill { how } => {
                format!("{} provides it only as a library path ({})", target.name(), how.cost())
            }
            Support::Native => unreachable!("only refusals are reported"),
        };
        TraceError {
            kernel: k.name.clone(),
            op,
            loc,
            message: format!("{context}{feature} is not supported on {}: {why}", target.name()),
            unsupported: Some(feature),
        }
    };
    let arrays = k.params.iter().filter(|p| matches!(p, Param::Array { .. })).count();
    if let Some(max) = target.limits().max_array_params.filter(|&max| arrays > max as usize) {
        return Err(TraceError {
            kernel: k.name.clone(),
            op: "array".into(),
            loc: caller,
            message: format!("the kernel has {arrays} array parameters; {} takes at most {max}", target.name()),
            unsupported: None,
        });
    }
    for p in &k.params {
        if let Param::Scalar { dtype, name, .. } = p {
            let f = Feature::Values(*dtype);
            let s = ask(f);
            if !s.is_lowerable() {
                return Err(refuse("param".into(), caller, f, s, format!("parameter `{name}`: ")));
            }
        }
    }
    let cell = target.limits().shared_cell_bytes as usize;
    let bytes: usize = k.shared.iter().map(|s| s.dtype.size_bytes().max(cell) * s.len as usize).sum();
    if bytes > 0 {
        let f = Feature::SharedMemory { bytes: u32::try_from(bytes).unwrap_or(u32::MAX) };
        if !ask(f).is_available() {
            // Blame the array whose allocation crosses the limit (the last one if the limit is
            // a feature answer rather than the byte count).
            let max = target.limits().max_shared_bytes as usize;
            let mut sum = 0usize;
            let culprit = k
                .shared
                .iter()
                .find(|s| {
                    sum += s.dtype.size_bytes().max(cell) * s.len as usize;
                    sum > max
                })
                .or(k.shared.last());
            let last = culprit.map(|s| s.name.as_str()).unwrap_or_default();
            let cells = if cell > 1 {
                format!(" (elements below {} bits take a {cell}-byte cell)", cell * 8)
            } else {
                String::new()
            };
            return Err(TraceError {
                kernel: k.name.clone(),
                op: "block.shared_array".into(),
                loc: culprit.map_or(caller, |s| s.loc),
                message: format!(
                    "the kernel's shared arrays take {bytes} bytes{cells} (from `{last}` on), over the {} bytes a block \
                     may use on {}",
                    target.limits().max_shared_bytes,
                    target.name()
                ),
                unsupported: Some(f),
            });
        }
    }
    let mut result = Ok(());
    k.body.walk(&mut |inst| {
        if result.is_err() {
            return;
        }
        for f in inst.requirements(k) {
            let s = ask(f);
            if !s.is_lowerable() {
                result = Err(refuse(inst.op_name(), inst.loc, f, s, String::new()));
                return;
            }
        }
    });
    result
}
