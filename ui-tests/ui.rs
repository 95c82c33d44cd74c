//! The one trybuild driver: every `fail/*.rs` must fail to compile with the messages in its
//! `.stderr`; every `pass/*.rs` must compile and run. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p collectives-ui-tests`, then read them before committing.

#[test]
fn ui() {
    // SAFETY: this is the only test of this binary and it runs before trybuild starts any
    // thread or child, so nothing reads the environment while it is written.
    unsafe { std::env::set_var("NO_COLOR", "1") };
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.pass("pass/*.rs");
}
