//! D5 arithmetic on registers (see [`super::types`] for how each dtype is held).
//!
//! * Integers wrap: narrow results are re-sign-extended (`OpBitFieldSExtract`) or masked; shift
//!   amounts are masked to the width; signed division guards `MIN / -1` (and a zero divisor, which
//!   the emulator reports and GPUs leave unspecified) so no driver sees undefined behaviour.
//! * Floats: add/sub/mul carry `NoContraction`; min/max are `NMin`/`NMax` (NaN-suppressing, the
//!   emulator's minNum); `fma` is `GLSL.std.450 Fma`; float-to-int casts clamp and select (NaN → 0,
//!   saturating) before converting; f16/bf16 are computed in f32 with exact, round-to-nearest-even
//!   integer conversions (no `Float16` capability).
//! * popc/clz: `OpBitCount` and `FindUMsb` on 32 bits, 64-bit operands by halves.
//!
//! Division (`OpFDiv`), `OpFRem` and `Sqrt` have the device's precision (Vulkan allows a few ULP);
//! the emulator's are correctly rounded.

use super::lower::Lower;
use super::types::{reg_ty, Ty};
use crate::ir::*;
use crate::trace::TraceError;
use rspirv::spirv::{Decoration, Op, Word};

// GLSL.std.450 instruction numbers.
const FABS: u32 = 4;
const SABS: u32 = 5;
const SQRT: u32 = 31;
const UMIN: u32 = 38;
const SMIN: u32 = 39;
const UMAX: u32 = 41;
const SMAX: u32 = 42;
const SCLAMP: u32 = 45;
const FMA: u32 = 50;
const FIND_UMSB: u32 = 75;
const NMIN: u32 = 79;
const NMAX: u32 = 80;

fn is_half(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16)
}

/// The all-ones mask of an integer width.
fn mask_of(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Lower<'_> {
    /// Re-normalises a narrow integer held in a u32 to its width (D5 wrapping).
    pub(super) fn wrap(&mut self, d: DType, x: Word) -> Word {
        match d {
            DType::I8 | DType::I16 => {
                let (zero, w) = (self.c32(0), self.c32(d.bits()));
                self.op_t(Op::BitFieldSExtract, Ty::U32, &[x, zero, w])
            }
            DType::U8 | DType::U16 => {
                let m = self.c32(mask_of(d.bits()) as u32);
                self.op_t(Op::BitwiseAnd, Ty::U32, &[x, m])
            }
            _ => x,
        }
    }

    /// The canonical register of `d` from a u32 holding its bits in the low end.
    pub(super) fn canonical(&mut self, d: DType, x: Word) -> Word {
        match d {
            DType::Bool => {
                let z = self.c32(0);
                self.op_t(Op::INotEqual, Ty::Bool, &[x, z])
            }
            DType::F16 | DType::BF16 => {
                let m = self.c32(0xFFFF);
                self.op_t(Op::BitwiseAnd, Ty::U32, &[x, m])
            }
            _ => self.wrap(d, x),
        }
    }

    fn float_op(&mut self, op: Op, t: Ty, x: Word, y: Word) -> Word {
        let r = self.op_t(op, t, &[x, y]);
        if matches!(op, Op::FAdd | Op::FSub | Op::FMul) {
            self.m.decorate(r, Decoration::NoContraction, &[]);
        }
        r
    }

    /// `x op y` on registers of dtype `t` (also the operation of CAS loops).
    pub(super) fn binary_ids(
        &mut self,
        inst: &Inst,
        t: DType,
        op: BinOp,
        x: Word,
        y: Word,
    ) -> Result<Word, TraceError> {
        use BinOp::*;
        if t == DType::Bool {
            let o = match op {
                And => Op::LogicalAnd,
                Or => Op::LogicalOr,
                Xor => Op::LogicalNotEqual,
                _ => return Err(self.err(inst, format!("`{op:?}` on bool is not supported on vulkan"))),
            };
            return Ok(self.op_t(o, Ty::Bool, &[x, y]));
        }
        if is_half(t) {
            let (fx, fy) = (self.half_to_f32(t, x), self.half_to_f32(t, y));
            let f = self.binary_ids(inst, DType::F32, op, fx, fy)?;
            return Ok(self.f32_to_half(t, f));
        }
        if t.is_float() {
            let ft = reg_ty(t);
            return Ok(match op {
                Add => self.float_op(Op::FAdd, ft, x, y),
                Sub => self.float_op(Op::FSub, ft, x, y),
                Mul => self.float_op(Op::FMul, ft, x, y),
                Div => self.float_op(Op::FDiv, ft, x, y),
                Rem => self.float_op(Op::FRem, ft, x, y),
                Min => self.glsl(ft, NMIN, &[x, y]),
                Max => self.glsl(ft, NMAX, &[x, y]),
                _ => return Err(self.err(inst, format!("`{op:?}` on {t} is not supported on vulkan"))),
            });
        }
        let it = reg_ty(t);
        let signed = t.is_signed_int();
        let r = match op {
            Add => self.op_t(Op::IAdd, it, &[x, y]),
            Sub => self.op_t(Op::ISub, it, &[x, y]),
            Mul => self.op_t(Op::IMul, it, &[x, y]),
            Div | Rem => {
                let zero = self.cst(it, 0);
                let one = self.cst(it, 1);
                let by_zero = self.op_t(Op::IEqual, Ty::Bool, &[y, zero]);
                if signed {
                    // Signed division and remainder from unsigned ones on the magnitudes: NVIDIA's
                    // Vulkan driver (580.159) computes `OpSRem` as an unsigned remainder, whether
                    // its operands are typed signed or not (difftest regressions
                    // `nvidia-vulkan-srem-*`, D27), so no `OpSDiv`/`OpSRem` is emitted. The
                    // magnitude of MIN is itself as an unsigned value, so `MIN / -1` wraps to MIN
                    // and `MIN % -1` is 0 without a guard; a zero divisor divides by 1.
                    let safe = self.op_t(Op::Select, it, &[by_zero, one, y]);
                    let neg_x = self.op_t(Op::SLessThan, Ty::Bool, &[x, zero]);
                    let neg_y = self.op_t(Op::SLessThan, Ty::Bool, &[safe, zero]);
                    let minus_x = self.op_t(Op::SNegate, it, &[x]);
                    let minus_y = self.op_t(Op::SNegate, it, &[safe]);
                    let mag_x = self.op_t(Op::Select, it, &[neg_x, minus_x, x]);
                    let mag_y = self.op_t(Op::Select, it, &[neg_y, minus_y, safe]);
                    let (u_op, negate_if) = if op == Div {
                        (Op::UDiv, self.op_t(Op::LogicalNotEqual, Ty::Bool, &[neg_x, neg_y]))
                    } else {
                        (Op::UMod, neg_x)
                    };
                    let mag = self.op_t(u_op, it, &[mag_x, mag_y]);
                    let minus_mag = self.op_t(Op::SNegate, it, &[mag]);
                    self.op_t(Op::Select, it, &[negate_if, minus_mag, mag])
                } else {
                    let safe = self.op_t(Op::Select, it, &[by_zero, one, y]);
                    self.op_t(if op == Div { Op::UDiv } else { Op::UMod }, it, &[x, safe])
                }
            }
            Min => self.glsl(it, if signed { SMIN } else { UMIN }, &[x, y]),
            Max => self.glsl(it, if signed { SMAX } else { UMAX }, &[x, y]),
            And => self.op_t(Op::BitwiseAnd, it, &[x, y]),
            Or => self.op_t(Op::BitwiseOr, it, &[x, y]),
            Xor => self.op_t(Op::BitwiseXor, it, &[x, y]),
            Shl | Shr => {
                let m = self.cst(it, t.bits() as u64 - 1);
                let amt = self.op_t(Op::BitwiseAnd, it, &[y, m]);
                let o = match op {
                    Shl => Op::ShiftLeftLogical,
                    _ if signed => Op::ShiftRightArithmetic,
                    _ => Op::ShiftRightLogical,
                };
                self.op_t(o, it, &[x, amt])
            }
        };
        Ok(match op {
            Add | Sub | Mul | Div | Shl => self.wrap(t, r),
            _ => r,
        })
    }

    pub(super) fn unary(&mut self, inst: &Inst, dst: ValueId, op: UnOp, a: ValueId) -> Result<(), TraceError> {
        let (t, x) = (self.d(a), self.v(a));
        let r = if is_half(t) {
            let f = self.half_to_f32(t, x);
            let g = match op {
                UnOp::Neg => self.op_t(Op::FNegate, Ty::F32, &[f]),
                UnOp::Abs => self.glsl(Ty::F32, FABS, &[f]),
                UnOp::Sqrt => self.glsl(Ty::F32, SQRT, &[f]),
                _ => return Err(self.err(inst, format!("`{op:?}` on {t} is not supported on vulkan"))),
            };
            self.f32_to_half(t, g)
        } else if t.is_float() {
            let ft = reg_ty(t);
            match op {
                UnOp::Neg => self.op_t(Op::FNegate, ft, &[x]),
                UnOp::Abs => self.glsl(ft, FABS, &[x]),
                UnOp::Sqrt => self.glsl(ft, SQRT, &[x]),
                _ => return Err(self.err(inst, format!("`{op:?}` on {t} is not supported on vulkan"))),
            }
        } else if t == DType::Bool {
            match op {
                UnOp::Not => self.op_t(Op::LogicalNot, Ty::Bool, &[x]),
                UnOp::Neg | UnOp::Abs => x,
                _ => return Err(self.err(inst, format!("`{op:?}` on bool is not supported on vulkan"))),
            }
        } else {
            let it = reg_ty(t);
            match op {
                UnOp::Neg => {
                    let n = self.op_t(Op::SNegate, it, &[x]);
                    self.wrap(t, n)
                }
                UnOp::Not => {
                    let n = self.op_t(Op::Not, it, &[x]);
                    self.wrap(t, n)
                }
                UnOp::Abs => {
                    // The emulator takes the absolute value of the bits read as signed, for every
                    // integer type.
                    let s = match t {
                        DType::U8 => self.wrap(DType::I8, x),
                        DType::U16 => self.wrap(DType::I16, x),
                        _ => x,
                    };
                    let r = self.glsl(it, SABS, &[s]);
                    self.wrap(t, r)
                }
                UnOp::Popc => self.popc(t, x),
                UnOp::Clz => self.clz(t, x),
                UnOp::Sqrt => return Err(self.err(inst, format!("`Sqrt` on {t} is not supported on vulkan"))),
            }
        };
        self.set(dst, r);
        Ok(())
    }

    /// The bits of an integer register, zero-extended from its width (narrow signed values are
    /// held sign-extended).
    fn zext_bits(&mut self, t: DType, x: Word) -> Word {
        if t.bits() < 32 {
            let m = self.c32(mask_of(t.bits()) as u32);
            self.op_t(Op::BitwiseAnd, Ty::U32, &[x, m])
        } else {
            x
        }
    }

    /// The two u32 halves of a u64.
    fn halves(&mut self, x: Word) -> (Word, Word) {
        let lo = self.op_t(Op::UConvert, Ty::U32, &[x]);
        let s = self.cst(Ty::U64, 32);
        let h = self.op_t(Op::ShiftRightLogical, Ty::U64, &[x, s]);
        let hi = self.op_t(Op::UConvert, Ty::U32, &[h]);
        (lo, hi)
    }

    fn popc(&mut self, t: DType, x: Word) -> Word {
        if t.bits() == 64 {
            let (lo, hi) = self.halves(x);
            let (a, b) = (self.op_t(Op::BitCount, Ty::U32, &[lo]), self.op_t(Op::BitCount, Ty::U32, &[hi]));
            return self.op_t(Op::IAdd, Ty::U32, &[a, b]);
        }
        let b = self.zext_bits(t, x);
        self.op_t(Op::BitCount, Ty::U32, &[b])
    }

    /// Leading zeros of a u32: `31 - FindUMsb(x)`, which is 32 for 0 (FindUMsb gives -1).
    fn clz32(&mut self, x: Word) -> Word {
        let msb = self.glsl(Ty::U32, FIND_UMSB, &[x]);
        let c31 = self.c32(31);
        self.op_t(Op::ISub, Ty::U32, &[c31, msb])
    }

    fn clz(&mut self, t: DType, x: Word) -> Word {
        if t.bits() == 64 {
            let (lo, hi) = self.halves(x);
            let (zl, zh) = (self.clz32(lo), self.clz32(hi));
            let c32 = self.c32(32);
            let low = self.op_t(Op::IAdd, Ty::U32, &[zl, c32]);
            let zero = self.c32(0);
            let hi_set = self.op_t(Op::INotEqual, Ty::Bool, &[hi, zero]);
            return self.op_t(Op::Select, Ty::U32, &[hi_set, zh, low]);
        }
        let b = self.zext_bits(t, x);
        let z = self.clz32(b);
        if t.bits() < 32 {
            let d = self.c32(32 - t.bits());
            self.op_t(Op::ISub, Ty::U32, &[z, d])
        } else {
            z
        }
    }

    /// `a cmp b` (bool).
    pub(super) fn compare(&mut self, t: DType, op: CmpOp, x: Word, y: Word) -> Word {
        if t == DType::Bool {
            let o = match op {
                CmpOp::Eq => Some(Op::LogicalEqual),
                CmpOp::Ne => Some(Op::LogicalNotEqual),
                _ => None,
            };
            if let Some(o) = o {
                return self.op_t(o, Ty::Bool, &[x, y]);
            }
            let (one, zero) = (self.c32(1), self.c32(0));
            let a = self.op_t(Op::Select, Ty::U32, &[x, one, zero]);
            let b = self.op_t(Op::Select, Ty::U32, &[y, one, zero]);
            return self.compare(DType::U32, op, a, b);
        }
        if is_half(t) {
            let (a, b) = (self.half_to_f32(t, x), self.half_to_f32(t, y));
            return self.compare(DType::F32, op, a, b);
        }
        let o = if t.is_float() {
            match op {
                CmpOp::Eq => Op::FOrdEqual,
                // IEEE: NaN != NaN.
                CmpOp::Ne => Op::FUnordNotEqual,
                CmpOp::Lt => Op::FOrdLessThan,
                CmpOp::Le => Op::FOrdLessThanEqual,
                CmpOp::Gt => Op::FOrdGreaterThan,
                CmpOp::Ge => Op::FOrdGreaterThanEqual,
            }
        } else if t.is_signed_int() {
            match op {
                CmpOp::Eq => Op::IEqual,
                CmpOp::Ne => Op::INotEqual,
                CmpOp::Lt => Op::SLessThan,
                CmpOp::Le => Op::SLessThanEqual,
                CmpOp::Gt => Op::SGreaterThan,
                CmpOp::Ge => Op::SGreaterThanEqual,
            }
        } else {
            match op {
                CmpOp::Eq => Op::IEqual,
                CmpOp::Ne => Op::INotEqual,
                CmpOp::Lt => Op::ULessThan,
                CmpOp::Le => Op::ULessThanEqual,
                CmpOp::Gt => Op::UGreaterThan,
                CmpOp::Ge => Op::UGreaterThanEqual,
            }
        };
        self.op_t(o, Ty::Bool, &[x, y])
    }

    /// `a * b + c` with one rounding (f16/bf16: in f32, then rounded once more).
    pub(super) fn fma(&mut self, t: DType, a: Word, b: Word, c: Word) -> Word {
        if is_half(t) {
            let (fa, fb, fc) = (self.half_to_f32(t, a), self.half_to_f32(t, b), self.half_to_f32(t, c));
            let f = self.glsl(Ty::F32, FMA, &[fa, fb, fc]);
            return self.f32_to_half(t, f);
        }
        self.glsl(reg_ty(t), FMA, &[a, b, c])
    }

    /// Reinterprets bits (same width).
    pub(super) fn bitcast(&mut self, from: DType, to: DType, x: Word) -> Word {
        let (rf, rt) = (reg_ty(from), reg_ty(to));
        if rf != rt {
            return self.op_t(Op::Bitcast, rt, &[x]);
        }
        if rt == Ty::U32 && to.bits() < 32 {
            // Narrow: the bits as `to` holds them (sign-extended or not).
            let bits = self.zext_bits(from, x);
            return self.canonical(to, bits);
        }
        x
    }

    /// Numeric conversion with D5 semantics.
    pub(super) fn cast_ids(&mut self, from: DType, to: DType, x: Word) -> Word {
        if from == to {
            return x;
        }
        if to == DType::Bool {
            if from.is_float() {
                let f = if is_half(from) { self.half_to_f32(from, x) } else { x };
                let ft = if from == DType::F64 { Ty::F64 } else { Ty::F32 };
                let zero = self.cst(ft, 0);
                return self.op_t(Op::FUnordNotEqual, Ty::Bool, &[f, zero]);
            }
            let zero = self.cst(reg_ty(from), 0);
            return self.op_t(Op::INotEqual, Ty::Bool, &[x, zero]);
        }
        if from == DType::Bool {
            let (one, zero) = (self.c32(1), self.c32(0));
            let u = self.op_t(Op::Select, Ty::U32, &[x, one, zero]);
            return self.cast_ids(DType::U32, to, u);
        }
        if is_half(from) {
            let f = self.half_to_f32(from, x);
            return self.cast_ids(DType::F32, to, f);
        }
        if is_half(to) {
            // The emulator goes through f32 (f64 sources round twice, as there).
            let f = self.cast_ids(from, DType::F32, x);
            return self.f32_to_half(to, f);
        }
        let (rf, rt) = (reg_ty(from), reg_ty(to));
        if from.is_float() && to.is_float() {
            return self.op_t(Op::FConvert, rt, &[x]);
        }
        if to.is_float() {
            let o = if from.is_signed_int() { Op::ConvertSToF } else { Op::ConvertUToF };
            return self.op_t(o, rt, &[x]);
        }
        if from.is_float() {
            return self.float_to_int(rf, to, x);
        }
        // Integer to integer: sign- or zero-extend from the source, wrap to the destination.
        match (rf, rt) {
            (Ty::U64, Ty::U32) => {
                let t = self.op_t(Op::UConvert, Ty::U32, &[x]);
                self.wrap(to, t)
            }
            (Ty::U32, Ty::U64) => {
                self.op_t(if from.is_signed_int() { Op::SConvert } else { Op::UConvert }, Ty::U64, &[x])
            }
            (Ty::U32, Ty::U32) => self.wrap(to, x),
            _ => x,
        }
    }

    /// Float to integer, saturating, NaN → 0 (Rust's `as`): clamp in the float type (the upper
    /// bound is the largest float below 2^w), convert, and select the maximum at or above 2^w.
    fn float_to_int(&mut self, ft: Ty, to: DType, x: Word) -> Word {
        let w = to.bits();
        let signed = to.is_signed_int();
        let (lo, max): (f64, u64) =
            if signed { (-(2f64.powi(w as i32 - 1)), mask_of(w - 1)) } else { (0.0, mask_of(w)) };
        let limit = max as f64 + 1.0; // a power of two: exact
        let mant = if ft == Ty::F32 { 24 } else { 53 };
        let magnitude_bits = (w - signed as u32) as i32;
        let hi = if magnitude_bits <= mant { max as f64 } else { limit - 2f64.powi(magnitude_bits - mant) };
        let fc = |l: &mut Self, v: f64| {
            if ft == Ty::F32 {
                l.cst(Ty::F32, (v as f32).to_bits() as u64)
            } else {
                l.cst(Ty::F64, v.to_bits())
            }
        };
        let (clo, chi, climit, zero) = (fc(self, lo), fc(self, hi), fc(self, limit), fc(self, 0.0));
        let below = self.op_t(Op::FOrdLessThan, Ty::Bool, &[x, clo]);
        let c = self.op_t(Op::Select, ft, &[below, clo, x]);
        let above = self.op_t(Op::FOrdGreaterThan, Ty::Bool, &[c, chi]);
        let c = self.op_t(Op::Select, ft, &[above, chi, c]);
        let nan = self.op_t(Op::IsNan, Ty::Bool, &[x]);
        let c = self.op_t(Op::Select, ft, &[nan, zero, c]);
        let rt = reg_ty(to);
        let r = self.op_t(if signed { Op::ConvertFToS } else { Op::ConvertFToU }, rt, &[c]);
        let over = self.op_t(Op::FOrdGreaterThanEqual, Ty::Bool, &[x, climit]);
        let m = self.cst(rt, max);
        self.op_t(Op::Select, rt, &[over, m, r])
    }

    /// f16 or bf16 bits (in a u32) to f32, exactly.
    pub(super) fn half_to_f32(&mut self, t: DType, h: Word) -> Word {
        if t == DType::BF16 {
            let s = self.c32(16);
            let b = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[h, s]);
            return self.op_t(Op::Bitcast, Ty::F32, &[b]);
        }
        let c = |l: &mut Self, v: u32| l.c32(v);
        let (c8000, c16, c10, c1f, c3ff, c13, c23) =
            (c(self, 0x8000), c(self, 16), c(self, 10), c(self, 0x1F), c(self, 0x3FF), c(self, 13), c(self, 23));
        let sbit = self.op_t(Op::BitwiseAnd, Ty::U32, &[h, c8000]);
        let sign = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[sbit, c16]);
        let e0 = self.op_t(Op::ShiftRightLogical, Ty::U32, &[h, c10]);
        let exp = self.op_t(Op::BitwiseAnd, Ty::U32, &[e0, c1f]);
        let man = self.op_t(Op::BitwiseAnd, Ty::U32, &[h, c3ff]);
        let man13 = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[man, c13]);
        // Normal: rebias the exponent.
        let c112 = self.c32(112);
        let e = self.op_t(Op::IAdd, Ty::U32, &[exp, c112]);
        let e23 = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[e, c23]);
        let normal = self.op_t(Op::BitwiseOr, Ty::U32, &[e23, man13]);
        // Inf/NaN.
        let inf = self.c32(0x7F80_0000);
        let special = self.op_t(Op::BitwiseOr, Ty::U32, &[inf, man13]);
        // Subnormal: the mantissa's top bit p becomes the implicit one; exponent 103 + p.
        let p = self.glsl(Ty::U32, FIND_UMSB, &[man]);
        let c10b = self.c32(10);
        let shift = self.op_t(Op::ISub, Ty::U32, &[c10b, p]);
        let m = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[man, shift]);
        let m = self.op_t(Op::BitwiseAnd, Ty::U32, &[m, c3ff]);
        let m = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[m, c13]);
        let c103 = self.c32(103);
        let se = self.op_t(Op::IAdd, Ty::U32, &[c103, p]);
        let se = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[se, c23]);
        let sub = self.op_t(Op::BitwiseOr, Ty::U32, &[se, m]);
        let zero = self.c32(0);
        let man_zero = self.op_t(Op::IEqual, Ty::Bool, &[man, zero]);
        let tiny = self.op_t(Op::Select, Ty::U32, &[man_zero, zero, sub]);
        let exp_zero = self.op_t(Op::IEqual, Ty::Bool, &[exp, zero]);
        let exp_max = self.op_t(Op::IEqual, Ty::Bool, &[exp, c1f]);
        let r = self.op_t(Op::Select, Ty::U32, &[exp_max, special, normal]);
        let r = self.op_t(Op::Select, Ty::U32, &[exp_zero, tiny, r]);
        let bits = self.op_t(Op::BitwiseOr, Ty::U32, &[sign, r]);
        self.op_t(Op::Bitcast, Ty::F32, &[bits])
    }

    /// f32 to f16 or bf16 bits (in a u32), round to nearest even, as the emulator does.
    pub(super) fn f32_to_half(&mut self, t: DType, f: Word) -> Word {
        let b = self.op_t(Op::Bitcast, Ty::U32, &[f]);
        let c = |l: &mut Self, v: u32| l.c32(v);
        let (c16, c1, c7fffffff, c7f800000) = (c(self, 16), c(self, 1), c(self, 0x7FFF_FFFF), c(self, 0x7F80_0000));
        let abs = self.op_t(Op::BitwiseAnd, Ty::U32, &[b, c7fffffff]);
        let is_nan = self.op_t(Op::UGreaterThan, Ty::Bool, &[abs, c7f800000]);
        if t == DType::BF16 {
            // NaN: (b >> 16) | 0x40; else (b + 0x7FFF + ((b >> 16) & 1)) >> 16.
            let hi = self.op_t(Op::ShiftRightLogical, Ty::U32, &[b, c16]);
            let c40 = self.c32(0x40);
            let nan = self.op_t(Op::BitwiseOr, Ty::U32, &[hi, c40]);
            let odd = self.op_t(Op::BitwiseAnd, Ty::U32, &[hi, c1]);
            let c7fff = self.c32(0x7FFF);
            let round = self.op_t(Op::IAdd, Ty::U32, &[c7fff, odd]);
            let sum = self.op_t(Op::IAdd, Ty::U32, &[b, round]);
            let r = self.op_t(Op::ShiftRightLogical, Ty::U32, &[sum, c16]);
            let r = self.op_t(Op::Select, Ty::U32, &[is_nan, nan, r]);
            let cffff = self.c32(0xFFFF);
            return self.op_t(Op::BitwiseAnd, Ty::U32, &[r, cffff]);
        }
        let (c8000, c23, cff, c7fffff, c13, c10) =
            (c(self, 0x8000), c(self, 23), c(self, 0xFF), c(self, 0x7F_FFFF), c(self, 13), c(self, 10));
        let hi = self.op_t(Op::ShiftRightLogical, Ty::U32, &[b, c16]);
        let sign = self.op_t(Op::BitwiseAnd, Ty::U32, &[hi, c8000]);
        let e0 = self.op_t(Op::ShiftRightLogical, Ty::U32, &[b, c23]);
        let exp = self.op_t(Op::BitwiseAnd, Ty::U32, &[e0, cff]);
        let man = self.op_t(Op::BitwiseAnd, Ty::U32, &[b, c7fffff]);
        // e = exp - 112, signed.
        let c112 = self.c32(112);
        let e = self.op_t(Op::ISub, Ty::U32, &[exp, c112]);
        // Normal: ((e << 10) | (man >> 13)) rounded by the 13 dropped bits (a carry may reach inf).
        let e10 = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[e, c10]);
        let m13 = self.op_t(Op::ShiftRightLogical, Ty::U32, &[man, c13]);
        let rn = self.op_t(Op::BitwiseOr, Ty::U32, &[e10, m13]);
        let c1fff = self.c32(0x1FFF);
        let rem = self.op_t(Op::BitwiseAnd, Ty::U32, &[man, c1fff]);
        let c1000 = self.c32(0x1000);
        let normal = self.round_even(rn, rem, c1000);
        // Subnormal (-10 <= e <= 0): m = man | 0x800000 shifted right by 14 - e, rounded.
        let c800000 = self.c32(0x80_0000);
        let m = self.op_t(Op::BitwiseOr, Ty::U32, &[man, c800000]);
        let c14 = self.c32(14);
        let sh = self.op_t(Op::ISub, Ty::U32, &[c14, e]);
        let (c14b, c24) = (self.c32(14), self.c32(24));
        let sh = self.glsl(Ty::U32, SCLAMP, &[sh, c14b, c24]);
        let rs = self.op_t(Op::ShiftRightLogical, Ty::U32, &[m, sh]);
        let one_sh = self.op_t(Op::ShiftLeftLogical, Ty::U32, &[c1, sh]);
        let low_mask = self.op_t(Op::ISub, Ty::U32, &[one_sh, c1]);
        let rem_s = self.op_t(Op::BitwiseAnd, Ty::U32, &[m, low_mask]);
        let half_s = self.op_t(Op::ShiftRightLogical, Ty::U32, &[one_sh, c1]);
        let subnormal = self.round_even(rs, rem_s, half_s);
        // Choose by range (signed compares on e).
        let zero = self.c32(0);
        let (c31, cm10, c7c00, c200) = (self.c32(31), self.c32(-10i32 as u32), self.c32(0x7C00), self.c32(0x200));
        let overflow = self.op_t(Op::SGreaterThanEqual, Ty::Bool, &[e, c31]);
        let small = self.op_t(Op::SLessThanEqual, Ty::Bool, &[e, zero]);
        let tiny = self.op_t(Op::SLessThan, Ty::Bool, &[e, cm10]);
        let man_nz = self.op_t(Op::INotEqual, Ty::Bool, &[man, zero]);
        let payload = self.op_t(Op::Select, Ty::U32, &[man_nz, c200, zero]);
        let special = self.op_t(Op::BitwiseOr, Ty::U32, &[c7c00, payload]);
        let exp_max = self.op_t(Op::IEqual, Ty::Bool, &[exp, cff]);
        let r = self.op_t(Op::Select, Ty::U32, &[small, subnormal, normal]);
        let r = self.op_t(Op::Select, Ty::U32, &[tiny, zero, r]);
        let r = self.op_t(Op::Select, Ty::U32, &[overflow, c7c00, r]);
        let r = self.op_t(Op::Select, Ty::U32, &[exp_max, special, r]);
        self.op_t(Op::BitwiseOr, Ty::U32, &[sign, r])
    }

    /// `r + 1` when the dropped bits `rem` are above `half`, or equal to it with `r` odd.
    fn round_even(&mut self, r: Word, rem: Word, half: Word) -> Word {
        let one = self.c32(1);
        let above = self.op_t(Op::UGreaterThan, Ty::Bool, &[rem, half]);
        let tie = self.op_t(Op::IEqual, Ty::Bool, &[rem, half]);
        let odd_bit = self.op_t(Op::BitwiseAnd, Ty::U32, &[r, one]);
        let zero = self.c32(0);
        let odd = self.op_t(Op::INotEqual, Ty::Bool, &[odd_bit, zero]);
        let tie_odd = self.op_t(Op::LogicalAnd, Ty::Bool, &[tie, odd]);
        let up = self.op_t(Op::LogicalOr, Ty::Bool, &[above, tie_odd]);
        let r1 = self.op_t(Op::IAdd, Ty::U32, &[r, one]);
        self.op_t(Op::Select, Ty::U32, &[up, r1, r])
    }
}
