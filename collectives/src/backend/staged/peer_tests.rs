//! The peer bridge on the GPU machine: a Vulkan device reached through `via`, another CUDA device
//! of its GPU, from a CUDA device `cu` — every byte both ways, and each API's work ordered on the
//! GPU through `via`'s streams.
//!
//! On two GPUs `cu` is a peer on the other GPU (the bridge as a group chooses it). On one GPU the
//! same path runs between two logical CUDA devices of it (`COLLECTIVES_CUDA_DEVICES=0,0`): the
//! import, the timelines and the relays through `via`, with the copy inside one context. A group
//! never chooses the peer bridge there (both are the Vulkan device's GPU), so these tests call
//! the direct moves with `via` named. Each skips, saying why, without such devices.

use std::sync::Arc;

use super::direct;
use super::tests::random_bytes;
use crate::backend::{Backend, Buffer, cuda};
use crate::device::Device;

/// `cu` and `vulkan:0`, each with its backend, and `via`.
type Trio = ((Arc<dyn Backend>, Device), (Arc<dyn Backend>, Device), Device);

/// The peer bridge's devices — `cu`, `vulkan:0` and `via`, a CUDA device of `vulkan:0`'s GPU
/// other than `cu` — with the backends of `cu` and `vulkan:0`: on two GPUs, `via` a peer of
/// `cu` ([`cuda::peer_on`]); on one, two logical devices of that GPU. `None`, having printed
/// why, elsewhere.
fn peer_trio() -> Option<Trio> {
    let vk = Device::Vulkan(0);
    let skip = |why: String| {
        println!("skipped: {why}");
        None
    };
    let (vbe, uuid) = match (crate::backend::get(vk), crate::backend::vulkan::export::uuid(vk)) {
        (Ok(b), Ok(u)) => (b, u),
        (Err(e), _) | (_, Err(e)) => return skip(format!("{vk}: {e}")),
    };
    let cudas: Vec<Device> = (0..crate::backend::cuda::device_count()).map(Device::Cuda).collect();
    let on_vk = |d: Device| cuda::uuid(d).is_ok_and(|u| u == uuid);
    let Some(via) = cudas.iter().copied().find(|&d| on_vk(d)) else {
        return skip(format!("no CUDA device is {vk}'s GPU"));
    };
    let peer = |d: Device| d != via && (on_vk(d) || cuda::peer_on(d, uuid) == Ok(via));
    let Some(cu) = cudas.iter().copied().find(|&d| peer(d)) else {
        return skip(format!(
            "no CUDA device beside {via} on {vk}'s GPU or a peer of it (COLLECTIVES_CUDA_DEVICES=0,0 makes one)"
        ));
    };
    let cbe = match crate::backend::get(cu) {
        Ok(b) => b,
        Err(e) => return skip(format!("{cu}: {e}")),
    };
    println!("peer bridge: {cu} -> {vk} through {via}");
    Some(((cbe, cu), (vbe, vk), via))
}

/// Tensors of 256 KiB (the smallest with memory CUDA maps) to 300 MiB, odd lengths included, go
/// from `cu` to `vulkan:0` and back through `via`, every byte as sent; a Vulkan view at an
/// offset too.
#[test]
fn the_peer_bridge_moves_every_byte_both_ways() {
    let Some(((cbe, cu), (_, vk), via)) = peer_trio() else { return };
    for len in [256 << 10, (1 << 20) + 12, (17 << 20) + 4, (300 << 20) + 12_340] {
        let want = random_bytes(len, len as u64 + 7);
        let src = cbe.htod(&Buffer::from_vec(Device::Cpu(0), want.clone())).unwrap();
        let there = direct::to_vulkan(&src, vk, via).unwrap().expect("memory CUDA maps");
        assert_eq!(there.device, vk);
        let back = direct::to_cuda(&there, cu, via).unwrap().expect("memory CUDA maps");
        assert_eq!(back.device, cu);
        let host = cbe.dtoh(&back, Device::Cpu(0)).unwrap();
        host.wait().unwrap();
        let got = host.host_bytes("test").unwrap();
        assert_eq!(got.len(), len, "the bytes that came back");
        let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        assert_eq!(wrong, 0, "{len} bytes: {wrong} wrong");
        // A view from byte 64 Ki of the Vulkan tensor moves from its offset in the mapping.
        let at = 1 << 16;
        let view = crate::backend::vulkan::view(&there, at, len - at).unwrap().expect("a view at 64 KiB");
        let moved = direct::to_cuda(&view, cu, via).unwrap().expect("a view of mapped memory");
        let host = cbe.dtoh(&moved, Device::Cpu(0)).unwrap();
        host.wait().unwrap();
        assert!(host.host_bytes("test").unwrap() == &want[at..], "{len} bytes: the view from {at}");
    }
}

/// A move out of a Vulkan buffer through the peer waits for its Vulkan writer on the GPU (the
/// timeline imported into `via`, relayed to `cu`'s stream by an event), or on the host with the
/// import refused; every element as the writer wrote it.
#[test]
fn the_peer_bridge_waits_for_a_vulkan_writer_on_the_gpu() {
    let Some(((cbe, cu), (vbe, vk), via)) = peer_trio() else { return };
    super::one_gpu::from_vulkan_after_its_writer((&cbe, cu), (&vbe, vk), via);
}

/// A Vulkan kernel after a move from `cu` through the peer waits for `via`'s signal on the GPU,
/// or on the host with the import refused; every element as moved.
#[test]
fn a_vulkan_kernel_after_a_peer_move_waits_for_it_on_the_gpu() {
    let Some(((cbe, cu), (vbe, vk), via)) = peer_trio() else { return };
    super::one_gpu::vulkan_kernel_after_a_move((&cbe, cu), (&vbe, vk), via);
}
