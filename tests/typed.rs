//! The typed group against the runtime `DeviceGroup` it is built on: on fresh random data, every
//! typed collective gives the runtime collective's result element for element (the same graph),
//! on the same devices, and both match the f64 reference. Groups of virtual CPU devices of 1 to
//! 4 members, star and ring; Vulkan (lavapipe) and CUDA where present.

use collectives::typed::{Cpu, Cuda, DeviceKind, Group, Members, Shard, ShardsOf, Vulkan};
use collectives::{
    Algorithm, DType, Device, DeviceGroup, Error, Plan, ReduceKind, ReduceOp, Scale, Tensor,
    available_devices, device_group,
};
use collectives_tests::{
    Range, check_all, fold_tol, fresh_seed, magnitude, random, ref_reduce, rng, tensor, values,
};
use rand::rngs::StdRng;

const DTYPES: [DType; 4] = [DType::F32, DType::BF16, DType::I32, DType::F64];
const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

/// Random inputs for one collective: one value list per member, all of `shape`.
struct Inputs {
    dtype: DType,
    shape: Vec<usize>,
    vals: Vec<Vec<f64>>,
}

impl Inputs {
    fn new(dtype: DType, members: usize, range: Range, rng: &mut StdRng) -> Inputs {
        let shape = vec![2 * members, 3];
        let n = shape.iter().product();
        let vals = (0..members).map(|_| random(dtype, n, range, rng)).collect();
        Inputs { dtype, shape, vals }
    }

    fn shards<M: Members, L: DeviceKind>(&self, g: &Group<M, L>) -> M::Shards<collectives::typed::Unbranded> {
        g.make_shards(|i, d| Ok(tensor(self.dtype, &self.vals[i], self.shape.clone(), d))).expect("shards")
    }

    fn refs(&self) -> Vec<&[f64]> {
        self.vals.iter().map(Vec::as_slice).collect()
    }
}

/// Typed and runtime results are the same values on the same devices.
fn same(typed: &[Tensor], runtime: &[Tensor], context: &str) -> Vec<Vec<f64>> {
    assert_eq!(typed.len(), runtime.len(), "{context}: count");
    typed
        .iter()
        .zip(runtime)
        .map(|(t, r)| {
            assert_eq!(t.device(), r.device(), "{context}: device");
            assert_eq!(t.shape(), r.shape(), "{context}: shape");
            let (tv, rv) = (values(t), values(r));
            check_all(&tv, &rv, |_| 0.0, context);
            tv
        })
        .collect()
}

fn lowered(op: ReduceOp, n: usize) -> (ReduceKind, Option<Scale>) {
    match op {
        ReduceOp::Sum => (ReduceKind::Sum, None),
        ReduceOp::Avg => (ReduceKind::Sum, Some(Scale::Div(n as f64))),
        ReduceOp::Max => (ReduceKind::Max, None),
        ReduceOp::Min => (ReduceKind::Min, None),
        ReduceOp::Prod => (ReduceKind::Prod, None),
        other => panic!("no reference for {other}"),
    }
}

/// The f64 reference of `op` over the inputs, with its per-element tolerance.
fn reference(inp: &Inputs, op: ReduceOp) -> (Vec<f64>, Vec<f64>) {
    let n = inp.vals.len();
    let (kind, scale) = lowered(op, n);
    let want = ref_reduce(inp.dtype, kind, scale, &inp.refs());
    let mag = match op {
        ReduceOp::Prod => (0..want.len()).map(|i| inp.vals.iter().map(|v| v[i].abs()).product()).collect(),
        _ => magnitude(&inp.refs()),
    };
    let tol = mag.iter().map(|&m| fold_tol(inp.dtype, n + 1, m)).collect();
    (want, tol)
}

fn reductions<M: Members, L: DeviceKind>(g: &Group<M, L>, rng: &mut StdRng, ctx: &str) {
    let rt = g.runtime();
    for dtype in DTYPES {
        for op in OPS {
            let range = if op == ReduceOp::Prod { Range::Product } else { Range::General };
            let inp = Inputs::new(dtype, g.size(), range, rng);
            let (want, tol) = reference(&inp, op);
            let ctx = format!("{ctx} {dtype} {op}");
            let tensors = inp.shards(g).tensors();

            let typed = g.all_reduce(inp.shards(g), op).unwrap().tensors();
            let runtime = rt.all_reduce(&tensors, op).unwrap();
            for got in same(&typed, &runtime, &format!("{ctx} all_reduce")) {
                check_all(&got, &want, |i| tol[i], &format!("{ctx} all_reduce vs f64"));
            }

            let typed = g.reduce(inp.shards(g), op).unwrap();
            assert_eq!(typed.device(), g.leader().device());
            let runtime = rt.reduce(&tensors, op).unwrap();
            let got = same(&[typed.into_tensor()], &[runtime], &format!("{ctx} reduce"));
            check_all(&got[0], &want, |i| tol[i], &format!("{ctx} reduce vs f64"));

            let typed = g.reduce_scatter(inp.shards(g), op, 0).unwrap().tensors();
            let runtime = rt.reduce_scatter(&tensors, op, 0).unwrap();
            let parts = same(&typed, &runtime, &format!("{ctx} reduce_scatter"));
            let got: Vec<f64> = parts.concat();
            check_all(&got, &want, |i| tol[i], &format!("{ctx} reduce_scatter vs f64"));
        }
    }
}

fn movements<M: Members, L: DeviceKind>(g: &Group<M, L>, rng: &mut StdRng, ctx: &str) {
    let rt = g.runtime();
    for dtype in DTYPES {
        let inp = Inputs::new(dtype, g.size(), Range::General, rng);
        let ctx = format!("{ctx} {dtype}");
        let tensors = inp.shards(g).tensors();
        let joined: Vec<f64> = inp.vals.concat();

        let typed = g.all_gather(inp.shards(g), 0).unwrap().tensors();
        let runtime = rt.all_gather(&tensors, 0).unwrap();
        for got in same(&typed, &runtime, &format!("{ctx} all_gather")) {
            check_all(&got, &joined, |_| 0.0, &format!("{ctx} all_gather vs input"));
        }

        let typed = g.gather(inp.shards(g), 0).unwrap().into_tensor();
        let runtime = rt.gather(&tensors, 0).unwrap();
        let got = same(&[typed], &[runtime], &format!("{ctx} gather"));
        check_all(&got[0], &joined, |_| 0.0, &format!("{ctx} gather vs input"));

        let root = g.leader().shard(tensors[rt.leader_index()].clone()).unwrap();
        let typed = g.broadcast(&root).unwrap().tensors();
        let runtime = rt.broadcast(root.tensor()).unwrap();
        for got in same(&typed, &runtime, &format!("{ctx} broadcast")) {
            check_all(&got, &inp.vals[rt.leader_index()], |_| 0.0, &format!("{ctx} broadcast"));
        }

        let typed = g.scatter(&root, 0).unwrap().tensors();
        let runtime = rt.scatter(root.tensor(), 0).unwrap();
        let got = same(&typed, &runtime, &format!("{ctx} scatter")).concat();
        check_all(&got, &inp.vals[rt.leader_index()], |_| 0.0, &format!("{ctx} scatter"));

        let typed = g.all_to_all(inp.shards(g), 0).unwrap().tensors();
        let runtime = rt.all_to_all(&tensors, 0).unwrap();
        let got = same(&typed, &runtime, &format!("{ctx} all_to_all"));
        check_all_to_all(&inp, &got, &ctx);
    }
}

/// Member j holds part j (rows 2j..2j+2) of every input, in member order.
fn check_all_to_all(inp: &Inputs, got: &[Vec<f64>], ctx: &str) {
    let part = 2 * inp.shape[1];
    for (j, out) in got.iter().enumerate() {
        let want: Vec<f64> = inp.vals.iter().flat_map(|v| v[j * part..(j + 1) * part].to_vec()).collect();
        check_all(out, &want, |_| 0.0, &format!("{ctx} all_to_all member {j}"));
    }
}

fn every_collective<M: Members, L: DeviceKind>(g: Group<M, L>, ctx: &str) {
    let seed = fresh_seed();
    let rng = &mut rng(seed);
    for algorithm in [Algorithm::Star, Algorithm::Ring] {
        let g = g.using(algorithm);
        let ctx = format!("{ctx} {algorithm} (seed {seed})");
        reductions(&g, rng, &ctx);
        movements(&g, rng, &ctx);
    }
}

#[test]
fn typed_equals_runtime_on_one_to_four_cpu_devices() {
    every_collective(device_group!(Cpu(0)).unwrap(), "1 cpu");
    every_collective(device_group!(Cpu(0), Cpu(1)).unwrap(), "2 cpus");
    every_collective(device_group!(Cpu(2), Cpu(0), Cpu(1)).unwrap(), "3 cpus");
    let led = device_group!(Cpu(0), Cpu(1), Cpu(2), Cpu(3), leader = Cpu(2)).unwrap();
    assert_eq!(led.runtime().leader_index(), 2);
    every_collective(led, "4 cpus led by cpu:2");
}

#[test]
fn coalesced_buckets_equal_runtime() {
    let g = device_group!(Cpu(0), Cpu(1), Cpu(2)).unwrap();
    let rng = &mut rng(fresh_seed());
    let (a, b, c) = g.members();
    let shapes: [&[usize]; 3] = [&[4], &[2, 3], &[1]];
    let make = |m: collectives::typed::Member<Cpu>, rng: &mut StdRng| -> Vec<Shard<Cpu>> {
        shapes
            .iter()
            .map(|s| {
                let n = s.iter().product();
                m.shard(tensor(
                    DType::F32,
                    &random(DType::F32, n, Range::General, rng),
                    s.to_vec(),
                    m.device(),
                ))
                .unwrap()
            })
            .collect()
    };
    let buckets = (make(a, rng), make(b, rng), make(c, rng));
    let tensors: Vec<Vec<Tensor>> = [&buckets.0, &buckets.1, &buckets.2]
        .iter()
        .map(|b| b.iter().map(|s| s.tensor().clone()).collect())
        .collect();
    let typed = g.all_reduce_coalesced(buckets, ReduceOp::Avg).unwrap();
    let runtime = g.runtime().all_reduce_coalesced(&tensors, ReduceOp::Avg).unwrap();
    for (member, (t, r)) in [typed.0, typed.1, typed.2].iter().zip(&runtime).enumerate() {
        let t: Vec<Tensor> = t.iter().map(|s| s.tensor().clone()).collect();
        same(&t, r, &format!("coalesced member {member}"));
        for (j, out) in t.iter().enumerate() {
            let inputs: Vec<Vec<f64>> = tensors.iter().map(|b| values(&b[j])).collect();
            let refs: Vec<&[f64]> = inputs.iter().map(Vec::as_slice).collect();
            let want = ref_reduce(DType::F32, ReduceKind::Sum, Some(Scale::Div(3.0)), &refs);
            let mag = magnitude(&refs);
            check_all(&values(out), &want, |i| fold_tol(DType::F32, 4, mag[i]), "coalesced vs f64");
        }
    }
}

#[test]
fn mixed_groups_build_the_runtime_graphs_without_the_gpus() {
    let devices = [Device::Cuda(0), Device::Cuda(1), Device::Vulkan(0), Device::Cpu(0)];
    let g: Group<(Cuda, Cuda, Vulkan, Cpu)> = Group::from_devices(&devices, Device::Cuda(0)).unwrap();
    let rt = DeviceGroup::new(devices.to_vec()).unwrap();
    // At `HOST_STAGED_BELOW_BYTES` a shard: smaller, the group's all_reduce is one host call.
    let len = collectives::collective::HOST_STAGED_BELOW_BYTES / 4;
    let shards = g.make_shards(|_, d| Tensor::from_vec(vec![1.0f32; len], [len], d)).unwrap();
    let tensors = shards.tensors();
    let typed = g.all_reduce(shards, ReduceOp::Sum).unwrap().tensors();
    let runtime = rt.all_reduce(&tensors, ReduceOp::Sum).unwrap();
    assert_eq!(Plan::of(&typed), Plan::of(&runtime));
    let staged = Plan::of(&typed).hops.iter().filter(|h| h.to == Device::Vulkan(0)).count();
    assert!(staged > 0, "the Vulkan member is reached through the host");
    assert!(Plan::of(&typed).hops.iter().all(|h| !h.from.needs_staging(h.to)));
}

#[test]
fn absent_gpus_are_errors_never_substitutes() {
    let present = available_devices();
    if !present.contains(&Device::Cuda(0)) {
        let err = device_group!(Cuda, Cpu).unwrap_err();
        assert!(matches!(err, Error::DeviceUnavailable { device: Device::Cuda(0), .. }), "{err}");
        println!("no CUDA device: device_group!(Cuda, Cpu) is {err}");
    }
    if !present.contains(&Device::Vulkan(0)) {
        let err = device_group!(Cpu, Vulkan).unwrap_err();
        assert!(matches!(err, Error::DeviceUnavailable { device: Device::Vulkan(0), .. }), "{err}");
    }
}

#[test]
fn runtime_checks_back_the_types() {
    let a = device_group!(Cpu(0), Cpu(1)).unwrap();
    let b = device_group!(Cpu(2), Cpu(3)).unwrap();
    // Unbranded groups share shard types; the runtime check still catches a foreign shard.
    let (x, y) = a.members();
    let shards = (x.tensor(vec![1.0f32], [1]).unwrap(), y.tensor(vec![2.0f32], [1]).unwrap());
    let err = b.all_reduce(shards, ReduceOp::Sum).unwrap_err();
    assert!(matches!(err, Error::ShardDevice { index: 0, .. }), "{err}");
    let err = a.make_shards(|_, _| Tensor::from_vec(vec![1.0f32], [1], Device::Cpu(5))).unwrap_err();
    assert!(matches!(err, Error::ShardDevice { .. }), "{err}");
    let on_cpu = Tensor::from_vec(vec![1.0f32], [1], Device::Cpu(0)).unwrap();
    assert!(matches!(Shard::<Cuda>::new(on_cpu.clone()), Err(Error::InvalidArgument { .. })));
    assert!(Shard::<Cpu>::new(on_cpu).is_ok());
    let wrong_kind = Group::<(Cpu, Cuda)>::from_devices(&[Device::Cpu(0), Device::Cpu(1)], Device::Cpu(0));
    assert!(matches!(wrong_kind, Err(Error::InvalidArgument { .. })));
    let wrong_count = Group::<(Cpu, Cpu)>::from_devices(&[Device::Cpu(0)], Device::Cpu(0));
    assert!(matches!(wrong_count, Err(Error::ShardCount { .. })));
    let twice = Group::<(Cpu, Cpu)>::from_devices(&[Device::Cpu(0), Device::Cpu(0)], Device::Cpu(0));
    assert!(matches!(twice, Err(Error::DuplicateDevice { .. })));
    let outsider = Group::<(Cpu, Cpu)>::from_devices(&[Device::Cpu(0), Device::Cpu(1)], Device::Cpu(7));
    assert!(matches!(outsider, Err(Error::LeaderNotMember { .. })));
}

/// What the types cannot see is checked at run time (see the `typed` module docs, "Checked at
/// run time"): a clear `Error`, never a panic, and the inputs are left as they were.
#[test]
fn runtime_checks_what_the_types_cannot() {
    struct Train;
    let intact = |shards: &[&Shard<Cpu, Train>], want: &[f32]| {
        for (s, &w) in shards.iter().zip(want) {
            assert_eq!(s.to_vec::<f32>().unwrap(), vec![w]);
        }
    };
    let a = device_group!(Cpu(0), Cpu(1), brand = Train).unwrap();
    let b = device_group!(Cpu(2), Cpu(3), brand = Train).unwrap();
    let (x, y) = a.members();
    let (x, y) = (x.tensor(vec![1.0f32], [1]).unwrap(), y.tensor(vec![2.0f32], [1]).unwrap());
    // Two groups with the same brand type share shard types: b refuses a's shards.
    let err = b.all_reduce((x.clone(), y.clone()), ReduceOp::Sum).unwrap_err();
    assert!(matches!(err, Error::ShardDevice { index: 0, .. }), "{err}");
    // Shards of one kind in the wrong order have the right types: the device check refuses them.
    let err = a.all_reduce((y.clone(), x.clone()), ReduceOp::Sum).unwrap_err();
    assert!(matches!(err, Error::ShardDevice { index: 0, .. }), "{err}");
    intact(&[&x, &y], &[1.0, 2.0]);

    // A root of a kind the group does not have (a CUDA group; the check runs before any device
    // is touched, so no GPU is needed).
    let cudas = [Device::Cuda(0), Device::Cuda(1)];
    let g: Group<(Cuda, Cuda)> = Group::from_devices(&cudas, cudas[0]).unwrap();
    let root = collectives::typed::Member::<Cpu>::new(Device::Cpu(0))
        .unwrap()
        .tensor(vec![1.0f32, 2.0], [2])
        .unwrap();
    let err = g.broadcast(&root).unwrap_err();
    assert!(matches!(err, Error::NotMember { device: Device::Cpu(0), .. }), "{err}");
    let err = g.scatter(&root, 0).unwrap_err();
    assert!(matches!(err, Error::NotMember { device: Device::Cpu(0), .. }), "{err}");
    let err = g.scatter_sizes(&root, 0, &[1, 1]).unwrap_err();
    assert!(matches!(err, Error::NotMember { device: Device::Cpu(0), .. }), "{err}");
    assert_eq!(root.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}

/// A typed group with a GPU member, against the runtime group, on a few collectives.
fn gpu_group<K: DeviceKind>(label: &str, required: bool) {
    let device = K::device(0);
    if !available_devices().contains(&device) {
        assert!(!required, "{label} is required (REQUIRE_*=1) but {device} is absent");
        println!("skipped: no {device} on this machine");
        return;
    }
    let g: Group<(K, Cpu)> = Group::open(&[device, Device::Cpu(1)], device).unwrap();
    let seed = fresh_seed();
    let rng = &mut rng(seed);
    reductions(&g, rng, &format!("{label} + cpu (seed {seed})"));
    movements(&g, rng, &format!("{label} + cpu (seed {seed})"));
}

#[test]
fn typed_equals_runtime_on_vulkan_where_present() {
    gpu_group::<Vulkan>("vulkan", collectives_tests::vulkan_required());
}

#[test]
fn typed_equals_runtime_on_cuda_where_present() {
    gpu_group::<Cuda>("cuda", collectives_tests::cuda_required());
}

#[test]
fn no_staging_groups_hop_only_between_members() {
    fn check<M: collectives::typed::NoStaging>(devices: &[Device]) {
        let g: Group<M> = Group::from_devices(devices, devices[0]).unwrap();
        let shards = g.make_shards(|_, d| Tensor::from_vec(vec![1.0f32; 64], [64], d)).unwrap();
        for algorithm in [Algorithm::Star, Algorithm::Ring] {
            let out = g.using(algorithm).all_reduce(shards.clone(), ReduceOp::Sum).unwrap();
            for hop in Plan::of(&out.tensors()).hops {
                assert!(devices.contains(&hop.from) && devices.contains(&hop.to), "{hop:?}");
            }
        }
    }
    check::<(Cuda, Cuda, Cpu)>(&[Device::Cuda(0), Device::Cuda(1), Device::Cpu(1)]);
    check::<(Vulkan, Cpu, Cpu)>(&[Device::Vulkan(0), Device::Cpu(1), Device::Cpu(2)]);
}

#[test]
fn vulkan_pairs_are_staged_as_the_runtime_stages_them() {
    let devices = [Device::Vulkan(0), Device::Vulkan(1), Device::Cpu(1)];
    let g: Group<(Vulkan, Vulkan, Cpu)> = Group::from_devices(&devices, devices[0]).unwrap();
    let rt = DeviceGroup::new(devices.to_vec()).unwrap();
    // Below HOST_STAGED_BELOW_BYTES a shard the star is one host call, the Vulkan members'
    // shards and outputs copied inside it: no hop.
    let small = g.make_shards(|_, d| Tensor::from_vec(vec![1.0f32; 64], [64], d)).unwrap();
    let plan = Plan::of(&g.all_reduce(small, ReduceOp::Sum).unwrap().tensors());
    let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str())).collect();
    assert_eq!(ks, [(Device::Cpu(1), "collective host all_reduce (staged through cpu:1)")], "{plan}");
    assert!(plan.hops.is_empty(), "{plan}");
    let len = collectives::collective::HOST_STAGED_BELOW_BYTES / 4;
    let shards = g.make_shards(|_, d| Tensor::from_vec(vec![1.0f32; len], [len], d)).unwrap();
    let tensors = shards.tensors();
    for algorithm in [Algorithm::Star, Algorithm::Ring] {
        let typed = g.using(algorithm).all_reduce(shards.clone(), ReduceOp::Sum).unwrap().tensors();
        let runtime = rt.using(algorithm).all_reduce(&tensors, ReduceOp::Sum).unwrap();
        let plan = Plan::of(&typed);
        assert_eq!(plan, Plan::of(&runtime), "{algorithm:?}");
        let vk = |d: Device| d.kind() == collectives::DeviceKind::Vulkan;
        assert!(plan.hops.iter().all(|h| !(vk(h.from) && vk(h.to))), "{algorithm:?}: {plan:?}");
        assert!(plan.hops.iter().any(|h| h.to == Device::Cpu(0)), "{algorithm:?}: staged through cpu:0");
    }
}
