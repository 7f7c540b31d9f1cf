//! Lowering a verified kernel to a PTX module (text we print ourselves, D7).
//!
//! Values live in virtual registers by class (`%p` pred, `%rs` 16-bit, `%r` 32-bit, `%rd` 64-bit,
//! `%f` f32, `%fd` f64); locals are registers too (PTX registers are mutable). Structured control
//! flow becomes labels and branches, with `bra.uni` where the uniformity analysis (D3) proves the
//! branch does not diverge within a warp. Arrays are passed as a device pointer and a u32 length.

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
    sm: u32,
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
    /// The highest PTX ISA version a feature used so far needs, as (major, minor).
    min_version: (u32, u32),
}

/// Lowers `kernel` for `sm_<sm>`.
pub fn lower_kernel_sm(kernel: &Kernel, sm: u32) -> Result<PtxModule, TraceError> {
    let mut optimized = kernel.clone();
    crate::ir::passes::optimize(&mut optimized);
    let kernel = &optimized;
    let mut l = Lower {
        k: kernel,
        sm,
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
        min_version: (0, 0),
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

    let mut text = String::new();
    let version = {
        let floor = ptx_version_floor(sm);
        let (major, minor) = floor.max(l.min_version);
        format!("{major}.{minor}")
    };
    let _ = writeln!(text, "//\n// Generated by qd for kernel `{}`\n//\n", kernel.name);
    let _ = writeln!(text, ".version {version}\n.target sm_{sm}\n.address_size 64\n");
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

/// The lowest `.version` that accepts `.target sm_<sm>` (ptx.md §10).
fn ptx_version_floor(sm: u32) -> (u32, u32) {
    match sm {
        0..=79 => (6, 3),
        80..=85 => (7, 0),
        86..=88 => (7, 1),
        89..=99 => (7, 8),
        100..=119 => (8, 6),
        _ => (8, 7),
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
                    ShuffleKind::Idx => "idx",
                    ShuffleKind::Up => "up",
                    ShuffleKind::Down => "down",
                    ShuffleKind::Xor => "bfly",
                };
                let c = if *kind == ShuffleKind::Up { "0x0" } else { "0x1F" };
                self.shuffle(*dst, *valid, mode, *value, *lane, c);
            }
            Broadcast { dst, value, lane } => self.shuffle(*dst, None, "idx", *value, *lane, "0x1F"),
            Ballot { dst, pred } => {
                let (d, p) = (self.r(*dst), self.r(*pred));
                let t = self.fresh(Class::B32);
                self.line(format!("vote.sync.ballot.b32 {t}, {p}, 0xFFFFFFFF;"));
                self.line(format!("cvt.u64.u32 {d}, {t};"));
            }
            Vote { dst, kind, pred } => {
                let (d, p) = (self.r(*dst), self.r(*pred));
                let m = match kind {
                    VoteKind::All => "all",
                    VoteKind::Any => "any",
                    VoteKind::Uni => "uni",
                };
                self.line(format!("vote.sync.{m}.pred {d}, {p}, 0xFFFFFFFF;"));
            }
            BlockBarrier { reduce: None } => self.line("bar.sync 0;"),
            BlockBarrier { reduce: Some((red, pred, dst)) } => {
                let (p, d) = (self.r(*pred), self.r(*dst));
                match red {
                    BarrierReduce::Popc => self.line(format!("bar.red.popc.u32 {d}, 0, {p};")),
                    BarrierReduce::And | BarrierReduce::Or => {
                        let op = if *red == BarrierReduce::And { "and" } else { "or" };
                        let t = self.fresh(Class::Pred);
                        self.line(format!("bar.red.{op}.pred {t}, 0, {p};"));
                        self.line(format!("selp.u32 {d}, 1, 0, {t};"));
                    }
                }
            }
            SubgroupBarrier => self.line("bar.warp.sync 0xFFFFFFFF;"),
            Fence { scope, ordering } => {
                let s = match scope {
                    Scope::Thread => return Ok(()),
                    Scope::Subgroup | Scope::Block => "cta",
                    Scope::Cluster => "cluster",
                    Scope::Device => "gpu",
                    Scope::System => "sys",
                };
                if *scope == Scope::Cluster {
                    self.need(inst, 90, (7, 8))?;
                }
                let sem = match ordering {
                    Ordering::Relaxed => {
                        return Err(self.err(inst, "fence ordering must be acquire, release, acq_rel, or seq_cst"))
                    }
                    Ordering::SeqCst => "sc",
                    Ordering::AcqRel => "acq_rel",
                    // Split fences need sm_90 and PTX 8.6; below that acq_rel is the stronger stand-in.
                    Ordering::Acquire if self.sm >= 90 => "acquire",
                    Ordering::Release if self.sm >= 90 => "release",
                    Ordering::Acquire | Ordering::Release => "acq_rel",
                };
                if matches!(sem, "acquire" | "release") {
                    self.need(inst, 90, (8, 6))?;
                }
                self.line(format!("fence.{sem}.{s};"));
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
                self.line(format!("mov.u32 {tid}, %tid.x;"));
                self.line(format!("mov.u32 {ntid}, %ntid.x;"));
                self.line(format!("mov.u32 {ctaid}, %ctaid.x;"));
                self.line(format!("mov.u32 {nctaid}, %nctaid.x;"));
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

    /// Records that the module needs `sm_<sm>` and PTX `version`; errors when the target is older.
    fn need(&mut self, inst: &Inst, sm: u32, version: (u32, u32)) -> Result<(), TraceError> {
        if self.sm < sm {
            return Err(self.err(inst, format!("needs sm_{sm} or newer; the target is sm_{}", self.sm)));
        }
        self.min_version = self.min_version.max(version);
        Ok(())
    }

    /// The NVIDIA-only families (seed 004), in the forms ptx.md shows to assemble.
    fn nv(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        let full = "0xFFFFFFFF";
        match op {
            NvOp::MatchAny | NvOp::MatchAll => {
                self.need(inst, 70, (6, 0))?;
                let v = self.r(args[0]);
                let t = bits(class(self.d(args[0])));
                let d = self.r(dsts[0]);
                if *op == NvOp::MatchAny {
                    self.line(format!("match.sync.any.{t} {d}, {v}, {full};"));
                } else {
                    let p = self.r(dsts[1]);
                    self.line(format!("match.sync.all.{t} {d}|{p}, {v}, {full};"));
                }
            }
            NvOp::Redux(r) => {
                self.need(inst, 80, (7, 0))?;
                let (d, v) = (self.r(dsts[0]), self.r(args[0]));
                let t = self.d(args[0]);
                let (name, ty) = match r {
                    ReduxOp::Add => ("add", ty(t)),
                    ReduxOp::Min => ("min", ty(t)),
                    ReduxOp::Max => ("max", ty(t)),
                    ReduxOp::And => ("and", "b32"),
                    ReduxOp::Or => ("or", "b32"),
                    ReduxOp::Xor => ("xor", "b32"),
                };
                self.line(format!("redux.sync.{name}.{ty} {d}, {v}, {full};"));
            }
            NvOp::Elect => {
                self.need(inst, 90, (8, 0))?;
                let (d, p) = (self.r(dsts[0]), self.r(dsts[1]));
                self.line(format!("elect.sync {d}|{p}, {full};"));
            }
            NvOp::ProxyFence(kind) => {
                if kind == "mbarrier_init" {
                    self.need(inst, 90, (8, 0))?;
                    self.line("fence.mbarrier_init.release.cluster;");
                } else {
                    let v = if kind == "alias" { (7, 5) } else { (8, 0) };
                    self.need(inst, if kind == "alias" { 70 } else { 90 }, v)?;
                    self.line(format!("fence.proxy.{kind};"));
                }
            }
            _ => {
                let place = place.expect("mbarrier ops carry their barrier");
                let (addr, _) = self.address(place);
                let arg = args.first().map(|a| self.r(*a));
                let dst = dsts.first().map(|d| self.r(*d));
                let (a, d) = (arg.unwrap_or_default(), dst.unwrap_or_default());
                let (sm, version, text) = match op {
                    NvOp::MbarrierInit => (80, (7, 0), format!("mbarrier.init.shared.b64 [{addr}], {a};")),
                    NvOp::MbarrierInval => (80, (7, 0), format!("mbarrier.inval.shared.b64 [{addr}];")),
                    NvOp::MbarrierArrive => (80, (7, 0), format!("mbarrier.arrive.shared.b64 {d}, [{addr}];")),
                    NvOp::MbarrierArriveNoComplete => {
                        (80, (7, 0), format!("mbarrier.arrive.noComplete.shared.b64 {d}, [{addr}], {a};"))
                    }
                    NvOp::MbarrierArriveExpectTx => (
                        90,
                        (8, 0),
                        format!("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 {d}, [{addr}], {a};"),
                    ),
                    NvOp::MbarrierExpectTx => {
                        (90, (8, 0), format!("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{addr}], {a};"))
                    }
                    NvOp::MbarrierCompleteTx => {
                        (90, (8, 0), format!("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [{addr}], {a};"))
                    }
                    NvOp::MbarrierTestWait => {
                        (80, (7, 0), format!("mbarrier.test_wait.shared.b64 {d}, [{addr}], {a};"))
                    }
                    NvOp::MbarrierTryWaitParity => {
                        (90, (7, 8), format!("mbarrier.try_wait.parity.shared.b64 {d}, [{addr}], {a};"))
                    }
                    _ => unreachable!("handled above"),
                };
                self.need(inst, sm, version)?;
                self.line(text);
            }
        }
        Ok(())
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
        let name = match reg {
            Special::LaneId => "%laneid".to_string(),
            Special::SubgroupSize => {
                self.line(format!("mov.u32 {d}, 32;"));
                return Ok(());
            }
            Special::ThreadIdx => "%tid.x".into(),
            Special::BlockIdx => "%ctaid.x".into(),
            Special::BlockDim => "%ntid.x".into(),
            Special::GridDim => "%nctaid.x".into(),
            Special::GlobalThreadIdx => {
                let (a, b, c) = (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.u32 {a}, %ctaid.x;"));
                self.line(format!("mov.u32 {b}, %ntid.x;"));
                self.line(format!("mov.u32 {c}, %tid.x;"));
                self.line(format!("mad.lo.u32 {d}, {a}, {b}, {c};"));
                return Ok(());
            }
            Special::Nv(r) => {
                let (name, wide, sm, version) = nv_sreg(r);
                self.need(inst, sm, version)?;
                let w = if wide { "u64" } else { "u32" };
                self.line(format!("mov.{w} {d}, {name};"));
                return Ok(());
            }
        };
        self.line(format!("mov.u32 {d}, {name};"));
        Ok(())
    }

    /// The address of `place` in a fresh register, and the PTX state space.
    fn address(&mut self, place: &Place) -> (String, &'static str) {
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
                (a, "global")
            }
            ArrayRef::Shared(i) => {
                let sym = if self.dynamic_shared { format!("{entry}_dyn_smem") } else { format!("{entry}_smem") };
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {sym};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {};", self.shared_offsets[i as usize]));
                self.line(format!("add.s64 {a}, {a}, {off};"));
                (a, "shared")
            }
            ArrayRef::Local(i) => {
                let base = self.fresh(Class::B64);
                self.line(format!("mov.u64 {base}, {entry}_l{i};"));
                let a = self.fresh(Class::B64);
                self.line(format!("add.s64 {a}, {base}, {off};"));
                (a, "local")
            }
        }
    }

    fn scope_token(&self, inst: &Inst, s: Scope) -> Result<&'static str, TraceError> {
        Ok(match s {
            Scope::Thread | Scope::Subgroup | Scope::Block => "cta",
            Scope::Cluster if self.sm >= 90 => "cluster",
            Scope::Cluster => return Err(self.err(inst, "cluster scope needs sm_90")),
            Scope::Device => "gpu",
            Scope::System => "sys",
        })
    }

    fn load(&mut self, inst: &Inst, dst: ValueId, place: &Place, kind: LoadKind) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let dt = self.d(dst);
        let d = self.r(dst);
        let sem = match kind {
            LoadKind::Plain => String::new(),
            LoadKind::Volatile if space == "local" => String::new(),
            LoadKind::Volatile => ".volatile".into(),
            LoadKind::Ordered(o, s) => {
                if space == "local" {
                    String::new()
                } else {
                    let o = if o == Ordering::Relaxed { "relaxed" } else { "acquire" };
                    format!(".{o}.{}", self.scope_token(inst, s)?)
                }
            }
        };
        if dt == DType::Bool {
            let t = self.fresh(Class::B16);
            self.line(format!("ld{sem}.{space}.u8 {t}, [{addr}];"));
            self.line(format!("setp.ne.u16 {d}, {t}, 0;"));
        } else {
            self.line(format!("ld{sem}.{space}.{} {d}, [{addr}];", mem_ty(dt)));
        }
        Ok(())
    }

    fn store(&mut self, inst: &Inst, place: &Place, value: ValueId, kind: StoreKind) -> Result<(), TraceError> {
        let (addr, space) = self.address(place);
        let dt = self.d(value);
        let v = self.r(value);
        let sem = match kind {
            StoreKind::Plain => String::new(),
            StoreKind::Volatile if space == "local" => String::new(),
            StoreKind::Volatile => ".volatile".into(),
            StoreKind::Ordered(o, s) => {
                if space == "local" {
                    String::new()
                } else {
                    let o = if o == Ordering::Relaxed { "relaxed" } else { "release" };
                    format!(".{o}.{}", self.scope_token(inst, s)?)
                }
            }
        };
        if dt == DType::Bool {
            let t = self.fresh(Class::B16);
            self.line(format!("selp.u16 {t}, 1, 0, {v};"));
            self.line(format!("st{sem}.{space}.u8 [{addr}], {t};"));
        } else {
            self.line(format!("st{sem}.{space}.{} [{addr}], {v};", mem_ty(dt)));
        }
        Ok(())
    }

    /// Ordering/scope tokens of an atom (D7: an implicit device scope prints nothing); seq_cst
    /// prints a `fence.sc` first and then acquires.
    fn atom_sem(&mut self, inst: &Inst, ordering: Ordering, scope: Scope) -> Result<String, TraceError> {
        let scope_tok = match scope {
            Scope::Device => String::new(),
            s => format!(".{}", self.scope_token(inst, s)?),
        };
        let sem = match ordering {
            Ordering::Relaxed if scope_tok.is_empty() => String::new(),
            Ordering::Relaxed => ".relaxed".into(),
            Ordering::Acquire => ".acquire".into(),
            Ordering::Release => ".release".into(),
            Ordering::AcqRel => ".acq_rel".into(),
            Ordering::SeqCst => {
                let s = if scope_tok.is_empty() { ".gpu".to_string() } else { scope_tok.clone() };
                self.line(format!("fence.sc{s};"));
                ".acquire".into()
            }
        };
        Ok(format!("{sem}{scope_tok}"))
    }

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
        let v = self.r(value);
        let native = match op {
            AtomicOp::Add => matches!(t, DType::U32 | DType::I32 | DType::U64 | DType::I64 | DType::F32 | DType::F64),
            AtomicOp::Min | AtomicOp::Max => matches!(t, DType::U32 | DType::I32 | DType::U64 | DType::I64),
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => matches!(class(t), Class::B32 | Class::B64),
            AtomicOp::Exchange => matches!(class(t), Class::B32 | Class::B64 | Class::F32 | Class::F64),
            AtomicOp::Mul => false,
        };
        if matches!(place.array, ArrayRef::Local(_)) || !native {
            return self.atomic_cas_loop(inst, dst, place, op, value, ordering, scope);
        }
        let (addr, space) = self.address(place);
        let type_tok = match op {
            AtomicOp::Add if t == DType::I64 => "u64".to_string(),
            AtomicOp::Add | AtomicOp::Min | AtomicOp::Max => ty(t).to_string(),
            _ => bits(class(t)).to_string(),
        };
        let sem = self.atom_sem(inst, ordering, scope)?;
        let name = op.name();
        let dst = dst.filter(|d| self.used.contains(d));
        match dst {
            // `red` only where its op set and orderings allow (seed 004, ptx.md §2.1).
            None if matches!(ordering, Ordering::Relaxed | Ordering::Release) && op != AtomicOp::Exchange => {
                self.line(format!("red{sem}.{name}.{type_tok}.{space} [{addr}], {v};"));
            }
            _ => {
                let d = match dst {
                    Some(d) => self.r(d),
                    None => self.fresh(class(t)),
                };
                self.line(format!("atom{sem}.{name}.{type_tok}.{space} {d}, [{addr}], {v};"));
            }
        }
        Ok(())
    }

    /// Ops without a native atom (mul, float min/max, 16-bit types, local arrays): a CAS loop.
    #[allow(clippy::too_many_arguments)]
    fn atomic_cas_loop(
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
        let (addr, space) = self.address(place);
        let v = self.r(value);
        let c = class(t);
        let old = match dst {
            Some(d) => self.r(d),
            None => self.fresh(c),
        };
        let new = self.fresh(c);
        let compute = |l: &mut Self| -> Result<(), TraceError> {
            let name = match op {
                AtomicOp::Add => BinOp::Add,
                AtomicOp::Mul => BinOp::Mul,
                AtomicOp::Min => BinOp::Min,
                AtomicOp::Max => BinOp::Max,
                AtomicOp::And => BinOp::And,
                AtomicOp::Or => BinOp::Or,
                AtomicOp::Xor => BinOp::Xor,
                AtomicOp::Exchange => {
                    l.line(format!("mov.{} {new}, {v};", bits(c)));
                    return Ok(());
                }
            };
            l.binary_regs(inst, name, t, &new, &old, &v)
        };
        if space == "local" {
            self.line(format!("ld.local.{} {old}, [{addr}];", mem_ty(t)));
            compute(self)?;
            self.line(format!("st.local.{} [{addr}], {new};", mem_ty(t)));
            return Ok(());
        }
        if t.bits() < 32 {
            return Err(self.err(inst, format!("atomic_{} on {t} is not supported on cuda", op.name())));
        }
        let sem = self.atom_sem(inst, ordering, scope)?;
        let b = if t.bits() == 64 { "b64" } else { "b32" };
        let (ob, nb, seen) = (self.fresh(Class::B64), self.fresh(Class::B64), self.fresh(Class::B64));
        let _ = (ob, nb);
        let ib = if t.bits() == 64 { Class::B64 } else { Class::B32 };
        let (oi, ni, si) = (self.fresh(ib), self.fresh(ib), self.fresh(ib));
        let _ = seen;
        self.line(format!("ld.{space}.{} {old}, [{addr}];", mem_ty(t)));
        let head = self.label("cas");
        let _ = writeln!(self.body, "{head}:");
        compute(self)?;
        self.line(format!("mov.{b} {oi}, {old};"));
        self.line(format!("mov.{b} {ni}, {new};"));
        self.line(format!("atom{sem}.cas.{b}.{space} {si}, [{addr}], {oi}, {ni};"));
        let p = self.fresh(Class::Pred);
        self.line(format!("setp.ne.{b} {p}, {si}, {oi};"));
        self.line(format!("mov.{b} {old}, {si};"));
        self.line(format!("@{p} bra {head};"));
        Ok(())
    }

    /// `d = x op y` on registers of type `t` (used by CAS loops).
    fn binary_regs(&mut self, inst: &Inst, op: BinOp, t: DType, d: &str, x: &str, y: &str) -> Result<(), TraceError> {
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
        let (addr, space) = self.address(place);
        let (d, e, n) = (self.r(dst), self.r(expected), self.r(desired));
        if space == "local" {
            let p = self.fresh(Class::Pred);
            self.line(format!("ld.local.{} {d}, [{addr}];", mem_ty(t)));
            self.line(format!("setp.eq.{} {p}, {d}, {e};", ty(t)));
            self.line(format!("@{p} st.local.{} [{addr}], {n};", mem_ty(t)));
            return Ok(());
        }
        if t.bits() < 32 {
            return Err(self.err(inst, format!("atomic_cas on {t} is not supported on cuda")));
        }
        let sem = self.atom_sem(inst, ordering, scope)?;
        self.line(format!("atom{sem}.cas.{}.{space} {d}, [{addr}], {e}, {n};", bits(class(t))));
        Ok(())
    }

    fn shuffle(&mut self, dst: ValueId, valid: Option<ValueId>, mode: &str, value: ValueId, lane: ValueId, c: &str) {
        let t = self.d(value);
        let (d, v, l) = (self.r(dst), self.r(value), self.r(lane));
        let pv = valid.map(|p| format!("|{}", self.r(p))).unwrap_or_default();
        match class(t) {
            Class::B32 => self.line(format!("shfl.sync.{mode}.b32 {d}{pv}, {v}, {l}, {c}, 0xFFFFFFFF;")),
            Class::F32 => {
                let (a, b) = (self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b32 {a}, {v};"));
                self.line(format!("shfl.sync.{mode}.b32 {b}{pv}, {a}, {l}, {c}, 0xFFFFFFFF;"));
                self.line(format!("mov.b32 {d}, {b};"));
            }
            _ => {
                // 64-bit values move as two 32-bit shuffles.
                let (lo, hi, lo2, hi2) =
                    (self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32), self.fresh(Class::B32));
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {v};"));
                self.line(format!("shfl.sync.{mode}.b32 {lo2}{pv}, {lo}, {l}, {c}, 0xFFFFFFFF;"));
                self.line(format!("shfl.sync.{mode}.b32 {hi2}, {hi}, {l}, {c}, 0xFFFFFFFF;"));
                self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"));
            }
        }
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

/// PTX name, 64-bit width, minimum sm and PTX version of an NVIDIA special register (ptx.md §8).
fn nv_sreg(r: NvSreg) -> (String, bool, u32, (u32, u32)) {
    let axis = |a: u8| ["x", "y", "z"][a.min(2) as usize];
    let cluster = (90, (7, 8));
    let base = (0, (0, 0));
    let (name, wide, (sm, v)) = match r {
        NvSreg::Tid(a) => (format!("%tid.{}", axis(a)), false, base),
        NvSreg::Ntid(a) => (format!("%ntid.{}", axis(a)), false, base),
        NvSreg::Ctaid(a) => (format!("%ctaid.{}", axis(a)), false, base),
        NvSreg::Nctaid(a) => (format!("%nctaid.{}", axis(a)), false, base),
        NvSreg::ClusterId(a) => (format!("%clusterid.{}", axis(a)), false, cluster),
        NvSreg::NClusterId(a) => (format!("%nclusterid.{}", axis(a)), false, cluster),
        NvSreg::ClusterCtaid(a) => (format!("%cluster_ctaid.{}", axis(a)), false, cluster),
        NvSreg::ClusterNctaid(a) => (format!("%cluster_nctaid.{}", axis(a)), false, cluster),
        NvSreg::ClusterCtarank => ("%cluster_ctarank".into(), false, cluster),
        NvSreg::ClusterNctarank => ("%cluster_nctarank".into(), false, cluster),
        NvSreg::Smid => ("%smid".into(), false, base),
        NvSreg::Nsmid => ("%nsmid".into(), false, base),
        NvSreg::Warpid => ("%warpid".into(), false, base),
        NvSreg::Nwarpid => ("%nwarpid".into(), false, base),
        NvSreg::Laneid => ("%laneid".into(), false, base),
        NvSreg::Warpsize => ("WARP_SZ".into(), false, base),
        NvSreg::Gridid => ("%gridid".into(), true, base),
        NvSreg::LanemaskEq => ("%lanemask_eq".into(), false, base),
        NvSreg::LanemaskLe => ("%lanemask_le".into(), false, base),
        NvSreg::LanemaskLt => ("%lanemask_lt".into(), false, base),
        NvSreg::LanemaskGe => ("%lanemask_ge".into(), false, base),
        NvSreg::LanemaskGt => ("%lanemask_gt".into(), false, base),
        NvSreg::Clock => ("%clock".into(), false, base),
        NvSreg::Clock64 => ("%clock64".into(), true, base),
        NvSreg::GlobalTimer => ("%globaltimer".into(), true, (30, (3, 1))),
        NvSreg::EnvReg(n) => (format!("%envreg{}", n.min(31)), false, base),
        NvSreg::DynamicSmemSize => ("%dynamic_smem_size".into(), false, (0, (4, 1))),
    };
    (name, wide, sm, v)
}
