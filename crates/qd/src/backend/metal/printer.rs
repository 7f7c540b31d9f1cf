//! Whole kernels as MSL: the entry point and its attributes, the arrays, locals and structured
//! control flow. Every SSA value is a `const` local named `v<N>`, declared where it is defined.

use std::collections::HashMap;

use super::abi::{self, BufferAbi, MslModule, Needs, MAX_BUFFERS};
use super::caps::MslVersion;
use super::expr::{self, mem_ty, ty};
use crate::ir::uniformity::{self, Uniformity};
use crate::ir::*;
use crate::trace::TraceError;

pub(super) struct Printer<'k> {
    pub(super) k: &'k Kernel,
    out: String,
    depth: usize,
    pub(super) needs: Needs,
    /// Constant values (a broadcast from a constant lane is `simd_broadcast`).
    pub(super) consts: HashMap<ValueId, u64>,
    /// Per value: how widely it agrees (a broadcast from a varying lane is `simd_shuffle`).
    pub(super) uniformity: Vec<Uniformity>,
}

/// The attributes the entry point reads its ids from, and the names it gives them.
const IDS: [(&str, &str); 5] = [
    ("qd_thread", "thread_position_in_threadgroup"),
    ("qd_block", "threadgroup_position_in_grid"),
    ("qd_blocks", "threadgroups_per_grid"),
    ("qd_global", "thread_position_in_grid"),
    ("qd_lane", "thread_index_in_simdgroup"),
];

/// An identifier from a user's name: letters, digits and `_` kept, the rest `_`.
fn ident(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Prints `k` (checked and legalized for a Metal target compiling MSL up to `max`).
pub(super) fn print_kernel(k: &Kernel, max: MslVersion, caller: SrcLoc) -> Result<MslModule, TraceError> {
    let needs = Needs::of(k);
    let version = needs.version();
    if version > max {
        let (op, loc) = needs.first_use(k).unwrap_or_else(|| ("msl.module".into(), caller));
        return Err(TraceError {
            kernel: k.name.clone(),
            op,
            loc,
            message: format!("needs MSL {version} for {}; this metal target compiles MSL {max}", needs.why()),
            unsupported: None,
        });
    }
    let params = abi::params(k);
    let arrays = params.iter().filter(|p| matches!(p, BufferAbi::Array { .. })).count();
    if arrays + 1 > MAX_BUFFERS {
        return Err(TraceError {
            kernel: k.name.clone(),
            op: "msl.buffers".into(),
            loc: caller,
            message: format!(
                "the kernel has {arrays} array parameters; Metal binds at most {MAX_BUFFERS} buffers, one of them \
                 the parameter block, so at most {} arrays",
                MAX_BUFFERS - 1
            ),
            unsupported: None,
        });
    }
    let consts = collect_consts(&k.body);
    let mut p = Printer { k, out: String::new(), depth: 0, needs, consts, uniformity: uniformity::analyze(k).values };
    let entry = format!("qd_{}", ident(&k.name));
    p.header(version, &entry, &params);
    p.depth = 1;
    let shared_bytes = p.declarations();
    p.block(&k.body)?;
    p.depth = 0;
    p.line("}");
    Ok(MslModule {
        source: p.out,
        entry,
        version,
        threadgroup_size: k.block_dim,
        params,
        shared_bytes,
        coherent: needs.coherent,
    })
}

fn collect_consts(b: &Block) -> HashMap<ValueId, u64> {
    let mut m = HashMap::new();
    b.walk(&mut |i| {
        if let InstKind::Const { dst, value } = &i.kind {
            m.insert(*dst, value.bits);
        }
    });
    m
}

impl Needs {
    /// The first instruction that needs what the kernel's version is for (for the version error).
    fn first_use(self, k: &Kernel) -> Option<(String, SrcLoc)> {
        let mut found = None;
        let three_two = self.version() == MslVersion::V3_2;
        k.body.walk(&mut |inst| {
            let n = Needs::of_inst(k, &inst.kind);
            let hit = if three_two { n.fence || n.coherent } else { n.bfloat };
            if hit && found.is_none() {
                found = Some((inst.op_name(), inst.loc));
            }
        });
        found
    }
}

impl Printer<'_> {
    pub(super) fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    /// The name of a value.
    pub(super) fn v(&self, id: ValueId) -> String {
        format!("v{}", id.0)
    }

    pub(super) fn d(&self, id: ValueId) -> DType {
        self.k.dtype(id)
    }

    /// `const T vN = e;`
    pub(super) fn def(&mut self, dst: ValueId, e: impl AsRef<str>) {
        let line = format!("const {} {} = {};", ty(self.d(dst)), self.v(dst), e.as_ref());
        self.line(line);
    }

    /// The name of an array.
    pub(super) fn array(&self, a: ArrayRef) -> String {
        match a {
            ArrayRef::Param(i) => format!("p{i}_{}", ident(self.k.params[i as usize].name())),
            ArrayRef::Shared(i) => format!("s{i}_{}", ident(&self.k.shared[i as usize].name)),
            ArrayRef::Local(i) => format!("t{i}_{}", ident(&self.k.local_arrays[i as usize].name)),
        }
    }

    /// The MSL address space of an array.
    pub(super) fn space(&self, a: ArrayRef) -> &'static str {
        match a {
            ArrayRef::Param(_) => "device",
            ArrayRef::Shared(_) => "threadgroup",
            ArrayRef::Local(_) => "thread",
        }
    }

    /// An error at `inst` (what the capability check should have refused, or a limit of MSL).
    pub(super) fn refuse(&self, inst: &Inst, message: impl Into<String>) -> TraceError {
        TraceError {
            kernel: self.k.name.clone(),
            op: inst.op_name(),
            loc: inst.loc,
            message: message.into(),
            unsupported: None,
        }
    }

    fn header(&mut self, version: MslVersion, entry: &str, params: &[BufferAbi]) {
        let k = self.k;
        let language = version.name().replace('.', "_");
        self.out.push_str(&format!(
            "// qd kernel `{}`: MSL {version} (compile with MTLLanguageVersion{language}).\n\
             // ABI: buffer(0) = parameter block (one ulong per parameter: array length or scalar bits);\n\
             // buffer(1 + j) = array parameter j; threadgroups of block_dim threads; fast math off.\n\
             // block_dim = {}, threadgroup memory = {} bytes.\n\
             #include <metal_stdlib>\nusing namespace metal;\n\nkernel void {entry}(\n",
            k.name,
            k.block_dim,
            k.shared_bytes()
        ));
        let mut args = vec!["    constant ulong* qd_params [[buffer(0)]]".to_string()];
        let coherent = if self.needs.coherent { "coherent(device) " } else { "" };
        for (i, abi) in params.iter().enumerate() {
            if let BufferAbi::Array { dtype, index } = abi {
                let name = self.array(ArrayRef::Param(i as u32));
                args.push(format!("    {coherent}device {}* {name} [[buffer({index})]]", mem_ty(*dtype)));
            }
        }
        for (name, attr) in IDS {
            args.push(format!("    uint {name} [[{attr}]]"));
        }
        self.out.push_str(&args.join(",\n"));
        self.out.push_str(")\n{\n");
    }

    /// Threadgroup arrays, per-thread arrays, locals and scalar parameters; returns the
    /// threadgroup bytes.
    fn declarations(&mut self) -> u32 {
        let k = self.k;
        let mut bytes = 0;
        for (i, s) in k.shared.iter().enumerate() {
            let name = self.array(ArrayRef::Shared(i as u32));
            // Narrow elements are reached as aligned 32-bit words by the sub-word CAS loop.
            let align = if s.dtype.size_bytes() < 4 { "alignas(4) " } else { "" };
            self.line(format!("{align}threadgroup {} {name}[{}];", mem_ty(s.dtype), s.len));
            bytes += s.dtype.size_bytes() as u32 * s.len;
        }
        for (i, a) in k.local_arrays.iter().enumerate() {
            let name = self.array(ArrayRef::Local(i as u32));
            self.line(format!("{} {name}[{}];", mem_ty(a.dtype), a.len));
        }
        for (i, l) in k.locals.iter().enumerate() {
            let t = ty(l.dtype);
            self.line(format!("{t} l{i} = {t}(0);"));
        }
        for (i, p) in k.params.iter().enumerate() {
            if let Param::Scalar { dtype, value, .. } = p {
                let slot = format!("qd_params[{i}]");
                let e = match dtype {
                    DType::Bool => format!("{slot} != 0ul"),
                    DType::I64 => format!("long({slot})"),
                    DType::U64 => slot,
                    d if d.is_float() => format!("as_type<{}>({}({slot}))", ty(*d), expr::bits_ty(*d)),
                    d => format!("{}({slot})", ty(*d)),
                };
                self.def(*value, e);
            }
        }
        bytes
    }

    pub(super) fn block(&mut self, b: &Block) -> Result<(), TraceError> {
        for inst in &b.insts {
            self.inst(inst)?;
        }
        Ok(())
    }

    fn nested(&mut self, head: String, b: &Block) -> Result<(), TraceError> {
        self.line(head);
        self.depth += 1;
        self.block(b)?;
        self.depth -= 1;
        Ok(())
    }

    fn inst(&mut self, inst: &Inst) -> Result<(), TraceError> {
        use InstKind::*;
        match &inst.kind {
            Const { dst, value } => self.def(*dst, expr::constant(value)),
            Unary { dst, op, a } => {
                let e = expr::unary(self.d(*a), *op, &self.v(*a));
                let e = e.ok_or_else(|| self.refuse(inst, format!("{op:?} on {} has no meaning", self.d(*a))))?;
                self.def(*dst, e)
            }
            Binary { dst, op, a, b } => {
                let e = expr::binary(self.d(*a), *op, &self.v(*a), &self.v(*b));
                let e = e.ok_or_else(|| self.refuse(inst, format!("{op:?} on {} has no meaning", self.d(*a))))?;
                self.def(*dst, e)
            }
            Cmp { dst, op, a, b } if a == b => self.def(*dst, expr::compare_self(self.d(*a), *op, &self.v(*a))),
            Cmp { dst, op, a, b } => self.def(*dst, expr::compare(*op, &self.v(*a), &self.v(*b))),
            Select { dst, cond, a, b } => {
                self.def(*dst, format!("{} ? {} : {}", self.v(*cond), self.v(*a), self.v(*b)))
            }
            Cast { dst, a } => self.def(*dst, expr::cast(self.d(*a), self.d(*dst), &self.v(*a))),
            BitCast { dst, a } => self.def(*dst, format!("as_type<{}>({})", ty(self.d(*dst)), self.v(*a))),
            Fma { dst, a, b, c } => self.def(*dst, expr::fma(self.d(*dst), &self.v(*a), &self.v(*b), &self.v(*c))),
            Special { dst, reg } => {
                let e = match reg {
                    crate::ir::Special::LaneId => "int(qd_lane)".to_string(),
                    crate::ir::Special::SubgroupSize => format!("{}u", self.k.subgroup_size),
                    crate::ir::Special::ThreadIdx => "qd_thread".into(),
                    crate::ir::Special::BlockIdx => "qd_block".into(),
                    crate::ir::Special::BlockDim => format!("{}u", self.k.block_dim),
                    crate::ir::Special::GridDim => "qd_blocks".into(),
                    crate::ir::Special::GlobalThreadIdx => "qd_global".into(),
                    crate::ir::Special::Nv(_) => {
                        return Err(self.refuse(inst, "NVIDIA special registers have no MSL form"))
                    }
                };
                self.def(*dst, e);
            }
            ArrayLen { dst, array } => {
                let e = match array {
                    ArrayRef::Param(i) => format!("uint(qd_params[{i}])"),
                    ArrayRef::Shared(i) => format!("{}u", self.k.shared[*i as usize].len),
                    ArrayRef::Local(i) => format!("{}u", self.k.local_arrays[*i as usize].len),
                };
                self.def(*dst, e);
            }
            LocalGet { dst, local } => self.def(*dst, format!("l{}", local.0)),
            LocalSet { local, value } => self.line(format!("l{} = {};", local.0, self.v(*value))),
            Load { dst, place, kind } => self.load(*dst, place, *kind),
            Store { place, value, kind } => self.store(place, *value, *kind),
            Atomic { dst, place, op, value, ordering, scope } => {
                self.atomic(inst, *dst, place, *op, *value, *ordering, *scope)?
            }
            Cas { dst, place, expected, desired, ordering, scope } => {
                self.cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            WordShift { dst, place } => {
                let size = self.k.array_dtype(place.array).size_bytes();
                self.def(*dst, format!("(uint({}) * {size}u & 3u) * 8u", self.v(place.index)));
            }
            WordCas { dst, place, expected, desired, ordering, scope } => {
                self.word_cas(inst, *dst, place, *expected, *desired, *ordering, *scope)?
            }
            Shuffle { dst, valid, kind, value, lane } => self.shuffle(*dst, *valid, *kind, *value, *lane),
            Broadcast { dst, value, lane } => self.broadcast(*dst, *value, *lane),
            Ballot { dst, pred } => self.def(*dst, format!("ulong(simd_ballot({}))", self.v(*pred))),
            SubgroupReduce { dst, op, scan, value } => self.reduce(inst, *dst, *op, *scan, *value)?,
            Vote { dst, kind, pred } => {
                let p = self.v(*pred);
                let e = match kind {
                    VoteKind::All => format!("simd_all({p})"),
                    VoteKind::Any => format!("simd_any({p})"),
                    VoteKind::Uni => format!("simd_all({p}) == simd_any({p})"),
                };
                self.def(*dst, e);
            }
            BlockBarrier { reduce: None } => self.barrier("threadgroup_barrier"),
            BlockBarrier { reduce: Some(_) } => {
                return Err(
                    self.refuse(inst, "Metal has no fused barrier reduction; the library emulates it (seed 000)")
                )
            }
            SubgroupBarrier => self.barrier("simdgroup_barrier"),
            Fence { scope, .. } => self.fence(*scope),
            Nv { .. } => return Err(self.refuse(inst, "NVIDIA-only operations have no MSL form (seed 004)")),
            If { cond, then_block, else_block } => {
                self.nested(format!("if ({}) {{", self.v(*cond)), then_block)?;
                if !else_block.insts.is_empty() {
                    self.nested("} else {".into(), else_block)?;
                }
                self.line("}");
            }
            Loop { body } => {
                self.nested("while (true) {".into(), body)?;
                self.line("}");
            }
            Break => self.line("break;"),
            Continue => self.line("continue;"),
            Return => self.line("return;"),
            GridStride { begin, end, index, body } => {
                // The index runs in 64 bits, so `end` near i32::MAX cannot wrap it; the body sees
                // it narrowed to its type, where it is always below `end`.
                let step = format!("long(qd_blocks) * {}l", self.k.block_dim);
                self.line(format!(
                    "for (long qd_i = long({}) + long(qd_global); qd_i < long({}); qd_i += {step}) {{",
                    self.v(*begin),
                    self.v(*end)
                ));
                self.depth += 1;
                self.def(*index, format!("{}(qd_i)", ty(self.d(*index))));
                self.block(body)?;
                self.depth -= 1;
                self.line("}");
            }
        }
        Ok(())
    }
}
