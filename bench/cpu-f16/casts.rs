//! The cast timings of bench/cpu-f16/README.md (2026-12-05). Run as a scratch crate beside the
//! repository: Cargo.toml with `collectives = { path = "<repo>/collectives", default-features = false }`
//! and `[profile.release] debug = false`, this file as src/main.rs, `cargo build --release` once at
//! each revision (CARGO_TARGET_DIR=t-before / t-after), then:
//! `for r in 1 2 3; do for b in before after; do ./t-$b/release/castb | awk -v b=$b -v r=$r '{print r, b, $0}'; done; done`
use collectives::{DType, Device, Tensor};
use std::time::Instant;
fn main() {
    let pairs = [(DType::F32, DType::BF16), (DType::BF16, DType::F32), (DType::F32, DType::F16), (DType::F16, DType::F32), (DType::F32, DType::F64)];
    for n in [1usize << 10, 1 << 18, 1 << 24] {
        for (from, to) in pairs {
            let x = Tensor::from_vec((0..n).map(|i| (i % 1000) as f32 * 0.37 - 100.0).collect::<Vec<f32>>(), [n], Device::Cpu(0)).unwrap().cast(from).unwrap();
            x.realize().unwrap();
            let iters = (1usize << 26) / n.max(1 << 14) + 5;
            let mut ts = Vec::new();
            for _ in 0..iters {
                let t = Instant::now();
                let y = x.cast(to).unwrap();
                y.realize().unwrap();
                ts.push(t.elapsed().as_secs_f64() * 1e6);
            }
            ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!("{} {} -> {} {:.1}", n, from, to, ts[ts.len() / 2]);
        }
    }
}
