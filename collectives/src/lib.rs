//! Single-process, multi-device collectives over a lazy tensor graph.
//!
//! One process drives several devices at once — CUDA GPUs, a Vulkan GPU, the CPU — and holds
//! every shard. Collectives reduce, gather, scatter and broadcast those shards by building a lazy
//! graph of copies and elementwise kernels, run when a result is realized.
//!
//! ```
//! use collectives::{Device, Tensor};
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Device::Cpu(0))?;
//! let y = x.copy_to_device(Device::Cpu(1))?.scale(collectives::Scale::Mul(2.0))?;
//! assert_eq!(y.to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 8.0]);
//! # Ok::<(), collectives::Error>(())
//! ```
#![warn(missing_docs)]

mod backend;
pub mod collective;
pub mod comm;
pub mod device;
pub mod dtype;
mod error;
pub mod exec;
pub mod graph;

pub use backend::HOST_POOL_ENV;
pub use collective::{Algorithm, CollectiveKind, DeviceGroup, Plan, ReduceOp, Route};
#[cfg(feature = "cuda")]
pub use comm::NcclComm;
pub use comm::{Communicator, IdentityComm, LocalComm};
pub use device::{Device, DeviceKind, available_devices, parse_devices};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use exec::realize;
pub use graph::{BinaryOp, Op, ReduceKind, Scale, Shape, Tensor};
