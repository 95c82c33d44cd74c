//! Collecting every error of one invocation before reporting any (serde's `Ctxt` pattern): each
//! check pushes its error and goes on, and the errors are reported together at the end.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// The errors found so far in one invocation, each with the position (item index) of the item
/// it is about, so they are reported in the order the user wrote the items.
#[derive(Default)]
pub struct Errors {
    found: Vec<(usize, syn::Error)>,
    /// The position of the item being parsed or checked.
    pub pos: usize,
}

impl Errors {
    /// Records `msg` spanning `tokens` (the user's tokens the error is about).
    pub fn spanned(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records `msg` at `span`.
    pub fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Records an error already made.
    pub fn push(&mut self, error: syn::Error) {
        self.found.push((self.pos, error));
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// One `compile_error!` per recorded error, in item order.
    pub fn to_compile_errors(&self) -> TokenStream {
        let mut found: Vec<&(usize, syn::Error)> = self.found.iter().collect();
        found.sort_by_key(|(pos, _)| *pos);
        found.iter().map(|(_, e)| e.to_compile_error()).collect()
    }
}
