//! Routes: how data gets from one device to another, decided in this one place.
//!
//! Every layer that moves a tensor asks here: the graph pass ([`crate::graph::opt`]) when a
//! compute op reads another device's tensor, the collectives when they send shards, the typed
//! group's static routes, `LocalComm`'s receives, and the backends that bounce a copy through the
//! host. A route is [`Route::Local`] (nothing moves), [`Route::Direct`] (one `Op::Copy`: same
//! vendor with a device-to-device path, or one end on the host) or [`Route::Staged`] (two copies
//! through [`STAGING_HOST`]: CUDA↔Vulkan, and two Vulkan devices, which have no device-to-device
//! path). A new kind of hop is one edit to [`Route::between`] and [`Hops::hop`].
//!
//! [`Hops`] is the hop builder: it makes the copy nodes of a route and remembers them, so a tensor
//! sent to two devices along routes that share a first hop crosses it once.
//!
//! ```
//! use collectives::route::{Hops, Route, STAGING_HOST};
//! use collectives::{Device, Op, Tensor};
//! assert_eq!(Route::between(Device::Cuda(0), Device::Vulkan(0)), Route::Staged { via: STAGING_HOST });
//! assert_eq!(Route::between(Device::Cuda(0), Device::Cuda(1)), Route::Direct);
//! let t = Tensor::from_vec(vec![1.0f32; 4], [4], Device::Cuda(0))?;
//! let mut hops = Hops::default();
//! let on_vk = hops.hop(&t, Device::Vulkan(0));          // cuda:0 -> cpu:0 -> vulkan:0
//! assert!(matches!(on_vk.inputs()[0].op(), Op::Copy { to: STAGING_HOST }));
//! let on_vk1 = hops.hop(&t, Device::Vulkan(1));         // shares the first hop
//! assert!(on_vk1.inputs()[0].same_node(&on_vk.inputs()[0]));
//! # Ok::<(), collectives::Error>(())
//! ```

use std::fmt;

use foldhash::HashMap;
use smallvec::smallvec;

use crate::device::{Device, DeviceKind};
use crate::graph::{Op, Tensor};

/// The host device that staged hops go through, and where host data waits before its first
/// upload to a GPU.
pub const STAGING_HOST: Device = Device::Cpu(0);

/// The path of one hop between two devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// Same device: nothing moves.
    Local,
    /// One `Op::Copy`: same vendor with a device-to-device path (a CUDA peer copy), or one end
    /// on the host.
    Direct,
    /// Two `Op::Copy` nodes through host device `via`: CUDA↔Vulkan, or two Vulkan devices.
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
        } else if from.needs_staging(to)
            || (from.kind() == DeviceKind::Vulkan && to.kind() == DeviceKind::Vulkan)
        {
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

/// Whether a kernel on `on` reads a buffer of `from` in place: the same device, two virtual host
/// devices (one memory system), or two CUDA devices (peers, over NVLink or PCIe; two virtual
/// devices of one GPU share its memory). Where two CUDA GPUs turn out to have no peer access, the
/// CUDA backend copies the input over first, so the graph does not depend on the machine.
pub fn readable(on: Device, from: Device) -> bool {
    on == from
        || (on.is_host() && from.is_host())
        || (on.kind() == DeviceKind::Cuda && from.kind() == DeviceKind::Cuda)
}

/// The hop builder: makes the copy nodes of each tensor's route and shares those already made
/// (a staged tensor sent to two Vulkan devices crosses to the host once).
#[derive(Default)]
pub struct Hops {
    made: HashMap<(u64, Device), Tensor>,
}

impl Hops {
    /// `t` readable by a kernel on `to`: `t` itself where `to` reads it in place ([`readable`]),
    /// else `t` hopped there.
    pub fn reach(&mut self, t: &Tensor, to: Device) -> Tensor {
        if readable(to, t.device()) {
            return t.clone();
        }
        self.hop(t, to)
    }

    /// `t` on `to`, by its route: `t` itself when it is there already.
    pub fn hop(&mut self, t: &Tensor, to: Device) -> Tensor {
        if t.device() == to {
            return t.clone();
        }
        if let Some(done) = self.made.get(&(t.id(), to)) {
            return done.clone();
        }
        let from = match Route::between(t.device(), to) {
            Route::Staged { via } => self.hop(t, via),
            Route::Local | Route::Direct => t.clone(),
        };
        let out = copy_node(&from, to);
        self.made.insert((t.id(), to), out.clone());
        out
    }
}

/// One `Op::Copy` of `t` to `to`, for a hop its route allows.
fn copy_node(t: &Tensor, to: Device) -> Tensor {
    Tensor::new_node(Op::Copy { to }, smallvec![t.clone()], to, t.dtype(), t.shape().clone(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: Device = Device::Cpu(1);
    const CU: Device = Device::Cuda(0);
    const VK: Device = Device::Vulkan(0);

    #[test]
    fn routes_by_pair() {
        assert_eq!(Route::between(CU, CU), Route::Local);
        assert_eq!(Route::between(CU, Device::Cuda(1)), Route::Direct);
        assert_eq!(Route::between(CPU, VK), Route::Direct);
        assert_eq!(Route::between(VK, CPU), Route::Direct);
        assert_eq!(Route::between(CU, VK), Route::Staged { via: STAGING_HOST });
        assert_eq!(Route::between(VK, CU), Route::Staged { via: STAGING_HOST });
        assert_eq!(Route::between(VK, Device::Vulkan(1)), Route::Staged { via: STAGING_HOST });
        assert_eq!(Route::Staged { via: STAGING_HOST }.copies(), 2);
    }

    #[test]
    fn hops_follow_the_route_and_are_shared() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0], [2], Device::Vulkan(1)).unwrap();
        let mut hops = Hops::default();
        let a = hops.hop(&t, VK);
        assert_eq!(a.op(), &Op::Copy { to: VK });
        assert_eq!(a.inputs()[0].op(), &Op::Copy { to: STAGING_HOST });
        assert!(a.inputs()[0].inputs()[0].same_node(&t));
        let b = hops.hop(&t, CU);
        assert!(b.inputs()[0].same_node(&a.inputs()[0]), "one crossing to the host");
        assert!(hops.hop(&t, VK).same_node(&a), "made once");
        assert!(hops.hop(&t, Device::Vulkan(1)).same_node(&t), "already there");
    }

    #[test]
    fn host_devices_are_reached_in_place() {
        let t = Tensor::from_vec(vec![1u8], [1], Device::Cpu(2)).unwrap();
        let mut hops = Hops::default();
        assert!(hops.reach(&t, CPU).same_node(&t));
        assert_eq!(hops.reach(&t, CU).op(), &Op::Copy { to: CU });
        let g = Tensor::from_vec(vec![1u8], [1], Device::Cuda(3)).unwrap();
        assert!(hops.reach(&g, CU).same_node(&g), "CUDA peers read each other in place");
        assert_eq!(hops.hop(&g, CU).op(), &Op::Copy { to: CU }, "a hop still moves it");
    }
}
