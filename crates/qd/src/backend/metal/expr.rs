//! Types, constants and D5 arithmetic as MSL expressions.
//!
//! MSL is C++14: signed overflow and over-wide shifts are undefined there, so 32/64-bit signed
//! arithmetic that may wrap is done on the unsigned type and converted back; shift amounts are
//! masked to the width; float-to-integer conversions saturate and send NaN to 0 explicitly.
//! f16 and bf16 arithmetic is done in f32 and rounded once, as the emulator does.

use crate::ir::{BinOp, CmpOp, Const, DType, UnOp};

/// The MSL type of a register value (bool arrays are `uchar` in memory: see [`mem_ty`]).
pub(super) fn ty(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::I8 => "char",
        DType::U8 => "uchar",
        DType::I16 => "short",
        DType::U16 => "ushort",
        DType::I32 => "int",
        DType::U32 => "uint",
        DType::I64 => "long",
        DType::U64 => "ulong",
        DType::F16 => "half",
        DType::BF16 => "bfloat",
        DType::F32 => "float",
        // Refused by the capability check (no f64, packed or b128 values on Metal).
        DType::F64 | DType::F16x2 | DType::BF16x2 | DType::B128 => "void",
    }
}

/// The MSL type of an array element in memory: bool is one byte holding 0 or 1.
pub(super) fn mem_ty(d: DType) -> &'static str {
    if d == DType::Bool {
        "uchar"
    } else {
        ty(d)
    }
}

/// The unsigned type of the same width (for bit patterns).
pub(super) fn bits_ty(d: DType) -> &'static str {
    match d.bits() {
        1 | 8 => "uchar",
        16 => "ushort",
        32 => "uint",
        _ => "ulong",
    }
}

/// A constant of type `c.dtype`, exactly: floats by bit pattern unless the shortest decimal
/// round-trips (non-finite values and f16/bf16 always by bits).
pub(super) fn constant(c: &Const) -> String {
    let b = c.bits;
    match c.dtype {
        DType::Bool => (if b != 0 { "true" } else { "false" }).into(),
        DType::I32 if b as u32 == 0x8000_0000 => "int(0x80000000u)".into(),
        DType::I64 if b == 1 << 63 => "long(0x8000000000000000ul)".into(),
        DType::I8 | DType::I16 | DType::I32 => format!("{}({})", ty(c.dtype), c.render()),
        DType::I64 => format!("{}l", c.render()),
        DType::U8 | DType::U16 => format!("{}({}u)", ty(c.dtype), b),
        DType::U32 => format!("{b}u"),
        DType::U64 => format!("{b}ul"),
        DType::F32 => {
            let f = f32::from_bits(b as u32);
            if f.is_finite() {
                format!("{f:?}f")
            } else {
                format!("as_type<float>({:#x}u)", b as u32)
            }
        }
        DType::F16 | DType::BF16 => format!("as_type<{}>(ushort({:#x}u))", ty(c.dtype), b as u16),
        _ => "0".into(),
    }
}

/// True for the types computed in f32 and rounded back (f16, bf16).
fn narrow_float(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16)
}

/// `x` widened to f32 when `d` is a narrow float.
fn wide(d: DType, x: &str) -> String {
    if narrow_float(d) {
        format!("float({x})")
    } else {
        x.to_string()
    }
}

/// `e`, an f32 expression, rounded to `d` when `d` is a narrow float.
fn narrow(d: DType, e: String) -> String {
    if narrow_float(d) {
        format!("{}({e})", ty(d))
    } else {
        e
    }
}

/// True for signed integers whose C++ arithmetic can overflow (no promotion to int saves them).
fn wraps(d: DType) -> bool {
    matches!(d, DType::I32 | DType::I64)
}

/// `op a`, or `None` for a combination the verifier refuses (a bitwise op on a float, ...).
pub(super) fn unary(d: DType, op: UnOp, a: &str) -> Option<String> {
    let t = ty(d);
    if d.is_float() {
        let x = wide(d, a);
        let e = match op {
            UnOp::Neg => format!("-{x}"),
            UnOp::Abs => format!("fabs({x})"),
            UnOp::Sqrt => format!("sqrt({x})"),
            _ => return None,
        };
        return Some(narrow(d, e));
    }
    let u = bits_ty(d);
    Some(match op {
        UnOp::Not if d == DType::Bool => format!("!{a}"),
        UnOp::Not => format!("{t}(~{a})"),
        UnOp::Neg if wraps(d) => format!("{t}({u}(0) - {u}({a}))"),
        UnOp::Neg => format!("{t}(-{a})"),
        UnOp::Abs if wraps(d) => format!("{t}({a} < 0 ? {u}(0) - {u}({a}) : {u}({a}))"),
        UnOp::Abs if d.is_signed_int() => format!("{t}({a} < 0 ? -{a} : {a})"),
        UnOp::Abs => a.to_string(),
        UnOp::Popc => format!("uint(popcount({u}({a})))"),
        UnOp::Clz => format!("uint(clz({u}({a})))"),
        UnOp::Sqrt => return None,
    })
}

/// `a op b`, or `None` for a combination the verifier refuses.
pub(super) fn binary(d: DType, op: BinOp, a: &str, b: &str) -> Option<String> {
    let t = ty(d);
    if d.is_float() {
        let (x, y) = (wide(d, a), wide(d, b));
        let e = match op {
            BinOp::Add => format!("{x} + {y}"),
            BinOp::Sub => format!("{x} - {y}"),
            BinOp::Mul => format!("{x} * {y}"),
            BinOp::Div => format!("{x} / {y}"),
            BinOp::Rem => format!("fmod({x}, {y})"),
            BinOp::Min => format!("fmin({x}, {y})"),
            BinOp::Max => format!("fmax({x}, {y})"),
            _ => return None,
        };
        return Some(narrow(d, e));
    }
    if d == DType::Bool {
        return match op {
            BinOp::And | BinOp::Min | BinOp::Mul => Some(format!("({a} && {b})")),
            BinOp::Or | BinOp::Max => Some(format!("({a} || {b})")),
            BinOp::Xor | BinOp::Add | BinOp::Sub => Some(format!("({a} != {b})")),
            _ => None,
        };
    }
    let u = bits_ty(d);
    let amount = format!("(uint({b}) & {}u)", d.bits() - 1);
    Some(match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul if wraps(d) => {
            format!("{t}({u}({a}) {} {u}({b}))", arith_sign(op))
        }
        BinOp::Add | BinOp::Sub | BinOp::Mul => format!("{t}({a} {} {b})", arith_sign(op)),
        // i32::MIN / -1 wraps (D5) where C++ is undefined; division by zero is the emulator's error.
        BinOp::Div if wraps(d) => format!("({b} == {t}(-1) ? {t}({u}(0) - {u}({a})) : {t}({a} / {b}))"),
        BinOp::Rem if wraps(d) => format!("({b} == {t}(-1) ? {t}(0) : {t}({a} % {b}))"),
        BinOp::Div => format!("{t}({a} / {b})"),
        BinOp::Rem => format!("{t}({a} % {b})"),
        BinOp::Min => format!("min({a}, {b})"),
        BinOp::Max => format!("max({a}, {b})"),
        BinOp::And => format!("{t}({a} & {b})"),
        BinOp::Or => format!("{t}({a} | {b})"),
        BinOp::Xor => format!("{t}({a} ^ {b})"),
        BinOp::Shl if d.bits() >= 32 => format!("{t}({u}({a}) << {amount})"),
        BinOp::Shl => format!("{t}(uint({u}({a})) << {amount})"),
        BinOp::Shr if d.bits() >= 32 => format!("{t}({a} >> {amount})"),
        BinOp::Shr if d.is_signed_int() => format!("{t}(int({a}) >> {amount})"),
        BinOp::Shr => format!("{t}(uint({a}) >> {amount})"),
    })
}

fn arith_sign(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        _ => "*",
    }
}

pub(super) fn compare(op: CmpOp, a: &str, b: &str) -> String {
    let sign = match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    };
    format!("{a} {sign} {b}")
}

/// A value compared with itself: constant for integers; for floats, whether it is a number (C++
/// compilers warn on the self-comparison, which `-Werror` makes an error).
pub(super) fn compare_self(d: DType, op: CmpOp, a: &str) -> String {
    let reflexive = matches!(op, CmpOp::Eq | CmpOp::Le | CmpOp::Ge);
    match (d.is_float(), reflexive, op) {
        (false, r, _) => r.to_string(),
        (true, true, _) => format!("!isnan({})", wide(d, a)),
        (true, false, CmpOp::Ne) => format!("isnan({})", wide(d, a)),
        (true, false, _) => "false".into(),
    }
}

/// `a` of type `from` converted to `to` with D5 semantics.
pub(super) fn cast(from: DType, to: DType, a: &str) -> String {
    let t = ty(to);
    if to == DType::Bool {
        return if from.is_float() { format!("({} != 0.0f)", wide(from, a)) } else { format!("({a} != 0)") };
    }
    if to.is_float() {
        // Integers and f16/bf16 go through f32 first, as the emulator rounds them.
        return if to == DType::F32 || from == DType::F32 { format!("{t}({a})") } else { format!("{t}(float({a}))") };
    }
    if !from.is_float() {
        return format!("{t}({a})");
    }
    // Float to integer: truncate, saturate at the type's bounds, NaN to 0 (D5).
    let x = wide(from, a);
    let (lo, hi) = match to {
        DType::I8 => ("-128.0f".to_string(), "127.0f".to_string()),
        DType::U8 => ("0.0f".into(), "255.0f".into()),
        DType::I16 => ("-32768.0f".into(), "32767.0f".into()),
        DType::U16 => ("0.0f".into(), "65535.0f".into()),
        DType::I32 => ("-2147483648.0f".into(), "2147483648.0f".into()),
        DType::U32 => ("0.0f".into(), "4294967296.0f".into()),
        DType::I64 => ("-9223372036854775808.0f".into(), "9223372036854775808.0f".into()),
        _ => ("0.0f".into(), "18446744073709551616.0f".into()),
    };
    let (min, max) = match to {
        DType::I32 => ("int(0x80000000u)".to_string(), "int(0x7fffffff)".to_string()),
        DType::I64 => ("long(0x8000000000000000ul)".into(), "long(0x7fffffffffffffffl)".into()),
        DType::U32 => ("0u".into(), "0xffffffffu".into()),
        DType::U64 => ("0ul".into(), "0xfffffffffffffffful".into()),
        _ => (format!("{t}({})", lo.trim_end_matches(".0f")), format!("{t}({})", hi.trim_end_matches(".0f"))),
    };
    format!("(isnan({x}) ? {t}(0) : {x} <= {lo} ? {min} : {x} >= {hi} ? {max} : {t}({x}))")
}

/// `a * b + c`, fused (f16/bf16: fused in f32, then rounded).
pub(super) fn fma(d: DType, a: &str, b: &str, c: &str) -> String {
    narrow(d, format!("fma({}, {}, {})", wide(d, a), wide(d, b), wide(d, c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(dtype: DType, bits: u64) -> String {
        constant(&Const { dtype, bits })
    }

    #[test]
    fn constants_are_exact() {
        assert_eq!(c(DType::F32, 1.5f32.to_bits() as u64), "1.5f");
        assert_eq!(c(DType::F32, f32::INFINITY.to_bits() as u64), "as_type<float>(0x7f800000u)");
        assert_eq!(c(DType::F16, 0x3C00), "as_type<half>(ushort(0x3c00u))");
        assert_eq!(c(DType::I32, 0x8000_0000), "int(0x80000000u)");
        assert_eq!(c(DType::I32, (-3i32) as u32 as u64), "int(-3)");
        assert_eq!(c(DType::I64, (-3i64) as u64), "-3l");
        assert_eq!(c(DType::U64, u64::MAX), "18446744073709551615ul");
    }

    #[test]
    fn signed_arithmetic_wraps_through_unsigned() {
        assert_eq!(binary(DType::I32, BinOp::Add, "a", "b").unwrap(), "int(uint(a) + uint(b))");
        assert_eq!(binary(DType::I32, BinOp::Shl, "a", "b").unwrap(), "int(uint(a) << (uint(b) & 31u))");
        assert!(binary(DType::I32, BinOp::Div, "a", "b").unwrap().contains("b == int(-1)"));
        assert_eq!(binary(DType::F16, BinOp::Add, "a", "b").unwrap(), "half(float(a) + float(b))");
        assert!(binary(DType::F32, BinOp::Shl, "a", "b").is_none());
    }

    #[test]
    fn float_to_int_saturates_and_sends_nan_to_zero() {
        let e = cast(DType::F32, DType::I32, "x");
        assert!(e.starts_with("(isnan(x) ? int(0) : x <= -2147483648.0f ? int(0x80000000u)"), "{e}");
        assert!(e.contains("x >= 2147483648.0f ? int(0x7fffffff)"), "{e}");
        assert_eq!(cast(DType::F16, DType::F32, "x"), "float(x)");
        assert_eq!(cast(DType::I32, DType::F16, "x"), "half(float(x))");
        assert_eq!(cast(DType::F32, DType::Bool, "x"), "(x != 0.0f)");
    }

    #[test]
    fn a_value_compared_with_itself() {
        assert_eq!(compare_self(DType::I32, CmpOp::Le, "a"), "true");
        assert_eq!(compare_self(DType::F32, CmpOp::Eq, "a"), "!isnan(a)");
        assert_eq!(compare_self(DType::F32, CmpOp::Ne, "a"), "isnan(a)");
        assert_eq!(compare_self(DType::F32, CmpOp::Lt, "a"), "false");
    }
}
