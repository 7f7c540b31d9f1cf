//! Questions about syntax asked before lowering it: is a `let mut` assigned under device control
//! flow, does an operand have side effects, is a `for` the parallel loop.

use syn::visit::Visit;
use syn::{BinOp, Expr, ExprCall, ExprForLoop, RangeLimits, Stmt, UnOp};

/// True when `name` is assigned (`=`, `op=`, destructuring) inside the body of a device construct
/// or a closure somewhere in `stmts`: such a `let mut` needs a device local, since the assignment
/// happens inside a closure the builder runs. Conservative (shadowing is ignored): a local where
/// a rebinding would do costs a load and a store, never a wrong result.
pub(crate) fn assigned_under_closure(stmts: &[Stmt], name: &str) -> bool {
    let mut v = Assigned { name, depth: 0, found: false };
    for s in stmts {
        v.visit_stmt(s);
    }
    v.found
}

struct Assigned<'a> {
    name: &'a str,
    depth: usize,
    found: bool,
}

impl Assigned<'_> {
    fn target(&mut self, e: &Expr) {
        match e {
            Expr::Path(p) if self.depth > 0 && p.path.is_ident(self.name) => self.found = true,
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.target(e)),
            Expr::Paren(p) => self.target(&p.expr),
            _ => {}
        }
    }

    fn deeper(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }
}

impl<'ast> Visit<'ast> for Assigned<'_> {
    fn visit_expr_assign(&mut self, i: &'ast syn::ExprAssign) {
        self.target(&i.left);
        syn::visit::visit_expr_assign(self, i);
    }
    fn visit_expr_binary(&mut self, i: &'ast syn::ExprBinary) {
        if is_compound(&i.op) {
            self.target(&i.left);
        }
        if matches!(i.op, BinOp::And(_) | BinOp::Or(_)) {
            self.visit_expr(&i.left);
            self.deeper(|v| v.visit_expr(&i.right));
        } else {
            syn::visit::visit_expr_binary(self, i);
        }
    }
    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        if let Expr::Let(l) = &*i.cond {
            // `if let` is a compile-time match: no closure.
            self.visit_expr(&l.expr);
            self.visit_block(&i.then_branch);
            if let Some((_, e)) = &i.else_branch {
                self.visit_expr(e);
            }
            return;
        }
        self.visit_expr(&i.cond);
        self.deeper(|v| {
            v.visit_block(&i.then_branch);
            if let Some((_, e)) = &i.else_branch {
                v.visit_expr(e);
            }
        });
    }
    fn visit_expr_while(&mut self, i: &'ast syn::ExprWhile) {
        self.deeper(|v| syn::visit::visit_expr_while(v, i));
    }
    fn visit_expr_loop(&mut self, i: &'ast syn::ExprLoop) {
        self.deeper(|v| syn::visit::visit_expr_loop(v, i));
    }
    fn visit_expr_for_loop(&mut self, i: &'ast syn::ExprForLoop) {
        self.visit_expr(&i.expr);
        if device_range(i).is_some() || parallel_range(i).is_some() {
            self.deeper(|v| v.visit_block(&i.body));
        } else {
            self.visit_block(&i.body);
        }
    }
    fn visit_expr_closure(&mut self, i: &'ast syn::ExprClosure) {
        self.deeper(|v| syn::visit::visit_expr_closure(v, i));
    }
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// True for `+=` and the other compound assignments.
pub(crate) fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// True when evaluating `e` has no effect and cannot fault: literals, names, arithmetic,
/// comparisons and casts of those. The right side of `&&`/`||` is then evaluated without a
/// branch (integer division by zero is defined, D5, so it cannot fault either).
pub(crate) fn is_pure(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Path(_) => true,
        Expr::Paren(p) => is_pure(&p.expr),
        Expr::Group(g) => is_pure(&g.expr),
        Expr::Cast(c) => is_pure(&c.expr),
        Expr::Unary(u) => !matches!(u.op, UnOp::Deref(_)) && is_pure(&u.expr),
        Expr::Binary(b) => !is_compound(&b.op) && is_pure(&b.left) && is_pure(&b.right),
        _ => false,
    }
}

/// `for i in a..b`: the bounds of a device loop.
pub(crate) fn device_range(f: &ExprForLoop) -> Option<(&Expr, &Expr)> {
    match &*f.expr {
        Expr::Range(r) if matches!(r.limits, RangeLimits::HalfOpen(_)) => match (&r.start, &r.end) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        },
        _ => None,
    }
}

/// `for i in range(n)` / `range(a, b)` (or `qd::range`): the parallel loop's call.
pub(crate) fn parallel_range(f: &ExprForLoop) -> Option<&ExprCall> {
    match &*f.expr {
        Expr::Call(c) if is_path(&c.func, "range") => Some(c),
        _ => None,
    }
}

/// True when `e` is the path `name` or `qd::name`.
pub(crate) fn is_path(e: &Expr, name: &str) -> bool {
    let Expr::Path(p) = e else { return false };
    if p.qself.is_some() {
        return false;
    }
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [n] => n == name,
        [q, n] => q == "qd" && n == name,
        _ => false,
    }
}

/// `qd::loop_config(block_dim = N)` as a statement: the `N`.
pub(crate) fn loop_config(s: &Stmt) -> Option<Result<&Expr, &Expr>> {
    let Stmt::Expr(Expr::Call(c), _) = s else { return None };
    if !is_path(&c.func, "loop_config") {
        return None;
    }
    let arg = match c.args.first() {
        Some(Expr::Assign(a))
            if c.args.len() == 1 && matches!(&*a.left, Expr::Path(p) if p.path.is_ident("block_dim")) =>
        {
            Ok(&*a.right)
        }
        _ => Err(&*c.func),
    };
    Some(arg)
}
