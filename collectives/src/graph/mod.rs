//! The lazy graph: [`Tensor`] handles on immutable nodes, the [`Op`]s they compute, and the
//! passes that rewrite a graph before it runs.
//!
//! Building a graph touches no device, so graphs, passes and plans for CUDA and Vulkan devices can
//! be built and checked on machines with neither. Only [`crate::realize`] runs anything.
//!
//! ```
//! use collectives::{Device, Op, Tensor};
//! let x = Tensor::from_vec(vec![1.0f32; 6], [2, 3], Device::Cpu(0))?;
//! let on_gpu = x.copy_to_device(Device::Cuda(0))?; // no CUDA needed to build this
//! assert!(matches!(on_gpu.op(), Op::Copy { to: Device::Cuda(0) }));
//! assert!(on_gpu.copy_to_device(Device::Vulkan(0)).is_err()); // CUDA -> Vulkan is not one hop
//! # Ok::<(), collectives::Error>(())
//! ```

mod build;
mod op;
pub mod opt;
mod redop;
mod shape;
mod tensor;

pub(crate) use build::check_like;
pub(crate) use op::MultiKernel;
pub use op::{BinaryOp, CollectiveCall, Op, ReduceKind, Scale};
pub use redop::ReduceOp;
pub use shape::Shape;
pub use tensor::Tensor;

/// The host device staged hops go through (defined with the routes, [`crate::route`]).
pub use crate::route::STAGING_HOST;
