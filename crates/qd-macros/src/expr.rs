//! Expressions: operators, indexing, casts, `if`, loops, `break`/`continue`/`return`, closures.
//!
//! Every call the expansion makes carries the span of the user's tokens (`quote_spanned!`), so
//! `#[track_caller]` in the builder records the user's line for trace and emulator errors.

use crate::lower::{hidden, Binding, Loop, Lower, Mode};
use crate::scan;
use crate::stmt::Lowered;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ExprIf, Pat, UnOp};

impl Lower {
    /// Lowers one expression.
    pub(crate) fn expr(&mut self, e: &Expr) -> TokenStream {
        let span = e.span();
        match e {
            Expr::Lit(_) | Expr::Macro(_) | Expr::Verbatim(_) => e.to_token_stream(),
            Expr::Path(p) => match p.path.get_ident() {
                Some(name) if p.qself.is_none() && self.lookup(name) == Binding::Var => {
                    quote_spanned!(name.span()=> #name.get())
                }
                _ => e.to_token_stream(),
            },
            Expr::Paren(p) => {
                let inner = self.expr(&p.expr);
                quote_spanned!(span=> (#inner))
            }
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => {
                let inner = self.expr(&u.expr);
                let op = &u.op;
                quote!(#op (#inner))
            }
            Expr::Cast(c) => {
                let ty = &c.ty;
                let inner = self.expr(&c.expr);
                if is_literal(&c.expr) {
                    quote!((#inner) as #ty)
                } else {
                    let at = c.as_token.span;
                    quote_spanned!(at=> ::qd::lang::cast::<#ty, _>(#inner))
                }
            }
            Expr::Index(i) => {
                let (a, k) = (self.expr(&i.expr), self.expr(&i.index));
                quote_spanned!(span=> ::qd::lang::index(&(#a), #k))
            }
            Expr::Reference(r) => match &*r.expr {
                Expr::Index(i) => {
                    let (a, k) = (self.expr(&i.expr), self.expr(&i.index));
                    quote_spanned!(span=> ::qd::lang::place(&(#a), #k))
                }
                Expr::Path(p) if p.path.get_ident().is_some_and(|n| self.lookup(n) != Binding::Plain) => self.error(
                    span,
                    "a device variable has no address: pass its value, or keep the value in an array \
                     and take `&a[i]`",
                ),
                inner => {
                    let inner = self.expr(inner);
                    let (and, mutability) = (&r.and_token, &r.mutability);
                    quote!(#and #mutability #inner)
                }
            },
            Expr::MethodCall(m) => {
                let receiver = self.expr(&m.receiver);
                let args = self.exprs(m.args.iter());
                let (method, turbofish) = (&m.method, &m.turbofish);
                quote_spanned!(method.span()=> (#receiver).#method #turbofish (#(#args),*))
            }
            Expr::Call(c) => {
                let func = self.expr(&c.func);
                let args = self.exprs(c.args.iter());
                quote_spanned!(span=> #func(#(#args),*))
            }
            Expr::Tuple(t) => {
                let elems = self.exprs(t.elems.iter());
                quote_spanned!(span=> (#(#elems,)*))
            }
            Expr::Array(a) => {
                let elems = self.exprs(a.elems.iter());
                quote_spanned!(span=> [#(#elems),*])
            }
            Expr::Repeat(r) => {
                let (v, n) = (self.expr(&r.expr), &r.len);
                quote_spanned!(span=> [#v; #n])
            }
            Expr::Field(f) => {
                let base = self.expr(&f.base);
                let member = &f.member;
                quote!((#base).#member)
            }
            Expr::Struct(s) => {
                let fields: Vec<TokenStream> = s
                    .fields
                    .iter()
                    .map(|f| {
                        let member = &f.member;
                        let v = self.expr(&f.expr);
                        quote!(#member: #v)
                    })
                    .collect();
                let rest = s.rest.as_ref().map(|r| {
                    let r = self.expr(r);
                    quote!(..#r)
                });
                let (qself_path, path) = (s.qself.is_some(), &s.path);
                if qself_path {
                    return self.error(span, "qualified struct paths are not supported in kernel code");
                }
                quote_spanned!(span=> #path { #(#fields,)* #rest })
            }
            Expr::Range(r) => {
                let start = r.start.as_ref().map(|s| self.expr(s));
                let end = r.end.as_ref().map(|s| self.expr(s));
                let limits = &r.limits;
                quote!(#start #limits #end)
            }
            Expr::Block(b) => {
                if b.label.is_some() {
                    return self.error(span, "labelled blocks are not supported in kernel code");
                }
                self.stmts(&b.block.stmts, false).block()
            }
            Expr::Assign(a) => self.assign(&a.left, &a.right, a.eq_token.span),
            Expr::If(i) => self.if_(i, false),
            Expr::Match(m) => self.match_(m),
            Expr::While(w) => self.while_(w),
            Expr::Loop(l) => {
                if l.label.is_some() {
                    return self.error(
                        span,
                        "loop labels are not supported in kernel code: device loops leave the innermost loop",
                    );
                }
                let body = self.in_closure(|l2| l2.in_loop(Loop::Device, |l3| l3.stmts(&l.body.stmts, false).block()));
                let at = l.loop_token.span;
                quote_spanned!(at=> ::qd::lang::loop_(|| #body))
            }
            Expr::ForLoop(f) => self.for_(f),
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return self.error(span, "`break` with a label or a value is not supported in kernel code: assign the value to a `let mut` before breaking");
                }
                self.jump(b.break_token.span, true)
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    return self.error(span, "`continue` with a label is not supported in kernel code");
                }
                self.jump(c.continue_token.span, false)
            }
            Expr::Return(r) => self.return_(r),
            Expr::Closure(c) => self.closure(c),
            Expr::Let(_) => self.error(span, "`let` expressions are only supported as `if let` in kernel code"),
            Expr::Try(_) => self.error(span, "`?` is not supported in kernel code: kernels return nothing"),
            Expr::Unsafe(_) => self.error(span, "`unsafe` blocks are not supported in kernel code"),
            Expr::Async(_) | Expr::Await(_) => self.error(span, "`async`/`.await` are not supported in kernel code"),
            _ => self.error(span, "this expression is not supported in kernel code"),
        }
    }

    fn exprs<'a>(&mut self, es: impl Iterator<Item = &'a Expr>) -> Vec<TokenStream> {
        es.map(|e| self.expr(e)).collect()
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> TokenStream {
        let op = &b.op;
        let op_span = op.span();
        let compare = |name: &str| Some(syn::Ident::new(name, op_span));
        let cmp = match op {
            BinOp::Eq(_) => compare("eq"),
            BinOp::Ne(_) => compare("ne"),
            BinOp::Lt(_) => compare("lt"),
            BinOp::Le(_) => compare("le"),
            BinOp::Gt(_) => compare("gt"),
            BinOp::Ge(_) => compare("ge"),
            _ => None,
        };
        if let Some(f) = cmp {
            let (l, r) = (self.expr(&b.left), self.expr(&b.right));
            return quote_spanned!(op_span=> ::qd::lang::#f(#l, #r));
        }
        if let BinOp::And(_) | BinOp::Or(_) = op {
            let and = matches!(op, BinOp::And(_));
            let l = self.expr(&b.left);
            if scan::is_pure(&b.right) {
                let r = self.expr(&b.right);
                let f = syn::Ident::new(if and { "and_pure" } else { "or_pure" }, op_span);
                return quote_spanned!(op_span=> ::qd::lang::#f(#l, #r));
            }
            let r = self.in_closure(|l2| l2.expr(&b.right));
            let f = syn::Ident::new(if and { "and" } else { "or" }, op_span);
            return quote_spanned!(op_span=> ::qd::lang::#f(#l, || #r));
        }
        if scan::is_compound(op) {
            return self.compound(b);
        }
        let (l, r) = (self.expr(&b.left), self.expr(&b.right));
        quote!((#l) #op (#r))
    }

    /// `x op= v`.
    fn compound(&mut self, b: &syn::ExprBinary) -> TokenStream {
        let op = simple_op(&b.op);
        let r = self.expr(&b.right);
        match &*b.left {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().expect("an ident");
                match self.lookup(name) {
                    Binding::Var => quote_spanned!(name.span()=> #name.set(#name.get() #op (#r))),
                    Binding::Rebind => quote_spanned!(name.span()=> #name = ::qd::lang::dev(#name #op (#r))),
                    Binding::Plain => {
                        let op = &b.op;
                        quote!(#name #op #r)
                    }
                }
            }
            Expr::Index(i) => {
                let (a, k) = (self.expr(&i.expr), self.expr(&i.index));
                let (ha, hi) = (hidden("__qd_a"), hidden("__qd_i"));
                let span = i.span();
                quote_spanned!(span=> {
                    let #ha = &(#a);
                    let #hi = #k;
                    ::qd::lang::store(#ha, #hi, ::qd::lang::index(#ha, #hi) #op (#r))
                })
            }
            other => {
                let l = self.expr(other);
                let op = &b.op;
                quote!(#l #op #r)
            }
        }
    }

    /// `left = right`.
    fn assign(&mut self, left: &Expr, right: &Expr, span: Span) -> TokenStream {
        let r = self.expr(right);
        self.assign_lowered(left, r, span)
    }

    fn assign_lowered(&mut self, left: &Expr, r: TokenStream, span: Span) -> TokenStream {
        match left {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().expect("an ident");
                match self.lookup(name) {
                    Binding::Var => quote_spanned!(span=> #name.set(#r)),
                    Binding::Rebind => quote_spanned!(span=> #name = ::qd::lang::dev(#r)),
                    Binding::Plain => quote_spanned!(span=> #name = #r),
                }
            }
            Expr::Index(i) => {
                let (a, k) = (self.expr(&i.expr), self.expr(&i.index));
                quote_spanned!(span=> ::qd::lang::store(&(#a), #k, #r))
            }
            Expr::Tuple(t) => {
                // `(k, v) = f(..)`: take the value apart, then assign each part.
                let temps: Vec<syn::Ident> = (0..t.elems.len()).map(|j| hidden(&format!("__qd_q{j}"))).collect();
                let mut parts = TokenStream::new();
                for (elem, temp) in t.elems.iter().zip(&temps) {
                    let part = self.assign_lowered(elem, quote!(#temp), span);
                    parts.extend(quote!(#part;));
                }
                quote_spanned!(span=> { let (#(#temps,)*) = #r; #parts })
            }
            Expr::Infer(_) => quote_spanned!(span=> let _ = #r),
            Expr::Paren(p) => self.assign_lowered(&p.expr, r, span),
            other => {
                let l = self.expr(other);
                quote_spanned!(span=> #l = #r)
            }
        }
    }

    /// `if`: `qd::lang::branch` with the branches as closures; `if let` stays Rust's.
    pub(crate) fn if_(&mut self, i: &ExprIf, stmt: bool) -> TokenStream {
        let span = i.if_token.span;
        if let Expr::Let(l) = &*i.cond {
            let scrutinee = self.expr(&l.expr);
            let pat = &l.pat;
            self.push_scope();
            self.bind_pattern(pat);
            let then = self.stmts(&i.then_branch.stmts, false).block();
            self.pop_scope();
            let otherwise = i.else_branch.as_ref().map(|(_, e)| match &**e {
                Expr::If(inner) => {
                    let inner = self.if_(inner, stmt);
                    quote!(else { #inner })
                }
                e => {
                    let e = self.expr(e);
                    quote!(else #e)
                }
            });
            return quote_spanned!(span=> if let #pat = #scrutinee #then #otherwise);
        }
        let cond = self.expr(&i.cond);
        let (then, then_flow) = self.in_branch(|l| l.stmts(&i.then_branch.stmts, false));
        let (otherwise, else_flow) = self.in_branch(|l| match i.else_branch.as_ref().map(|(_, e)| &**e) {
            None => Lowered { stmts: TokenStream::new(), tail: None },
            Some(Expr::If(inner)) if stmt => {
                let inner = l.if_(inner, true);
                Lowered { stmts: quote!(#inner;), tail: None }
            }
            Some(Expr::If(inner)) => Lowered { stmts: TokenStream::new(), tail: Some(l.if_(inner, false)) },
            Some(Expr::Block(b)) => l.stmts(&b.block.stmts, false),
            Some(other) => {
                let e = l.expr(other);
                Lowered { stmts: TokenStream::new(), tail: Some(e) }
            }
        });
        if !(then_flow || else_flow) {
            let (then, otherwise) = (then.block(), otherwise.block());
            return quote_spanned!(span=> ::qd::lang::branch(#cond, || #then, || #otherwise));
        }
        if !stmt {
            return self.error(span, "an `if` that leaves a `qd::unroll` loop cannot be used as a value");
        }
        let (then, otherwise) = (then.flow_block(), otherwise.flow_block());
        let flow = hidden("__qd_flow");
        let branch = quote_spanned!(span=> let #flow = ::qd::lang::branch(#cond, || #then, || #otherwise););
        let host_here = self.loops.last() == Some(&Loop::Host(self.depth));
        if host_here {
            quote_spanned!(span=> {
                #branch
                match #flow {
                    ::qd::lang::Flow::Break => break,
                    ::qd::lang::Flow::Continue => continue,
                    ::qd::lang::Flow::Normal => {}
                }
            })
        } else {
            if let Some(f) = self.flow_used.get_mut(self.depth) {
                *f = true;
            }
            quote_spanned!(span=> {
                #branch
                if #flow != ::qd::lang::Flow::Normal {
                    return #flow;
                }
            })
        }
    }

    /// `match` on compile-time values: Rust's own, with the arms lowered.
    fn match_(&mut self, m: &syn::ExprMatch) -> TokenStream {
        let scrutinee = self.expr(&m.expr);
        let mut arms = TokenStream::new();
        for arm in &m.arms {
            self.push_scope();
            self.bind_pattern(&arm.pat);
            let pat = match &arm.pat {
                Pat::Guard(g) => {
                    let (p, guard) = (&g.pat, self.expr(&g.guard));
                    quote!(#p if #guard)
                }
                p => quote!(#p),
            };
            let body = self.expr(&arm.body);
            self.pop_scope();
            arms.extend(quote!(#pat => #body,));
        }
        let at = m.match_token.span;
        quote_spanned!(at=> match #scrutinee { #arms })
    }

    fn while_(&mut self, w: &syn::ExprWhile) -> TokenStream {
        let span = w.while_token.span;
        if w.label.is_some() {
            return self
                .error(span, "loop labels are not supported in kernel code: device loops leave the innermost loop");
        }
        if let Expr::Let(_) = &*w.cond {
            return self
                .error(span, "`while let` is not supported in kernel code: write `loop` with an `if` and `break`");
        }
        let cond = self.in_closure(|l| l.expr(&w.cond));
        let body = self.in_closure(|l| l.in_loop(Loop::Device, |l2| l2.stmts(&w.body.stmts, false).block()));
        quote_spanned!(span=> ::qd::lang::while_(|| #cond, || #body))
    }

    fn for_(&mut self, f: &syn::ExprForLoop) -> TokenStream {
        let span = f.for_token.span;
        if f.label.is_some() {
            return self.error(span, "loop labels are not supported in kernel code");
        }
        if scan::parallel_range(f).is_some() {
            let message = "the parallel loop `for i in range(..)` belongs at the top level of a #[qd::kernel] body \
                           (one per kernel); for a loop in each thread write `for i in a..b`";
            return self.error(span, message);
        }
        if let Expr::Range(r) = &*f.expr {
            if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                return self.error(r.span(), "device loops take half-open ranges: write `a..b + 1`");
            }
        }
        if let Some((begin, end)) = scan::device_range(f) {
            let (begin, end) = (self.expr(begin), self.expr(end));
            let pat = match &*f.pat {
                Pat::Ident(p) if p.mutability.is_none() && p.subpat.is_none() => p.ident.to_token_stream(),
                Pat::Wild(w) => w.to_token_stream(),
                other => return self.error(other.span(), "a device loop's index is a name: `for i in a..b`"),
            };
            let body = self.in_closure(|l| {
                l.bind_pattern(&f.pat);
                l.in_loop(Loop::Device, |l2| l2.stmts(&f.body.stmts, false).block())
            });
            return quote_spanned!(span=> ::qd::lang::for_range(#begin, #end, |#pat| #body));
        }
        if let Expr::Range(r) = &*f.expr {
            return self.error(r.span(), "a device loop needs both bounds: `for i in a..b`");
        }
        // Any other iterator runs while tracing: the body is traced once per item.
        let items = self.expr(&f.expr);
        let pat = &f.pat;
        let depth = self.depth;
        self.push_scope();
        self.bind_pattern(pat);
        let body = self.in_loop(Loop::Host(depth), |l| l.stmts(&f.body.stmts, false).block());
        self.pop_scope();
        quote_spanned!(span=> for #pat in #items #body)
    }

    /// `break` (`is_break`) or `continue`.
    fn jump(&mut self, span: Span, is_break: bool) -> TokenStream {
        let word = if is_break { "break" } else { "continue" };
        match self.loops.last().copied() {
            None => self.error(span, format!("`{word}` outside of a loop")),
            Some(Loop::Parallel) => self.error(
                span,
                format!(
                    "`{word}` in the parallel loop is not supported: each index runs once in its own thread; \
                     put the rest of the body under an `if` instead"
                ),
            ),
            Some(Loop::Device) => {
                let f = syn::Ident::new(if is_break { "break_" } else { "continue_" }, span);
                quote_spanned!(span=> ::qd::lang::#f())
            }
            Some(Loop::Host(d)) if d == self.depth => {
                if is_break {
                    quote_spanned!(span=> break)
                } else {
                    quote_spanned!(span=> continue)
                }
            }
            Some(Loop::Host(d)) => {
                self.mark_flow(d);
                let v = syn::Ident::new(if is_break { "Break" } else { "Continue" }, span);
                quote_spanned!(span=> return ::qd::lang::Flow::#v)
            }
        }
    }

    fn return_(&mut self, r: &syn::ExprReturn) -> TokenStream {
        let span = r.return_token.span;
        match self.mode.clone() {
            Mode::Closure => {
                let v = r.expr.as_ref().map(|e| self.expr(e));
                quote_spanned!(span=> return #v)
            }
            Mode::Kernel => {
                if r.expr.is_some() {
                    return self.error(span, "a kernel returns nothing: write its results into arrays");
                }
                if self.depth == 0 {
                    quote_spanned!(span=> { ::qd::lang::return_(); return; })
                } else {
                    quote_spanned!(span=> ::qd::lang::return_())
                }
            }
            Mode::Func { ret } => {
                if self.loops.contains(&Loop::Device) {
                    return self.error(
                        span,
                        "a `return` inside a device loop is not supported (D2): break out of the loop first",
                    );
                }
                let v = match &r.expr {
                    Some(e) => {
                        let e = self.expr(e);
                        quote_spanned!(span=> ::qd::lang::to_dev::<#ret, _>(#e))
                    }
                    None => quote!(()),
                };
                if self.depth == 0 {
                    quote_spanned!(span=> return #v)
                } else {
                    self.early_return = true;
                    let slot = hidden("__qd_ret");
                    quote_spanned!(span=> #slot.early(#v))
                }
            }
        }
    }

    /// A closure in kernel code (an operator for a reduction, say): its body is kernel code too.
    fn closure(&mut self, c: &syn::ExprClosure) -> TokenStream {
        let saved_mode = std::mem::replace(&mut self.mode, Mode::Closure);
        let saved_loops = std::mem::take(&mut self.loops);
        let body = self.in_closure(|l| {
            for p in &c.inputs {
                l.bind_pattern(p);
            }
            l.expr(&c.body)
        });
        self.loops = saved_loops;
        self.mode = saved_mode;
        let (capture, inputs, output) = (&c.capture, &c.inputs, &c.output);
        quote_spanned!(c.span()=> #capture |#inputs| #output #body)
    }
}

/// `+` for `+=` (with its span), and so on.
fn simple_op(op: &BinOp) -> TokenStream {
    let span = op.span();
    match op {
        BinOp::AddAssign(_) => quote_spanned!(span=> +),
        BinOp::SubAssign(_) => quote_spanned!(span=> -),
        BinOp::MulAssign(_) => quote_spanned!(span=> *),
        BinOp::DivAssign(_) => quote_spanned!(span=> /),
        BinOp::RemAssign(_) => quote_spanned!(span=> %),
        BinOp::BitXorAssign(_) => quote_spanned!(span=> ^),
        BinOp::BitAndAssign(_) => quote_spanned!(span=> &),
        BinOp::BitOrAssign(_) => quote_spanned!(span=> |),
        BinOp::ShlAssign(_) => quote_spanned!(span=> <<),
        BinOp::ShrAssign(_) => quote_spanned!(span=> >>),
        other => other.to_token_stream(),
    }
}

/// A literal, possibly negated: `as` on it stays Rust's cast (its type is not known yet).
fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Unary(u) => matches!(u.op, UnOp::Neg(_)) && is_literal(&u.expr),
        Expr::Paren(p) => is_literal(&p.expr),
        _ => false,
    }
}
