//! `#[qd::kernel]` and `#[qd::func]`: kernels in plain Rust syntax (D24, D25).
//!
//! The macros rewrite ordinary Rust into the calls of qd's tracing builder (`qd::trace`, through
//! `qd::lang`); they never see types, so whatever depends on whether a value is known while
//! tracing (a plain Rust value) or only on the device (`Val<T>`) is left to traits in `qd::lang`.
//! Use them through `qd` (`#[qd::kernel]`), whose documentation describes the language.

mod args;
mod expr;
mod lower;
mod scan;
mod sig;
mod stmt;

use proc_macro::TokenStream;

/// A kernel written in Rust syntax; see the `qd` crate's documentation of `kernel`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = match args::KernelArgs::parse(attr.into()) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error().into(),
    };
    let item = syn::parse_macro_input!(item as syn::ItemFn);
    sig::kernel(args, item).unwrap_or_else(|e| e.to_compile_error()).into()
}

/// A device function, inlined where it is called; see the `qd` crate's documentation of `func`.
#[proc_macro_attribute]
pub fn func(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr: proc_macro2::TokenStream = attr.into();
        return syn::Error::new_spanned(attr, "#[qd::func] takes no arguments").to_compile_error().into();
    }
    let item = syn::parse_macro_input!(item as syn::ItemFn);
    sig::func(item).unwrap_or_else(|e| e.to_compile_error()).into()
}
