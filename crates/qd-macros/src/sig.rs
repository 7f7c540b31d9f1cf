//! Signatures: a kernel becomes a function returning a typed `KernelFn` (its compile-time
//! parameters are that function's arguments, its run-time ones the launch tuple); a device
//! function keeps its shape with scalars as device values.

use crate::args::KernelArgs;
use crate::lower::{hidden, Lower, Mode};
use crate::scan;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, ItemFn, Pat, ReturnType, Stmt, Type};

/// The attribute that marks a compile-time parameter or `let`.
fn is_comptime(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("comptime"))
}

fn strip_comptime(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs.iter().filter(|a| !a.path().is_ident("comptime")).cloned().collect()
}

/// Refuses what neither a kernel nor a device function can be.
fn check_plain(item: &ItemFn, what: &str) -> syn::Result<()> {
    let s = &item.sig;
    let bad = if s.asyncness.is_some() {
        Some((s.asyncness.span(), "async"))
    } else if s.constness.is_some() {
        Some((s.constness.span(), "const"))
    } else if !matches!(s.safety, syn::Safety::Default) {
        Some((s.fn_token.span, "unsafe"))
    } else if s.abi.is_some() {
        Some((s.abi.span(), "extern"))
    } else if s.variadic.is_some() {
        Some((s.variadic.span(), "variadic"))
    } else {
        None
    };
    if let Some((span, word)) = bad {
        return Err(syn::Error::new(span, format!("a {what} cannot be `{word}`")));
    }
    if let Some(FnArg::Receiver(r)) = s.inputs.first() {
        return Err(syn::Error::new(r.span(), format!("a {what} takes no `self`: write a free function")));
    }
    if let Some(l) = s.generics.lifetimes().next() {
        return Err(syn::Error::new(l.span(), format!("a {what} takes no lifetime parameters")));
    }
    Ok(())
}

fn type_params(item: &ItemFn) -> Vec<String> {
    item.sig.generics.type_params().map(|t| t.ident.to_string()).collect()
}

/// `&[T]` or `&mut [T]`: the element type and whether it is `mut`.
fn slice_elem(ty: &Type) -> Option<(&Type, bool)> {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Slice(s) => Some((&*s.elem, r.mutability.is_some())),
            _ => None,
        },
        Type::Paren(p) => slice_elem(&p.elem),
        _ => None,
    }
}

/// The parameter's name (kernel and func parameters that change type must be plain names).
fn param_name(p: &syn::PatType) -> syn::Result<(&syn::Ident, bool)> {
    match &*p.pat {
        Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => Ok((&i.ident, i.mutability.is_some())),
        other => Err(syn::Error::new(other.span(), "write a name here: `a: &[f32]`")),
    }
}

impl Lower {
    /// The device form of a type written in kernel code: a scalar `T` is `Val<T>`, tuples of
    /// scalars are tuples of `Val`s; `None` for any other type (kept as written).
    pub(crate) fn dev_type(&self, ty: &Type) -> Option<TokenStream> {
        match ty {
            Type::Path(p) if p.qself.is_none() => {
                let ident = p.path.get_ident()?;
                self.is_scalar_name(&ident.to_string()).then(|| quote_spanned!(ty.span()=> ::qd::lang::Val<#ty>))
            }
            Type::Paren(p) => self.dev_type(&p.elem),
            Type::Tuple(t) if !t.elems.is_empty() => {
                let elems: Vec<Option<TokenStream>> = t.elems.iter().map(|e| self.dev_type(e)).collect();
                if elems.iter().all(Option::is_none) {
                    return None;
                }
                let elems = elems.into_iter().zip(&t.elems).map(|(d, e)| d.unwrap_or_else(|| e.to_token_stream()));
                Some(quote_spanned!(ty.span()=> (#(#elems,)*)))
            }
            _ => None,
        }
    }
}

/// `#[qd::kernel]`.
pub(crate) fn kernel(args: KernelArgs, item: ItemFn) -> syn::Result<TokenStream> {
    check_plain(&item, "kernel")?;
    if let ReturnType::Type(_, ty) = &item.sig.output {
        return Err(syn::Error::new(ty.span(), "a kernel returns nothing: write its results into arrays"));
    }
    let sig = &item.sig;
    let mut comptime = Vec::new(); // (pattern, type) of the constructor's arguments
    let mut markers = Vec::new();
    let mut decls = TokenStream::new();
    let mut prelude: Vec<Stmt> = Vec::new();
    let k = hidden("__qd_k");
    for arg in &sig.inputs {
        let FnArg::Typed(p) = arg else { continue };
        if is_comptime(&p.attrs) {
            comptime.push(p.clone());
            continue;
        }
        let (name, mutable) = param_name(p)?;
        let label = name.to_string();
        let span = p.span();
        match slice_elem(&p.ty) {
            Some((elem, m)) => {
                if mutable {
                    return Err(syn::Error::new(span, "an array parameter is not `mut`: its elements are"));
                }
                markers.push(if m {
                    quote_spanned!(span=> ::qd::lang::SliceMut<#elem>)
                } else {
                    quote_spanned!(span=> ::qd::lang::Slice<#elem>)
                });
                decls.extend(quote_spanned!(span=> let #name = #k.array::<#elem>(#label);));
            }
            None => {
                let ty = &p.ty;
                markers.push(quote_spanned!(span=> ::qd::lang::Value<#ty>));
                decls.extend(quote_spanned!(span=> let #name = #k.scalar::<#ty>(#label);));
                if mutable {
                    prelude.push(syn::parse_quote_spanned!(span=> let mut #name = #name;));
                }
            }
        }
    }

    // block_dim: the attribute's, or `qd::loop_config(block_dim = N)` at the top of the body.
    let mut block_dim = args.block_dim.map(|e| e.to_token_stream());
    for s in &item.block.stmts {
        if let Some(Ok(n)) = scan::loop_config(s) {
            if block_dim.is_some() {
                return Err(syn::Error::new(s.span(), "block_dim is given twice (attribute and loop_config)"));
            }
            block_dim = Some(n.to_token_stream());
        }
    }
    let range = item
        .block
        .stmts
        .iter()
        .any(|s| matches!(s, Stmt::Expr(syn::Expr::ForLoop(f), _) if scan::parallel_range(f).is_some()));
    let Some(block_dim) = block_dim else {
        let message = if range {
            "say how many threads a block has: `qd::loop_config(block_dim = N);` before the parallel loop, \
             or #[qd::kernel(block_dim = N)]"
        } else {
            "say how many threads a block has: #[qd::kernel(block_dim = N)]"
        };
        return Err(syn::Error::new(sig.ident.span(), message));
    };

    let mut lower = Lower::new(Mode::Kernel, type_params(&item));
    for p in &comptime {
        lower.bind_pattern(&p.pat);
    }
    let stmts: Vec<Stmt> = prelude.into_iter().chain(item.block.stmts.iter().cloned()).collect();
    let body = lower.stmts(&stmts, true);
    let body = {
        let (stmts, tail) = (body.stmts, body.tail);
        quote!(#stmts #tail;)
    };
    let body = lower.finish(body)?;

    let ident = &sig.ident;
    let name = match &args.name {
        Some(n) => n.to_token_stream(),
        None => ident.to_string().to_token_stream(),
    };
    let (ctor, launch) = if range { (quote!(range), quote!(Range)) } else { (quote!(explicit), quote!(Explicit)) };
    let clones = comptime.iter().map(|p| {
        let pat = &p.pat;
        let names = pattern_idents(pat);
        quote!(#(let #names = ::core::clone::Clone::clone(&#names);)*)
    });
    let (kname, kdim) = (hidden("__qd_name"), hidden("__qd_block_dim"));
    let make = quote! {{
        let #kname = ::std::string::ToString::to_string(&(#name));
        let #kdim: u32 = #block_dim;
        ::qd::lang::Kernel::#ctor(&#kname, #kdim, move |#k: &mut ::qd::lang::KernelBuilder| {
            #(#clones)*
            #decls
            #body
        })
    }};
    let params_ty = quote!((#(#markers,)*));
    let construct = if comptime.is_empty() {
        let generics = &sig.generics;
        let key_params: Vec<TokenStream> = generics
            .params
            .iter()
            .map(|g| match g {
                GenericParam::Type(t) => {
                    let id = &t.ident;
                    quote!(#id: ?::core::marker::Sized)
                }
                GenericParam::Const(c) => {
                    let (id, ty) = (&c.ident, &c.ty);
                    quote!(const #id: #ty)
                }
                GenericParam::Lifetime(l) => l.to_token_stream(),
            })
            .collect();
        let key_args: Vec<TokenStream> = generics
            .params
            .iter()
            .map(|g| match g {
                GenericParam::Type(t) => t.ident.to_token_stream(),
                GenericParam::Const(c) => c.ident.to_token_stream(),
                GenericParam::Lifetime(l) => l.lifetime.to_token_stream(),
            })
            .collect();
        let type_ids: Vec<&syn::Ident> = generics.type_params().map(|t| &t.ident).collect();
        let (cache, key) = (hidden("__QD_KERNELS"), format_ident!("__QdKey", span = proc_macro2::Span::mixed_site()));
        quote! {
            static #cache: ::qd::lang::KernelCache = ::qd::lang::KernelCache::new();
            #[allow(dead_code)]
            struct #key<#(#key_params),*>(::core::marker::PhantomData<(#(fn() -> *const #type_ids,)*)>);
            #cache.get(::core::any::TypeId::of::<#key<#(#key_args),*>>(), || #make)
        }
    } else {
        quote!(::qd::lang::KernelFn::new(#make))
    };
    let attrs = &item.attrs;
    let vis = &item.vis;
    let (impl_generics, _, where_clause) = sig.generics.split_for_impl();
    let comptime_args = comptime.iter().map(|p| {
        let attrs = strip_comptime(&p.attrs);
        let (pat, ty) = (&p.pat, &p.ty);
        quote!(#(#attrs)* #pat: #ty)
    });
    Ok(quote! {
        #(#attrs)*
        #[allow(unused_parens, unreachable_code, clippy::needless_return)]
        #vis fn #ident #impl_generics (#(#comptime_args),*) -> ::qd::lang::KernelFn<#params_ty, ::qd::lang::#launch> #where_clause {
            #construct
        }
    })
}

fn pattern_idents(p: &Pat) -> Vec<syn::Ident> {
    let mut names = Vec::new();
    crate::stmt::pattern_names(p, &mut names);
    names
}

/// `#[qd::func]`.
pub(crate) fn func(item: ItemFn) -> syn::Result<TokenStream> {
    check_plain(&item, "#[qd::func]")?;
    let sig = &item.sig;
    let probe = Lower::new(Mode::Closure, type_params(&item));
    let mut params = Vec::new();
    let mut prelude = TokenStream::new();
    let mut lets: Vec<Stmt> = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(p) = arg else { continue };
        let attrs = strip_comptime(&p.attrs);
        if is_comptime(&p.attrs) {
            let (pat, ty) = (&p.pat, &p.ty);
            params.push(quote!(#(#attrs)* #pat: #ty));
            continue;
        }
        let span = p.span();
        if let Some((elem, _)) = slice_elem(&p.ty) {
            let (name, _) = param_name(p)?;
            params.push(quote_spanned!(span=> #(#attrs)* #name: ::qd::lang::Array<#elem>));
            continue;
        }
        if let Type::Reference(r) = &*p.ty {
            if probe.dev_type(&r.elem).is_some() {
                let (name, _) = param_name(p)?;
                let elem = &r.elem;
                params.push(quote_spanned!(span=> #(#attrs)* #name: ::qd::lang::Elem<#elem>));
                continue;
            }
        }
        match &*p.ty {
            Type::Path(_) if probe.dev_type(&p.ty).is_some() => {
                let (name, mutable) = param_name(p)?;
                let ty = &p.ty;
                params.push(quote_spanned!(span=> #(#attrs)* #name: impl ::qd::lang::IntoVal<#ty>));
                prelude.extend(
                    quote_spanned!(span=> let #name: ::qd::lang::Val<#ty> = ::qd::lang::IntoVal::into_val(#name);),
                );
                if mutable {
                    lets.push(syn::parse_quote_spanned!(span=> let mut #name = #name;));
                }
            }
            ty => {
                let ty = probe.dev_type(ty).unwrap_or_else(|| ty.to_token_stream());
                let pat = &p.pat;
                params.push(quote!(#(#attrs)* #pat: #ty));
            }
        }
    }
    let ret = match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => Some((probe.dev_type(ty), ty)),
    };
    let (ret_ty, converts) = match &ret {
        None => (quote!(()), false),
        Some((Some(dev), _)) => (dev.clone(), true),
        Some((None, ty)) => (ty.to_token_stream(), false),
    };
    let mut lower = Lower::new(Mode::Func { ret: ret_ty.clone() }, type_params(&item));
    for arg in &sig.inputs {
        if let FnArg::Typed(p) = arg {
            lower.bind_pattern(&p.pat);
        }
    }
    let stmts: Vec<Stmt> = lets.into_iter().chain(item.block.stmts.iter().cloned()).collect();
    let body = lower.stmts(&stmts, false);
    let tail = match body.tail {
        Some(t) if converts => Some(quote!(::qd::lang::to_dev::<#ret_ty, _>(#t))),
        t => t,
    };
    let body_stmts = body.stmts;
    let body = if lower.early_return {
        let slot = hidden("__qd_ret");
        let tail = tail.unwrap_or_else(|| quote!(()));
        quote!(::qd::lang::Returns::<#ret_ty>::run(|#slot| { #body_stmts #tail }))
    } else {
        quote!(#body_stmts #tail)
    };
    let body = lower.finish(body)?;
    let attrs = &item.attrs;
    let vis = &item.vis;
    let ident = &sig.ident;
    let (impl_generics, _, where_clause) = sig.generics.split_for_impl();
    let output = ret.is_some().then(|| quote!(-> #ret_ty));
    Ok(quote! {
        #(#attrs)*
        #[allow(unused_parens, unreachable_code, clippy::needless_return)]
        #vis fn #ident #impl_generics (#(#params),*) #output #where_clause {
            #prelude
            #body
        }
    })
}
