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

use super::errors::PtxError;
use super::mbarrier::{MbarrierModifier, MbarrierSpace};
use super::modifier::{AtomSpace, AtomicModifier, AtomicOrder, NvptxScope};
use super::printer::{hex_imm, BarRedOp, ProxyKind, PtxPrinter, FULL_MASK};
use super::warp::{MatchMode, MatchType, ReduxKind, ReduxType, ShflMode, VoteMode};
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
    };
    target.floor().map_err(module_err)?;
    let mut optimized = kernel.clone();
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
    if l.dynamic_shared {
        let _ = writeln!(text, ".extern .shared .align 16 .b8 {entry}_dyn_smem[];\n");
    } else if shared_bytes > 0 {
        let _ = writeln!(text, ".shared .align 16 .b8 {entry}_smem[{shared_bytes}];\n");
    }
    let _ = writeln!(text, ".visible .entry {entry}(\n\t{}\n)", sig.join(",\n\t"));
    let _ = writeln!(text, ".maxntid {}, 1, 1\n{{", kernel.block_dim);
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
        TraceError { kernel: self.k.name.clone(), op: inst.kind.mnemonic(), loc: inst.loc, message: message.into() }
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

    /// Normalises a sub-32-bit integer result held in a 16-bit register to its width (D5 wrapping).
    fn wrap_narrow(&mut self, d: DType, r: &str) {
        match d {
            DType::I8 => self.line(format!("cvt.s16.s8 {r}, {r};")),
            DType::U8 => self.line(format!("and.b16 {r}, {r}, 0x00FF;")),
            _ => {}
        }
    }

    /// An f16/bf16 register widened into a fresh f32 register.
    fn widen_half(&mut self, d: DType, r: &str) -> String {
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

    fn narrow_half(&mut self, d: DType, f: &str, dst: &str) {
        let k = if d == DType::F16 { "f16" } else { "bf16" };
        self.line(format!("cvt.rn.{k}.f32 {dst}, {f};"));
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
            SubgroupBarrier => self.print(inst, |pr| pr.bar_warp_sync(FULL_MASK))?,
            // Thread scope prints nothing; acquire/release fall back to acq_rel where the target
            // has no split fences (the printer's rule).
            Fence { scope, ordering } => {
                let (order, scope) = (AtomicOrder::from(*ordering), NvptxScope::from(*scope));
                self.print(inst, |pr| pr.fence(order, scope))?;
            }
            Nv { op, dsts, args, place } => self.nv(inst, op, dsts, args, place.as_ref())?,
            If { cond, then_block, else_block } => {
                let c = self.r(*cond);
                let uni = if self.uni.values[cond.0 as usize].join(ctl) <= Uniformity::Subgroup { ".uni" } else { "" };
                let else_l = self.label("else");
                let end_l = self.label("endif");
                self.line(format!("@!{c} bra{uni} {else_l};"));
                self.block(&then_block.insts)?;
                if !else_block.insts.is_empty() {
                    self.line(format!("bra.uni {end_l};"));
                }
                let _ = writeln!(self.body, "{else_l}:");
                self.block(&else_block.insts)?;
                let _ = writeln!(self.body, "{end_l}:");
            }
            Loop { body } => {
                let head = self.label("loop");
                let exit = self.label("exit");
                let _ = writeln!(self.body, "{head}:");
                self.loops.push((head.clone(), exit.clone()));
                self.block(&body.insts)?;
                self.loops.pop();
                self.line(format!("bra {head};"));
                let _ = writeln!(self.body, "{exit}:");
            }
            Break => {
                let exit = self.loops.last().map(|l| l.1.clone()).unwrap_or_default();
                self.line(format!("bra {exit};"));
            }
            Continue => {
                let head = self.loops.last().map(|l| l.0.clone()).unwrap_or_default();
                self.line(format!("bra {head};"));
            }
            Return => self.line("ret;"),
            GridStride { begin, end, index, body } => {
                let (b, e, i) = (self.r(*begin), self.r(*end), self.r(*index));
                let (tid, ntid, ctaid, nctaid) =
                    (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                for (r, sreg) in [
                    (&tid, NvSreg::Tid(0)),
                    (&ntid, NvSreg::Ntid(0)),
                    (&ctaid, NvSreg::Ctaid(0)),
                    (&nctaid, NvSreg::Nctaid(0)),
                ] {
                    self.print(inst, |p| p.sreg_read(r, sreg))?;
                }
                self.line(format!("mad.lo.s32 {i}, {ctaid}, {ntid}, {tid};"));
                self.line(format!("add.s32 {i}, {i}, {b};"));
                let stride = self.fresh(Class::B32);
                self.line(format!("mul.lo.s32 {stride}, {ntid}, {nctaid};"));
                let head = self.label("grid");
                let exit = self.label("grid_exit");
                let _ = writeln!(self.body, "{head}:");
                let p = self.fresh(Class::Pred);
                self.line(format!("setp.ge.s32 {p}, {i}, {e};"));
                self.line(format!("@{p} bra {exit};"));
                // `continue` inside the body goes to the stride step.
                let step = self.label("grid_step");
                self.loops.push((step.clone(), exit.clone()));
                self.block(&body.insts)?;
                self.loops.pop();
                let _ = writeln!(self.body, "{step}:");
                self.line(format!("add.s32 {i}, {i}, {stride};"));
                self.line(format!("bra {head};"));
                let _ = writeln!(self.body, "{exit}:");
            }
        }
        Ok(())
    }

    /// The NVIDIA-only families (seed 004), printed by the printer contract.
    fn nv(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        match op {
            NvOp::MatchAny | NvOp::MatchAll => {
                let v = self.r(args[0]);
                let ty = if self.d(args[0]).bits() == 64 { MatchType::B64 } else { MatchType::B32 };
                let d = self.r(dsts[0]);
                if *op == NvOp::MatchAny {
                    self.print(inst, |p| p.match_sync(MatchMode::Any, ty, &d, None, &v, FULL_MASK))?;
                } else {
                    let pred = self.r(dsts[1]);
                    self.print(inst, |p| p.match_sync(MatchMode::All, ty, &d, Some(&pred), &v, FULL_MASK))?;
                }
            }
            NvOp::Redux(r) => {
                let (d, v) = (self.r(dsts[0]), self.r(args[0]));
                let int = if self.d(args[0]).is_signed_int() { ReduxType::S32 } else { ReduxType::U32 };
                // The IR has integer reductions only; the float forms (sm_100a-class) stay the
                // printer's to gate.
                let (kind, ty) = match r {
                    ReduxOp::Add => (ReduxKind::Add, int),
                    ReduxOp::Min => (ReduxKind::Min, int),
                    ReduxOp::Max => (ReduxKind::Max, int),
                    ReduxOp::And => (ReduxKind::And, ReduxType::B32),
                    ReduxOp::Or => (ReduxKind::Or, ReduxType::B32),
                    ReduxOp::Xor => (ReduxKind::Xor, ReduxType::B32),
                };
                self.print(inst, |p| p.redux_sync(kind, ty, &d, &v, FULL_MASK))?;
            }
            NvOp::Elect => {
                let (d, pred) = (self.r(dsts[0]), self.r(dsts[1]));
                self.print(inst, |p| p.elect_sync(&d, &pred, FULL_MASK))?;
            }
            NvOp::ProxyFence(kind) if kind == "mbarrier_init" => self.print(inst, |p| p.fence_mbarrier_init())?,
            NvOp::ProxyFence(kind) => {
                let kind = ProxyKind::parse(kind).map_err(|e| self.ptx_err(inst, e))?;
                self.print(inst, |p| p.fence_proxy(kind))?;
            }
            _ => self.mbarrier(inst, op, dsts, args, place)?,
        }
        Ok(())
    }

    /// The mbarrier family on a barrier in shared memory. The plain forms carry no ordering (the
    /// defaults, release arrive and acquire wait, at CTA scope); the transaction-count forms are
    /// spelled with their ordering and `.shared::cta`, as ptx.md shows them to assemble.
    fn mbarrier(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        let Some(place) = place else {
            return Err(self.err(inst, "an mbarrier operation without its barrier"));
        };
        if self.k.array_space(place.array) != AddressSpace::Shared {
            return Err(self.err(
                inst,
                format!("an mbarrier lives in shared memory, not in `{}`", self.k.array_name(place.array)),
            ));
        }
        let (addr, _) = self.address(place);
        let addr = format!("[{addr}]");
        let arg = args.first().map(|a| self.r(*a)).unwrap_or_default();
        let dst = dsts.first().map(|d| self.r(*d)).unwrap_or_default();
        let (a, d) = (arg.as_str(), dst.as_str());
        let shared = MbarrierModifier::shared();
        let tx = |order| MbarrierModifier::new(MbarrierSpace::SharedCta).sem(order, NvptxScope::Cta);
        self.print(inst, |p| match op {
            NvOp::MbarrierInit => p.mbarrier_init(MbarrierSpace::Shared, &addr, a),
            NvOp::MbarrierInval => p.mbarrier_inval(MbarrierSpace::Shared, &addr),
            NvOp::MbarrierArrive => p.mbarrier_arrive(&shared, d, &addr, None),
            NvOp::MbarrierArriveNoComplete => p.mbarrier_arrive_no_complete(&shared, d, &addr, a),
            NvOp::MbarrierArriveExpectTx => p.mbarrier_arrive_expect_tx(&tx(AtomicOrder::Release), d, &addr, a),
            NvOp::MbarrierExpectTx => p.mbarrier_expect_tx(&tx(AtomicOrder::Relaxed), &addr, a),
            NvOp::MbarrierCompleteTx => p.mbarrier_complete_tx(&tx(AtomicOrder::Relaxed), &addr, a),
            NvOp::MbarrierTestWait => p.mbarrier_test_wait(&shared, false, d, &addr, a),
            NvOp::MbarrierTryWaitParity => p.mbarrier_try_wait(&shared, true, d, &addr, a, None),
            other => {
                Err(PtxError::InvalidForm { inst: format!("{other:?}"), reason: "not an mbarrier operation".into() })
            }
        })
    }

    fn unary(&mut self, inst: &Inst, dst: ValueId, op: UnOp, a: ValueId) -> Result<(), TraceError> {
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

    fn binary(&mut self, inst: &Inst, dst: ValueId, op: BinOp, a: ValueId, b: ValueId) -> Result<(), TraceError> {
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

    fn cmp(&mut self, dst: ValueId, op: CmpOp, a: ValueId, b: ValueId) {
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

    fn cast(&mut self, inst: &Inst, dst: ValueId, a: ValueId) -> Result<(), TraceError> {
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

    fn special(&mut self, inst: &Inst, dst: ValueId, reg: Special) -> Result<(), TraceError> {
        let d = self.r(dst);
        let sreg = match reg {
            Special::LaneId => NvSreg::Laneid,
            // A trace-time 32 on CUDA; the printer spells it as PTX's constant `WARP_SZ`.
            Special::SubgroupSize => NvSreg::Warpsize,
            Special::ThreadIdx => NvSreg::Tid(0),
            Special::BlockIdx => NvSreg::Ctaid(0),
            Special::BlockDim => NvSreg::Ntid(0),
            Special::GridDim => NvSreg::Nctaid(0),
            Special::GlobalThreadIdx => {
                let (a, b, c) = (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                for (r, sreg) in [(&a, NvSreg::Ctaid(0)), (&b, NvSreg::Ntid(0)), (&c, NvSreg::Tid(0))] {
                    self.print(inst, |p| p.sreg_read(r, sreg))?;
                }
                self.line(format!("mad.lo.u32 {d}, {a}, {b}, {c};"));
                return Ok(());
            }
            Special::Nv(r) => r,
        };
        self.print(inst, |p| p.sreg_read(&d, sreg))
    }

    /// The address of `place` in a fresh register, and its state space (global, shared or local).
    fn address(&mut self, place: &Place) -> (String, AddressSpace) {
        let k = self.k;
        let size = k.array_dtype(place.array).size_bytes();
        let idx = self.r(place.index);
        let it = self.d(place.index);
        let off = self.fresh(Class::B64);
        match class(it) {
            Class::B64 => self.line(format!("mul.lo.s64 {off}, {idx}, {size};")),
            Class::B16 => {
                let w = self.fresh(Class::B32);
                self.line(format!("cvt.{}32.{} {w}, {idx};", if it.is_signed_int() { "s" } else { "u" }, ty(it)));
                self.line(format!("mul.wide.{}32 {off}, {w}, {size};", if it.is_signed_int() { "s" } else { "u" }));
            }
            _ => self.line(format!("mul.wide.{}32 {off}, {idx}, {size};", if it.is_signed_int() { "s" } else { "u" })),
        }
        let entry = sanitize(&k.name);
        match place.array {
            ArrayRef::Param(i) => {
                let base = self.param_regs[i as usize].0.clone();
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {off};"));
                (a, AddressSpace::Global)
            }
            ArrayRef::Shared(i) => {
                let sym = if self.dynamic_shared { format!("{entry}_dyn_smem") } else { format!("{entry}_smem") };
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {sym};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {};", self.shared_offsets[i as usize]));
                self.line(format!("add.s64 {a}, {a}, {off};"));
                (a, AddressSpace::Shared)
            }
            ArrayRef::Local(i) => {
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {entry}_l{i};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {off};"));
                (a, AddressSpace::Local)
            }
        }
    }

    /// `ld{.volatile}.<space>` of one element into `d` (bool travels as a u8).
    fn ld_plain(&mut self, volatile: bool, space: AddressSpace, t: DType, d: &str, addr: &str) {
        let v = if volatile { ".volatile" } else { "" };
        let sp = space.name();
        if t == DType::Bool {
            let b = self.fresh(Class::B16);
            self.line(format!("ld{v}.{sp}.u8 {b}, {addr};"));
            self.line(format!("setp.ne.u16 {d}, {b}, 0;"));
        } else {
            self.line(format!("ld{v}.{sp}.{} {d}, {addr};", mem_ty(t)));
        }
    }

    /// `st{.volatile}.<space>` of one element from `v` (bool travels as a u8).
    fn st_plain(&mut self, volatile: bool, space: AddressSpace, t: DType, addr: &str, v: &str) {
        let vol = if volatile { ".volatile" } else { "" };
        let sp = space.name();
        if t == DType::Bool {
            let b = self.fresh(Class::B16);
            self.line(format!("selp.u16 {b}, 1, 0, {v};"));
            self.line(format!("st{vol}.{sp}.u8 {addr}, {b};"));
        } else {
            self.line(format!("st{vol}.{sp}.{} {addr}, {v};", mem_ty(t)));
        }
    }

    fn load(&mut self, inst: &Inst, dst: ValueId, place: &Place, kind: LoadKind) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let (t, d) = (self.d(dst), self.r(dst));
        match kind {
            // Per-thread memory: no other thread observes it, so volatile and ordered are plain.
            LoadKind::Plain => self.ld_plain(false, space, t, &d, &addr),
            _ if space == AddressSpace::Local => self.ld_plain(false, space, t, &d, &addr),
            LoadKind::Volatile => self.ld_plain(true, space, t, &d, &addr),
            LoadKind::Ordered(o, s) => {
                let (o, s, sp) = (AtomicOrder::from(o), NvptxScope::from(s), AtomSpace::from(space));
                if t == DType::Bool {
                    let b = self.fresh(Class::B16);
                    self.print(inst, |p| p.ld_ordered(o, s, sp, "u8", &b, &addr))?;
                    self.line(format!("setp.ne.u16 {d}, {b}, 0;"));
                } else {
                    self.print(inst, |p| p.ld_ordered(o, s, sp, mem_ty(t), &d, &addr))?;
                }
            }
        }
        Ok(())
    }

    fn store(&mut self, inst: &Inst, place: &Place, value: ValueId, kind: StoreKind) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let (t, v) = (self.d(value), self.r(value));
        match kind {
            StoreKind::Plain => self.st_plain(false, space, t, &addr, &v),
            _ if space == AddressSpace::Local => self.st_plain(false, space, t, &addr, &v),
            StoreKind::Volatile => self.st_plain(true, space, t, &addr, &v),
            StoreKind::Ordered(o, s) => {
                let (o, s, sp) = (AtomicOrder::from(o), NvptxScope::from(s), AtomSpace::from(space));
                if t == DType::Bool {
                    let b = self.fresh(Class::B16);
                    self.line(format!("selp.u16 {b}, 1, 0, {v};"));
                    self.print(inst, |p| p.st_ordered(o, s, sp, "u8", &addr, &b))?;
                } else {
                    self.print(inst, |p| p.st_ordered(o, s, sp, mem_ty(t), &addr, &v))?;
                }
            }
        }
        Ok(())
    }

    /// 128-bit atomics would need `.b128` registers, which this lowering does not allocate.
    fn refuse_b128(&self, inst: &Inst, t: DType) -> Result<(), TraceError> {
        if t == DType::B128 {
            return Err(self.err(inst, "128-bit atomics are not lowered to PTX yet (no .b128 registers)"));
        }
        Ok(())
    }

    /// A read-modify-write (D6, D7): `AtomicModifier::from_ir` builds the record; where the
    /// target has the native form, the printer's `atomic_rmw` prints it (`red` when the result is
    /// unused and `red` takes it, `fence.sc` + `.acquire` for seq_cst); otherwise
    /// ([`PtxError::NeedsCasLoop`], or a type the target lacks) it is a CAS loop.
    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        op: AtomicOp,
        value: ValueId,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let t = self.k.array_dtype(place.array);
        self.refuse_b128(inst, t)?;
        let space = self.k.array_space(place.array);
        let dst = dst.filter(|d| self.used.contains(d));
        let rmw = Rmw::Op(op, self.r(value));
        if space == AddressSpace::Local {
            return self.local_rmw(inst, dst, place, t, &rmw);
        }
        match AtomicModifier::from_ir(op, t, ordering, scope, space) {
            Ok(m) if self.p.atom_supported(&m) => {
                let (addr, _) = self.address(place);
                let (d, v) = (dst.map(|d| self.r(d)), self.r(value));
                self.print(inst, |p| p.atomic_rmw(&m, d.as_deref(), &format!("[{addr}]"), &[&v]))
            }
            Ok(_) | Err(PtxError::NeedsCasLoop { .. }) => self.cas_loop(inst, dst, place, t, &rmw, ordering, scope),
            Err(e) => Err(self.ptx_err(inst, e)),
        }
    }

    /// Compare and swap: one `atom.cas` (`cas_from_ir`; seq_cst as `fence.sc` + `.acquire`), or a
    /// loop on the enclosing 32-bit word for 8-bit types (and 16-bit ones below sm_70).
    #[allow(clippy::too_many_arguments)]
    fn cas(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        place: &Place,
        expected: ValueId,
        desired: ValueId,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let t = self.k.array_dtype(place.array);
        self.refuse_b128(inst, t)?;
        let space = self.k.array_space(place.array);
        let rmw = Rmw::Cas { expected: self.r(expected), desired: self.r(desired) };
        if space == AddressSpace::Local {
            return self.local_rmw(inst, Some(dst), place, t, &rmw);
        }
        match AtomicModifier::cas_from_ir(t, ordering, scope, space) {
            Ok(m) if self.p.atom_supported(&m) || t.bits() >= 32 => {
                // Unsupported at 32/64 bits (e.g. cluster scope before sm_90): the printer says why.
                let (addr, _) = self.address(place);
                let (d, e, n) = (self.r(dst), self.r(expected), self.r(desired));
                self.print(inst, |p| p.atomic_rmw(&m, Some(&d), &format!("[{addr}]"), &[&e, &n]))
            }
            _ if t.bits() < 32 => self.subword_loop(inst, Some(dst), place, t, &rmw, ordering, scope),
            Ok(_) => unreachable!("handled above"),
            Err(e) => Err(self.ptx_err(inst, e)),
        }
    }

    /// Per-thread memory is private: a plain load, the operation, a plain store.
    fn local_rmw(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        t: DType,
        rmw: &Rmw,
    ) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(class(t)),
        };
        let new = self.fresh(class(t));
        self.ld_plain(false, space, t, &old, &addr);
        self.rmw_compute(inst, rmw, t, &new, &old)?;
        self.st_plain(false, space, t, &addr, &new);
        Ok(())
    }

    /// D6's seq_cst read-modify-write is `fence.sc` and then an acquire `atom`; in a CAS loop the
    /// fence is printed once, before the loop, and each `atom.cas` acquires.
    fn seq_cst_fence_first(&mut self, inst: &Inst, m: AtomicModifier) -> Result<AtomicModifier, TraceError> {
        if m.order != Some(AtomicOrder::SeqCst) {
            return Ok(m);
        }
        let scope = m.scope;
        self.print(inst, |p| p.fence(AtomicOrder::SeqCst, scope))?;
        Ok(AtomicModifier { order: Some(AtomicOrder::Acquire), ..m })
    }

    /// Operations without a native `atom` for this type and target (mul, float min/max, bf16 add
    /// before sm_90, ...): a loop on `atom.cas` of the element's width, or of the enclosing word
    /// when the target has no CAS that narrow.
    #[allow(clippy::too_many_arguments)]
    fn cas_loop(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        t: DType,
        rmw: &Rmw,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let space = self.k.array_space(place.array);
        let m = match AtomicModifier::cas_from_ir(t, ordering, scope, space) {
            Ok(m) if self.p.atom_supported(&m) || t.bits() >= 32 => m,
            _ if t.bits() < 32 => return self.subword_loop(inst, dst, place, t, rmw, ordering, scope),
            Ok(m) => m,
            Err(e) => return Err(self.ptx_err(inst, e)),
        };
        let (addr, space) = self.address(place);
        let addr = format!("[{addr}]");
        let m = self.seq_cst_fence_first(inst, m)?;
        let c = class(t);
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(c),
        };
        let new = self.fresh(c);
        self.ld_plain(false, space, t, &old, &addr);
        let head = self.label("cas");
        let _ = writeln!(self.body, "{head}:");
        self.rmw_compute(inst, rmw, t, &new, &old)?;
        let (b, ib) = match t.bits() {
            16 => ("b16", Class::B16),
            32 => ("b32", Class::B32),
            _ => ("b64", Class::B64),
        };
        let (oi, ni, si) = (self.fresh(ib), self.fresh(ib), self.fresh(ib));
        self.line(format!("mov.{b} {oi}, {old};"));
        self.line(format!("mov.{b} {ni}, {new};"));
        self.print(inst, |p| p.atom(&m, &si, &addr, &[&oi, &ni]))?;
        let p = self.fresh(Class::Pred);
        self.line(format!("setp.ne.{b} {p}, {si}, {oi};"));
        self.line(format!("mov.{b} {old}, {si};"));
        self.line(format!("@{p} bra {head};"));
        Ok(())
    }

    /// An 8- or 16-bit read-modify-write with no CAS that narrow: `atom.cas.b32` on the aligned
    /// word holding the element, the element shifted out of and back into it.
    #[allow(clippy::too_many_arguments)]
    fn subword_loop(
        &mut self,
        inst: &Inst,
        dst: Option<ValueId>,
        place: &Place,
        t: DType,
        rmw: &Rmw,
        ordering: Ordering,
        scope: Scope,
    ) -> Result<(), TraceError> {
        let space = self.k.array_space(place.array);
        let m = AtomicModifier::cas_from_ir(DType::U32, ordering, scope, space).map_err(|e| self.ptx_err(inst, e))?;
        let (addr, space) = self.address(place);
        let m = self.seq_cst_fence_first(inst, m)?;
        let width_mask = if t.bits() == 8 { "0xFF" } else { "0xFFFF" };
        let (word, sh, mask) = (self.fresh(Class::B64), self.fresh(Class::B32), self.fresh(Class::B32));
        self.line(format!("and.b64 {word}, {addr}, 0xFFFFFFFFFFFFFFFC;"));
        self.line(format!("cvt.u32.u64 {sh}, {addr};"));
        self.line(format!("and.b32 {sh}, {sh}, 3;"));
        self.line(format!("shl.b32 {sh}, {sh}, 3;"));
        self.line(format!("shl.b32 {mask}, {width_mask}, {sh};"));
        self.line(format!("not.b32 {mask}, {mask};"));
        let c = class(t);
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(c),
        };
        let new = self.fresh(c);
        let (w, tmp, nw, seen) =
            (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
        let word_addr = format!("[{word}]");
        self.line(format!("ld.{}.b32 {w}, {word_addr};", space.name()));
        let head = self.label("cas");
        let _ = writeln!(self.body, "{head}:");
        self.line(format!("shr.b32 {tmp}, {w}, {sh};"));
        if t == DType::Bool {
            self.line(format!("and.b32 {tmp}, {tmp}, 0xFF;"));
            self.line(format!("setp.ne.u32 {old}, {tmp}, 0;"));
        } else {
            self.line(format!("cvt.u16.u32 {old}, {tmp};"));
            self.wrap_narrow(t, &old);
        }
        self.rmw_compute(inst, rmw, t, &new, &old)?;
        if t == DType::Bool {
            self.line(format!("selp.u32 {nw}, 1, 0, {new};"));
        } else {
            self.line(format!("cvt.u32.u16 {nw}, {new};"));
            self.line(format!("and.b32 {nw}, {nw}, {width_mask};"));
        }
        self.line(format!("shl.b32 {nw}, {nw}, {sh};"));
        self.line(format!("and.b32 {tmp}, {w}, {mask};"));
        self.line(format!("or.b32 {nw}, {nw}, {tmp};"));
        self.print(inst, |p| p.atom(&m, &seen, &word_addr, &[&w, &nw]))?;
        let p = self.fresh(Class::Pred);
        self.line(format!("setp.ne.b32 {p}, {seen}, {w};"));
        self.line(format!("mov.b32 {w}, {seen};"));
        self.line(format!("@{p} bra {head};"));
        Ok(())
    }

    /// `new = old <op> value` (or the CAS choice) on registers of type `t`.
    fn rmw_compute(&mut self, inst: &Inst, rmw: &Rmw, t: DType, new: &str, old: &str) -> Result<(), TraceError> {
        let op = match rmw {
            Rmw::Op(AtomicOp::Exchange, v) => {
                self.line(format!("mov.{} {new}, {v};", bits(class(t))));
                return Ok(());
            }
            Rmw::Cas { expected, desired } => {
                let p = self.fresh(Class::Pred);
                let b = bits(class(t));
                self.line(format!("setp.eq.{b} {p}, {old}, {expected};"));
                self.line(format!("selp.{b} {new}, {desired}, {old}, {p};"));
                return Ok(());
            }
            Rmw::Op(op, _) => match op {
                AtomicOp::Add => BinOp::Add,
                AtomicOp::Mul => BinOp::Mul,
                AtomicOp::Min => BinOp::Min,
                AtomicOp::Max => BinOp::Max,
                AtomicOp::And => BinOp::And,
                AtomicOp::Or => BinOp::Or,
                AtomicOp::Xor => BinOp::Xor,
                AtomicOp::Exchange => unreachable!("handled above"),
            },
        };
        let Rmw::Op(_, v) = rmw else { unreachable!("handled above") };
        self.binary_regs(inst, op, t, new, old, v)
    }

    /// `d = x op y` on registers of type `t` (used by CAS loops; f16/bf16 compute in f32).
    fn binary_regs(&mut self, inst: &Inst, op: BinOp, t: DType, d: &str, x: &str, y: &str) -> Result<(), TraceError> {
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

    /// `shfl.sync` of a 32-bit value, or of a 64-bit one as two 32-bit halves (the validity
    /// predicate comes from the low half). The `c` operand is the full-warp clamp (ptx.md §4.1).
    fn shuffle(
        &mut self,
        inst: &Inst,
        dst: ValueId,
        valid: Option<ValueId>,
        mode: ShflMode,
        value: ValueId,
        lane: ValueId,
    ) -> Result<(), TraceError> {
        let t = self.d(value);
        let (d, v, l) = (self.r(dst), self.r(value), self.r(lane));
        let pv = valid.map(|p| self.r(p));
        let c = hex_imm(u64::from(mode.c_operand(32)));
        match class(t) {
            Class::B32 => self.print(inst, |p| p.shfl_sync(mode, &d, pv.as_deref(), &v, &l, &c, FULL_MASK))?,
            Class::F32 => {
                let (a, b) = (self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b32 {a}, {v};"));
                self.print(inst, |p| p.shfl_sync(mode, &b, pv.as_deref(), &a, &l, &c, FULL_MASK))?;
                self.line(format!("mov.b32 {d}, {b};"));
            }
            Class::B64 | Class::F64 => {
                let (lo, hi, lo2, hi2) =
                    (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {v};"));
                self.print(inst, |p| p.shfl_sync(mode, &lo2, pv.as_deref(), &lo, &l, &c, FULL_MASK))?;
                self.print(inst, |p| p.shfl_sync(mode, &hi2, None, &hi, &l, &c, FULL_MASK))?;
                self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"));
            }
            Class::B16 | Class::Pred => return Err(self.err(inst, format!("subgroup shuffle of {t}"))),
        }
        Ok(())
    }
}

/// The operation of a CAS loop or a per-thread read-modify-write.
enum Rmw {
    /// `old <op> value`, the value's register.
    Op(AtomicOp, String),
    /// `old == expected ? desired : old`.
    Cas { expected: String, desired: String },
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
