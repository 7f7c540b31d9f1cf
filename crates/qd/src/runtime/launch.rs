//! What every launch shares: the argument checks, the launch geometry of range kernels (D1: bounds
//! evaluated on the host, grid capped, grid-stride past it), and scalar widths at the kernel ABI.

use super::{Arg, Error, Result};
use crate::ir::{eval, ArrayRef, InstKind, Kernel, Param, Special, ValueId};
use std::collections::HashMap;

/// Most blocks a range kernel launches; past it, threads loop grid-stride (documented in D1).
pub const RANGE_GRID_CAP: u32 = 65_535;

/// Evaluates the range bounds `(begin, end)` of a range kernel on the host.
///
/// The bounds may use constants, scalar parameters, array lengths and arithmetic on them. `args`
/// are the launch's arguments, already checked against the parameters.
pub fn range_bounds(k: &Kernel, args: &[Arg]) -> Result<(i32, i32)> {
    let mut vals: HashMap<ValueId, u64> = HashMap::new();
    for (p, a) in k.params.iter().zip(args) {
        if let (Param::Scalar { value, .. }, Arg::Scalar(_, bits)) = (p, a) {
            vals.insert(*value, *bits);
        }
    }
    let bad = |what: String| Error::Launch {
        kernel: k.name.clone(),
        message: format!(
            "range bounds must be computable on the host (constants, scalar parameters, array lengths): {what}"
        ),
    };
    for inst in &k.body.insts {
        let get = |v: &ValueId, vals: &HashMap<ValueId, u64>| vals.get(v).copied();
        let (dst, r) = match &inst.kind {
            InstKind::GridStride { begin, end, .. } => {
                let b = get(begin, &vals).ok_or_else(|| bad("begin".into()))?;
                let e = get(end, &vals).ok_or_else(|| bad("end".into()))?;
                return Ok((b as u32 as i32, e as u32 as i32));
            }
            InstKind::Const { dst, value } => (*dst, Some(value.bits)),
            InstKind::ArrayLen { dst, array: ArrayRef::Param(i) } => {
                let len = match args.get(*i as usize) {
                    Some(Arg::Array(a)) => a.len() as u64,
                    _ => 0,
                };
                (*dst, Some(len))
            }
            InstKind::Special { dst, reg: Special::BlockDim } => (*dst, Some(k.block_dim as u64)),
            InstKind::Special { dst, reg: Special::SubgroupSize } => (*dst, Some(k.subgroup_size as u64)),
            InstKind::Binary { dst, op, a, b } => {
                let r = match (get(a, &vals), get(b, &vals)) {
                    (Some(x), Some(y)) => eval::binary(k.dtype(*a), *op, x, y).ok(),
                    _ => None,
                };
                (*dst, r)
            }
            InstKind::Unary { dst, op, a } => (*dst, get(a, &vals).and_then(|x| eval::unary(k.dtype(*a), *op, x).ok())),
            InstKind::Cast { dst, a } => {
                (*dst, get(a, &vals).and_then(|x| eval::cast(k.dtype(*a), k.dtype(*dst), x).ok()))
            }
            InstKind::Cmp { dst, op, a, b } => {
                let r = match (get(a, &vals), get(b, &vals)) {
                    (Some(x), Some(y)) => Some(eval::compare(k.dtype(*a), *op, x, y)),
                    _ => None,
                };
                (*dst, r)
            }
            InstKind::Select { dst, cond, a, b } => {
                let r = get(cond, &vals).and_then(|c| if c & 1 != 0 { get(a, &vals) } else { get(b, &vals) });
                (*dst, r)
            }
            _ => continue,
        };
        if let Some(r) = r {
            vals.insert(dst, r);
        }
    }
    Err(bad("the kernel has no parallel_for".into()))
}

/// Blocks for a range kernel, enforcing D1's `n % block_dim == 0` when the body uses collectives.
pub(super) fn range_grid(k: &Kernel, args: &[Arg]) -> Result<u32> {
    let (begin, end) = range_bounds(k, args)?;
    let n = (end as i64 - begin as i64).max(0) as u64;
    if n == 0 {
        return Ok(0);
    }
    let bd = k.block_dim as u64;
    if !n.is_multiple_of(bd) {
        let mut collective = None;
        k.body.walk(&mut |i| {
            if collective.is_none() && (i.kind.is_subgroup_collective() || i.kind.is_block_barrier()) {
                collective = Some((i.kind.mnemonic(), i.loc));
            }
        });
        if let Some((op, loc)) = collective {
            return Err(Error::Launch {
                kernel: k.name.clone(),
                message: format!(
                    "the range has {n} iterations, not a multiple of block_dim {bd}, but `{op}` at {loc} needs every lane of its block (D1)"
                ),
            });
        }
    }
    Ok(n.div_ceil(bd).min(RANGE_GRID_CAP as u64) as u32)
}

/// Arguments against parameters: count, array or scalar, dtype. The same on every backend.
pub(super) fn check_args(k: &crate::ir::Kernel, args: &[Arg]) -> Result<()> {
    if args.len() != k.params.len() {
        return Err(Error::Launch {
            kernel: k.name.clone(),
            message: format!("expects {} arguments ({}), got {}", k.params.len(), param_list(k), args.len()),
        });
    }
    for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
        let err = |message: String| Error::Argument {
            kernel: k.name.clone(),
            index: i,
            param: p.name().to_string(),
            message,
        };
        match (p, a) {
            (crate::ir::Param::Array { dtype, .. }, Arg::Array(h)) => {
                if h.dtype() != *dtype {
                    return Err(err(format!("expects an array of {dtype}, got an array of {}", h.dtype())));
                }
            }
            (crate::ir::Param::Scalar { dtype, .. }, Arg::Scalar(d, _)) => {
                if d != dtype {
                    return Err(err(format!("expects a {dtype} scalar, got {d}")));
                }
            }
            (crate::ir::Param::Array { dtype, .. }, Arg::Scalar(d, _)) => {
                return Err(err(format!("expects an array of {dtype}, got a {d} scalar")));
            }
            (crate::ir::Param::Scalar { dtype, .. }, Arg::Array(h)) => {
                return Err(err(format!("expects a {dtype} scalar, got an array of {}", h.dtype())));
            }
        }
    }
    Ok(())
}

fn param_list(k: &crate::ir::Kernel) -> String {
    k.params.iter().map(|p| format!("{}: {}", p.name(), p.dtype())).collect::<Vec<_>>().join(", ")
}

/// A scalar argument's bits as a kernel receives them: masked to the dtype's width (bool is 0/1);
/// `None` for a width no scalar parameter has (b128).
#[cfg(any(feature = "cuda", feature = "vulkan"))]
pub(super) fn scalar_slot(dtype: crate::ir::DType, bits: u64) -> Option<u64> {
    match dtype.bits() {
        1 => Some(bits & 1),
        64 => Some(bits),
        w if w < 64 => Some(bits & ((1u64 << w) - 1)),
        _ => None,
    }
}
