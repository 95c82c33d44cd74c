//! Collecting every error of one invocation before reporting any, as serde_derive's `Ctxt` does:
//! each check records its error and goes on; [`Ctxt::check`] combines them into one
//! `syn::Error`, in the order of the tokens they are about.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// The errors found so far in one invocation.
///
/// It must be consumed by [`Ctxt::check`]: dropping it unchecked is a bug in this crate (errors
/// would be lost), and panics.
pub struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// A collector with no errors.
    pub fn new() -> Ctxt {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records `msg` spanning `tokens` (the user's tokens the error is about).
    pub fn spanned(&self, tokens: impl ToTokens, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Records `msg` at `span`.
    pub fn at(&self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// Records an error already made.
    pub fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().as_mut().expect("Ctxt used after check").push(error);
    }

    /// Consumes the collector: `Ok` when nothing was recorded, otherwise every error combined
    /// into one, ordered by where its token starts in the source (so the user reads them in the
    /// order of the invocation, whichever check found them).
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        // A stable sort: errors at one position keep the order they were found in.
        errors.sort_by_key(|e| source_position(e.span()));
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            combined.combine(e);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}

/// Where `span` starts, as (line, column), when the compiler can say; `None` outside a macro
/// expansion (unit tests), which leaves the errors in the order they were found.
fn source_position(span: Span) -> Option<(usize, usize)> {
    if !proc_macro::is_available() {
        return None;
    }
    let start = span.unwrap().start();
    Some((start.line(), start.column()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_error_checks_ok() {
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    fn errors_are_combined_in_the_order_found() {
        let cx = Ctxt::new();
        cx.at(Span::call_site(), "first");
        cx.at(Span::call_site(), "second");
        let messages: Vec<String> = cx.check().unwrap_err().into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages, ["first", "second"]);
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn dropping_unchecked_panics() {
        let _cx = Ctxt::new();
    }
}
