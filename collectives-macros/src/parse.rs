//! Parsing: the invocation split at its top-level commas, each item parsed on its own, so one bad
//! item neither hides the errors of the others nor stops them being parsed.
//!
//! ```text
//! device_group!( item (, item)* ,? )
//! item   := member | `leader` `=` member | `brand` `=` Type | `no_staging`
//! member := Kind | Kind `(` ordinal `)`          Kind: Cpu | Cuda | Vulkan; ordinal: a u32 literal
//! ```

use proc_macro2::{Group, Ident, Punct, Spacing, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{ParseStream, Parser};

use crate::errors::Ctxt;
use crate::suggest::closest;

/// The options taking a value, as `name = value`.
pub const VALUE_OPTIONS: &[&str] = &["leader", "brand"];
/// The options given by name alone.
pub const FLAG_OPTIONS: &[&str] = &["no_staging"];

/// One comma-separated item of the invocation.
pub enum Item {
    /// A member device.
    Member(MemberSpec),
    /// `leader = member`.
    Leader {
        /// The `leader` token.
        key: Ident,
        /// The member named.
        member: MemberSpec,
    },
    /// `brand = Type`.
    Brand {
        /// The `brand` token.
        key: Ident,
        /// The brand type.
        ty: syn::Type,
    },
    /// `no_staging`.
    NoStaging(Ident),
}

/// A member as written: a kind name and maybe an ordinal.
#[derive(Clone)]
pub struct MemberSpec {
    /// The kind's name as written (validated later).
    pub kind: Ident,
    /// The parenthesized ordinal, if any.
    pub parens: Option<Group>,
    /// The ordinal's value: `Some(0)` when none is written, `None` when it was invalid (and
    /// reported).
    pub ordinal: Option<u32>,
}

impl ToTokens for MemberSpec {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.kind.to_tokens(tokens);
        self.parens.to_tokens(tokens);
    }
}

/// The items of `input`, in order, reporting each bad one into `cx`.
pub fn parse(input: TokenStream, cx: &Ctxt) -> Vec<Item> {
    let mut items = Vec::new();
    for (chunk, comma) in split_commas(input) {
        if chunk.is_empty() {
            // Only the last piece has no comma: empty there is a trailing comma or no input.
            if let Some(c) = comma {
                cx.spanned(c, "expected a device kind or an option before this `,`");
            }
            continue;
        }
        let parsed = (|stream: ParseStream| parse_item(stream, cx)).parse2(chunk);
        match parsed {
            Ok(Some(item)) => items.push(item),
            Ok(None) => {}
            Err(e) => cx.syn_error(e),
        }
    }
    items
}

/// `input` cut at its top-level commas: each piece with the comma that ends it.
fn split_commas(input: TokenStream) -> Vec<(TokenStream, Option<Punct>)> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for tt in input {
        match tt {
            TokenTree::Punct(p) if p.as_char() == ',' && p.spacing() == Spacing::Alone => {
                out.push((current.drain(..).collect(), Some(p)));
            }
            other => current.push(other),
        }
    }
    out.push((current.into_iter().collect(), None));
    out
}

/// One item; `Ok(None)` when it was bad and its error is already in `cx`.
fn parse_item(input: ParseStream, cx: &Ctxt) -> syn::Result<Option<Item>> {
    let Ok(name) = input.parse::<Ident>() else {
        let rest: TokenStream = input.parse()?;
        cx.spanned(rest, EXPECTED_ITEM);
        return Ok(None);
    };
    let item = if input.peek(syn::Token![=]) {
        input.parse::<syn::Token![=]>()?;
        parse_option(name, input, cx)?
    } else if FLAG_OPTIONS.contains(&name.to_string().as_str()) {
        Some(Item::NoStaging(name))
    } else {
        Some(Item::Member(parse_member_rest(name, input, cx)?))
    };
    if !input.is_empty() {
        let rest: TokenStream = input.parse()?;
        cx.spanned(rest, "expected `,` between the items of device_group!");
    }
    Ok(item)
}

const EXPECTED_ITEM: &str = "expected a device kind (`Cpu`, `Cuda`, `Vulkan`, with an optional \
    ordinal as in `Cuda(1)`) or an option (`leader = ...`, `brand = ...`, `no_staging`)";

/// The value of `name = ...`.
fn parse_option(name: Ident, input: ParseStream, cx: &Ctxt) -> syn::Result<Option<Item>> {
    match name.to_string().as_str() {
        "leader" => {
            let kind = input
                .parse::<Ident>()
                .map_err(|e| syn::Error::new(e.span(), "expected the leader, a member such as `Cuda(1)`"))?;
            let member = parse_member_rest(kind, input, cx)?;
            Ok(Some(Item::Leader { key: name, member }))
        }
        "brand" => Ok(Some(Item::Brand { key: name, ty: input.parse()? })),
        other => {
            let hint = match closest(other, VALUE_OPTIONS) {
                Some(near) => format!("; did you mean `{near}`?"),
                None => String::new(),
            };
            let msg = format!(
                "unknown option `{other}`{hint} (options: `leader = ...`, `brand = ...`, `no_staging`)"
            );
            cx.spanned(&name, msg);
            let _: TokenStream = input.parse()?;
            Ok(None)
        }
    }
}

/// A member whose kind name is parsed: the optional `(ordinal)`.
fn parse_member_rest(kind: Ident, input: ParseStream, cx: &Ctxt) -> syn::Result<MemberSpec> {
    let parens = if input.peek(syn::token::Paren) { Some(input.parse::<Group>()?) } else { None };
    let ordinal = match &parens {
        None => Some(0),
        Some(g) => ordinal(&kind, g, cx),
    };
    Ok(MemberSpec { kind, parens, ordinal })
}

/// The ordinal inside `parens`, or `None` after reporting why it is not a `u32` literal.
fn ordinal(kind: &Ident, parens: &Group, cx: &Ctxt) -> Option<u32> {
    let tokens: Vec<TokenTree> = parens.stream().into_iter().collect();
    let inner = parens.stream();
    match tokens.as_slice() {
        [] => {
            let msg = format!("empty ordinal: write `{kind}(0)`, or `{kind}` for the first device");
            cx.spanned(parens, msg);
            None
        }
        [TokenTree::Literal(lit)] => integer(syn::Lit::new(lit.clone()), kind, cx),
        [TokenTree::Punct(p), TokenTree::Literal(_)] if p.as_char() == '-' => {
            let msg = format!(
                "negative ordinal `{}`: device ordinals count from 0 (`{kind}(0)` is the first device)",
                inner
            );
            cx.spanned(inner, msg);
            None
        }
        _ => {
            cx.spanned(inner.clone(), non_integer(&quote!(#inner).to_string(), kind));
            None
        }
    }
}

/// The value of an integer literal ordinal.
fn integer(lit: syn::Lit, kind: &Ident, cx: &Ctxt) -> Option<u32> {
    let syn::Lit::Int(int) = &lit else {
        cx.spanned(&lit, non_integer(&lit.to_token_stream().to_string(), kind));
        return None;
    };
    if !matches!(int.suffix(), "" | "u32" | "usize") {
        let msg = format!(
            "ordinal `{int}` has a `{}` suffix: write a plain integer, like `{kind}(1)`",
            int.suffix()
        );
        cx.spanned(int, msg);
        return None;
    }
    match int.base10_parse::<u32>() {
        Ok(n) => Some(n),
        Err(_) => {
            let msg = format!("ordinal `{int}` is out of range: device ordinals are u32");
            cx.spanned(int, msg);
            None
        }
    }
}

fn non_integer(got: &str, kind: &Ident) -> String {
    format!(
        "ordinal `{got}` is not an integer: write a non-negative integer literal, like `{kind}(1)` \
         (device_group! checks its members when it compiles; for devices chosen at run time use \
         `Group::open`)"
    )
}
