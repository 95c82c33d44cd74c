//! Procedural macros of the `collectives` crate: `device_group!` builds a typed device group.
//!
//! Use them through `collectives` (`collectives::device_group!`), which re-exports them.
