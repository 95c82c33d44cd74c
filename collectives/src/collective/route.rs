//! Routes: how a shard gets from one member to another, and the hop primitive that follows them.

use std::collections::HashMap;
use std::fmt;

use crate::device::Device;
use crate::error::Result;
use crate::graph::{STAGING_HOST, Tensor};

/// The path of one hop between two devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// Same device: nothing moves.
    Local,
    /// One `Op::Copy`: same vendor (a peer copy) or one end on the host.
    Direct,
    /// Two `Op::Copy` nodes through host device `via`: CUDA↔Vulkan.
    Staged {
        /// The host device staged through.
        via: Device,
    },
}

impl Route {
    /// The route from `from` to `to`.
    pub fn between(from: Device, to: Device) -> Route {
        if from == to {
            Route::Local
        } else if from.needs_staging(to) {
            Route::Staged { via: STAGING_HOST }
        } else {
            Route::Direct
        }
    }

    /// How many `Op::Copy` nodes the hop makes.
    pub fn copies(self) -> usize {
        match self {
            Route::Local => 0,
            Route::Direct => 1,
            Route::Staged { .. } => 2,
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Local => f.write_str("local"),
            Route::Direct => f.write_str("direct"),
            Route::Staged { via } => write!(f, "staged via {via}"),
        }
    }
}

/// The hop primitive: moves tensors along their routes, sharing hops already made (a staged
/// tensor sent to two Vulkan devices crosses to the host once).
#[derive(Default)]
pub(crate) struct Hops {
    made: HashMap<(u64, Device), Tensor>,
}

impl Hops {
    /// `t` readable by a kernel on `to`: `t` itself where `to` reads it in place (the same device,
    /// or host devices reading one another), else `t` hopped there.
    pub fn reach(&mut self, t: &Tensor, to: Device) -> Result<Tensor> {
        if crate::graph::opt::readable(to, t.device()) {
            return Ok(t.clone());
        }
        self.hop(t, to)
    }

    /// `t` on `to`, by its route.
    pub fn hop(&mut self, t: &Tensor, to: Device) -> Result<Tensor> {
        if t.device() == to {
            return Ok(t.clone());
        }
        if let Some(done) = self.made.get(&(t.id(), to)) {
            return Ok(done.clone());
        }
        let out = match Route::between(t.device(), to) {
            Route::Staged { via } => self.hop(t, via)?.copy_to_device(to)?,
            _ => t.copy_to_device(to)?,
        };
        self.made.insert((t.id(), to), out.clone());
        Ok(out)
    }
}
