//! Procedural macros of the `collectives` crate: `device_group!` builds a typed device group.
//!
//! Use them through `collectives` (`collectives::device_group!`), which re-exports them. The
//! crate is split as thiserror-impl is: this shim, then `parse` → `validate` → `expand`.

mod errors;
mod expand;
mod parse;
mod suggest;
mod validate;

/// Builds a typed device group: `device_group!(Cuda, Vulkan, Cpu)` is a
/// `Result<collectives::typed::Group<(Cuda, Vulkan, Cpu)>>` of the first device of each kind,
/// led by the first member.
///
/// ```text
/// device_group!( item, item, ... )
///   Kind            the first device of a kind: Cpu, Cuda or Vulkan (Cuda is Cuda(0))
///   Kind(n)         device n of a kind (a u32 literal)
///   leader = Kind(n)   the leader, which must be a member (default: the first member)
///   brand = Type    tells this group's shards apart from other groups' at compile time
///   crate = path    where the `collectives` crate is (default: its name in the caller's
///                   Cargo.toml, found with proc-macro-crate, so a renamed dependency works)
///   no_staging      a group that would stage a hop through the host (Cuda with Vulkan)
///                   does not compile
/// ```
///
/// Each device may appear once: `Cuda, Cuda` names `Cuda(0)` twice and does not compile; write
/// `Cuda(0), Cuda(1)`. Every error of an invocation is reported at once, on the token it is
/// about. Opening checks that every device is present and returns
/// `Err(collectives::Error::DeviceUnavailable)` for an absent one: it never substitutes a device.
///
/// The runnable examples are on the re-export, `collectives::device_group!` (this crate cannot
/// depend on `collectives` to run them).
#[proc_macro]
pub fn device_group(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::device_group(input.into()).into()
}
