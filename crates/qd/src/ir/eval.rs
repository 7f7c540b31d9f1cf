//! The reference semantics of every arithmetic op (D5), on raw bits.
//!
//! Values are u64 bit patterns zero-extended from their width. The CPU emulator, the host-side
//! evaluation of launch bounds and constant folding all use these functions, so the meaning of an op
//! is written once.

use super::inst::{BinOp, CmpOp, UnOp};
use super::types::DType;
use crate::trace::{f16_bits_to_f32, f32_to_f16_bits, BF16};

/// Why an op has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// The op is not defined on this type.
    Unsupported,
}

fn mask(d: DType) -> u64 {
    match d.bits() {
        64 | 128 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

/// Sign-extends `x` from `d`'s width.
pub fn sext(d: DType, x: u64) -> i64 {
    let b = d.bits();
    if b >= 64 {
        x as i64
    } else {
        ((x << (64 - b)) as i64) >> (64 - b)
    }
}

/// The value as f64 (floats exactly, integers by value).
pub fn to_f64(d: DType, x: u64) -> f64 {
    match d {
        DType::F16 => f16_bits_to_f32(x as u16) as f64,
        DType::BF16 => BF16(x as u16).to_f32() as f64,
        DType::F32 => f32::from_bits(x as u32) as f64,
        DType::F64 => f64::from_bits(x),
        DType::Bool => (x & 1) as f64,
        d if d.is_signed_int() => sext(d, x) as f64,
        _ => x as f64,
    }
}

fn f32_of(d: DType, x: u64) -> f32 {
    match d {
        DType::F16 => f16_bits_to_f32(x as u16),
        DType::BF16 => BF16(x as u16).to_f32(),
        _ => f32::from_bits(x as u32),
    }
}

fn from_f32(d: DType, v: f32) -> u64 {
    match d {
        DType::F16 => f32_to_f16_bits(v) as u64,
        DType::BF16 => BF16::from_f32(v).0 as u64,
        _ => v.to_bits() as u64,
    }
}

/// Float from f64 into `d`'s bits (rounding once).
pub fn from_f64(d: DType, v: f64) -> u64 {
    match d {
        DType::F64 => v.to_bits(),
        DType::F32 => (v as f32).to_bits() as u64,
        DType::F16 | DType::BF16 => from_f32(d, v as f32),
        _ => unreachable!("from_f64 on {d}"),
    }
}

/// `a op b` for two values of type `d`.
pub fn binary(d: DType, op: BinOp, a: u64, b: u64) -> Result<u64, EvalError> {
    use BinOp::*;
    if d == DType::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let r = match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div => x / y,
            Rem => x % y,
            Min => x.min(y),
            Max => x.max(y),
            _ => return Err(EvalError::Unsupported),
        };
        return Ok(r.to_bits());
    }
    if d.is_float() {
        let (x, y) = (f32_of(d, a), f32_of(d, b));
        let r = match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div => x / y,
            Rem => x % y,
            Min => x.min(y),
            Max => x.max(y),
            _ => return Err(EvalError::Unsupported),
        };
        return Ok(from_f32(d, r));
    }
    if !(d.is_int() || d == DType::Bool) || d.bits() > 64 {
        return Err(EvalError::Unsupported);
    }
    let m = mask(d);
    let bits = d.bits().max(1);
    let signed = d.is_signed_int();
    let (sa, sb) = (sext(d, a), sext(d, b));
    let r = match op {
        Add => a.wrapping_add(b),
        Sub => a.wrapping_sub(b),
        Mul => a.wrapping_mul(b),
        Div | Rem if b & m == 0 => return Err(EvalError::DivisionByZero),
        Div if signed => sa.wrapping_div(sb) as u64,
        Div => a / b,
        Rem if signed => sa.wrapping_rem(sb) as u64,
        Rem => a % b,
        Min if signed => sa.min(sb) as u64,
        Min => a.min(b),
        Max if signed => sa.max(sb) as u64,
        Max => a.max(b),
        And => a & b,
        Or => a | b,
        Xor => a ^ b,
        Shl => a.wrapping_shl((b % bits as u64) as u32),
        Shr if signed => (sa >> (b % bits as u64)) as u64,
        Shr => (a & m) >> (b % bits as u64),
    };
    Ok(r & m)
}

/// `op a`.
pub fn unary(d: DType, op: UnOp, a: u64) -> Result<u64, EvalError> {
    use UnOp::*;
    let m = mask(d);
    if d.is_float() {
        let v = to_f64(d, a);
        let r = match op {
            Neg => -v,
            Abs => v.abs(),
            Sqrt => v.sqrt(),
            _ => return Err(EvalError::Unsupported),
        };
        return Ok(match d {
            DType::F64 => r.to_bits(),
            // Neg/abs are exact; sqrt of a widened f32 rounds correctly back to f32.
            _ => from_f32(d, r as f32),
        });
    }
    Ok(match op {
        Neg => a.wrapping_neg() & m,
        Not if d == DType::Bool => (a ^ 1) & 1,
        Not => !a & m,
        Abs => (sext(d, a).wrapping_abs() as u64) & m,
        Popc => (a & m).count_ones() as u64,
        Clz => ((a & m).leading_zeros() - (64 - d.bits())) as u64,
        Sqrt => return Err(EvalError::Unsupported),
    })
}

/// `a cmp b`, as 0 or 1.
pub fn compare(d: DType, op: CmpOp, a: u64, b: u64) -> u64 {
    use std::cmp::Ordering as O;
    let ord = if d.is_float() {
        to_f64(d, a).partial_cmp(&to_f64(d, b))
    } else if d.is_signed_int() {
        Some(sext(d, a).cmp(&sext(d, b)))
    } else {
        Some((a & mask(d)).cmp(&(b & mask(d))))
    };
    let r = match (op, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Eq, Some(o)) => o == O::Equal,
        (CmpOp::Ne, Some(o)) => o != O::Equal,
        (CmpOp::Lt, Some(o)) => o == O::Less,
        (CmpOp::Le, Some(o)) => o != O::Greater,
        (CmpOp::Gt, Some(o)) => o == O::Greater,
        (CmpOp::Ge, Some(o)) => o != O::Less,
    };
    r as u64
}

/// Numeric conversion from `from` to `to` (D5: int→int wraps, float→int saturates with NaN → 0).
pub fn cast(from: DType, to: DType, a: u64) -> Result<u64, EvalError> {
    if from.bits() > 64 || to.bits() > 64 || from.is_packed() || to.is_packed() {
        return Err(EvalError::Unsupported);
    }
    if to == DType::Bool {
        let nonzero = if from.is_float() { to_f64(from, a) != 0.0 } else { a & mask(from) != 0 };
        return Ok(nonzero as u64);
    }
    if to.is_float() {
        if from.is_float() {
            return Ok(if to == DType::F64 || from == DType::F64 {
                from_f64(to, to_f64(from, a))
            } else {
                from_f32(to, f32_of(from, a))
            });
        }
        let r = if from.is_signed_int() {
            let v = sext(from, a);
            match to {
                DType::F64 => (v as f64).to_bits(),
                _ => from_f32(to, v as f32),
            }
        } else {
            let v = a & mask(from);
            match to {
                DType::F64 => (v as f64).to_bits(),
                _ => from_f32(to, v as f32),
            }
        };
        return Ok(r);
    }
    // Integer destination.
    let m = mask(to);
    if from.is_float() {
        let v = to_f64(from, a);
        let r = match to {
            DType::I8 => v as i8 as u64,
            DType::I16 => v as i16 as u64,
            DType::I32 => v as i32 as u64,
            DType::I64 => v as i64 as u64,
            DType::U8 => v as u8 as u64,
            DType::U16 => v as u16 as u64,
            DType::U32 => v as u32 as u64,
            _ => v as u64,
        };
        return Ok(r & m);
    }
    let v = if from.is_signed_int() { sext(from, a) as u64 } else { a & mask(from) };
    Ok(v & m)
}

/// `a * b + c` with one rounding.
pub fn fma(d: DType, a: u64, b: u64, c: u64) -> Result<u64, EvalError> {
    match d {
        DType::F64 => Ok(f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)).to_bits()),
        DType::F32 => {
            Ok(f32::from_bits(a as u32).mul_add(f32::from_bits(b as u32), f32::from_bits(c as u32)).to_bits() as u64)
        }
        DType::F16 | DType::BF16 => {
            let r = (to_f64(d, a) * to_f64(d, b) + to_f64(d, c)) as f32;
            Ok(from_f32(d, r))
        }
        _ => Err(EvalError::Unsupported),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_shifts_are_modulo() {
        assert_eq!(binary(DType::I32, BinOp::Add, i32::MAX as u32 as u64, 1).unwrap(), i32::MIN as u32 as u64);
        assert_eq!(binary(DType::U32, BinOp::Shl, 1, 33).unwrap(), 2);
        assert_eq!(sext(DType::I32, binary(DType::I32, BinOp::Shr, (-8i32) as u32 as u64, 1).unwrap()), -4);
        assert_eq!(binary(DType::I32, BinOp::Div, 1, 0), Err(EvalError::DivisionByZero));
        assert_eq!(
            sext(DType::I32, binary(DType::I32, BinOp::Div, i32::MIN as u32 as u64, u32::MAX as u64).unwrap()),
            i32::MIN as i64
        );
    }

    #[test]
    fn casts_saturate() {
        let nan = f32::NAN.to_bits() as u64;
        assert_eq!(cast(DType::F32, DType::I32, nan).unwrap(), 0);
        assert_eq!(cast(DType::F32, DType::U8, 300f32.to_bits() as u64).unwrap(), 255);
        assert_eq!(cast(DType::F32, DType::I32, (-1e20f32).to_bits() as u64).unwrap(), i32::MIN as u32 as u64);
        assert_eq!(cast(DType::I32, DType::I64, (-1i32) as u32 as u64).unwrap(), u64::MAX);
        assert_eq!(cast(DType::I64, DType::U8, 0x1FF).unwrap(), 0xFF);
    }

    #[test]
    fn float_min_is_minnum_and_compare_is_ieee() {
        let nan = f32::NAN.to_bits() as u64;
        let one = 1f32.to_bits() as u64;
        assert_eq!(binary(DType::F32, BinOp::Min, nan, one).unwrap(), one);
        assert_eq!(compare(DType::F32, CmpOp::Eq, nan, nan), 0);
        assert_eq!(compare(DType::F32, CmpOp::Eq, 0, (-0.0f32).to_bits() as u64), 1);
    }

    #[test]
    fn bit_counts() {
        assert_eq!(unary(DType::U32, UnOp::Clz, 1).unwrap(), 31);
        assert_eq!(unary(DType::U64, UnOp::Clz, 1).unwrap(), 63);
        assert_eq!(unary(DType::U32, UnOp::Clz, 0).unwrap(), 32);
        assert_eq!(unary(DType::U64, UnOp::Popc, u64::MAX).unwrap(), 64);
    }
}
