//! The verifier: structural and type rules, plus the uniformity rules of D3.
//!
//! Every message names the kernel, the operation and the user's source line.

use super::inst::*;
use super::types::DType;
use super::uniformity::{analyze, Uniformity};
use super::ScanKind;

/// A rule the kernel breaks.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("kernel `{kernel}`: `{op}` at {loc}: {message}")]
pub struct VerifyError {
    /// Kernel name.
    pub kernel: String,
    /// The operation's mnemonic.
    pub op: String,
    /// Where the user wrote it.
    pub loc: SrcLoc,
    /// What is wrong.
    pub message: String,
}

/// Target facts the verifier needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct VerifyOptions {
    /// The target requires a subgroup-uniform `broadcast` lane (SPIR-V `OpGroupNonUniformBroadcast`).
    pub uniform_broadcast_lane: bool,
}

/// Checks a kernel; returns the first error found in program order.
pub fn verify(k: &Kernel, opts: VerifyOptions) -> Result<(), VerifyError> {
    let mut v = Verifier {
        k,
        defined: vec![false; k.values.len()],
        left_scope: vec![false; k.values.len()],
        loop_depth: 0,
        in_range: false,
        grid_strides: 0,
    };
    for p in &k.params {
        if let Param::Scalar { value, .. } = p {
            v.defined[value.0 as usize] = true;
        }
    }
    v.block(&k.body, true)?;
    if k.launch == LaunchKind::Range && v.grid_strides != 1 {
        return Err(VerifyError {
            kernel: k.name.clone(),
            op: "range".into(),
            loc: k.body.insts.first().map(|i| i.loc).unwrap_or(SrcLoc { file: "<kernel>", line: 0, column: 0 }),
            message: format!("a range kernel has exactly one parallel range loop, found {}", v.grid_strides),
        });
    }
    check_uniformity(k, opts)
}

struct Verifier<'k> {
    k: &'k Kernel,
    /// Values visible at the current point.
    defined: Vec<bool>,
    /// Values whose defining block has ended (for a clearer message).
    left_scope: Vec<bool>,
    loop_depth: usize,
    /// Inside the `GridStride` body, where `Return` would skip later iterations (D2).
    in_range: bool,
    grid_strides: usize,
}

impl Verifier<'_> {
    fn err(&self, inst: &Inst, message: String) -> VerifyError {
        VerifyError { kernel: self.k.name.clone(), op: inst.op_name(), loc: inst.loc, message }
    }

    fn ty(&self, v: ValueId) -> DType {
        self.k.dtype(v)
    }

    /// Checks a block. Values defined inside it are visible only inside it (they must dominate
    /// their uses): leaving the block forgets them.
    fn block(&mut self, b: &Block, top: bool) -> Result<(), VerifyError> {
        let mut own = Vec::new();
        let result = self.block_insts(b, top, &mut own);
        for d in own {
            self.defined[d.0 as usize] = false;
            self.left_scope[d.0 as usize] = true;
        }
        result
    }

    fn block_insts(&mut self, b: &Block, top: bool, own: &mut Vec<ValueId>) -> Result<(), VerifyError> {
        for inst in &b.insts {
            for u in inst.kind.uses() {
                if !self.defined.get(u.0 as usize).copied().unwrap_or(false) {
                    let message = if self.left_scope.get(u.0 as usize).copied().unwrap_or(false) {
                        format!("uses %{} outside the if/loop body that computes it; carry it out in a var", u.0)
                    } else {
                        format!("uses %{} before it is defined", u.0)
                    };
                    return Err(self.err(inst, message));
                }
            }
            self.types(inst)?;
            for d in inst.kind.defs() {
                self.defined[d.0 as usize] = true;
                own.push(d);
            }
            match &inst.kind {
                InstKind::If { then_block, else_block, .. } => {
                    self.block(then_block, false)?;
                    self.block(else_block, false)?;
                }
                InstKind::Loop { body } => {
                    self.loop_depth += 1;
                    self.block(body, false)?;
                    self.loop_depth -= 1;
                }
                InstKind::GridStride { body, .. } => {
                    if !top || self.k.launch != LaunchKind::Range {
                        return Err(
                            self.err(inst, "the parallel range loop must be at the top level of a range kernel".into())
                        );
                    }
                    self.grid_strides += 1;
                    self.in_range = true;
                    self.block(body, false)?;
                    self.in_range = false;
                    // The index lives in the loop only.
                    if let InstKind::GridStride { index, .. } = &inst.kind {
                        self.defined[index.0 as usize] = false;
                        self.left_scope[index.0 as usize] = true;
                    }
                }
                InstKind::Break | InstKind::Continue if self.loop_depth == 0 => {
                    return Err(self.err(inst, "break/continue outside of a loop".into()));
                }
                InstKind::Return if self.loop_depth > 0 => {
                    return Err(self.err(inst, "an early return inside a loop is not supported (D2)".into()));
                }
                InstKind::Return if self.in_range => {
                    return Err(
                        self.err(inst, "an early return inside the parallel range loop is not supported (D2)".into())
                    );
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn types(&self, inst: &Inst) -> Result<(), VerifyError> {
        use InstKind::*;
        let same = |a: ValueId, b: ValueId| -> Result<(), VerifyError> {
            if self.ty(a) != self.ty(b) {
                return Err(self.err(inst, format!("operand types differ: {} and {}", self.ty(a), self.ty(b))));
            }
            Ok(())
        };
        let is_bool = |c: ValueId, what: &str| -> Result<(), VerifyError> {
            if self.ty(c) != DType::Bool {
                return Err(self.err(inst, format!("{what} must be bool, got {}", self.ty(c))));
            }
            Ok(())
        };
        let index = |p: &Place| -> Result<(), VerifyError> {
            if !self.ty(p.index).is_int() {
                return Err(self.err(inst, format!("index must be an integer, got {}", self.ty(p.index))));
            }
            Ok(())
        };
        match &inst.kind {
            Binary { dst, op, a, b } => {
                same(*a, *b)?;
                same(*a, *dst)?;
                let t = self.ty(*a);
                let bitwise = matches!(op, BinOp::And | BinOp::Or | BinOp::Xor);
                let shift = matches!(op, BinOp::Shl | BinOp::Shr);
                if (bitwise && !(t.is_int() || t == DType::Bool)) || (shift && !t.is_int()) {
                    return Err(self.err(inst, format!("`{op:?}` needs integer operands, got {t}")));
                }
                if !bitwise && !t.is_numeric() {
                    return Err(self.err(inst, format!("`{op:?}` needs numeric operands, got {t}")));
                }
            }
            Cmp { a, b, .. } => same(*a, *b)?,
            Select { dst, cond, a, b } => {
                is_bool(*cond, "select condition")?;
                same(*a, *b)?;
                same(*a, *dst)?;
            }
            Fma { a, b, c, .. } => {
                same(*a, *b)?;
                same(*a, *c)?;
                if !self.ty(*a).is_float() {
                    return Err(self.err(inst, format!("fma needs float operands, got {}", self.ty(*a))));
                }
            }
            BitCast { dst, a } if self.ty(*dst).bits() != self.ty(*a).bits() => {
                return Err(
                    self.err(inst, format!("bit_cast between {} and {} changes the width", self.ty(*a), self.ty(*dst)))
                );
            }
            Load { dst, place, .. } => {
                index(place)?;
                if self.ty(*dst) != self.k.array_dtype(place.array) {
                    return Err(self.err(inst, "load type differs from the array element type".into()));
                }
            }
            Store { place, value, .. } => {
                index(place)?;
                if self.ty(*value) != self.k.array_dtype(place.array) {
                    return Err(self.err(
                        inst,
                        format!(
                            "stores {} into `{}` of {}",
                            self.ty(*value),
                            self.k.array_name(place.array),
                            self.k.array_dtype(place.array)
                        ),
                    ));
                }
            }
            Atomic { place, op, value, .. } => {
                index(place)?;
                let t = self.k.array_dtype(place.array);
                if self.ty(*value) != t {
                    return Err(self.err(inst, format!("value {} differs from the element type {t}", self.ty(*value))));
                }
                let bitwise = matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor);
                if bitwise && !t.is_int() {
                    return Err(self.err(inst, format!("'atomic_{}' requires integer operands, got '{t}'", op.name())));
                }
                let exchangeable = *op == AtomicOp::Exchange && t == DType::B128;
                if !(bitwise || t.is_numeric() || t.is_packed() || exchangeable) {
                    return Err(self.err(inst, format!("'atomic_{}' does not accept '{t}'", op.name())));
                }
            }
            Cas { place, expected, desired, .. } => {
                index(place)?;
                let t = self.k.array_dtype(place.array);
                if !(t.is_int() || t == DType::B128) {
                    return Err(self.err(inst, format!("'atomic_cas' requires integer operands, got dest '{t}'")));
                }
                if self.ty(*expected) != t || self.ty(*desired) != t {
                    return Err(self.err(inst, "'atomic_cas' operands must have the element type".into()));
                }
            }
            WordShift { dst, place } | WordCas { dst, place, .. } => {
                index(place)?;
                let t = self.k.array_dtype(place.array);
                if matches!(place.array, ArrayRef::Local(_)) {
                    return Err(self.err(inst, format!("'{}' needs a device or shared array", inst.kind.mnemonic())));
                }
                if !matches!(t.size_bytes(), 1 | 2) {
                    return Err(
                        self.err(inst, format!("'{}' needs an 8- or 16-bit element, got '{t}'", inst.kind.mnemonic()))
                    );
                }
                let words = match &inst.kind {
                    WordCas { expected, desired, .. } => vec![*dst, *expected, *desired],
                    _ => vec![*dst],
                };
                if words.iter().any(|w| self.ty(*w) != DType::U32) {
                    return Err(self.err(inst, format!("'{}' works on u32 words", inst.kind.mnemonic())));
                }
            }
            Shuffle { dst, value, lane, .. } | Broadcast { dst, value, lane } => {
                same(*dst, *value)?;
                if self.ty(*lane) != DType::U32 {
                    return Err(self.err(inst, format!("lane operand must be u32, got {}", self.ty(*lane))));
                }
                if !matches!(self.ty(*value).bits(), 32 | 64) {
                    return Err(self.err(inst, format!("subgroup shuffle: unsupported type {}", self.ty(*value))));
                }
            }
            Ballot { pred, .. } | Vote { pred, .. } => is_bool(*pred, "predicate")?,
            SubgroupReduce { dst, op, scan, value } => {
                same(*dst, *value)?;
                let t = self.ty(*value);
                if !t.is_int() || !matches!(t.bits(), 32 | 64) {
                    return Err(self.err(inst, format!("reduces 32- or 64-bit integers, got {t}")));
                }
                if *scan == Some(ScanKind::Exclusive) && *op != ReduxOp::Add {
                    return Err(self.err(inst, "an exclusive scan is a sum only".into()));
                }
            }
            If { cond, .. } => is_bool(*cond, "if condition")?,
            LocalSet { local, value } if self.k.locals[local.0 as usize].dtype != self.ty(*value) => {
                return Err(self.err(inst, "assigns a value of another type to a variable".into()));
            }
            _ => {}
        }
        Ok(())
    }
}

fn check_uniformity(k: &Kernel, opts: VerifyOptions) -> Result<(), VerifyError> {
    let info = analyze(k);
    let mut result = Ok(());
    let mut i = 0;
    k.body.walk(&mut |inst| {
        let ctl = info.control[i];
        i += 1;
        if result.is_err() {
            return;
        }
        let err = |message: String| VerifyError { kernel: k.name.clone(), op: inst.op_name(), loc: inst.loc, message };
        if inst.kind.is_block_barrier() && ctl > Uniformity::Block {
            result = Err(err(format!(
                "a block barrier under control flow that varies within the block (the condition is {ctl}) deadlocks: every thread of the block must reach it"
            )));
        } else if inst.kind.is_subgroup_collective() && ctl > Uniformity::Subgroup {
            result = Err(err(
                "a subgroup collective under control flow that varies within the subgroup: every lane must execute it".into(),
            ));
        } else if let InstKind::Broadcast { lane, .. } = &inst.kind {
            if opts.uniform_broadcast_lane && info.values[lane.0 as usize] > Uniformity::Subgroup {
                result = Err(err(
                    "broadcast needs a subgroup-uniform lane index on this target; use shuffle for a varying source lane".into(),
                ));
            }
        }
    });
    result
}
