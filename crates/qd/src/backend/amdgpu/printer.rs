//! Whole kernels as LLVM IR: the module header, the kernel's signature and attributes, LDS and
//! private arrays, and structured control flow as labelled basic blocks. Every SSA value is
//! `%v<N>`; constants are printed inline where they are used.
//!
//! The IR's local variables become SSA values as the printer walks the structured IR: it keeps
//! each local's current value, joins the two arms of an `if` with phis, and gives every loop a
//! header with one phi per local (incoming from before the loop and from its latch, where the
//! `continue`s and the end of the body meet) and an exit joined from its `break`s. llc does not run
//! mem2reg, and its AMDGPU pipeline moves `alloca`s in loops to LDS or scratch rather than
//! registers (checked with llc-19), so allocas are kept for per-thread arrays only.

use std::collections::{BTreeSet, HashMap};

use super::caps::{self, AmdgpuArch};
use super::expr::{self, mem_ty, ty};
use super::AmdgpuModule;
use crate::ir::*;
use crate::trace::TraceError;

/// Where `break` and `continue` go in the innermost loop, and the locals' values on each edge.
struct LoopLabels {
    next: String,
    exit: String,
    /// (block, locals) of each branch to `next`.
    continues: Vec<(String, Vec<String>)>,
    /// (block, locals) of each branch to `exit`.
    breaks: Vec<(String, Vec<String>)>,
}

pub(super) struct Printer<'k> {
    pub(super) k: &'k Kernel,
    pub(super) arch: AmdgpuArch,
    /// The body after the entry block's allocas.
    body: String,
    /// `alloca`s, printed first in the entry block (where SROA looks for them).
    allocas: String,
    /// Intrinsic and other declarations the body calls.
    decls: BTreeSet<String>,
    /// Inline operand text of constants.
    consts: HashMap<ValueId, String>,
    tmp: u32,
    labels: u32,
    loops: Vec<LoopLabels>,
    /// The `break` edges of the loop just printed (for its exit block's join).
    loops_done: Vec<Vec<(String, Vec<String>)>>,
    /// The current value (operand text) of each local.
    locals: Vec<String>,
    /// The basic block being printed.
    block_label: String,
    /// Loop headers whose phis are printed once the latch is known.
    headers: u32,
}

/// An identifier from a user's name: letters, digits and `_` kept, the rest `_`.
pub(super) fn ident(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Prints `k` (checked and legalized for `arch`).
pub(super) fn print_kernel(k: &Kernel, arch: AmdgpuArch) -> Result<AmdgpuModule, TraceError> {
    let mut p = Printer {
        k,
        arch,
        body: String::new(),
        allocas: String::new(),
        decls: BTreeSet::new(),
        consts: HashMap::new(),
        tmp: 0,
        labels: 0,
        loops: Vec::new(),
        loops_done: Vec::new(),
        locals: k.locals.iter().map(|l| expr::zero(l.dtype)).collect(),
        block_label: "entry".into(),
        headers: 0,
    };
    let entry = format!("qd_{}", ident(&k.name));
    let args = p.arguments();
    p.declarations();
    p.block(&k.body)?;
    p.line("ret void");
    let kernarg_bytes = k.params.iter().map(|p| if matches!(p, Param::Array { .. }) { 16 } else { 8 }).sum();
    let shared_bytes = k.shared_bytes() as u32;
    let mut out = format!(
        "; qd kernel `{}` for {arch}: llc -mtriple=amdgcn-amd-amdhsa -mcpu={arch} -mattr=+wavefrontsize64\n\
         ; ABI: 8-byte kernel arguments in parameter order (array: ptr addrspace(1), i64 length; scalar: i64 bits)\n\
         ; block_dim = {}, LDS = {shared_bytes} bytes.\n\
         target triple = \"amdgcn-amd-amdhsa\"\n\n",
        k.name, k.block_dim
    );
    for (i, s) in k.shared.iter().enumerate() {
        // LDS cannot be initialized; narrow elements are reached as aligned 32-bit words (D6).
        out.push_str(&format!(
            "@{} = internal addrspace(3) global [{} x {}] poison, align {}\n",
            p.shared_name(i as u32),
            s.len,
            mem_ty(s.dtype),
            s.dtype.size_bytes().max(4)
        ));
    }
    out.push_str(&format!("\ndefine amdgpu_kernel void @{entry}({}) #0 {{\nentry:\n", args.join(", ")));
    out.push_str(&p.allocas);
    out.push_str(&p.body);
    out.push_str("}\n\n");
    for d in &p.decls {
        out.push_str(d);
        out.push('\n');
    }
    let unsafe_fp = if caps::unsafe_fp_atomics(arch) { " \"amdgpu-unsafe-fp-atomics\"=\"true\"" } else { "" };
    out.push_str(&format!(
        "\nattributes #0 = {{ nounwind \"amdgpu-flat-work-group-size\"=\"1,{}\" \
         \"target-features\"=\"+wavefrontsize64\"{unsafe_fp} }}\n",
        k.block_dim
    ));
    Ok(AmdgpuModule { text: out, entry, arch, block_dim: k.block_dim, kernarg_bytes, shared_bytes })
}

impl Printer<'_> {
    /// One instruction line of the body.
    pub(super) fn line(&mut self, s: impl AsRef<str>) {
        self.body.push_str("  ");
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }

    /// Starts basic block `label`.
    fn label(&mut self, label: &str) {
        self.body.push_str(label);
        self.body.push_str(":\n");
        self.block_label = label.to_string();
    }

    /// The edge from the current block: its label and the locals' values.
    fn edge(&self) -> (String, Vec<String>) {
        (self.block_label.clone(), self.locals.clone())
    }

    /// Sets the locals at a block whose predecessors are `edges`: one value where they agree, a
    /// phi where they differ, poison where the block has no predecessor.
    fn join(&mut self, edges: &[(String, Vec<String>)]) {
        for i in 0..self.locals.len() {
            let t = ty(self.k.locals[i].dtype);
            self.locals[i] = match edges {
                [] => "poison".into(),
                [(_, first), rest @ ..] if rest.iter().all(|(_, v)| v[i] == first[i]) => first[i].clone(),
                _ => {
                    let incoming: Vec<_> = edges.iter().map(|(l, v)| format!("[ {}, %{l} ]", v[i])).collect();
                    self.emit(format!("phi {t} {}", incoming.join(", ")))
                }
            };
        }
    }

    /// Opens a loop header: a placeholder for its phis (filled by `close_header`) and the locals
    /// renamed to them. Returns the header's number.
    fn open_header(&mut self) -> u32 {
        self.headers += 1;
        let n = self.headers;
        self.body.push_str(&format!("\u{0}phis{n}\n"));
        for i in 0..self.locals.len() {
            self.locals[i] = format!("%h{n}.{i}");
        }
        n
    }

    /// Fills header `n`'s phis: each local from before the loop and from the latch.
    fn close_header(&mut self, n: u32, pre: &(String, Vec<String>), latch: &(String, Vec<String>)) {
        let mut phis = String::new();
        for (i, l) in self.k.locals.iter().enumerate() {
            phis.push_str(&format!(
                "  %h{n}.{i} = phi {} [ {}, %{} ], [ {}, %{} ]\n",
                ty(l.dtype),
                pre.1[i],
                pre.0,
                latch.1[i],
                latch.0
            ));
        }
        self.body = self.body.replace(&format!("\u{0}phis{n}\n"), &phis);
    }

    /// A fresh label with a readable stem.
    fn fresh_label(&mut self, stem: &str) -> String {
        self.labels += 1;
        format!("{stem}{}", self.labels)
    }

    /// A fresh temporary `%tN`.
    pub(super) fn fresh(&mut self) -> String {
        self.tmp += 1;
        format!("%t{}", self.tmp)
    }

    /// `%tN = e`, returning `%tN`.
    pub(super) fn emit(&mut self, e: impl AsRef<str>) -> String {
        let t = self.fresh();
        self.line(format!("{t} = {}", e.as_ref()));
        t
    }

    /// Declares an intrinsic or other external the body calls.
    pub(super) fn declare(&mut self, decl: &str) {
        self.decls.insert(decl.to_string());
    }

    /// The operand text of a value: its constant, or `%vN`.
    pub(super) fn v(&self, id: ValueId) -> String {
        self.consts.get(&id).cloned().unwrap_or_else(|| format!("%v{}", id.0))
    }

    /// The name a definition gives a value (`%vN`).
    pub(super) fn name(&self, id: ValueId) -> String {
        format!("%v{}", id.0)
    }

    pub(super) fn d(&self, id: ValueId) -> DType {
        self.k.dtype(id)
    }

    /// `%vN = e`.
    pub(super) fn def(&mut self, dst: ValueId, e: impl AsRef<str>) {
        let line = format!("{} = {}", self.name(dst), e.as_ref());
        self.line(line);
    }

    /// Gives `dst` the value of operand text `x` of its own type (LLVM has no copy instruction).
    pub(super) fn copy(&mut self, dst: ValueId, x: &str) {
        let t = ty(self.d(dst));
        if t == "i1" || self.d(dst).is_int() {
            self.def(dst, format!("or {t} {x}, {}", if t == "i1" { "false" } else { "0" }));
        } else {
            self.def(dst, format!("select i1 true, {t} {x}, {t} {x}"));
        }
    }

    fn shared_name(&self, i: u32) -> String {
        format!("qd_s{i}_{}", ident(&self.k.shared[i as usize].name))
    }

    /// An error at `inst` (what the capability check should have refused).
    pub(super) fn refuse(&self, inst: &Inst, message: impl Into<String>) -> TraceError {
        TraceError {
            kernel: self.k.name.clone(),
            op: inst.op_name(),
            loc: inst.loc,
            message: message.into(),
            unsupported: None,
        }
    }

    /// The base pointer of an array and its address space.
    pub(super) fn array_base(&self, a: ArrayRef) -> (String, u32) {
        match a {
            ArrayRef::Param(i) => (format!("%p{i}"), 1),
            ArrayRef::Shared(i) => (format!("@{}", self.shared_name(i)), 3),
            ArrayRef::Local(i) => (format!("%a{i}"), 5),
        }
    }

    fn arguments(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (i, p) in self.k.params.iter().enumerate() {
            match p {
                Param::Array { .. } => {
                    args.push(format!("ptr addrspace(1) %p{i}"));
                    args.push(format!("i64 %n{i}"));
                }
                Param::Scalar { .. } => args.push(format!("i64 %s{i}")),
            }
        }
        args
    }

    /// Private arrays, locals, constants and scalar parameters.
    fn declarations(&mut self) {
        let k = self.k;
        for (i, a) in k.local_arrays.iter().enumerate() {
            let align = a.dtype.size_bytes().max(4);
            self.allocas.push_str(&format!(
                "  %a{i} = alloca [{} x {}], align {align}, addrspace(5)\n",
                a.len,
                mem_ty(a.dtype)
            ));
        }
        k.body.walk(&mut |inst| {
            if let InstKind::Const { dst, value } = &inst.kind {
                self.consts.insert(*dst, expr::constant(value));
            }
        });
        for (i, p) in k.params.iter().enumerate() {
            if let Param::Scalar { dtype, value, .. } = p {
                let slot = format!("%s{i}");
                match dtype {
                    DType::Bool => self.def(*value, format!("icmp ne i64 {slot}, 0")),
                    d if d.bits() == 64 && d.is_int() => self.copy(*value, &slot),
                    d if d.is_float() => {
                        let bits = expr::int_ty(d.bits());
                        let t = if d.bits() == 64 { slot } else { self.emit(format!("trunc i64 {slot} to {bits}")) };
                        self.def(*value, format!("bitcast {bits} {t} to {}", ty(*d)));
                    }
                    d => self.def(*value, format!("trunc i64 {slot} to {}", ty(*d))),
                }
            }
        }
    }

    pub(super) fn block(&mut self, b: &Block) -> Result<(), TraceError> {
        for inst in &b.insts {
            self.inst(inst)?;
        }
        Ok(())
    }

    /// Ends the current basic block with `br label %to` and opens an unreachable one, so whatever
    /// follows a `break`, `continue` or `return` in the same IR block still has a block to live in.
    fn jump(&mut self, terminator: String) {
        self.line(terminator);
        let dead = self.fresh_label("after");
        self.label(&dead);
    }

    fn inst(&mut self, inst: &Inst) -> Result<(), TraceError> {
        use InstKind::*;
        match &inst.kind {
            Const { .. } => {}
            Unary { dst, op, a } => self.unary(inst, *dst, *op, *a)?,
            Binary { dst, op, a, b } => self.binary(inst, *dst, *op, *a, *b)?,
            Cmp { dst, op, a, b } => {
                let e = expr::compare(self.d(*a), *op, &self.v(*a), &self.v(*b));
                self.def(*dst, e)
            }
            Select { dst, cond, a, b } => {
                let t = ty(self.d(*dst));
                self.def(*dst, format!("select i1 {}, {t} {}, {t} {}", self.v(*cond), self.v(*a), self.v(*b)))
            }
            Cast { dst, a } => self.cast(*dst, *a),
            BitCast { dst, a } => {
                let (from, to) = (ty(self.d(*a)), ty(self.d(*dst)));
                if from == to {
                    let x = self.v(*a);
                    self.copy(*dst, &x)
                } else {
                    self.def(*dst, format!("bitcast {from} {} to {to}", self.v(*a)))
                }
            }
            Fma { dst, a, b, c } => self.fma(*dst, *a, *b, *c),
            Special { dst, reg } => self.special(inst, *dst, *reg)?,
            ArrayLen { dst, array } => match array {
                ArrayRef::Param(i) => self.def(*dst, format!("trunc i64 %n{i} to i32")),
                ArrayRef::Shared(i) => {
                    let n = self.k.shared[*i as usize].len;
                    self.copy(*dst, &n.to_string())
                }
                ArrayRef::Local(i) => {
                    let n = self.k.local_arrays[*i as usize].len;
                    self.copy(*dst, &n.to_string())
                }
            },
            LocalGet { dst, local } => {
                let x = self.locals[local.0 as usize].clone();
                self.copy(*dst, &x)
            }
            LocalSet { local, value } => self.locals[local.0 as usize] = self.v(*value),
            Load { dst, place, kind } => self.load(*dst, place, *kind),
            Store { place, value, kind } => self.store(place, *value, *kind),
            Atomic { dst, place, op, value, ordering, scope } => {
                self.atomic(inst, *dst, place, *op, *value, *ordering, *scope)?
            }
            Cas { dst, place, expected, desired, ordering, scope } => {
                self.cas(*dst, place, *expected, *desired, *ordering, *scope)
            }
            WordShift { dst, place } => self.word_shift(*dst, place),
            WordCas { dst, place, expected, desired, ordering, scope } => {
                self.word_cas(*dst, place, *expected, *desired, *ordering, *scope)
            }
            Shuffle { dst, valid, kind, value, lane } => self.shuffle(*dst, *valid, *kind, *value, *lane),
            Broadcast { dst, value, lane } => self.broadcast(*dst, *value, *lane),
            Ballot { dst, pred } => {
                let b = self.ballot(&self.v(*pred));
                self.copy(*dst, &b)
            }
            Vote { dst, kind, pred } => self.vote(*dst, *kind, *pred),
            BlockBarrier { reduce: None } => self.block_barrier(),
            BlockBarrier { reduce: Some(_) } => {
                return Err(self.refuse(
                    inst,
                    "AMDGPU has no fused barrier reduction; the library emulates it through shared memory (seed 000)",
                ))
            }
            SubgroupBarrier => {
                self.declare("declare void @llvm.amdgcn.wave.barrier()");
                self.line("call void @llvm.amdgcn.wave.barrier()")
            }
            Fence { scope, ordering } => self.fence(*scope, *ordering),
            Nv { .. } => return Err(self.refuse(inst, "NVIDIA-only operations have no AMDGPU form (seed 004)")),
            SubgroupReduce { .. } => {
                return Err(self.refuse(inst, "the library reduces with shuffle trees on AMDGPU (seed 002)"))
            }
            If { cond, then_block, else_block } => {
                let (then_l, else_l, end_l) =
                    (self.fresh_label("then"), self.fresh_label("else"), self.fresh_label("endif"));
                self.line(format!("br i1 {}, label %{then_l}, label %{else_l}", self.v(*cond)));
                let before = self.locals.clone();
                self.label(&then_l);
                self.block(then_block)?;
                let then_edge = self.edge();
                self.line(format!("br label %{end_l}"));
                self.locals = before;
                self.label(&else_l);
                self.block(else_block)?;
                let else_edge = self.edge();
                self.line(format!("br label %{end_l}"));
                self.label(&end_l);
                self.join(&[then_edge, else_edge]);
            }
            Loop { body } => {
                let (head, latch, exit) =
                    (self.fresh_label("loop"), self.fresh_label("loopnext"), self.fresh_label("endloop"));
                let pre = self.edge();
                self.line(format!("br label %{head}"));
                self.label(&head);
                let n = self.open_header();
                self.in_loop(&latch, &exit, body)?;
                let back = self.edge();
                self.line(format!("br label %{head}"));
                self.close_header(n, &pre, &back);
                self.label(&exit);
                let breaks = self.loops_done.pop().unwrap_or_default();
                self.join(&breaks);
            }
            Break | Continue => {
                let edge = self.edge();
                let Some(l) = self.loops.last_mut() else {
                    return Err(self.refuse(inst, "`break`/`continue` outside a loop"));
                };
                let to = if matches!(inst.kind, Break) {
                    l.breaks.push(edge);
                    l.exit.clone()
                } else {
                    l.continues.push(edge);
                    l.next.clone()
                };
                self.jump(format!("br label %{to}"))
            }
            Return => self.jump("ret void".into()),
            GridStride { begin, end, index, body } => self.grid_stride(*begin, *end, *index, body)?,
        }
        Ok(())
    }

    /// Prints a loop body whose `continue`s go to `latch` and `break`s to `exit`, then opens the
    /// latch with the locals joined from its edges. The `break` edges go to `loops_done`.
    fn in_loop(&mut self, latch: &str, exit: &str, body: &Block) -> Result<(), TraceError> {
        self.loops.push(LoopLabels {
            next: latch.to_string(),
            exit: exit.to_string(),
            continues: Vec::new(),
            breaks: Vec::new(),
        });
        self.block(body)?;
        let fall = self.edge();
        self.line(format!("br label %{latch}"));
        let mut l = self.loops.pop().unwrap_or_else(|| unreachable!("pushed above"));
        l.continues.push(fall);
        self.label(latch);
        self.join(&l.continues);
        self.loops_done.push(l.breaks);
        Ok(())
    }

    /// The range loop (D1). The index runs in 64 bits, so an `end` near `i32::MAX` cannot wrap it;
    /// the body sees it truncated to its type, where it is always below `end`.
    fn grid_stride(&mut self, begin: ValueId, end: ValueId, index: ValueId, body: &Block) -> Result<(), TraceError> {
        let wide = |p: &mut Self, v: ValueId| {
            let d = p.d(v);
            match d.bits() {
                64 => p.v(v),
                _ if d.is_signed_int() => p.emit(format!("sext {} {} to i64", ty(d), p.v(v))),
                _ => p.emit(format!("zext {} {} to i64", ty(d), p.v(v))),
            }
        };
        let (b, e) = (wide(self, begin), wide(self, end));
        let global = self.global_thread_idx();
        let g64 = self.emit(format!("zext i32 {global} to i64"));
        let start = self.emit(format!("add i64 {b}, {g64}"));
        let blocks = self.grid_dim();
        let b64 = self.emit(format!("zext i32 {blocks} to i64"));
        let step = self.emit(format!("mul i64 {b64}, {}", self.k.block_dim));
        let (head, latch, exit) =
            (self.fresh_label("range"), self.fresh_label("rangenext"), self.fresh_label("endrange"));
        let bodyl = self.fresh_label("rangebody");
        let pre = self.edge();
        self.line(format!("br label %{head}"));
        self.label(&head);
        let n = self.open_header();
        let (i, next) = (format!("%gi{n}"), format!("%gnext{n}"));
        self.line(format!("{i} = phi i64 [ {start}, %{} ], [ {next}, %{latch} ]", pre.0));
        let head_edge = self.edge();
        let more = self.emit(format!("icmp slt i64 {i}, {e}"));
        self.line(format!("br i1 {more}, label %{bodyl}, label %{exit}"));
        self.label(&bodyl);
        let t = ty(self.d(index));
        if t == "i64" {
            self.copy(index, &i);
        } else {
            self.def(index, format!("trunc i64 {i} to {t}"));
        }
        self.in_loop(&latch, &exit, body)?;
        self.line(format!("{next} = add i64 {i}, {step}"));
        let back = self.edge();
        self.line(format!("br label %{head}"));
        self.close_header(n, &pre, &back);
        self.label(&exit);
        let mut exits = vec![head_edge];
        exits.extend(self.loops_done.pop().unwrap_or_default());
        self.join(&exits);
        Ok(())
    }

    fn special(&mut self, inst: &Inst, dst: ValueId, reg: Special) -> Result<(), TraceError> {
        let x = match reg {
            Special::LaneId => self.lane_id(),
            Special::SubgroupSize => self.k.subgroup_size.to_string(),
            Special::ThreadIdx => self.thread_idx(),
            Special::BlockIdx => self.block_idx(),
            Special::BlockDim => self.k.block_dim.to_string(),
            Special::GridDim => self.grid_dim(),
            Special::GlobalThreadIdx => self.global_thread_idx(),
            Special::Nv(_) => return Err(self.refuse(inst, "NVIDIA special registers have no AMDGPU form (seed 004)")),
        };
        self.copy(dst, &x);
        Ok(())
    }

    fn thread_idx(&mut self) -> String {
        self.declare("declare i32 @llvm.amdgcn.workitem.id.x()");
        self.emit("call i32 @llvm.amdgcn.workitem.id.x()")
    }

    fn block_idx(&mut self) -> String {
        self.declare("declare i32 @llvm.amdgcn.workgroup.id.x()");
        self.emit("call i32 @llvm.amdgcn.workgroup.id.x()")
    }

    fn global_thread_idx(&mut self) -> String {
        let (b, t) = (self.block_idx(), self.thread_idx());
        let base = self.emit(format!("mul i32 {b}, {}", self.k.block_dim));
        self.emit(format!("add i32 {base}, {t}"))
    }

    /// Workgroups in the grid: the HSA dispatch packet's `grid_size_x` (work-items, offset 12)
    /// over the block size.
    fn grid_dim(&mut self) -> String {
        self.declare("declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()");
        let packet = self.emit("call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()");
        let field = self.emit(format!("getelementptr i8, ptr addrspace(4) {packet}, i64 12"));
        let items = self.emit(format!("load i32, ptr addrspace(4) {field}, align 4"));
        self.emit(format!("udiv i32 {items}, {}", self.k.block_dim))
    }
}
