//! Expansion: a valid group becomes a call opening it; a bad one becomes its errors plus a stub of
//! the group's type (as far as it is known), so the rest of the user's file still type-checks and
//! the user sees the invocation's errors, not a cascade.

use proc_macro_crate::FoundCrate;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::errors::Ctxt;
use crate::validate::{Group, Kind, MAX_MEMBERS, Member};

/// The whole macro: parse, validate, expand.
pub fn device_group(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let items = crate::parse::parse(input, &cx);
    let group = crate::validate::validate(items, &cx);
    let krate = crate_path(&group);
    match cx.check() {
        Ok(()) => open(&group, &krate),
        Err(errors) => stub(&group, &krate, &errors),
    }
}

/// The path of the `collectives` crate: the `crate = path` option if given, else the name the
/// caller's Cargo.toml gives it (`coll = { package = "collectives" }` makes it `::coll`), else
/// `::collectives`.
fn crate_path(group: &Group) -> TokenStream {
    if let Some(path) = &group.krate {
        return quote!(#path);
    }
    match proc_macro_crate::crate_name("collectives") {
        Ok(FoundCrate::Name(name)) => {
            let ident = syn::Ident::new(&name, Span::call_site());
            quote!(::#ident)
        }
        // `Itself` is the crate's own doctests, examples and library (which declares
        // `extern crate self as collectives`), where the crate is `::collectives`.
        Ok(FoundCrate::Itself) | Err(_) => quote!(::collectives),
    }
}

/// `Group::<(kinds), Leader, Brand>::open(&[devices], leader)`.
fn open(group: &Group, krate: &TokenStream) -> TokenStream {
    let ty = group_type(group, krate);
    let devices = group.members.iter().map(|m| device(m, krate));
    let leader = device(&group.members[group.leader.unwrap_or(0)], krate);
    let call = match &group.no_staging {
        Some(flag) => quote_spanned!(flag.span()=> open_no_staging),
        None => quote!(open),
    };
    quote! {
        #ty::#call(&[#(#devices),*], #leader)
    }
}

/// The errors, then a value of the group's type that never runs.
fn stub(group: &Group, krate: &TokenStream, errors: &syn::Error) -> TokenStream {
    let compile_errors = errors.to_compile_error();
    let ty = group_type(group, krate);
    quote! {
        {
            #compile_errors
            #ty::__invalid_invocation()
        }
    }
}

/// `::collectives::typed::Group::<(K0, K1, ..), Leader, Brand>` (`krate` for `::collectives`); unknown kinds are `_`, and a
/// group with no members or too many has an unknown type.
fn group_type(group: &Group, krate: &TokenStream) -> TokenStream {
    if group.members.is_empty() || group.members.len() > MAX_MEMBERS {
        return quote!(#krate::typed::Group::<_, _, _>);
    }
    let kinds = group.members.iter().map(|m| kind_type(m, krate));
    let leader = match (group.leader, group.leader_kind) {
        (Some(i), _) => kind_type(&group.members[i], krate),
        (None, Some(kind)) => kind_path(kind, Span::call_site(), krate),
        (None, None) => kind_type(&group.members[0], krate),
    };
    let brand = match &group.brand {
        Some(ty) => quote!(#ty),
        None => quote!(#krate::typed::Unbranded),
    };
    quote!(#krate::typed::Group::<(#(#kinds,)*), #leader, #brand>)
}

/// The member's kind type, on the user's token.
fn kind_type(member: &Member, krate: &TokenStream) -> TokenStream {
    let span = member.spec.kind.span();
    match member.kind {
        Some(kind) => kind_path(kind, span, krate),
        None => quote_spanned!(span=> _),
    }
}

/// `::collectives::typed::Cuda`, at `span`.
fn kind_path(kind: Kind, span: Span, krate: &TokenStream) -> TokenStream {
    let name = syn::Ident::new(kind.name(), span);
    quote_spanned!(span=> #krate::typed::#name)
}

/// `::collectives::Device::Cuda(1u32)`.
fn device(member: &Member, krate: &TokenStream) -> TokenStream {
    let kind = member.kind.unwrap_or(Kind::Cpu);
    let variant = syn::Ident::new(kind.name(), Span::call_site());
    let ordinal = Literal::u32_suffixed(member.ordinal);
    quote!(#krate::Device::#variant(#ordinal))
}
