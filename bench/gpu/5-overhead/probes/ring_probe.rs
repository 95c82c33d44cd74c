//! TEMPORARY: bandwidth of each hop of the staged ring alone (not committed).
use std::time::Instant;

use super::*;
use crate::backend::staged::ChunkEnd;

fn gbs(bytes: usize, t: Instant) -> f64 {
    bytes as f64 / t.elapsed().as_secs_f64() / 1e9
}

fn hops(end: &mut dyn ChunkEnd, bytes: usize, geo: Geometry, to_ring: bool) -> f64 {
    let t = Instant::now();
    let mut last = None;
    for i in 0..bytes / geo.chunk {
        let at = (i % geo.slots) * geo.chunk;
        let off = i * geo.chunk;
        let sp = [crate::backend::staged::Span { at, off, len: geo.chunk }];
        last = if to_ring { end.buffer_to_ring(&sp) } else { end.ring_to_buffer(&sp) }.unwrap();
    }
    last.unwrap().wait().unwrap();
    gbs(bytes, t)
}

#[test]
#[ignore]
fn ring_hop_probe() {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(1));
    if crate::backend::get(cu).is_err() || crate::backend::get(vk).is_err() {
        println!("probe skipped");
        return;
    }
    let bytes = 1usize << 30;
    let host = Buffer::from_vec(Device::Cpu(0), vec![1.5f32; bytes / 4]);
    let on_cu = crate::backend::get(cu).unwrap().htod(&host).unwrap();
    let on_vk = crate::backend::get(vk).unwrap().htod(&host).unwrap();
    on_cu.wait().unwrap();
    on_vk.wait().unwrap();
    let mut ring = Ring::new(cu, vk).unwrap();
    let geo = ring.geo;
    for rep in 0..3 {
        let c_d2h =
            hops(&mut crate::backend::cuda::source_end(&on_cu, &ring.cuda).unwrap(), bytes, geo, true);
        let c_h2d =
            hops(&mut crate::backend::cuda::dest_end(cu, bytes, &ring.cuda).unwrap(), bytes, geo, false);
        let v_h2d = hops(&mut bridge::dest_end(vk, bytes, &ring.vk).unwrap(), bytes, geo, false);
        let v_d2h = hops(&mut bridge::source_end(&on_vk, &ring.vk).unwrap(), bytes, geo, true);
        let t = Instant::now();
        let out = ring.run(&on_cu, vk).unwrap();
        out.wait().unwrap();
        let chain = gbs(bytes, t);
        let t = Instant::now();
        let back = ring.run(&on_vk, cu).unwrap();
        back.wait().unwrap();
        let chain_back = gbs(bytes, t);
        println!(
            "RING rep {rep} {geo:?}: cuda d2h {c_d2h:.1} | cuda h2d {c_h2d:.1} | vulkan h2d {v_h2d:.1} | vulkan d2h {v_d2h:.1} | chain cu->vk {chain:.1} | chain vk->cu {chain_back:.1} GB/s"
        );
    }
}
