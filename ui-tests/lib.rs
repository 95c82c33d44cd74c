//! Compile-fail and compile-pass tests of `device_group!`; the driver is `ui.rs`.
