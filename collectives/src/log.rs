//! The library's log: what it decided and how long it took, on stderr, when [`LOG_ENV`] asks —
//! as `NCCL_DEBUG` does for NCCL.
//!
//! A collective's algorithm, the bridge between a CUDA and a Vulkan device and the copies of a
//! realize are decided inside the library, far from the call that caused them; when a figure is
//! not what was expected, the log says what ran. It is off by default, and costs one relaxed load
//! per site then.
//!
//! - `COLLECTIVES_LOG=info`: the first call of each collective that runs a given algorithm on a
//!   given group (with its size, and whether the group set the algorithm or the automatic choice
//!   made it), and each CUDA ↔ Vulkan pair's bridge with the reason;
//! - `COLLECTIVES_LOG=debug`: also every call's algorithm and every realize — its steps by
//!   action, its cross-device copies by pair with their bytes, its wall time, and a line per
//!   step: its queue, what it does, and when its inputs were ready and its issue returned (a
//!   realize's time goes to waiting for other queues, to host work and host waits inside a
//!   backend, or to the final wait, and the timeline says which).
//!
//! ```
//! use collectives::log::{LogLevel, log_level};
//! // Unset in the doctest's environment: off.
//! assert_eq!(log_level(), LogLevel::Off);
//! ```

use std::fmt;
use std::sync::OnceLock;

/// Environment variable setting the log level: `off` (the default), `info` or `debug` (any
/// case; anything else is warned about once and reads as `off`). Read once per process.
pub const LOG_ENV: &str = "COLLECTIVES_LOG";

/// How much the library logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Decisions: algorithms and bridges.
    Info,
    /// Decisions, and every realize's steps, copies and time.
    Debug,
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogLevel::Off => "off",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        })
    }
}

impl std::str::FromStr for LogLevel {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s.to_ascii_lowercase().as_str() {
            "off" | "0" | "none" => Ok(LogLevel::Off),
            "info" | "1" => Ok(LogLevel::Info),
            "debug" | "2" | "trace" => Ok(LogLevel::Debug),
            _ => Err(()),
        }
    }
}

/// This process's level ([`LOG_ENV`]).
pub fn log_level() -> LogLevel {
    static LEVEL: OnceLock<LogLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        crate::knob::var(LOG_ENV, "off, info or debug", |_: &LogLevel| true).unwrap_or(LogLevel::Off)
    })
}

/// Whether messages of `level` are logged.
pub(crate) fn enabled(level: LogLevel) -> bool {
    level != LogLevel::Off && log_level() >= level
}

/// Whether `key` is logged for the first time in this process (the `info` level says a decision
/// once, not on every call).
pub(crate) fn first_time(key: String) -> bool {
    static SEEN: OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> = OnceLock::new();
    let mut seen = SEEN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    seen.insert(key)
}

/// Writes one message of `level` on stderr.
pub(crate) fn emit(level: LogLevel, msg: fmt::Arguments<'_>) {
    eprintln!("collectives: {level}: {msg}");
}

/// Logs a message at `level` (`LogLevel::Info` or `Debug`) when [`LOG_ENV`] asks; the arguments
/// are not evaluated otherwise.
macro_rules! log {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            $crate::log::emit($level, format_args!($($arg)*));
        }
    };
}
pub(crate) use log;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_in_any_case_and_order_by_detail() {
        assert_eq!("INFO".parse::<LogLevel>(), Ok(LogLevel::Info));
        assert_eq!("debug".parse::<LogLevel>(), Ok(LogLevel::Debug));
        assert_eq!("off".parse::<LogLevel>(), Ok(LogLevel::Off));
        assert_eq!("verbose".parse::<LogLevel>(), Err(()));
        assert!(LogLevel::Off < LogLevel::Info && LogLevel::Info < LogLevel::Debug);
        assert_eq!(LogLevel::Debug.to_string(), "debug");
    }
}
