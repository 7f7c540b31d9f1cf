//! Types, constants, D5 arithmetic and casts as LLVM IR.

use super::printer::Printer;
use crate::ir::{BinOp, CmpOp, Const, DType, Inst, UnOp, ValueId};
use crate::trace::TraceError;

/// The register type of `d` (bool is `i1`; signedness lives in the instructions).
pub(super) fn ty(d: DType) -> &'static str {
    match d {
        DType::Bool => "i1",
        DType::I8 | DType::U8 => "i8",
        DType::I16 | DType::U16 => "i16",
        DType::I32 | DType::U32 | DType::F16x2 | DType::BF16x2 => "i32",
        DType::I64 | DType::U64 => "i64",
        DType::F16 => "half",
        DType::BF16 => "bfloat",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::B128 => "i128",
    }
}

/// The type of one element in memory (bool is one byte).
pub(super) fn mem_ty(d: DType) -> &'static str {
    if d == DType::Bool {
        "i8"
    } else {
        ty(d)
    }
}

/// The integer type of `bits` bits.
pub(super) fn int_ty(bits: u32) -> &'static str {
    match bits {
        1 => "i1",
        8 => "i8",
        16 => "i16",
        32 => "i32",
        64 => "i64",
        _ => "i128",
    }
}

/// The zero of `d`.
pub(super) fn zero(d: DType) -> String {
    constant(&Const { dtype: d, bits: 0 })
}

/// A constant operand: integers in decimal, floats as their exact hexadecimal bits.
pub(super) fn constant(c: &Const) -> String {
    let b = c.bits;
    match c.dtype {
        DType::Bool => (if b != 0 { "true" } else { "false" }).into(),
        DType::F16 => format!("0xH{:04X}", b as u16),
        DType::BF16 => format!("0xR{:04X}", b as u16),
        // LLVM spells a float constant as the double of the same value.
        DType::F32 => format!("0x{:016X}", (f32::from_bits(b as u32) as f64).to_bits()),
        DType::F64 => format!("0x{b:016X}"),
        // Unsigned bits print as the signed value of the same width (what the LLVM parser reads).
        d => match d.bits() {
            8 => (b as u8 as i8).to_string(),
            16 => (b as u16 as i16).to_string(),
            32 => (b as u32 as i32).to_string(),
            _ => (b as i64).to_string(),
        },
    }
}

/// `a op b` for a comparison: floats ordered, except `!=`, which is true for NaN.
pub(super) fn compare(d: DType, op: CmpOp, a: &str, b: &str) -> String {
    let t = ty(d);
    if d.is_float() {
        let c = match op {
            CmpOp::Eq => "oeq",
            CmpOp::Ne => "une",
            CmpOp::Lt => "olt",
            CmpOp::Le => "ole",
            CmpOp::Gt => "ogt",
            CmpOp::Ge => "oge",
        };
        return format!("fcmp {c} {t} {a}, {b}");
    }
    let s = if d.is_signed_int() { "s" } else { "u" };
    let c = match op {
        CmpOp::Eq => "eq".to_string(),
        CmpOp::Ne => "ne".to_string(),
        CmpOp::Lt => format!("{s}lt"),
        CmpOp::Le => format!("{s}le"),
        CmpOp::Gt => format!("{s}gt"),
        CmpOp::Ge => format!("{s}ge"),
    };
    format!("icmp {c} {t} {a}, {b}")
}

/// The LLVM mangling suffix of a type (`i32`, `f32`, `f16`, `bf16`).
pub(super) fn mangle(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        other => ty(other),
    }
}

impl Printer<'_> {
    /// `call T @name.sfx(args)`, declaring it.
    pub(super) fn intrinsic(&mut self, ret: &str, name: &str, args: &[(&str, String)]) -> String {
        let params: Vec<_> = args.iter().map(|(t, _)| *t).collect();
        self.declare(&format!("declare {ret} @{name}({})", params.join(", ")));
        let actual: Vec<_> = args.iter().map(|(t, v)| format!("{t} {v}")).collect();
        format!("call {ret} @{name}({})", actual.join(", "))
    }

    pub(super) fn unary(&mut self, inst: &Inst, dst: ValueId, op: UnOp, a: ValueId) -> Result<(), TraceError> {
        let (d, x) = (self.d(a), self.v(a));
        let t = ty(d);
        let e = match op {
            UnOp::Neg if d.is_float() => format!("fneg {t} {x}"),
            UnOp::Neg if d.is_int() => format!("sub {t} 0, {x}"),
            UnOp::Not if d == DType::Bool || d.is_int() => format!("xor {t} {x}, -1"),
            UnOp::Abs if d.is_float() => self.intrinsic(t, &format!("llvm.fabs.{}", mangle(d)), &[(t, x)]),
            UnOp::Abs if d.is_signed_int() => {
                self.intrinsic(t, &format!("llvm.abs.{t}"), &[(t, x), ("i1", "false".into())])
            }
            UnOp::Abs if d.is_unsigned_int() => format!("or {t} {x}, 0"),
            UnOp::Sqrt if d.is_float() => self.intrinsic(t, &format!("llvm.sqrt.{}", mangle(d)), &[(t, x)]),
            UnOp::Popc | UnOp::Clz if d.is_int() => {
                let e = if op == UnOp::Popc {
                    self.intrinsic(t, &format!("llvm.ctpop.{t}"), &[(t, x)])
                } else {
                    self.intrinsic(t, &format!("llvm.ctlz.{t}"), &[(t, x), ("i1", "false".into())])
                };
                let n = self.emit(e);
                match d.bits() {
                    32 => format!("or i32 {n}, 0"),
                    b if b > 32 => format!("trunc {t} {n} to i32"),
                    _ => format!("zext {t} {n} to i32"),
                }
            }
            _ => return Err(self.refuse(inst, format!("{op:?} on {d} has no meaning"))),
        };
        self.def(dst, e);
        Ok(())
    }

    pub(super) fn binary(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        op: BinOp,
        a: ValueId,
        b: ValueId,
    ) -> Result<(), TraceError> {
        let (d, x, y) = (self.d(a), self.v(a), self.v(b));
        if d == DType::BF16 && !matches!(op, BinOp::Min | BinOp::Max) {
            // bf16 arithmetic is computed in f32 and rounded once (exact for these operations;
            // LLVM has no bf16 `frem` libcall).
            let (wx, wy) =
                (self.emit(format!("fpext bfloat {x} to float")), self.emit(format!("fpext bfloat {y} to float")));
            let f = match op {
                BinOp::Add => "fadd",
                BinOp::Sub => "fsub",
                BinOp::Mul => "fmul",
                BinOp::Div => "fdiv",
                BinOp::Rem => "frem",
                _ => return Err(self.refuse(inst, format!("{op:?} on {d} has no meaning"))),
            };
            let r = self.emit(format!("{f} float {wx}, {wy}"));
            self.def(dst, format!("fptrunc float {r} to bfloat"));
            return Ok(());
        }
        let t = ty(d);
        let e = if d.is_float() {
            match op {
                BinOp::Add => format!("fadd {t} {x}, {y}"),
                BinOp::Sub => format!("fsub {t} {x}, {y}"),
                BinOp::Mul => format!("fmul {t} {x}, {y}"),
                BinOp::Div => format!("fdiv {t} {x}, {y}"),
                BinOp::Rem => format!("frem {t} {x}, {y}"),
                BinOp::Min | BinOp::Max => {
                    let f = if op == BinOp::Min { "minnum" } else { "maxnum" };
                    self.intrinsic(t, &format!("llvm.{f}.{}", mangle(d)), &[(t, x), (t, y)])
                }
                _ => return Err(self.refuse(inst, format!("{op:?} on {d} has no meaning"))),
            }
        } else if d == DType::Bool {
            match op {
                BinOp::And | BinOp::Min | BinOp::Mul => format!("and i1 {x}, {y}"),
                BinOp::Or | BinOp::Max => format!("or i1 {x}, {y}"),
                BinOp::Xor | BinOp::Add | BinOp::Sub => format!("xor i1 {x}, {y}"),
                _ => return Err(self.refuse(inst, format!("{op:?} on bool has no meaning"))),
            }
        } else {
            let signed = d.is_signed_int();
            let s = if signed { "s" } else { "u" };
            match op {
                BinOp::Add => format!("add {t} {x}, {y}"),
                BinOp::Sub => format!("sub {t} {x}, {y}"),
                BinOp::Mul => format!("mul {t} {x}, {y}"),
                BinOp::Div | BinOp::Rem => self.division(d, op, &x, &y),
                BinOp::Min => self.intrinsic(t, &format!("llvm.{s}min.{t}"), &[(t, x), (t, y)]),
                BinOp::Max => self.intrinsic(t, &format!("llvm.{s}max.{t}"), &[(t, x), (t, y)]),
                BinOp::And => format!("and {t} {x}, {y}"),
                BinOp::Or => format!("or {t} {x}, {y}"),
                BinOp::Xor => format!("xor {t} {x}, {y}"),
                BinOp::Shl | BinOp::Shr => {
                    // The amount is taken modulo the width (an LLVM shift past it is poison).
                    let amount = self.emit(format!("and {t} {y}, {}", d.bits() - 1));
                    let sh = match op {
                        BinOp::Shl => "shl",
                        _ if signed => "ashr",
                        _ => "lshr",
                    };
                    format!("{sh} {t} {x}, {amount}")
                }
            }
        };
        self.def(dst, e);
        Ok(())
    }

    /// Integer `/` and `%` without LLVM's undefined cases: a zero divisor divides by one (the
    /// emulator reports it; a GPU must not fault), `MIN / -1` wraps to `MIN` and `MIN % -1` is 0.
    fn division(&mut self, d: DType, op: BinOp, x: &str, y: &str) -> String {
        let t = ty(d);
        let zero = self.emit(format!("icmp eq {t} {y}, 0"));
        let (s, div) = if d.is_signed_int() { ("s", "div") } else { ("u", "div") };
        let name = if op == BinOp::Div { format!("{s}{div}") } else { format!("{s}rem") };
        if !d.is_signed_int() {
            let safe = self.emit(format!("select i1 {zero}, {t} 1, {t} {y}"));
            return format!("{name} {t} {x}, {safe}");
        }
        let minus_one = self.emit(format!("icmp eq {t} {y}, -1"));
        let odd = self.emit(format!("or i1 {zero}, {minus_one}"));
        let safe = self.emit(format!("select i1 {odd}, {t} 1, {t} {y}"));
        let q = self.emit(format!("{name} {t} {x}, {safe}"));
        let special = if op == BinOp::Div { self.emit(format!("sub {t} 0, {x}")) } else { "0".into() };
        format!("select i1 {minus_one}, {t} {special}, {t} {q}")
    }

    /// Conversions with D5 semantics: float to int saturates (NaN to 0), int to bool is `!= 0`.
    pub(super) fn cast(&mut self, dst: ValueId, a: ValueId) {
        let (from, to, x) = (self.d(a), self.d(dst), self.v(a));
        let (ft, tt) = (ty(from), ty(to));
        let e = if from == to {
            return self.copy(dst, &x);
        } else if to == DType::Bool {
            if from.is_float() {
                format!("fcmp une {ft} {x}, {}", zero(from))
            } else {
                format!("icmp ne {ft} {x}, 0")
            }
        } else if from == DType::Bool {
            if to.is_float() {
                format!("uitofp i1 {x} to {tt}")
            } else {
                format!("zext i1 {x} to {tt}")
            }
        } else if from.is_float() && to.is_float() {
            let op =
                if to.bits() > from.bits() || (from == DType::F16 && to == DType::BF16) { "fpext" } else { "fptrunc" };
            if from.bits() == to.bits() {
                // f16 <-> bf16: through f32, exactly.
                let w = self.emit(format!("fpext {ft} {x} to float"));
                format!("fptrunc float {w} to {tt}")
            } else {
                format!("{op} {ft} {x} to {tt}")
            }
        } else if from.is_float() {
            let s = if to.is_signed_int() { "si" } else { "ui" };
            self.intrinsic(tt, &format!("llvm.fpto{s}.sat.{tt}.{}", mangle(from)), &[(ft, x)])
        } else if to.is_float() {
            let s = if from.is_signed_int() { "si" } else { "ui" };
            format!("{s}tofp {ft} {x} to {tt}")
        } else if to.bits() < from.bits() {
            format!("trunc {ft} {x} to {tt}")
        } else if to.bits() == from.bits() {
            return self.copy(dst, &x);
        } else if from.is_signed_int() {
            format!("sext {ft} {x} to {tt}")
        } else {
            format!("zext {ft} {x} to {tt}")
        };
        self.def(dst, e);
    }

    pub(super) fn fma(&mut self, dst: ValueId, a: ValueId, b: ValueId, c: ValueId) {
        let d = self.d(dst);
        let t = ty(d);
        let (x, y, z) = (self.v(a), self.v(b), self.v(c));
        let e = if d.is_float() {
            self.intrinsic(t, &format!("llvm.fma.{}", mangle(d)), &[(t, x), (t, y), (t, z)])
        } else {
            let m = self.emit(format!("mul {t} {x}, {y}"));
            format!("add {t} {m}, {z}")
        };
        self.def(dst, e);
    }
}
