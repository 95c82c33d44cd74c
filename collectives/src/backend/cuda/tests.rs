//! Unit tests of the CUDA backend that need crate internals: a kernel launch failure, the chunked
//! staging hooks, and the NCCL clique. They skip without a CUDA device (unless `REQUIRE_CUDA=1`).
