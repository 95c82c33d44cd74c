//! The sixth probe ([`super`]): the library's calls with host waits by kernel flags
//! ([`crate::backend::cuda::flag`]) against events alone, alternated in one process; and a
//! flagged wait querying its event every 2 µs (as it does) against every 20 and 200 µs.

use std::time::{Duration, Instant};

use super::N;
use crate::backend::cuda::tests::devices;
use crate::device::Device;
use crate::dtype::DType;
use crate::graph::{ReduceKind, Tensor};

/// Host waits by kernel flags against waits by events alone, over [`cases`], alternated
/// ([`alternate`]).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn flag_on_off_probe() {
    let Some(cases) = cases() else { return };
    let force = crate::backend::cuda::flag::force;
    alternate(&cases, &["on", "off"], |i| force(i == 0));
    force(true);
}

/// A flagged wait querying its event every 2 µs (`flag::QUERY_EVERY`, each query a driver call
/// of about a microsecond, during which a flag that lands is not seen) against every 20 µs and
/// every 200 µs (once, when the spin ends), over [`cases`], alternated ([`alternate`]).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn query_interval_probe() {
    let Some(cases) = cases() else { return };
    let every = |i: usize| Some(Duration::from_micros([2, 20, 200][i]));
    alternate(&cases, &["2 us", "20 us", "200 us"], |i| {
        crate::backend::cuda::flag::force_query_every(every(i))
    });
    crate::backend::cuda::flag::force_query_every(None);
}

/// The probes' calls: the 4 KiB `local_reduce` on `cuda:0` (and a 16 KiB one), an add and a
/// cast there, the `local_reduce` and add of 64 KiB and 1 MiB (launches of more blocks), the
/// all_reduce of `cuda:0, cpu:0`, and on every CUDA device (two or more, virtual ones included)
/// the all_reduce, all_gather, reduce_scatter and broadcast, at 4 KiB and 1 MiB per shard;
/// `None` without a CUDA device.
fn cases() -> Option<Vec<Case>> {
    drop(devices().into_iter().next()?);
    let n = crate::backend::cuda::device_count();
    let shard = |d: Device| Tensor::from_vec(vec![1.5f32; N], [N], d).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    let local = [shard(Device::Cuda(0)), shard(Device::Cuda(0))];
    crate::realize(&local).unwrap();
    let [a, b] = local.clone();
    cases.push((
        "local_reduce cuda:0".into(),
        Box::new(move || crate::realize(&[Tensor::reduce(&local, ReduceKind::Sum, None).unwrap()]).unwrap()),
    ));
    let c = a.clone();
    cases.push(("add cuda:0".into(), Box::new(move || c.add(&b).unwrap().realize().unwrap())));
    // 16 KiB: 1024 threads of the vector path, one block where the kernel's registers allow.
    let big = |d: Device| Tensor::from_vec(vec![1.5f32; 4 * N], [4 * N], d).unwrap();
    let wide = [big(Device::Cuda(0)), big(Device::Cuda(0))];
    crate::realize(&wide).unwrap();
    cases.push((
        "local_reduce cuda:0, 16 KiB".into(),
        Box::new(move || crate::realize(&[Tensor::reduce(&wide, ReduceKind::Sum, None).unwrap()]).unwrap()),
    ));
    cases.push((
        "cast f32 -> f16 cuda:0".into(),
        Box::new(move || a.cast(DType::F16).unwrap().realize().unwrap()),
    ));
    // More blocks: the last to finish stores the flag (64 KiB and 1 MiB per input).
    for (k, what) in [(16, "64 KiB"), (256, "1 MiB")] {
        let long = |d: Device| Tensor::from_vec(vec![1.5f32; k * N], [k * N], d).unwrap();
        let two = [long(Device::Cuda(0)), long(Device::Cuda(0))];
        crate::realize(&two).unwrap();
        let [x, y] = two.clone();
        cases.push((
            format!("local_reduce cuda:0, {what}"),
            Box::new(move || {
                crate::realize(&[Tensor::reduce(&two, ReduceKind::Sum, None).unwrap()]).unwrap()
            }),
        ));
        cases.push((format!("add cuda:0, {what}"), Box::new(move || x.add(&y).unwrap().realize().unwrap())));
    }
    let mut groups = vec![vec![Device::Cuda(0), Device::Cpu(0)]];
    if n >= 2 {
        groups.push((0..n).map(Device::Cuda).collect());
    }
    for devs in groups {
        let all_cuda = devs.iter().all(|d| matches!(d, Device::Cuda(_)));
        let sizes: &[(usize, &str)] =
            if all_cuda { &[(1, "4 KiB"), (256, "1 MiB")] } else { &[(1, "4 KiB")] };
        for &(k, size) in sizes {
            group_cases(&mut cases, &devs, k * N, size);
        }
    }
    Some(cases)
}

/// Times each of `cases` under each of `ways` (`set(i)` switches to way i), alternated in blocks
/// of 50 calls over 40 rounds (the order turned each round) so that drift of the machine falls on
/// every way; prints each way's median and tenth percentile of its 2000 calls.
fn alternate(cases: &[Case], ways: &[&str], set: impl Fn(usize)) {
    for (what, f) in cases {
        let mut times = vec![Vec::new(); ways.len()];
        for _ in 0..100 {
            f();
        }
        for round in 0..40 {
            for k in 0..ways.len() {
                let i = (round + k) % ways.len();
                set(i);
                for _ in 0..50 {
                    let s = Instant::now();
                    f();
                    times[i].push(s.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
        let stat = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            format!("{:7.2} / {:7.2}", v[v.len() / 2], v[v.len() / 10])
        };
        let rows: Vec<String> = times.iter_mut().map(stat).collect();
        println!("probe: {} (median / p10, us): {}  {what}", ways.join(" | "), rows.join(" | "));
    }
}

/// One row of [`flag_on_off_probe`]: what it calls, and the call.
type Case = (String, Box<dyn Fn()>);

/// [`flag_on_off_probe`]'s cases of the group `devs` at `len` elements per shard: the all_reduce,
/// and where every member is a CUDA device the all_gather, reduce_scatter and broadcast too.
fn group_cases(cases: &mut Vec<Case>, devs: &[Device], len: usize, size: &str) {
    use crate::{DeviceGroup, ReduceOp};
    let g = DeviceGroup::new(devs.to_vec()).unwrap();
    let shards: Vec<Tensor> =
        devs.iter().map(|&d| Tensor::from_vec(vec![1.5f32; len], [len], d).unwrap()).collect();
    crate::realize(&shards).unwrap();
    let names: Vec<String> = devs.iter().map(|d| d.to_string()).collect();
    let all_cuda = devs.iter().all(|d| matches!(d, Device::Cuda(_)));
    let ops: &[&str] =
        if all_cuda { &["all_reduce", "all_gather", "reduce_scatter", "broadcast"] } else { &["all_reduce"] };
    for &op in ops {
        let (g, shards) = (g.clone(), shards.clone());
        let run: Box<dyn Fn()> = Box::new(move || {
            let out = match op {
                "all_reduce" => g.all_reduce(&shards, ReduceOp::Sum),
                "all_gather" => g.all_gather(&shards, 0),
                "reduce_scatter" => g.reduce_scatter(&shards, ReduceOp::Sum, 0),
                _ => g.broadcast(&shards[0]),
            };
            crate::realize(&out.unwrap()).unwrap();
        });
        cases.push((format!("{op} {}, {size}", names.join(",")), run));
    }
}
