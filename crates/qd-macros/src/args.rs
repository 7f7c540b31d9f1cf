//! The arguments of `#[qd::kernel(...)]`: `block_dim = expr`, `name = expr`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Token};

/// `#[qd::kernel(block_dim = 64, name = format!(...))]`.
#[derive(Default)]
pub(crate) struct KernelArgs {
    /// Threads per block (evaluated where the kernel is made: compile-time parameters are in scope).
    pub(crate) block_dim: Option<Expr>,
    /// The kernel's name (anything `ToString`); the function's name by default.
    pub(crate) name: Option<Expr>,
}

struct Arg {
    key: Ident,
    value: Expr,
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        Ok(Arg { key, value })
    }
}

impl KernelArgs {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<KernelArgs> {
        let list = Punctuated::<Arg, Token![,]>::parse_terminated.parse2(tokens)?;
        let mut args = KernelArgs::default();
        for arg in list {
            let slot = match arg.key.to_string().as_str() {
                "block_dim" => &mut args.block_dim,
                "name" => &mut args.name,
                other => {
                    let message =
                        format!("unknown #[qd::kernel] argument `{other}`: expected `block_dim = N` or `name = ...`");
                    return Err(syn::Error::new(arg.key.span(), message));
                }
            };
            if slot.is_some() {
                return Err(syn::Error::new(arg.key.span(), format!("`{}` is given twice", arg.key)));
            }
            *slot = Some(arg.value);
        }
        Ok(args)
    }
}
