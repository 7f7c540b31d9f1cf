//! Arithmetic (D5): unary and binary operators, comparisons, conversions, and the register-level
//! helpers CAS loops share (`binary_regs`, the f16/bf16 widen/narrow pair, sub-32-bit wrapping).

use super::{bits, class, ty, Class, Lower};
use crate::ir::*;
use crate::trace::TraceError;

impl Lower<'_> {
    /// Normalises a sub-32-bit integer result held in a 16-bit register to its width (D5 wrapping).
    pub(super) fn wrap_narrow(&mut self, d: DType, r: &str) {
        match d {
            DType::I8 => self.line(format!("cvt.s16.s8 {r}, {r};")),
            DType::U8 => self.line(format!("and.b16 {r}, {r}, 0x00FF;")),
            _ => {}
        }
    }

    /// An f16/bf16 register widened into a fresh f32 register.
    pub(super) fn widen_half(&mut self, d: DType, r: &str) -> String {
        let f = self.fresh(Class::F32);
        if d == DType::F16 {
            self.line(format!("cvt.f32.f16 {f}, {r};"));
        } else {
            let w = self.fresh(Class::B32);
            self.line(format!("cvt.u32.u16 {w}, {r};"));
            self.line(format!("shl.b32 {w}, {w}, 16;"));
            self.line(format!("mov.b32 {f}, {w};"));
        }
        f
    }

    pub(super) fn narrow_half(&mut self, d: DType, f: &str, dst: &str) {
        let k = if d == DType::F16 { "f16" } else { "bf16" };
        self.line(format!("cvt.rn.{k}.f32 {dst}, {f};"));
    }

    pub(super) fn unary(&mut self, inst: &Inst, dst: ValueId, op: UnOp, a: ValueId) -> Result<(), TraceError> {
        let (d, x, t) = (self.r(dst), self.r(a), self.d(a));
        if matches!(t, DType::F16 | DType::BF16) {
            let f = self.widen_half(t, &x);
            let name = match op {
                UnOp::Neg => "neg.f32",
                UnOp::Abs => "abs.f32",
                UnOp::Sqrt => "sqrt.rn.f32",
                _ => return Err(self.err(inst, format!("`{op:?}` on {t}"))),
            };
            self.line(format!("{name} {f}, {f};"));
            self.narrow_half(t, &f, &d);
            return Ok(());
        }
        match op {
            UnOp::Neg if t.is_float() => self.line(format!("neg.{} {d}, {x};", ty(t))),
            UnOp::Neg => self.line(format!("neg.{} {d}, {x};", signed(t))),
            UnOp::Not => self.line(format!("not.{} {d}, {x};", bits(class(t)))),
            UnOp::Abs => self.line(format!("abs.{} {d}, {x};", if t.is_float() { ty(t) } else { signed(t) })),
            UnOp::Sqrt => self.line(format!("sqrt.rn.{} {d}, {x};", ty(t))),
            UnOp::Popc => self.line(format!("popc.{} {d}, {x};", bits(class(t)))),
            UnOp::Clz => self.line(format!("clz.{} {d}, {x};", bits(class(t)))),
        }
        self.wrap_narrow(self.d(dst), &d);
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
        use BinOp::*;
        let (d, x, y, t) = (self.r(dst), self.r(a), self.r(b), self.d(a));
        if t == DType::Bool {
            let name = match op {
                And => "and",
                Or => "or",
                Xor => "xor",
                _ => return Err(self.err(inst, format!("`{op:?}` on bool"))),
            };
            self.line(format!("{name}.pred {d}, {x}, {y};"));
            return Ok(());
        }
        if matches!(t, DType::F16 | DType::BF16) {
            let (fx, fy) = (self.widen_half(t, &x), self.widen_half(t, &y));
            let f = self.fresh(Class::F32);
            let name = match op {
                Add => "add.rn.f32",
                Sub => "sub.rn.f32",
                Mul => "mul.rn.f32",
                Div => "div.rn.f32",
                Min => "min.f32",
                Max => "max.f32",
                Rem => {
                    // fmod in f32, as for f32 values: x - trunc(x / y) * y.
                    let q = self.fresh(Class::F32);
                    self.line(format!("div.rn.f32 {q}, {fx}, {fy};"));
                    self.line(format!("cvt.rzi.f32.f32 {q}, {q};"));
                    self.line(format!("neg.f32 {q}, {q};"));
                    self.line(format!("fma.rn.f32 {f}, {q}, {fy}, {fx};"));
                    self.narrow_half(t, &f, &d);
                    return Ok(());
                }
                _ => return Err(self.err(inst, format!("`{op:?}` on {t} is not supported on cuda"))),
            };
            self.line(format!("{name} {f}, {fx}, {fy};"));
            self.narrow_half(t, &f, &d);
            return Ok(());
        }
        if t.is_float() {
            let s = ty(t);
            match op {
                Add | Sub | Mul => {
                    let n = format!("{op:?}").to_lowercase();
                    self.line(format!("{n}.rn.{s} {d}, {x}, {y};"));
                }
                Div => self.line(format!("div.rn.{s} {d}, {x}, {y};")),
                Min => self.line(format!("min.{s} {d}, {x}, {y};")),
                Max => self.line(format!("max.{s} {d}, {x}, {y};")),
                Rem => {
                    // fmod: x - trunc(x / y) * y, exact for the quotients tests use; documented caveat.
                    let q = self.fresh(class(t));
                    self.line(format!("div.rn.{s} {q}, {x}, {y};"));
                    self.line(format!("cvt.rzi.{s}.{s} {q}, {q};"));
                    self.line(format!("neg.{s} {q}, {q};"));
                    self.line(format!("fma.rn.{s} {d}, {q}, {y}, {x};"));
                }
                _ => return Err(self.err(inst, format!("`{op:?}` on {t}"))),
            }
            return Ok(());
        }
        let s = ty(t);
        let w = t.bits().max(16);
        match op {
            Add | Sub => {
                let n = format!("{op:?}").to_lowercase();
                self.line(format!("{n}.{s} {d}, {x}, {y};"));
            }
            Mul => self.line(format!("mul.lo.{s} {d}, {x}, {y};")),
            Div => self.line(format!("div.{s} {d}, {x}, {y};")),
            Rem => self.line(format!("rem.{s} {d}, {x}, {y};")),
            Min => self.line(format!("min.{s} {d}, {x}, {y};")),
            Max => self.line(format!("max.{s} {d}, {x}, {y};")),
            And | Or | Xor => {
                let n = format!("{op:?}").to_lowercase();
                self.line(format!("{n}.{} {d}, {x}, {y};", bits(class(t))));
            }
            Shl | Shr => {
                // D5: the amount is taken modulo the bit width (PTX clamps instead).
                let amt = self.fresh(Class::B32);
                let y32 = match class(t) {
                    Class::B64 => {
                        self.line(format!("cvt.u32.u64 {amt}, {y};"));
                        amt.clone()
                    }
                    Class::B16 => {
                        self.line(format!("cvt.u32.u16 {amt}, {y};"));
                        amt.clone()
                    }
                    _ => y.clone(),
                };
                self.line(format!("and.b32 {amt}, {y32}, {};", t.bits() - 1));
                if op == Shl {
                    self.line(format!("shl.b{w} {d}, {x}, {amt};"));
                } else {
                    let k = if t.is_signed_int() { "s" } else { "u" };
                    self.line(format!("shr.{k}{w} {d}, {x}, {amt};"));
                }
            }
        }
        self.wrap_narrow(t, &d);
        Ok(())
    }

    pub(super) fn cmp(&mut self, dst: ValueId, op: CmpOp, a: ValueId, b: ValueId) {
        let (d, mut x, mut y, t) = (self.r(dst), self.r(a), self.r(b), self.d(a));
        let mut s = ty(t);
        if t == DType::Bool {
            let (u, v) = (self.fresh(Class::B32), self.fresh(Class::B32));
            self.line(format!("selp.u32 {u}, 1, 0, {x};"));
            self.line(format!("selp.u32 {v}, 1, 0, {y};"));
            (x, y, s) = (u, v, "u32");
        } else if matches!(t, DType::F16 | DType::BF16) {
            x = self.widen_half(t, &x);
            y = self.widen_half(t, &y);
            s = "f32";
        }
        let float = t.is_float();
        let c = match op {
            CmpOp::Eq => "eq",
            // IEEE: NaN != NaN is true, so `ne` on floats is the unordered form.
            CmpOp::Ne if float => "neu",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        };
        self.line(format!("setp.{c}.{s} {d}, {x}, {y};"));
    }

    pub(super) fn cast(&mut self, inst: &Inst, dst: ValueId, a: ValueId) -> Result<(), TraceError> {
        let (from, to) = (self.d(a), self.d(dst));
        let (d, x) = (self.r(dst), self.r(a));
        if from.is_packed() || to.is_packed() || from == DType::B128 || to == DType::B128 {
            return Err(self.err(inst, format!("cast from {from} to {to}")));
        }
        if to == DType::Bool {
            if from.is_float() {
                let f = if matches!(from, DType::F16 | DType::BF16) { self.widen_half(from, &x) } else { x };
                let s = if from == DType::F64 { "f64" } else { "f32" };
                self.line(format!("setp.neu.{s} {d}, {f}, 0d0000000000000000;"));
                return Ok(());
            }
            self.line(format!("setp.ne.{} {d}, {x}, 0;", ty(from)));
            return Ok(());
        }
        if from == DType::Bool {
            if to.is_float() {
                let u = self.fresh(Class::B32);
                self.line(format!("selp.u32 {u}, 1, 0, {x};"));
                return self.cast_regs(DType::U32, to, &u, &d);
            }
            self.line(format!("selp.{} {d}, 1, 0, {x};", bits(class(to))));
            return Ok(());
        }
        self.cast_regs(from, to, &x, &d)
    }

    fn cast_regs(&mut self, from: DType, to: DType, x: &str, d: &str) -> Result<(), TraceError> {
        let half = |t: DType| matches!(t, DType::F16 | DType::BF16);
        if half(from) {
            let f = self.widen_half(from, x);
            return self.cast_regs(DType::F32, to, &f, d);
        }
        if half(to) {
            let f = self.fresh(Class::F32);
            self.cast_regs(from, DType::F32, x, &f)?;
            self.narrow_half(to, &f, d);
            return Ok(());
        }
        let (fs, ts) = (mem_cvt(from), mem_cvt(to));
        if from.is_float() && to.is_float() {
            let rnd = if to.bits() < from.bits() { ".rn" } else { "" };
            self.line(format!("cvt{rnd}.{ts}.{fs} {d}, {x};"));
        } else if from.is_float() {
            // D5: saturating, NaN -> 0 (PTX float-to-int conversions saturate by definition).
            if to.bits() == 8 {
                let w = self.fresh(Class::B16);
                let wide = if to.is_signed_int() { "s16" } else { "u16" };
                self.line(format!("cvt.rzi.sat.{ts}.{fs} {w}, {x};"));
                self.line(format!("cvt.{wide}.{ts} {d}, {w};"));
            } else {
                self.line(format!("cvt.rzi.{ts}.{fs} {d}, {x};"));
            }
        } else if to.is_float() {
            self.line(format!("cvt.rn.{ts}.{fs} {d}, {x};"));
        } else if class(from) == class(to) && from.bits() == to.bits() {
            self.line(format!("mov.{} {d}, {x};", bits(class(to))));
            self.wrap_narrow(to, d);
        } else {
            // Integer to integer: sign- or zero-extend from the source, truncate to the destination.
            let src = if from.bits() == 8 {
                if from.is_signed_int() {
                    "s16"
                } else {
                    "u16"
                }
            } else {
                fs
            };
            let dst = if to.bits() == 8 {
                if to.is_signed_int() {
                    "s16"
                } else {
                    "u16"
                }
            } else {
                ts
            };
            if src == dst {
                self.line(format!("mov.{} {d}, {x};", bits(class(to))));
            } else {
                self.line(format!("cvt.{dst}.{src} {d}, {x};"));
            }
            self.wrap_narrow(to, d);
        }
        Ok(())
    }

    /// `d = x op y` on registers of type `t` (used by CAS loops; f16/bf16 compute in f32).
    pub(super) fn binary_regs(
        &mut self,
        inst: &Inst,
        op: BinOp,
        t: DType,
        d: &str,
        x: &str,
        y: &str,
    ) -> Result<(), TraceError> {
        if matches!(t, DType::F16 | DType::BF16) {
            let name = match op {
                BinOp::Add => "add.rn.f32",
                BinOp::Mul => "mul.rn.f32",
                BinOp::Min => "min.f32",
                BinOp::Max => "max.f32",
                _ => return Err(self.err(inst, format!("`{op:?}` in an atomic on {t}"))),
            };
            let (fx, fy) = (self.widen_half(t, x), self.widen_half(t, y));
            let f = self.fresh(Class::F32);
            self.line(format!("{name} {f}, {fx}, {fy};"));
            self.narrow_half(t, &f, d);
            return Ok(());
        }
        if t == DType::Bool || t.is_packed() {
            if matches!(op, BinOp::And | BinOp::Or | BinOp::Xor) {
                let n = format!("{op:?}").to_lowercase();
                self.line(format!("{n}.{} {d}, {x}, {y};", bits(class(t))));
                return Ok(());
            }
            return Err(self.err(inst, format!("`{op:?}` in an atomic on {t}")));
        }
        let s = ty(t);
        match op {
            BinOp::Add | BinOp::Sub if t.is_float() => {
                let n = format!("{op:?}").to_lowercase();
                self.line(format!("{n}.rn.{s} {d}, {x}, {y};"));
            }
            BinOp::Mul if t.is_float() => self.line(format!("mul.rn.{s} {d}, {x}, {y};")),
            BinOp::Mul => self.line(format!("mul.lo.{s} {d}, {x}, {y};")),
            BinOp::Add => self.line(format!("add.{s} {d}, {x}, {y};")),
            BinOp::Min => self.line(format!("min.{s} {d}, {x}, {y};")),
            BinOp::Max => self.line(format!("max.{s} {d}, {x}, {y};")),
            BinOp::And | BinOp::Or | BinOp::Xor => {
                let n = format!("{op:?}").to_lowercase();
                self.line(format!("{n}.{} {d}, {x}, {y};", bits(class(t))));
            }
            _ => return Err(self.err(inst, format!("`{op:?}` in an atomic on {t}"))),
        }
        Ok(())
    }
}

fn signed(t: DType) -> &'static str {
    match t.bits() {
        8 | 16 => "s16",
        32 => "s32",
        _ => "s64",
    }
}

/// Type suffix of a conversion operand (8-bit types keep their width in `cvt`).
fn mem_cvt(t: DType) -> &'static str {
    match t {
        DType::I8 => "s8",
        DType::U8 => "u8",
        other => ty(other),
    }
}
