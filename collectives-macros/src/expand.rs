//! Expansion: a valid group becomes a call opening it; a bad one becomes its errors plus a stub of
//! the group's type (as far as it is known), so the rest of the user's file still type-checks and
//! the user sees the invocation's errors, not a cascade.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::errors::Ctxt;
use crate::validate::{Group, Kind, MAX_MEMBERS, Member};

/// The whole macro: parse, validate, expand.
pub fn device_group(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let items = crate::parse::parse(input, &cx);
    let group = crate::validate::validate(items, &cx);
    match cx.check() {
        Ok(()) => open(&group),
        Err(errors) => stub(&group, &errors),
    }
}

/// `Group::<(kinds), Leader, Brand>::open(&[devices], leader)`.
fn open(group: &Group) -> TokenStream {
    let ty = group_type(group);
    let devices = group.members.iter().map(device);
    let leader = device(&group.members[group.leader.unwrap_or(0)]);
    let call = match &group.no_staging {
        Some(flag) => quote_spanned!(flag.span()=> open_no_staging),
        None => quote!(open),
    };
    quote! {
        #ty::#call(&[#(#devices),*], #leader)
    }
}

/// The errors, then a value of the group's type that never runs.
fn stub(group: &Group, errors: &syn::Error) -> TokenStream {
    let compile_errors = errors.to_compile_error();
    let ty = group_type(group);
    quote! {
        {
            #compile_errors
            #ty::__invalid_invocation()
        }
    }
}

/// `::collectives::typed::Group::<(K0, K1, ..), Leader, Brand>`; unknown kinds are `_`, and a
/// group with no members or too many has an unknown type.
fn group_type(group: &Group) -> TokenStream {
    if group.members.is_empty() || group.members.len() > MAX_MEMBERS {
        return quote!(::collectives::typed::Group::<_, _, _>);
    }
    let kinds = group.members.iter().map(kind_type);
    let leader = match (group.leader, group.leader_kind) {
        (Some(i), _) => kind_type(&group.members[i]),
        (None, Some(kind)) => kind_path(kind, Span::call_site()),
        (None, None) => kind_type(&group.members[0]),
    };
    let brand = match &group.brand {
        Some(ty) => quote!(#ty),
        None => quote!(::collectives::typed::Unbranded),
    };
    quote!(::collectives::typed::Group::<(#(#kinds,)*), #leader, #brand>)
}

/// The member's kind type, on the user's token.
fn kind_type(member: &Member) -> TokenStream {
    let span = member.spec.kind.span();
    match member.kind {
        Some(kind) => kind_path(kind, span),
        None => quote_spanned!(span=> _),
    }
}

/// `::collectives::typed::Cuda`, at `span`.
fn kind_path(kind: Kind, span: Span) -> TokenStream {
    let name = syn::Ident::new(kind.name(), span);
    quote_spanned!(span=> ::collectives::typed::#name)
}

/// `::collectives::Device::Cuda(1u32)`.
fn device(member: &Member) -> TokenStream {
    let kind = member.kind.unwrap_or(Kind::Cpu);
    let variant = syn::Ident::new(kind.name(), Span::call_site());
    let ordinal = Literal::u32_suffixed(member.ordinal);
    quote!(::collectives::Device::#variant(#ordinal))
}
