//! TEMPORARY latency probe (not committed).
use std::time::Instant;

use super::*;
use crate::graph::Tensor;
use crate::{Algorithm, DeviceGroup, ReduceOp};

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2] * 1e6, mean * 1e6, v[0] * 1e6)
}

fn time(iters: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    for _ in 0..5 {
        f();
    }
    let v = (0..iters)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    stats(v)
}

#[test]
#[ignore]
fn nccl_latency_probe() {
    let n = driver::device_count();
    if n < 2 || !nccl_available() {
        println!("probe skipped");
        return;
    }
    let members = vec![Device::Cuda(0), Device::Cuda(1)];
    let clique = NcclClique::get(&members).unwrap();
    let iters = 50;
    for per_dev in [1usize << 20, 16 << 20] {
        let numel = per_dev / 4;
        for coll in ["all_reduce", "all_gather", "reduce_scatter"] {
            let in_len = if coll == "reduce_scatter" { numel * 2 } else { numel };
            let out_len = match coll {
                "all_gather" => numel * 2,
                _ => numel,
            };
            let c = match coll {
                "all_reduce" => Coll::AllReduce(NcclRedOp::Sum),
                "all_gather" => Coll::AllGather,
                _ => Coll::ReduceScatter(NcclRedOp::Sum),
            };
            let count = match coll {
                "reduce_scatter" => out_len,
                _ => in_len,
            };
            let host: Vec<Vec<f32>> =
                (0..2).map(|r| (0..in_len).map(|i| (i % 97 + r) as f32).collect()).collect();
            let shards: Vec<Tensor> = host
                .iter()
                .enumerate()
                .map(|(r, d)| Tensor::from_vec(d.clone(), [in_len], members[r]).unwrap())
                .collect();
            crate::realize(&shards).unwrap();
            let bufs: Vec<Arc<Buffer>> = shards.iter().map(|t| t.value().unwrap()).collect();
            let refs: Vec<&Buffer> = bufs.iter().map(|b| b.as_ref()).collect();
            let srcs: Vec<&Arc<DevAlloc>> = refs.iter().map(|b| alloc_of(b, "p").unwrap()).collect();
            let fixed: Vec<Option<Arc<DevAlloc>>> = clique
                .devs
                .iter()
                .zip(&clique.streams)
                .map(|(d, s)| Some(d.alloc(out_len * 4, s).unwrap()))
                .collect();
            let ops =
                |comms: &[Comm]| RedOps { ops: vec![sys::ncclRedOp_t::ncclSum; comms.len()], custom: None };
            let sync = || {
                for s in &clique.streams {
                    s.synchronize().unwrap();
                }
            };
            let raw = time(iters, || {
                let comms = clique.comms.lock();
                clique.group((c, DType::F32, count), &comms, &ops(&comms), &srcs, &fixed).unwrap();
                drop(comms);
                sync();
            });
            let raw_alloc = time(iters, || {
                let outs: Vec<Option<Arc<DevAlloc>>> = clique
                    .devs
                    .iter()
                    .zip(&clique.streams)
                    .map(|(d, s)| Some(d.alloc(out_len * 4, s).unwrap()))
                    .collect();
                let comms = clique.comms.lock();
                clique.group((c, DType::F32, count), &comms, &ops(&comms), &srcs, &outs).unwrap();
                drop(comms);
                sync();
            });
            let mut issue_t = vec![];
            let cl = time(iters, || {
                let t = Instant::now();
                let outs = clique.run(c, &refs).unwrap();
                issue_t.push(t.elapsed().as_secs_f64());
                for o in &outs {
                    o.wait().unwrap();
                }
            });
            let issue = stats(issue_t);
            let g = DeviceGroup::new(members.clone()).unwrap().using(Algorithm::Nccl);
            let build = |g: &DeviceGroup| match coll {
                "all_reduce" => g.all_reduce(&shards, ReduceOp::Sum).unwrap(),
                "all_gather" => g.all_gather(&shards, 0).unwrap(),
                _ => g.reduce_scatter(&shards, ReduceOp::Sum, 0).unwrap(),
            };
            let mut build_t = vec![];
            let grp = time(iters, || {
                let t = Instant::now();
                let outs = build(&g);
                build_t.push(t.elapsed().as_secs_f64());
                crate::realize(&outs).unwrap();
            });
            let b = stats(build_t);
            let mut last = vec![];
            let grp_keep = time(iters, || {
                let outs = build(&g);
                crate::realize(&outs).unwrap();
                last = outs;
            });
            println!(
                "PROBE {coll:>14} {:>3}MiB/dev  raw {:7.1} {:7.1} {:7.1} | raw+alloc {:7.1} {:7.1} | clique {:7.1} {:7.1} (issue {:5.1}) | group {:7.1} {:7.1} (build {:5.1}) | group-keep {:7.1} {:7.1}",
                per_dev >> 20,
                raw.0,
                raw.1,
                raw.2,
                raw_alloc.0,
                raw_alloc.1,
                cl.0,
                cl.1,
                issue.0,
                grp.0,
                grp.1,
                b.0,
                grp_keep.0,
                grp_keep.1
            );
        }
    }
}
