//! TEMPORARY: Vulkan host<->device copy rates by host memory kind (not committed).
use std::time::Instant;

use super::*;

fn run(g: &Arc<Gpu>, host: &Arc<DevBuf>, dev: &Arc<DevBuf>, to_dev: bool, one_submit: bool) -> f64 {
    let (chunk, total, ring) = (16u64 << 20, 1u64 << 30, 128u64 << 20);
    let regions: Vec<vk::BufferCopy> = (0..total / chunk)
        .map(|i| {
            let (h, d) = ((i * chunk) % ring, i * chunk);
            let (s, t) = if to_dev { (h, d) } else { (d, h) };
            vk::BufferCopy { src_offset: s, dst_offset: t, size: chunk }
        })
        .collect();
    let (src, dst) = if to_dev { (host, dev) } else { (dev, host) };
    let t = Instant::now();
    let last = if one_submit {
        let mut rec = Recorder::begin(g).unwrap();
        rec.copy(src, dst, &regions);
        rec.submit().unwrap()
    } else {
        let mut last = None;
        for r in &regions {
            let mut rec = Recorder::begin(g).unwrap();
            rec.copy(src, dst, std::slice::from_ref(r));
            last = Some(rec.submit().unwrap());
        }
        last.unwrap()
    };
    last.wait().unwrap();
    total as f64 / t.elapsed().as_secs_f64() / 1e9
}

#[test]
#[ignore]
fn vk_host_hop_probe() {
    for d in [Device::Vulkan(0), Device::Vulkan(1)] {
        let Ok(g) = gpu(d) else {
            println!("probe skipped");
            return;
        };
        let dev = DevBuf::new(&g, 1 << 30, Usage::Device).unwrap();
        let up = DevBuf::new(&g, 128 << 20, Usage::Upload).unwrap();
        let rb = DevBuf::new(&g, 128 << 20, Usage::Readback).unwrap();
        let layout = std::alloc::Layout::from_size_align(128 << 20, 2 << 20).unwrap();
        // SAFETY: probe; freed at the end after all copies completed.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let view = unsafe { import(d, NonNull::new(p).unwrap(), 128 << 20, Arc::new(())) }.unwrap();
        for rep in 0..2 {
            let r = |h: &Arc<DevBuf>, to: bool, one: bool| run(&g, h, &dev, to, one);
            println!(
                "VKHOP {d} rep {rep}: h2d upload-mem {:.1} / one-submit {:.1} | h2d imported {:.1} / one {:.1} | d2h readback-mem {:.1} / one {:.1} | d2h imported {:.1} / one {:.1} GB/s",
                r(&up, true, false), r(&up, true, true), r(&view.buf, true, false), r(&view.buf, true, true),
                r(&rb, false, false), r(&rb, false, true), r(&view.buf, false, false), r(&view.buf, false, true)
            );
        }
        drop(view);
        // leak p (probe)
    }
}
