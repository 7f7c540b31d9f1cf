//! The lowering context: names in scope, the loops around the code being lowered, how many
//! closures deep it sits, and the first error.
//!
//! Bodies of device control flow (`if`, `while`, `loop`, `for i in a..b`, the parallel loop) become
//! closures passed to builder calls, so Rust's own `break`, `continue` and `return` cannot cross
//! them: a `break` of a device loop becomes the traced `break_()`, one of a trace-time loop
//! (`qd::unroll`) is handed back as a `qd::lang::Flow` through the closures in between.

use proc_macro2::{Span, TokenStream};
use std::collections::HashMap;
use syn::Ident;

/// What a name in kernel code stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A device variable (`qd::lang::Var`): reads are `.get()`, writes `.set(v)`.
    Var,
    /// A `let mut` holding a device value, only assigned where it was declared (outside device
    /// control flow): assignments rebind it, as Rust would, and no local is needed.
    Rebind,
    /// Anything else (immutable bindings, compile-time `#[comptime] let mut`): written as is.
    Plain,
}

/// A loop around the code being lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loop {
    /// A traced loop (`loop`, `while`, `for i in a..b`): `break_()` / `continue_()`.
    Device,
    /// A Rust loop run while tracing (`for x in qd::unroll(..)`), at this closure depth.
    Host(usize),
    /// The parallel loop of a range kernel: no `break` or `continue`.
    Parallel,
}

/// Kernel or device function: what `return` means.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// A kernel: `return` ends the thread (D2).
    Kernel,
    /// A `#[qd::func]` returning `ret` (already as a device type): `return v` gives the result.
    Func { ret: TokenStream },
    /// A closure written in kernel code: `return` is Rust's.
    Closure,
}

pub(crate) struct Lower {
    scopes: Vec<HashMap<String, Binding>>,
    pub(crate) loops: Vec<Loop>,
    /// Closures between the function body and the code being lowered.
    pub(crate) depth: usize,
    /// Per closure depth: a host `break`/`continue` (or an early return) was handed back from it.
    pub(crate) flow_used: Vec<bool>,
    pub(crate) mode: Mode,
    /// A `return` inside device control flow of a func: the body runs under `Returns::run`.
    pub(crate) early_return: bool,
    /// Names of the function's generic type parameters (scalars in signatures and `let` types).
    pub(crate) type_params: Vec<String>,
    error: Option<syn::Error>,
}

impl Lower {
    pub(crate) fn new(mode: Mode, type_params: Vec<String>) -> Lower {
        Lower {
            scopes: vec![HashMap::new()],
            loops: Vec::new(),
            depth: 0,
            flow_used: vec![false],
            mode,
            early_return: false,
            type_params,
            error: None,
        }
    }

    /// Records an error at `span` (all errors are reported together).
    pub(crate) fn error(&mut self, span: Span, message: impl std::fmt::Display) -> TokenStream {
        let e = syn::Error::new(span, message);
        match &mut self.error {
            Some(first) => first.combine(e),
            None => self.error = Some(e),
        }
        TokenStream::new()
    }

    pub(crate) fn finish(self, tokens: TokenStream) -> syn::Result<TokenStream> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(tokens),
        }
    }

    pub(crate) fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    pub(crate) fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    pub(crate) fn bind(&mut self, name: &Ident, binding: Binding) {
        self.scopes.last_mut().expect("a scope").insert(name.to_string(), binding);
    }

    pub(crate) fn lookup(&self, name: &Ident) -> Binding {
        let key = name.to_string();
        self.scopes.iter().rev().find_map(|s| s.get(&key).copied()).unwrap_or(Binding::Plain)
    }

    /// Runs `f` one closure deeper (the body of a device construct or a closure).
    pub(crate) fn in_closure<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.depth += 1;
        self.flow_used.push(false);
        self.push_scope();
        let r = f(self);
        self.pop_scope();
        self.flow_used.pop();
        self.depth -= 1;
        r
    }

    /// Runs `f` one closure deeper and says whether a host break/continue came out of it.
    pub(crate) fn in_branch<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> (R, bool) {
        self.depth += 1;
        self.flow_used.push(false);
        self.push_scope();
        let r = f(self);
        self.pop_scope();
        let used = self.flow_used.pop().unwrap_or(false);
        self.depth -= 1;
        (r, used)
    }

    /// Runs `f` inside a loop of kind `kind`.
    pub(crate) fn in_loop<R>(&mut self, kind: Loop, f: impl FnOnce(&mut Self) -> R) -> R {
        self.loops.push(kind);
        let r = f(self);
        self.loops.pop();
        r
    }

    /// Marks the closures from the current depth down to (excluding) `to` as handing a flow back.
    pub(crate) fn mark_flow(&mut self, to: usize) {
        for d in to + 1..=self.depth {
            if let Some(f) = self.flow_used.get_mut(d) {
                *f = true;
            }
        }
    }

    /// True when `name` is one of the generic type parameters or a qd scalar type.
    pub(crate) fn is_scalar_name(&self, name: &str) -> bool {
        SCALARS.contains(&name) || self.type_params.iter().any(|p| p == name)
    }
}

/// The scalar types of qd (as written in signatures and `let` types).
pub(crate) const SCALARS: &[&str] =
    &["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "F16", "BF16"];

/// A hygienic name for the expansion's own variables (never clashes with the user's).
pub(crate) fn hidden(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}
