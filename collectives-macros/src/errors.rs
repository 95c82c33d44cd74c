//! Collecting every error of one invocation before reporting any (serde's `Ctxt` pattern): each
//! check pushes its error and goes on, and the errors are reported together at the end.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// The errors found so far in one invocation.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    /// Records `msg` spanning `tokens` (the user's tokens the error is about).
    pub fn spanned(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.0.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records `msg` at `span`.
    pub fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, msg));
    }

    /// Records an error already made.
    pub fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One `compile_error!` per recorded error, in the order found.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}
