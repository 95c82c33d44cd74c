//! The one trybuild driver: every `fail/*.rs` must fail to compile with the messages in its
//! `.stderr`; every `pass/*.rs` must compile and run. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p collectives-ui-tests --features slow`, then read them before
//! committing.
//!
//! Compiling every case takes minutes on a small machine, so the suite runs only with the `slow`
//! feature (`.ci/run` turns it on); a plain `cargo test --workspace` lists it as ignored.

#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn ui() {
    // SAFETY: this is the only test of this binary and it runs before trybuild starts any
    // thread or child, so nothing reads the environment while it is written.
    unsafe { std::env::set_var("NO_COLOR", "1") };
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.pass("pass/*.rs");
}
