//! Statements and blocks: `let` (device variables or rebindings), expression statements, and the
//! parallel loop at the top of a range kernel.

use crate::lower::{hidden, Binding, Loop, Lower};
use crate::scan;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Local, Pat, Stmt};

/// A lowered block: its statements and the value of its last expression, if any.
pub(crate) struct Lowered {
    pub(crate) stmts: TokenStream,
    pub(crate) tail: Option<TokenStream>,
}

impl Lowered {
    /// `{ stmts tail }`.
    pub(crate) fn block(self) -> TokenStream {
        let Lowered { stmts, tail } = self;
        quote!({ #stmts #tail })
    }

    /// The block as the body of a branch that hands a `Flow` back: ends with `Flow::Normal`.
    pub(crate) fn flow_block(self) -> TokenStream {
        let Lowered { stmts, tail } = self;
        let tail = tail.map(|t| quote!(#t;));
        quote!({ #stmts #tail ::qd::lang::Flow::Normal })
    }
}

impl Lower {
    /// Lowers the statements of a block in a new scope. `root` marks the top level of a kernel
    /// body, where the parallel loop and `loop_config` may stand.
    pub(crate) fn stmts(&mut self, stmts: &[Stmt], root: bool) -> Lowered {
        self.push_scope();
        let mut out = TokenStream::new();
        let mut tail = None;
        for (k, s) in stmts.iter().enumerate() {
            let last = k + 1 == stmts.len();
            match s {
                Stmt::Local(l) => out.extend(self.local(l, &stmts[k + 1..])),
                Stmt::Item(item) => out.extend(quote!(#item)),
                Stmt::Macro(m) => out.extend(quote!(#m)),
                Stmt::Expr(e, semi) => {
                    if let Some(config) = scan::loop_config(s) {
                        match (root, config) {
                            (true, Ok(_)) => {} // read by the kernel's signature
                            (true, Err(at)) => {
                                out.extend(self.error(at.span(), "write `qd::loop_config(block_dim = N);`"));
                            }
                            (false, _) => {
                                let message = "`loop_config` belongs at the top level of a #[qd::kernel] body, before \
                                               the parallel loop";
                                out.extend(self.error(e.span(), message));
                            }
                        }
                        continue;
                    }
                    if let Expr::ForLoop(f) = e {
                        if let Some(call) = scan::parallel_range(f) {
                            out.extend(self.parallel_loop(f, call, root));
                            continue;
                        }
                    }
                    let lowered = self.expr_stmt(e);
                    match (semi, last) {
                        (Some(semi), _) => out.extend(quote!(#lowered #semi)),
                        (None, true) => tail = Some(lowered),
                        (None, false) => out.extend(quote!(#lowered;)),
                    }
                }
            }
        }
        self.pop_scope();
        Lowered { stmts: out, tail }
    }

    /// `for i in range(n) { .. }`: the kernel's parallel loop (`KernelBuilder::parallel_for`).
    fn parallel_loop(&mut self, f: &syn::ExprForLoop, call: &syn::ExprCall, root: bool) -> TokenStream {
        let span = f.for_token.span;
        if !root || !matches!(self.mode, crate::lower::Mode::Kernel) {
            let message = "the parallel loop `for i in range(..)` belongs at the top level of a #[qd::kernel] body \
                           (one per kernel); for a loop in each thread write `for i in a..b`";
            return self.error(span, message);
        }
        let args: Vec<&Expr> = call.args.iter().collect();
        let (begin, end) = match args.as_slice() {
            [n] => (quote_spanned!(n.span()=> 0i32), self.expr(n)),
            [a, b] => (self.expr(a), self.expr(b)),
            _ => return self.error(call.span(), "write `range(n)` or `range(begin, end)`"),
        };
        let Pat::Ident(var) = &*f.pat else {
            return self.error(f.pat.span(), "the parallel loop's index is a name: `for i in range(n)`");
        };
        let var = &var.ident;
        let body = self.in_closure(|l| {
            l.bind(var, Binding::Plain);
            l.in_loop(Loop::Parallel, |l| l.stmts(&f.body.stmts, false).block())
        });
        let k = hidden("__qd_k");
        quote_spanned!(span=> #k.parallel_for(#begin, #end, |#var: ::qd::lang::Val<i32>| #body);)
    }

    /// A `let`: device variables for `let mut`, plain bindings otherwise.
    fn local(&mut self, l: &Local, rest: &[Stmt]) -> TokenStream {
        let comptime = l.attrs.iter().any(|a| a.path().is_ident("comptime"));
        let attrs: Vec<_> = l.attrs.iter().filter(|a| !a.path().is_ident("comptime")).collect();
        let span = l.let_token.span;
        let Some(init) = &l.init else {
            return self.error(span, "a `let` in kernel code needs a value: `let x = 0;`");
        };
        if init.diverge.is_some() {
            return self.error(span, "`let ... else` is not supported in kernel code; use `match`");
        }
        let value = self.expr(&init.expr);
        if comptime {
            // A compile-time binding: Rust's own `let`, assignments stay Rust's.
            let pat = &l.pat;
            self.bind_pattern(pat);
            return quote_spanned!(span=> #(#attrs)* let #pat = #value;);
        }
        let (pat, ty) = match &l.pat {
            Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            p => (p, None),
        };
        match pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                if p.mutability.is_some() {
                    self.let_mut(&p.ident, ty, value, rest, span)
                } else {
                    self.bind(&p.ident, Binding::Plain);
                    let name = &p.ident;
                    match ty.map(|t| (self.dev_type(t), t)) {
                        Some((Some(dev), _)) => quote_spanned!(span=> let #name: #dev = ::qd::lang::to_dev(#value);),
                        Some((None, t)) => quote_spanned!(span=> let #name: #t = #value;),
                        None => quote_spanned!(span=> let #name = #value;),
                    }
                }
            }
            Pat::Tuple(t) if ty.is_none() && t.elems.iter().any(has_mut) => {
                // `let (mut k, mut v) = ..`: take the tuple apart, then one `let` per name.
                let mut temps = Vec::new();
                let mut lets = TokenStream::new();
                for (j, elem) in t.elems.iter().enumerate() {
                    let temp = hidden(&format!("__qd_t{j}"));
                    match elem {
                        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                            let v = quote!(#temp);
                            if p.mutability.is_some() {
                                lets.extend(self.let_mut(&p.ident, None, v, rest, span));
                            } else {
                                self.bind(&p.ident, Binding::Plain);
                                let name = &p.ident;
                                lets.extend(quote_spanned!(span=> let #name = #v;));
                            }
                        }
                        Pat::Wild(_) => {}
                        other => return self.error(other.span(), "write a name or `_` here"),
                    }
                    temps.push(temp);
                }
                quote_spanned!(span=> let (#(#temps,)*) = #value; #lets)
            }
            other => {
                if has_mut(other) {
                    return self
                        .error(other.span(), "`mut` in this pattern: bind the value first, then `let mut x = ..`");
                }
                self.bind_pattern(other);
                let pat = &l.pat;
                quote_spanned!(span=> #(#attrs)* let #pat = #value;)
            }
        }
    }

    /// `let mut name = value`: a device local when it is assigned under device control flow,
    /// otherwise a Rust rebinding of device values (no local, the same IR as the builder form).
    /// `ty` is the declared type, if any.
    fn let_mut(
        &mut self,
        name: &syn::Ident,
        ty: Option<&syn::Type>,
        value: TokenStream,
        rest: &[Stmt],
        span: proc_macro2::Span,
    ) -> TokenStream {
        let scalar = ty.filter(|t| self.dev_type(t).is_some());
        if scan::assigned_under_closure(rest, &name.to_string()) {
            self.bind(name, Binding::Var);
            let typed = scalar.map(|t| quote!(::<#t>));
            quote_spanned!(span=> let #name = ::qd::lang::var #typed (#value);)
        } else {
            self.bind(name, Binding::Rebind);
            let typed = match (scalar, ty) {
                (Some(t), _) => Some(quote!(: ::qd::lang::Val<#t>)),
                (None, Some(t)) => Some(quote!(: #t)),
                (None, None) => None,
            };
            quote_spanned!(span=> #[allow(unused_mut)] let mut #name #typed = ::qd::lang::dev(#value);)
        }
    }

    /// Records the names a pattern binds as plain bindings.
    pub(crate) fn bind_pattern(&mut self, p: &Pat) {
        let mut names = Vec::new();
        pattern_names(p, &mut names);
        for n in names {
            self.bind(&n, Binding::Plain);
        }
    }

    /// An expression in statement position.
    fn expr_stmt(&mut self, e: &Expr) -> TokenStream {
        match e {
            Expr::If(i) => self.if_(i, true),
            _ => self.expr(e),
        }
    }
}

fn has_mut(p: &Pat) -> bool {
    match p {
        Pat::Ident(i) => i.mutability.is_some() || i.subpat.as_ref().is_some_and(|s| has_mut(&s.1)),
        Pat::Tuple(t) => t.elems.iter().any(has_mut),
        Pat::TupleStruct(t) => t.elems.iter().any(has_mut),
        Pat::Struct(s) => s.fields.iter().any(|f| has_mut(&f.pat)),
        Pat::Type(t) => has_mut(&t.pat),
        Pat::Paren(p) => has_mut(&p.pat),
        Pat::Reference(r) => has_mut(&r.pat),
        Pat::Slice(s) => s.elems.iter().any(has_mut),
        Pat::Or(o) => o.cases.iter().any(has_mut),
        _ => false,
    }
}

/// The names a pattern binds.
pub(crate) fn pattern_names(p: &Pat, out: &mut Vec<syn::Ident>) {
    match p {
        Pat::Ident(i) => {
            out.push(i.ident.clone());
            if let Some((_, s)) = &i.subpat {
                pattern_names(s, out);
            }
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|p| pattern_names(p, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|p| pattern_names(p, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| pattern_names(&f.pat, out)),
        Pat::Type(t) => pattern_names(&t.pat, out),
        Pat::Paren(p) => pattern_names(&p.pat, out),
        Pat::Reference(r) => pattern_names(&r.pat, out),
        Pat::Slice(s) => s.elems.iter().for_each(|p| pattern_names(p, out)),
        Pat::Or(o) => o.cases.iter().take(1).for_each(|p| pattern_names(p, out)),
        Pat::Guard(g) => pattern_names(&g.pat, out),
        _ => {}
    }
}
