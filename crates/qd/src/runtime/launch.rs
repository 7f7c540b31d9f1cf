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
/// are the launch's arguments, already checked against the parameters. A bound that cannot be
/// computed is an [`Error::Launch`] saying why and where: the op that divides by zero, or the
/// device-only value (an id, a load, a variable) it depends on, with the user's line.
///
/// ```
/// use qd::prelude::*;
/// // The range a launch would cover, computed on the host as `Device::launch` does.
/// let k = Kernel::range("inner", 32, |k| {
///     let a = k.array::<i32>("a");
///     let pad = k.scalar::<i32>("pad");
///     k.parallel_for(pad, a.len() - pad, |i| a.set(i, 1));
/// });
/// let d = Device::cpu();
/// let ir = d.trace(&k).unwrap();
/// let a = d.zeros::<i32>(10).unwrap();
/// assert_eq!(qd::runtime::range_bounds(&ir, &[a.arg(), Arg::scalar(2i32)]).unwrap(), (2, 8));
/// ```
pub fn range_bounds(k: &Kernel, args: &[Arg]) -> Result<(i32, i32)> {
    // Each top-level value: its bits, or why the host cannot know them.
    let mut vals: HashMap<ValueId, std::result::Result<u64, String>> = HashMap::new();
    for (p, a) in k.params.iter().zip(args) {
        if let (Param::Scalar { value, .. }, Arg::Scalar(_, bits)) = (p, a) {
            vals.insert(*value, Ok(*bits));
        }
    }
    let get = |v: &ValueId, vals: &HashMap<ValueId, std::result::Result<u64, String>>| {
        vals.get(v).cloned().unwrap_or_else(|| Err("a value computed on the device".into()))
    };
    for inst in &k.body.insts {
        let at = |what: &str| format!("`{}` at {} {what}", inst.op_name(), inst.loc);
        let evaluated = |r: std::result::Result<u64, eval::EvalError>| {
            r.map_err(|e| match e {
                eval::EvalError::DivisionByZero => at("divides by zero"),
                eval::EvalError::Unsupported => at("is not defined on its operand types"),
            })
        };
        let (dst, r) = match &inst.kind {
            InstKind::GridStride { begin, end, .. } => {
                let bound = |name: &str, v: &ValueId| {
                    get(v, &vals).map_err(|why| Error::Launch {
                        kernel: k.name.clone(),
                        message: format!(
                            "the range {name} of `parallel_for` at {} cannot be computed on the host: {why}; range \
                             bounds may use constants, scalar parameters, array lengths and arithmetic on them",
                            inst.loc
                        ),
                    })
                };
                let (b, e) = (bound("begin", begin)?, bound("end", end)?);
                return Ok((b as u32 as i32, e as u32 as i32));
            }
            InstKind::Const { dst, value } => (*dst, Ok(value.bits)),
            InstKind::ArrayLen { dst, array: ArrayRef::Param(i) } => {
                let len = match args.get(*i as usize) {
                    Some(Arg::Array(a)) => a.len() as u64,
                    _ => 0,
                };
                (*dst, Ok(len))
            }
            InstKind::Special { dst, reg: Special::BlockDim } => (*dst, Ok(k.block_dim as u64)),
            InstKind::Special { dst, reg: Special::SubgroupSize } => (*dst, Ok(k.subgroup_size as u64)),
            InstKind::Binary { dst, op, a, b } => {
                let r = get(a, &vals).and_then(|x| get(b, &vals).map(|y| (x, y)));
                (*dst, r.and_then(|(x, y)| evaluated(eval::binary(k.dtype(*a), *op, x, y))))
            }
            InstKind::Unary { dst, op, a } => {
                (*dst, get(a, &vals).and_then(|x| evaluated(eval::unary(k.dtype(*a), *op, x))))
            }
            InstKind::Cast { dst, a } => {
                (*dst, get(a, &vals).and_then(|x| evaluated(eval::cast(k.dtype(*a), k.dtype(*dst), x))))
            }
            InstKind::Cmp { dst, op, a, b } => {
                let r = get(a, &vals).and_then(|x| get(b, &vals).map(|y| (x, y)));
                (*dst, r.map(|(x, y)| eval::compare(k.dtype(*a), *op, x, y)))
            }
            InstKind::Select { dst, cond, a, b } => {
                (*dst, get(cond, &vals).and_then(|c| if c & 1 != 0 { get(a, &vals) } else { get(b, &vals) }))
            }
            other => {
                // Thread and block ids, loads, variables, collectives: values only the device has.
                for d in other.defs() {
                    vals.insert(d, Err(at("gives a value that exists only on the device")));
                }
                continue;
            }
        };
        vals.insert(dst, r);
    }
    Err(Error::Launch {
        kernel: k.name.clone(),
        message: "a range kernel must call parallel_for; this one does not".into(),
    })
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
                collective = Some((i.op_name(), i.loc));
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
