//! The readable text dump of a kernel (`qd emit --target ir`, snapshot tests).

use super::inst::*;
use std::fmt::Write;

/// Renders a kernel as text.
pub fn print_kernel(k: &Kernel) -> String {
    let mut out = String::new();
    let launch = match k.launch {
        LaunchKind::Range => "range",
        LaunchKind::Explicit => "explicit",
    };
    let _ = writeln!(
        out,
        "kernel {}({}) {launch} block_dim={} subgroup={}{} {{",
        k.name,
        k.params
            .iter()
            .map(|p| match p {
                Param::Array { name, dtype } => format!("{name}: [{dtype}]"),
                Param::Scalar { name, dtype, value } => format!("{name}: {dtype} = %{}", value.0),
            })
            .collect::<Vec<_>>()
            .join(", "),
        k.block_dim,
        k.subgroup_size,
        k.min_blocks_per_sm.map(|b| format!(" min_blocks_per_sm={b}")).unwrap_or_default()
    );
    for (i, s) in k.shared.iter().enumerate() {
        let _ = writeln!(out, "  shared @s{i} {}: [{}; {}]", s.name, s.dtype, s.len);
    }
    for (i, s) in k.local_arrays.iter().enumerate() {
        let _ = writeln!(out, "  local @l{i} {}: [{}; {}]", s.name, s.dtype, s.len);
    }
    for (i, l) in k.locals.iter().enumerate() {
        let _ = writeln!(out, "  var $%{i}: {}", l.dtype);
    }
    print_block(k, &k.body, 1, &mut out);
    out.push_str("}\n");
    out
}

fn v(k: &Kernel, id: ValueId) -> String {
    format!("%{}:{}", id.0, k.dtype(id))
}

fn arr(a: ArrayRef) -> String {
    match a {
        ArrayRef::Param(i) => format!("@p{i}"),
        ArrayRef::Shared(i) => format!("@s{i}"),
        ArrayRef::Local(i) => format!("@l{i}"),
    }
}

fn place(p: &Place) -> String {
    format!("{}[%{}]", arr(p.array), p.index.0)
}

fn print_block(k: &Kernel, b: &Block, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for inst in &b.insts {
        let line = render_inst(k, &inst.kind);
        let _ = writeln!(out, "{pad}{line}");
        match &inst.kind {
            InstKind::If { then_block, else_block, .. } => {
                print_block(k, then_block, depth + 1, out);
                if !else_block.insts.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    print_block(k, else_block, depth + 1, out);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            InstKind::Loop { body } | InstKind::GridStride { body, .. } => {
                print_block(k, body, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
            _ => {}
        }
    }
}

/// One instruction's line (without nested blocks).
pub fn render_inst(k: &Kernel, kind: &InstKind) -> String {
    use InstKind::*;
    let lower = |s: String| s.to_lowercase();
    match kind {
        Const { dst, value } => format!("{} = const {}", v(k, *dst), value.render()),
        Unary { dst, op, a } => format!("{} = {} %{}", v(k, *dst), lower(format!("{op:?}")), a.0),
        Binary { dst, op, a, b } => {
            format!("{} = {} %{}, %{}", v(k, *dst), lower(format!("{op:?}")), a.0, b.0)
        }
        Cmp { dst, op, a, b } => {
            format!("{} = cmp.{} %{}, %{}", v(k, *dst), lower(format!("{op:?}")), a.0, b.0)
        }
        Select { dst, cond, a, b } => format!("{} = select %{}, %{}, %{}", v(k, *dst), cond.0, a.0, b.0),
        Cast { dst, a } => format!("{} = cast %{}:{}", v(k, *dst), a.0, k.dtype(*a)),
        BitCast { dst, a } => format!("{} = bit_cast %{}:{}", v(k, *dst), a.0, k.dtype(*a)),
        Fma { dst, a, b, c } => format!("{} = fma %{}, %{}, %{}", v(k, *dst), a.0, b.0, c.0),
        Special { dst, reg } => format!("{} = special {}", v(k, *dst), lower(format!("{reg:?}"))),
        ArrayLen { dst, array } => format!("{} = len {}", v(k, *dst), arr(*array)),
        LocalGet { dst, local } => format!("{} = get $%{}", v(k, *dst), local.0),
        LocalSet { local, value } => format!("set $%{}, %{}", local.0, value.0),
        Load { dst, place: p, kind } => {
            let space = k.array_space(p.array).name();
            let how = match kind {
                LoadKind::Plain => String::new(),
                LoadKind::Volatile => " volatile".into(),
                LoadKind::Ordered(o, s) => format!(" {}.{}", o.name(), s.name()),
            };
            format!("{} = {space} load{how} {}", v(k, *dst), place(p))
        }
        Store { place: p, value, kind } => {
            let space = k.array_space(p.array).name();
            let how = match kind {
                StoreKind::Plain => String::new(),
                StoreKind::Volatile => " volatile".into(),
                StoreKind::Ordered(o, s) => format!(" {}.{}", o.name(), s.name()),
            };
            format!("{space} store{how} {}, %{}", place(p), value.0)
        }
        Atomic { dst, place: p, op, value, ordering, scope } => {
            let lhs = dst.map(|d| format!("{} = ", v(k, d))).unwrap_or_default();
            format!("{lhs}atomic.{}.{}.{} {}, %{}", op.name(), ordering.name(), scope.name(), place(p), value.0)
        }
        Cas { dst, place: p, expected, desired, ordering, scope } => format!(
            "{} = atomic.cas.{}.{} {}, %{}, %{}",
            v(k, *dst),
            ordering.name(),
            scope.name(),
            place(p),
            expected.0,
            desired.0
        ),
        WordShift { dst, place: p } => format!("{} = word_shift {}", v(k, *dst), place(p)),
        WordCas { dst, place: p, expected, desired, ordering, scope } => format!(
            "{} = atomic.cas_word.{}.{} {}, %{}, %{}",
            v(k, *dst),
            ordering.name(),
            scope.name(),
            place(p),
            expected.0,
            desired.0
        ),
        Shuffle { dst, valid, kind, value, lane } => {
            let valid = valid.map(|p| format!("|%{}", p.0)).unwrap_or_default();
            format!("{}{valid} = shuffle.{} %{}, %{}", v(k, *dst), lower(format!("{kind:?}")), value.0, lane.0)
        }
        Broadcast { dst, value, lane } => format!("{} = broadcast %{}, %{}", v(k, *dst), value.0, lane.0),
        Ballot { dst, pred } => format!("{} = ballot %{}", v(k, *dst), pred.0),
        Vote { dst, kind, pred } => {
            format!("{} = vote.{} %{}", v(k, *dst), lower(format!("{kind:?}")), pred.0)
        }
        SubgroupReduce { dst, op, scan, value } => {
            format!("{} = subgroup.{} %{}", v(k, *dst), super::reduce_name(*op, *scan), value.0)
        }
        BlockBarrier { reduce: None } => "block.sync".into(),
        BlockBarrier { reduce: Some((r, p, d)) } => {
            format!("{} = block.sync.{} %{}", v(k, *d), lower(format!("{r:?}")), p.0)
        }
        SubgroupBarrier => "subgroup.sync".into(),
        Fence { scope, ordering } => format!("fence.{}.{}", ordering.name(), scope.name()),
        Nv { op, dsts, args, place: p } => {
            let d: Vec<_> = dsts.iter().map(|d| v(k, *d)).collect();
            let a: Vec<_> = args.iter().map(|a| format!("%{}", a.0)).collect();
            let p = p.map(|p| format!(" {}", place(&p))).unwrap_or_default();
            format!("{} = nv.{}{p} {}", d.join(", "), lower(format!("{op:?}")), a.join(", "))
        }
        If { cond, .. } => format!("if %{} {{", cond.0),
        Loop { .. } => "loop {".into(),
        Break => "break".into(),
        Continue => "continue".into(),
        Return => "return".into(),
        GridStride { begin, end, index, .. } => {
            format!("range {} in %{}..%{} {{", v(k, *index), begin.0, end.0)
        }
    }
}
