//! The library's environment variables, read one way: a value that does not parse is never
//! silently ignored but warned about once per process on stderr, naming the variable, its value
//! and what it takes, and the default is used.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::{Mutex, OnceLock};

/// `name` parsed as a `T` that `ok` accepts; `None` when unset. A value that is set but does not
/// parse, or that `ok` refuses, prints a one-time warning on stderr (`expected` says what the
/// variable takes) and reads as unset.
pub(crate) fn var<T: FromStr>(name: &str, expected: &str, ok: impl Fn(&T) -> bool) -> Option<T> {
    parse(name, std::env::var(name).ok(), expected, ok)
}

/// [`var`] of the value `raw`.
fn parse<T: FromStr>(name: &str, raw: Option<String>, expected: &str, ok: impl Fn(&T) -> bool) -> Option<T> {
    let raw = raw?;
    match raw.trim().parse::<T>() {
        Ok(v) if ok(&v) => Some(v),
        _ => {
            warn_once(name, &format!("{name}={raw:?} is not {expected}; using the default"));
            None
        }
    }
}

/// A switch: unset is `default`; `1`/`on`/`true`/`yes` and `0`/`off`/`false`/`no` (any case) set
/// it; anything else warns once and reads as unset.
pub(crate) fn switch(name: &str, default: bool) -> bool {
    switch_of(name, std::env::var(name).ok(), default)
}

/// [`switch`] of the value `raw`.
fn switch_of(name: &str, raw: Option<String>, default: bool) -> bool {
    let Some(raw) = raw else { return default };
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => true,
        "0" | "off" | "false" | "no" => false,
        _ => {
            warn_once(name, &format!("{name}={raw:?} is not 0/off or 1/on; using the default ({default})"));
            default
        }
    }
}

/// Prints `msg` on stderr the first time `name` warns in this process.
pub(crate) fn warn_once(name: &str, msg: &str) {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if warned.insert(name.to_string()) {
        eprintln!("collectives: warning: {msg}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: &str = "COLLECTIVES_TEST_NUMBER";

    #[test]
    fn numbers_that_do_not_parse_or_are_refused_read_as_unset() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(parse::<u32>(N, some(" 12 "), "a number", |_| true), Some(12));
        assert_eq!(parse::<u32>(N, some("12"), "a number over 12", |&v| v > 12), None);
        assert_eq!(parse::<u32>(N, some("lots"), "a number", |_| true), None);
        assert_eq!(parse::<u32>(N, None, "a number", |_| true), None);
    }

    #[test]
    fn switches_take_on_and_off_words_only() {
        let some = |s: &str| Some(s.to_string());
        assert!(!switch_of(N, some("OFF"), true) && !switch_of(N, some("0"), true));
        assert!(switch_of(N, some("on"), false) && switch_of(N, some(" 1"), false));
        assert!(switch_of(N, some("maybe"), true) && !switch_of(N, some("maybe"), false));
        assert!(switch_of(N, None, true));
    }
}
