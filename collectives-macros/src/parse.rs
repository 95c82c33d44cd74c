//! Parsing: the invocation split at its top-level commas, each item parsed on its own, so one bad
//! item neither hides the errors of the others nor stops them being parsed.
//!
//! ```text
//! device_group!( item (, item)* ,? )
//! item   := member | `leader` `=` member | `brand` `=` Type | `crate` `=` Path | `no_staging`
//! member := Kind | Kind `(` ordinal `)`          Kind: Cpu | Cuda | Vulkan; ordinal: a u32 literal
//! ```

use proc_macro2::{Group, Ident, Punct, Spacing, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{ParseStream, Parser};

use crate::errors::Ctxt;
use crate::suggest::closest;
use crate::validate::Kind;

/// The options taking a value, as `name = value`.
pub const VALUE_OPTIONS: &[&str] = &["leader", "brand", "crate"];
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
    /// `crate = path`: where the `collectives` crate is.
    Crate {
        /// The `crate` token.
        key: syn::Token![crate],
        /// The crate's path.
        path: syn::Path,
    },
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
    if is_path(input) {
        let item = member_path(input, cx)?.map(Item::Member);
        return expect_end(input, cx).map(|()| item);
    }
    if input.peek(syn::Token![crate]) {
        let item = crate_option(input, cx)?;
        return expect_end(input, cx).map(|()| item);
    }
    let Ok(name) = input.parse::<Ident>() else {
        let rest: TokenStream = input.parse()?;
        cx.spanned(rest, EXPECTED_ITEM);
        return Ok(None);
    };
    let item = if input.peek(syn::Token![=]) {
        let eq = input.parse::<syn::Token![=]>()?;
        parse_option(name, eq, input, cx)?
    } else if FLAG_OPTIONS.contains(&name.to_string().as_str()) {
        Some(Item::NoStaging(name))
    } else {
        Some(Item::Member(parse_member_rest(name, input, cx)?))
    };
    expect_end(input, cx)?;
    Ok(item)
}

/// Reports what is left of an item that should have ended.
fn expect_end(input: ParseStream, cx: &Ctxt) -> syn::Result<()> {
    if !input.is_empty() {
        let rest: TokenStream = input.parse()?;
        cx.spanned(rest, "expected `,` between the items of device_group!");
    }
    Ok(())
}

const EXPECTED_ITEM: &str = "expected a device kind (`Cpu`, `Cuda`, `Vulkan`, with an optional \
    ordinal as in `Cuda(1)`) or an option (`leader = ...`, `brand = ...`, `crate = ...`, `no_staging`)";

/// Whether `input` starts with a path of several segments (`a::b`, `::a`).
fn is_path(input: ParseStream) -> bool {
    input.peek(syn::Token![::]) || (input.peek(syn::Ident) && input.peek2(syn::Token![::]))
}

/// A member written as a path, `collectives::typed::Cuda(1)`: one error on the path. When its
/// last segment is a kind, the member is kept (with that kind) so nothing else is reported.
fn member_path(input: ParseStream, cx: &Ctxt) -> syn::Result<Option<MemberSpec>> {
    let path = syn::Path::parse_mod_style(input)?;
    let shown = quote!(#path).to_string().replace(' ', "");
    let Some(last) = path.segments.last().map(|s| s.ident.clone()) else {
        cx.spanned(&path, EXPECTED_ITEM);
        return Ok(None);
    };
    if !Kind::NAMES.contains(&last.to_string().as_str()) {
        let msg = format!("`{shown}` is a path: {EXPECTED_ITEM}");
        cx.spanned(&path, msg);
        let _: TokenStream = input.parse()?;
        return Ok(None);
    }
    let msg = format!(
        "`{shown}` is a path: write the kind's name alone, `{last}` (device_group! knows the kinds by \
         name, with no import)"
    );
    cx.spanned(&path, msg);
    parse_member_rest(last, input, cx).map(Some)
}

/// The value of `name = ...`.
fn parse_option(name: Ident, eq: syn::Token![=], input: ParseStream, cx: &Ctxt) -> syn::Result<Option<Item>> {
    let key = name.to_string();
    if input.is_empty() && VALUE_OPTIONS.contains(&key.as_str()) {
        let example = match key.as_str() {
            "leader" => "`leader = Cuda(1)`",
            "brand" => "`brand = Train`",
            _ => "`crate = my_deps::collectives`",
        };
        cx.spanned(quote!(#name #eq), format!("`{key} =` needs a value after the `=`, as in {example}"));
        return Ok(None);
    }
    match key.as_str() {
        "leader" => leader(name, input, cx),
        "brand" => Ok(Some(Item::Brand { key: name, ty: brand(input, cx)? })),
        other => {
            let hint = match closest(other, VALUE_OPTIONS) {
                Some(near) => format!("; did you mean `{near}`?"),
                None => String::new(),
            };
            let msg = format!(
                "unknown option `{other}`{hint} (options: `leader = ...`, `brand = ...`, `crate = ...`, `no_staging`)"
            );
            cx.spanned(&name, msg);
            let _: TokenStream = input.parse()?;
            Ok(None)
        }
    }
}

/// The value of `leader = ...`: a member.
fn leader(key: Ident, input: ParseStream, cx: &Ctxt) -> syn::Result<Option<Item>> {
    let member = if is_path(input) {
        member_path(input, cx)?
    } else {
        let kind = input
            .parse::<Ident>()
            .map_err(|e| syn::Error::new(e.span(), "expected the leader, a member such as `Cuda(1)`"))?;
        Some(parse_member_rest(kind, input, cx)?)
    };
    Ok(member.map(|member| Item::Leader { key, member }))
}

/// `crate = path`; one error on what is wrong otherwise.
fn crate_option(input: ParseStream, cx: &Ctxt) -> syn::Result<Option<Item>> {
    let key: syn::Token![crate] = input.parse()?;
    let Ok(eq) = input.parse::<syn::Token![=]>() else {
        cx.spanned(key, format!("`crate` is an option that takes a path: {CRATE_EXAMPLE}"));
        let _: TokenStream = input.parse()?;
        return Ok(None);
    };
    if input.is_empty() {
        cx.spanned(quote!(#key #eq), format!("`crate =` needs a value after the `=`: {CRATE_EXAMPLE}"));
        return Ok(None);
    }
    if input.fork().call(syn::Path::parse_mod_style).is_ok() {
        let path = syn::Path::parse_mod_style(input)?;
        return Ok(Some(Item::Crate { key, path }));
    }
    let rest: TokenStream = input.parse()?;
    cx.spanned(&rest, format!("`crate` takes a path, and `{rest}` is not one: {CRATE_EXAMPLE}"));
    Ok(None)
}

const CRATE_EXAMPLE: &str = "the path of the `collectives` crate where it is reached through a \
    re-export, as in `crate = my_deps::collectives` (a renamed dependency is found without it)";

/// The value of `brand = ...`: a type; for anything else, one error on it and `_` (so the stub
/// still type-checks against the user's code).
fn brand(input: ParseStream, cx: &Ctxt) -> syn::Result<syn::Type> {
    if input.fork().parse::<syn::Type>().is_ok() {
        return input.parse();
    }
    let rest: TokenStream = input.parse()?;
    let msg = format!(
        "`brand` takes a type, and `{rest}` is not one: name a type of yours, as in `struct Train;` \
         then `brand = Train` (or a path, `brand = my_module::Train`)"
    );
    cx.spanned(rest, msg);
    Ok(syn::Type::Infer(syn::TypeInfer { underscore_token: Default::default() }))
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
