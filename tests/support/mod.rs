//! Shared helpers of the integration tests: random data, f64 references, tolerant comparison.
