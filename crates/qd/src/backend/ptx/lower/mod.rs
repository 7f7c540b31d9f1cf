//! Lowering a verified kernel to a PTX module (text we print ourselves, D7).
//!
//! Values live in virtual registers by class (`%p` pred, `%rs` 16-bit, `%r` 32-bit, `%rd` 64-bit,
//! `%f` f32, `%fd` f64); locals are registers too (PTX registers are mutable). Structured control
//! flow becomes labels and branches, with `bra.uni` where the uniformity analysis (D3) proves the
//! branch does not diverge within a warp. Arrays are passed as a device pointer and a u32 length.
//!
//! Arithmetic, plain and volatile loads and stores, and control flow are printed here. Everything
//! the printer contract covers goes through one [`PtxPrinter`]: atom/red (with D6's seq_cst and
//! unused-result rules), ordered loads and stores, fences and proxy fences, CTA and warp barriers,
//! warp collectives, special registers and the mbarrier family. The printer validates each line
//! against the target and records the features it used; the module's `.version` is the highest
//! floor of the target and of those features (D7), capped at what ptxas 13.0 and the CUDA 13.0
//! driver JIT accept ([`PtxVersion::PTXAS_13_0_MAX`](super::PtxVersion::PTXAS_13_0_MAX)).
//! A [`PtxError`] becomes a [`TraceError`] naming the kernel, the op and the user's source line.
//!
//! This file holds the entry points, the module assembly, the lowering context with its register
//! allocation and line helpers, and the per-instruction dispatch; the topic files hold the rest:
//! `arith.rs` (D5 arithmetic, comparisons, conversions), `memory.rs` (addresses, loads, stores),
//! `atomic.rs` (read-modify-writes, CAS and CAS loops), `subgroup.rs` (shuffles, special
//! registers, the NVIDIA-only families and mbarriers), `nv.rs` (the `qd::nv` families beyond
//! those) and `control.rs` (structured control flow).

mod arith;
mod atomic;
mod control;
mod memory;
mod nv;
mod subgroup;

use super::errors::PtxError;
use super::modifier::{AtomicOrder, NvptxScope};
use super::printer::{BarRedOp, PtxPrinter, FULL_MASK};
use super::warp::{ShflMode, VoteMode};
use super::PtxTarget;
use crate::ir::uniformity::{analyze, Uniformity, UniformityInfo};
use crate::ir::*;
use crate::trace::TraceError;
use std::fmt::Write;

/// How one kernel parameter is passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamAbi {
    /// A global array: a u64 device pointer, then its u32 length.
    Array {
        /// Element type.
        dtype: DType,
    },
    /// A scalar by value at its natural width (bool as u8).
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// A lowered kernel.
#[derive(Clone, Debug)]
pub struct PtxModule {
    /// The whole module text.
    pub text: String,
    /// The `.entry` name.
    pub entry: String,
    /// Bytes of shared memory per block (static, or dynamic when `dynamic_shared` is set).
    pub shared_bytes: u32,
    /// Shared memory is one dynamic region (over 48 KiB): launch with this many dynamic bytes.
    pub dynamic_shared: bool,
    /// Parameter passing, in order.
    pub params: Vec<ParamAbi>,
}

/// Static shared memory above this needs the dynamic region and its launch attribute.
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// Register class of a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Pred,
    B16,
    B32,
    B64,
    F32,
    F64,
}

fn class(d: DType) -> Class {
    match d {
        DType::Bool => Class::Pred,
        DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::F16 | DType::BF16 => Class::B16,
        DType::I32 | DType::U32 | DType::F16x2 | DType::BF16x2 => Class::B32,
        DType::I64 | DType::U64 | DType::B128 => Class::B64,
        DType::F32 => Class::F32,
        DType::F64 => Class::F64,
    }
}

/// PTX type suffix for arithmetic on `d` (8-bit integers compute in 16 bits).
fn ty(d: DType) -> &'static str {
    match d {
        DType::Bool => "pred",
        DType::I8 | DType::I16 => "s16",
        DType::U8 | DType::U16 => "u16",
        DType::I32 => "s32",
        DType::U32 => "u32",
        DType::I64 => "s64",
        DType::U64 => "u64",
        DType::F16 | DType::BF16 => "b16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16x2 | DType::BF16x2 => "b32",
        DType::B128 => "b128",
    }
}

/// Untyped bits suffix of a register class.
fn bits(c: Class) -> &'static str {
    match c {
        Class::Pred => "pred",
        Class::B16 => "b16",
        Class::B32 | Class::F32 => "b32",
        Class::B64 | Class::F64 => "b64",
    }
}

/// Memory type for loads and stores of an element.
fn mem_ty(d: DType) -> &'static str {
    match d {
        DType::Bool | DType::U8 => "u8",
        DType::I8 => "s8",
        DType::I16 => "s16",
        DType::U16 => "u16",
        DType::F16 | DType::BF16 => "b16",
        other => ty(other),
    }
}

struct Lower<'k> {
    k: &'k Kernel,
    /// Prints every instruction of the printer contract and records the features used.
    p: PtxPrinter,
    uni: UniformityInfo,
    /// Depth-first instruction counter, matching `uni.control`.
    inst_no: usize,
    body: String,
    counts: [u32; 6],
    value_reg: Vec<String>,
    local_reg: Vec<String>,
    param_regs: Vec<(String, String)>,
    shared_offsets: Vec<u32>,
    labels: u32,
    loops: Vec<(String, String)>,
    dynamic_shared: bool,
    /// Values read anywhere: an atomic whose result is not among them prints as `red`.
    used: std::collections::HashSet<ValueId>,
    /// i32 values `x + c` with `c` a constant in `0..=`[`MAX_FOLDED`]: `(x, c)` ([`Lower::address`]).
    offsets: std::collections::HashMap<ValueId, (ValueId, i64)>,
}

/// The largest constant element offset an address folds (its bytes stay far inside a PTX
/// immediate).
const MAX_FOLDED: i64 = 1 << 20;

/// The i32 values of `kernel` that are another value plus a constant in `0..=MAX_FOLDED` (chains
/// of such adds summed), as `(x, c)`.
fn constant_offsets(kernel: &Kernel) -> std::collections::HashMap<ValueId, (ValueId, i64)> {
    let mut consts = std::collections::HashMap::new();
    kernel.body.walk(&mut |i| {
        if let InstKind::Const { dst, value } = &i.kind
            && value.dtype == DType::I32
        {
            consts.insert(*dst, value.bits as u32 as i32 as i64);
        }
    });
    let mut offsets: std::collections::HashMap<ValueId, (ValueId, i64)> = std::collections::HashMap::new();
    // Definitions come before uses in a walk, so a chain's inner add is already in the map.
    kernel.body.walk(&mut |i| {
        if let InstKind::Binary { dst, op: BinOp::Add, a, b } = &i.kind
            && kernel.dtype(*dst) == DType::I32
        {
            let (x, c) = match (consts.get(a), consts.get(b)) {
                (_, Some(&c)) => (*a, c),
                (Some(&c), None) => (*b, c),
                _ => return,
            };
            let (x, c) = match offsets.get(&x) {
                Some(&(y, d)) => (y, c + d),
                None => (x, c),
            };
            if (0..=MAX_FOLDED).contains(&c) {
                offsets.insert(*dst, (x, c));
            }
        }
    });
    offsets
}

/// Lowers `kernel` for `sm_<sm>` (not architecture-specific): [`lower_kernel`] for
/// `PtxTarget::sm(sm)`.
#[track_caller]
pub fn lower_kernel_sm(kernel: &Kernel, sm: u32) -> Result<PtxModule, TraceError> {
    lower_kernel(kernel, &PtxTarget::sm(sm))
}

/// Lowers `kernel` for `target` (`sm_90`, `sm_90a`, `sm_100a`, ...). The module's `.version` is
/// the highest floor of the target and of the features its instructions use (D7), at most PTX 9.0.
/// An instruction the target lacks is a [`TraceError`] at the user's source line, naming the
/// feature and the SM it needs; an unknown target is one at the caller's line.
#[track_caller]
pub fn lower_kernel(kernel: &Kernel, target: &PtxTarget) -> Result<PtxModule, TraceError> {
    let caller = SrcLoc::caller();
    let module_err = |e: PtxError| TraceError {
        kernel: kernel.name.clone(),
        op: "ptx.module".into(),
        loc: caller,
        message: e.to_string(),
        unsupported: None,
    };
    target.floor().map_err(module_err)?;
    let mut optimized = kernel.clone();
    // The atomics `atom` lacks become CAS loops in the IR first (one rewrite for every backend).
    crate::target::legalize_atomics(&mut optimized, &crate::target::Target::ptx(*target));
    crate::ir::passes::optimize(&mut optimized);
    let kernel = &optimized;
    let mut l = Lower {
        k: kernel,
        p: PtxPrinter::new(*target),
        uni: analyze(kernel),
        inst_no: 0,
        body: String::new(),
        counts: [0; 6],
        value_reg: Vec::new(),
        local_reg: Vec::new(),
        param_regs: Vec::new(),
        shared_offsets: Vec::new(),
        labels: 0,
        loops: Vec::new(),
        dynamic_shared: false,
        used: Default::default(),
        offsets: constant_offsets(kernel),
    };
    kernel.body.walk(&mut |i| l.used.extend(i.kind.uses()));
    l.value_reg = kernel.values.iter().map(|d| l.fresh(class(*d))).collect();
    l.local_reg = kernel.locals.iter().map(|d| l.fresh(class(d.dtype))).collect();
    let mut offset = 0u32;
    for s in &kernel.shared {
        offset = offset.next_multiple_of(8);
        l.shared_offsets.push(offset);
        offset += s.len * s.dtype.size_bytes() as u32;
    }
    let shared_bytes = offset;
    l.dynamic_shared = shared_bytes > STATIC_SHARED_LIMIT;
    let entry = sanitize(&kernel.name);
    let mut params = Vec::new();
    let mut sig = Vec::new();
    for (i, p) in kernel.params.iter().enumerate() {
        match p {
            Param::Array { dtype, .. } => {
                params.push(ParamAbi::Array { dtype: *dtype });
                sig.push(format!(".param .u64 {entry}_p{i}_ptr"));
                sig.push(format!(".param .u32 {entry}_p{i}_len"));
                let ptr = l.fresh(Class::B64);
                let len = l.fresh(Class::B32);
                let _ = writeln!(l.body, "\tld.param.u64 {ptr}, [{entry}_p{i}_ptr];");
                let _ = writeln!(l.body, "\tcvta.to.global.u64 {ptr}, {ptr};");
                let _ = writeln!(l.body, "\tld.param.u32 {len}, [{entry}_p{i}_len];");
                l.param_regs.push((ptr, len));
            }
            Param::Scalar { dtype, value, .. } => {
                params.push(ParamAbi::Scalar { dtype: *dtype });
                let r = l.value_reg[value.0 as usize].clone();
                match dtype {
                    DType::Bool => {
                        sig.push(format!(".param .u8 {entry}_p{i}"));
                        let t = l.fresh(Class::B16);
                        let _ = writeln!(l.body, "\tld.param.u8 {t}, [{entry}_p{i}];");
                        let _ = writeln!(l.body, "\tsetp.ne.u16 {r}, {t}, 0;");
                    }
                    d => {
                        sig.push(format!(".param .{} {entry}_p{i}", mem_ty(*d)));
                        let _ = writeln!(l.body, "\tld.param.{} {r}, [{entry}_p{i}];", mem_ty(*d));
                    }
                }
                l.param_regs.push((String::new(), String::new()));
            }
        }
    }
    l.block(&kernel.body.insts)?;
    let _ = writeln!(l.body, "\tret;");

    let header = l.p.header().map_err(module_err)?;
    let mut text = String::new();
    let _ = writeln!(text, "//\n// Generated by qd for kernel `{}`\n//\n", kernel.name);
    let _ = writeln!(text, "{header}");
    let align = nv::shared_align(kernel);
    if l.dynamic_shared {
        let _ = writeln!(text, ".extern .shared .align {align} .b8 {entry}_dyn_smem[];\n");
    } else if shared_bytes > 0 {
        let _ = writeln!(text, ".shared .align {align} .b8 {entry}_smem[{shared_bytes}];\n");
    }
    let _ = writeln!(text, ".visible .entry {entry}(\n\t{}\n)", sig.join(",\n\t"));
    let _ = writeln!(text, ".maxntid {}, 1, 1", kernel.block_dim);
    if let Some(blocks) = kernel.min_blocks_per_sm {
        // With `.maxntid`, ptxas caps registers so that `blocks` blocks fit a multiprocessor.
        let _ = writeln!(text, ".minnctapersm {blocks}");
    }
    let _ = writeln!(text, "{{");
    for (c, n) in [
        (Class::Pred, "%p"),
        (Class::B16, "%rs"),
        (Class::B32, "%r"),
        (Class::B64, "%rd"),
        (Class::F32, "%f"),
        (Class::F64, "%fd"),
    ] {
        let count = l.counts[c as usize];
        if count > 0 {
            let _ = writeln!(text, "\t.reg .{} {n}<{count}>;", bits_decl(c));
        }
    }
    for (i, a) in kernel.local_arrays.iter().enumerate() {
        let _ = writeln!(text, "\t.local .align 8 .b8 {entry}_l{i}[{}];", a.len as usize * a.dtype.size_bytes());
    }
    text.push('\n');
    text.push_str(&l.body);
    text.push_str("}\n");
    Ok(PtxModule { text, entry, shared_bytes, dynamic_shared: l.dynamic_shared, params })
}

/// What the printer returns: one line, an optional line (a thread-scope fence prints nothing), or
/// several (seq_cst read-modify-writes, fallbacks).
trait IntoLines {
    fn into_lines(self) -> Vec<String>;
}

impl IntoLines for String {
    fn into_lines(self) -> Vec<String> {
        vec![self]
    }
}

impl IntoLines for Option<String> {
    fn into_lines(self) -> Vec<String> {
        self.into_iter().collect()
    }
}

impl IntoLines for Vec<String> {
    fn into_lines(self) -> Vec<String> {
        self
    }
}

fn bits_decl(c: Class) -> &'static str {
    match c {
        Class::F32 => "f32",
        Class::F64 => "f64",
        other => bits(other),
    }
}

fn sanitize(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        format!("k_{s}")
    } else {
        s
    }
}

impl Lower<'_> {
    fn fresh(&mut self, c: Class) -> String {
        let n = self.counts[c as usize];
        self.counts[c as usize] += 1;
        let prefix = match c {
            Class::Pred => "%p",
            Class::B16 => "%rs",
            Class::B32 => "%r",
            Class::B64 => "%rd",
            Class::F32 => "%f",
            Class::F64 => "%fd",
        };
        format!("{prefix}{n}")
    }

    fn r(&self, v: ValueId) -> String {
        self.value_reg[v.0 as usize].clone()
    }

    fn d(&self, v: ValueId) -> DType {
        self.k.dtype(v)
    }

    fn line(&mut self, s: impl AsRef<str>) {
        self.body.push('\t');
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }

    fn label(&mut self, base: &str) -> String {
        self.labels += 1;
        format!("$L_{base}_{}", self.labels)
    }

    fn err(&self, inst: &Inst, message: impl Into<String>) -> TraceError {
        TraceError {
            kernel: self.k.name.clone(),
            op: inst.op_name(),
            loc: inst.loc,
            message: message.into(),
            unsupported: None,
        }
    }

    /// A printer diagnostic as the error of `inst` (kernel, op mnemonic, the user's source line).
    fn ptx_err(&self, inst: &Inst, e: PtxError) -> TraceError {
        self.err(inst, e.to_string())
    }

    /// Prints what `f` asks of the printer for `inst`, one tab-indented line each.
    fn print<L: IntoLines>(
        &mut self,
        inst: &Inst,
        f: impl FnOnce(&mut PtxPrinter) -> Result<L, PtxError>,
    ) -> Result<(), TraceError> {
        let lines = f(&mut self.p).map_err(|e| self.ptx_err(inst, e))?;
        for l in lines.into_lines() {
            self.line(l);
        }
        Ok(())
    }

    fn block(&mut self, insts: &[Inst]) -> Result<(), TraceError> {
        for inst in insts {
            let ctl = self.uni.control[self.inst_no];
            self.inst_no += 1;
            self.inst(inst, ctl)?;
        }
        Ok(())
    }

    fn inst(&mut self, inst: &Inst, ctl: Uniformity) -> Result<(), TraceError> {
        use InstKind::*;
        match &inst.kind {
            Const { dst, value } => {
                let r = self.r(*dst);
                match value.dtype {
                    DType::Bool => self.line(format!("setp.ne.u32 {r}, {}, 0;", value.bits)),
                    DType::F32 => self.line(format!("mov.b32 {r}, 0x{:08X};", value.bits as u32)),
                    DType::F64 => self.line(format!("mov.b64 {r}, 0x{:016X};", value.bits)),
                    // i8 lives sign-extended in its 16-bit register (as `wrap_narrow` leaves it);
                    // the constant's bits are zero-extended.
                    DType::I8 => self.line(format!("mov.b16 {r}, 0x{:X};", value.bits as u8 as i8 as i16 as u16)),
                    d => self.line(format!("mov.{} {r}, 0x{:X};", bits(class(d)), value.bits)),
                }
            }
            Unary { dst, op, a } => self.unary(inst, *dst, *op, *a)?,
            Binary { dst, op, a, b } => self.binary(inst, *dst, *op, *a, *b)?,
            Cmp { dst, op, a, b } => self.cmp(*dst, *op, *a, *b),
            Select { dst, cond, a, b } => {
                let (d, c, x, y) = (self.r(*dst), self.r(*cond), self.r(*a), self.r(*b));
                if self.d(*dst) == DType::Bool {
                    let t = self.fresh(Class::Pred);
                    self.line(format!("and.pred {t}, {c}, {x};"));
                    self.line(format!("and.pred {d}, !{c}, {y};"));
                    self.line(format!("or.pred {d}, {d}, {t};"));
                } else {
                    self.line(format!("selp.{} {d}, {x}, {y}, {c};", bits(class(self.d(*dst)))));
                }
            }
            Cast { dst, a } => self.cast(inst, *dst, *a)?,
            BitCast { dst, a } => {
                let (d, x) = (self.r(*dst), self.r(*a));
                self.line(format!("mov.{} {d}, {x};", bits(class(self.d(*dst)))));
                self.wrap_narrow(self.d(*dst), &d);
            }
            Fma { dst, a, b, c } => {
                let dt = self.d(*dst);
                let (d, x, y, z) = (self.r(*dst), self.r(*a), self.r(*b), self.r(*c));
                if matches!(dt, DType::F16 | DType::BF16) {
                    let (fx, fy, fz) = (self.widen_half(dt, &x), self.widen_half(dt, &y), self.widen_half(dt, &z));
                    let f = self.fresh(Class::F32);
                    self.line(format!("fma.rn.f32 {f}, {fx}, {fy}, {fz};"));
                    self.narrow_half(dt, &f, &d);
                } else {
                    self.line(format!("fma.rn.{} {d}, {x}, {y}, {z};", ty(dt)));
                }
            }
            Special { dst, reg } => self.special(inst, *dst, *reg)?,
            ArrayLen { dst, array } => {
                let d = self.r(*dst);
                let len = match array {
                    ArrayRef::Param(i) => self.param_regs[*i as usize].1.clone(),
                    ArrayRef::Shared(i) => self.k.shared[*i as usize].len.to_string(),
                    ArrayRef::Local(i) => self.k.local_arrays[*i as usize].len.to_string(),
                };
                self.line(format!("mov.u32 {d}, {len};"));
            }
            LocalGet { dst, local } => {
                let (d, l) = (self.r(*dst), self.local_reg[local.0 as usize].clone());
                self.line(format!("mov.{} {d}, {l};", bits(class(self.d(*dst)))));
            }
            LocalSet { local, value } => {
                let (l, v) = (self.local_reg[local.0 as usize].clone(), self.r(*value));
                self.line(format!("mov.{} {l}, {v};", bits(class(self.d(*value)))));
            }
            Load { dst, place, kind } => self.load(inst, *dst, place, *kind)?,
            Store { place, value, kind } => self.store(inst, place, *value, *kind)?,
            Atomic { dst, place, op, value, ordering, scope } => {
                self.atomic(inst, *dst, place, *op, *value, *ordering, *scope)?
            }
            Cas { dst, place, expected, desired, ordering, scope } => {
                self.cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            WordShift { dst, place } => self.word_shift(*dst, place),
            WordCas { dst, place, expected, desired, ordering, scope } => {
                self.word_cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            Shuffle { dst, valid, kind, value, lane } => {
                let mode = match kind {
                    ShuffleKind::Idx => ShflMode::Idx,
                    ShuffleKind::Up => ShflMode::Up,
                    ShuffleKind::Down => ShflMode::Down,
                    ShuffleKind::Xor => ShflMode::Bfly,
                };
                self.shuffle(inst, *dst, *valid, mode, *value, *lane)?;
            }
            Broadcast { dst, value, lane } => self.shuffle(inst, *dst, None, ShflMode::Idx, *value, *lane)?,
            Ballot { dst, pred } => {
                let (d, p) = (self.r(*dst), self.r(*pred));
                let t = self.fresh(Class::B32);
                self.print(inst, |pr| pr.vote_sync(VoteMode::Ballot, &t, &p, FULL_MASK))?;
                self.line(format!("cvt.u64.u32 {d}, {t};"));
            }
            Vote { dst, kind, pred } => {
                let (d, p) = (self.r(*dst), self.r(*pred));
                let mode = match kind {
                    VoteKind::All => VoteMode::All,
                    VoteKind::Any => VoteMode::Any,
                    VoteKind::Uni => VoteMode::Uni,
                };
                self.print(inst, |pr| pr.vote_sync(mode, &d, &p, FULL_MASK))?;
            }
            BlockBarrier { reduce: None } => self.print(inst, |pr| pr.bar_sync(0, None))?,
            BlockBarrier { reduce: Some((red, pred, dst)) } => {
                let (p, d) = (self.r(*pred), self.r(*dst));
                match red {
                    BarrierReduce::Popc => self.print(inst, |pr| pr.bar_red_popc(&d, 0, &p))?,
                    BarrierReduce::And | BarrierReduce::Or => {
                        let op = if *red == BarrierReduce::And { BarRedOp::And } else { BarRedOp::Or };
                        let t = self.fresh(Class::Pred);
                        self.print(inst, |pr| pr.bar_red_pred(op, &t, 0, &p))?;
                        self.line(format!("selp.u32 {d}, 1, 0, {t};"));
                    }
                }
            }
            SubgroupReduce { .. } => {
                return Err(self.err(inst, "the library reduces with shuffle trees on PTX (seed 002)"))
            }
            SubgroupBarrier => self.print(inst, |pr| pr.bar_warp_sync(FULL_MASK))?,
            // Thread scope prints nothing; acquire/release fall back to acq_rel where the target
            // has no split fences (the printer's rule).
            Fence { scope, ordering } => {
                let (order, scope) = (AtomicOrder::from(*ordering), NvptxScope::from(*scope));
                self.print(inst, |pr| pr.fence(order, scope))?;
            }
            Nv { op, dsts, args, place } => self.nv(inst, op, dsts, args, place.as_ref())?,
            If { cond, then_block, else_block } => self.if_else(*cond, then_block, else_block, ctl)?,
            Loop { body } => self.loop_block(body)?,
            Break => self.break_loop(),
            Continue => self.continue_loop(),
            Return => self.line("ret;"),
            GridStride { begin, end, index, body } => self.grid_stride(inst, *begin, *end, *index, body)?,
        }
        Ok(())
    }
}
