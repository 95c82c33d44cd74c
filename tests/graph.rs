//! The lazy graph and the executor: building touches no device, the cross-device pass inserts the
//! right copies (and only those), realize runs several targets on several devices at once, caches
//! targets and nothing else, and `Move` frees what it may and nothing more.

use collectives::graph::STAGING_HOST;
use collectives::graph::opt::{insert_cross_device_copies, readable};
use collectives::{BinaryOp, DType, Device, Error, Op, ReduceKind, Scale, Tensor, realize};
use collectives_tests::{Range, check_all, fresh_seed, random, ref_binary, rng, tensor, values};

/// Every op of the graph, on devices this machine does not have.
#[test]
fn building_a_graph_touches_no_device() {
    let a = Tensor::from_vec(vec![1.0f32; 6], [2, 3], Device::Cuda(7)).unwrap();
    let b = Tensor::from_vec(vec![2.0f32; 6], [2, 3], Device::Vulkan(5)).unwrap();
    let c = Tensor::from_vec(vec![3.0f32; 6], [2, 3], Device::Cuda(3)).unwrap();
    let sum = a.add(&b).unwrap().mul(&c).unwrap();
    let red =
        Tensor::reduce(&[sum.clone(), b.clone(), c.clone()], ReduceKind::Max, Some(Scale::Div(2.0))).unwrap();
    let cat = Tensor::concat(&[red.clone(), sum.narrow(1, 1, 2).unwrap()], 1).unwrap();
    let out = cat.cast(DType::BF16).unwrap().reshape([5, 2]).unwrap().scale(Scale::Mul(3.0)).unwrap();
    let hop = out.copy_to_device(Device::Cpu(0)).unwrap().copy_to_device(Device::Vulkan(1)).unwrap();
    let moved = hop.clone().move_to_device(Device::Vulkan(2)).unwrap();

    assert_eq!(sum.device(), Device::Cuda(7), "a compute op runs on its first input's device");
    assert_eq!(red.device(), Device::Cuda(7));
    assert_eq!(cat.shape().dims(), &[2, 5]);
    assert_eq!((out.dtype(), out.shape().dims()), (DType::BF16, &[5usize, 2][..]));
    assert_eq!(hop.device(), Device::Vulkan(1));
    assert_eq!(moved.op(), &Op::Move { to: Device::Vulkan(2) });
    for t in [&a, &b, &c, &sum, &red, &cat, &out, &hop, &moved] {
        assert!(!t.is_realized(), "{t:?}: nothing is uploaded or computed while building");
    }
    // The pass runs without the devices too.
    let rewritten = insert_cross_device_copies(&[moved.clone(), out.clone()]);
    assert_eq!(rewritten.len(), 2);
    assert_eq!(rewritten[0].op(), &Op::Move { to: Device::Vulkan(2) });
}

/// Counts the nodes below `t` (itself included) whose op is a `Copy`.
fn copies_below(t: &Tensor) -> usize {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![t.clone()];
    let mut n = 0;
    while let Some(t) = stack.pop() {
        if seen.insert(t.id()) {
            n += usize::from(matches!(t.op(), Op::Copy { .. }));
            stack.extend(t.inputs().iter().cloned());
        }
    }
    n
}

fn input(d: Device) -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], d).unwrap()
}

#[test]
fn staged_edges_are_two_copies_through_the_host() {
    // Across GPU vendors, and between two Vulkan devices (no Vulkan device reads another's
    // memory: the route goes through the host, as the data always did).
    let pairs = [
        (Device::Cuda(1), Device::Vulkan(0)),
        (Device::Vulkan(2), Device::Cuda(0)),
        (Device::Vulkan(0), Device::Vulkan(1)),
    ];
    for (from, to) in pairs {
        let (x, y) = (input(to), input(from));
        let out = insert_cross_device_copies(&[x.add(&y).unwrap()]).remove(0);
        assert!(out.inputs()[0].same_node(&x), "the local input is taken as it is");
        let second = &out.inputs()[1];
        assert_eq!((second.op(), second.device()), (&Op::Copy { to }, to));
        let first = &second.inputs()[0];
        assert_eq!((first.op(), first.device()), (&Op::Copy { to: STAGING_HOST }, Device::Cpu(0)));
        assert!(first.inputs()[0].same_node(&y), "the first hop reads the original source");
        assert_eq!(copies_below(&out), 2, "{from} -> {to}: exactly two copies");
        assert_eq!((second.dtype(), second.shape()), (y.dtype(), y.shape()));
    }
}

#[test]
fn one_hop_edges_get_one_copy() {
    let pairs = [
        (Device::Cpu(3), Device::Cuda(0)),
        (Device::Vulkan(0), Device::Cpu(2)),
        (Device::Cuda(1), Device::Cpu(0)),
    ];
    for (from, to) in pairs {
        let y = input(from);
        let out = insert_cross_device_copies(&[input(to).mul(&y).unwrap()]).remove(0);
        let hop = &out.inputs()[1];
        assert_eq!(hop.op(), &Op::Copy { to }, "{from} -> {to}");
        assert!(hop.inputs()[0].same_node(&y));
        assert_eq!(copies_below(&out), 1, "{from} -> {to}");
    }
}

/// Virtual host devices share one memory system: an op on one reads another's buffer in place,
/// as a GPU with peer access reads its peer's memory. No copy is inserted, and the result is
/// right.
#[test]
fn host_devices_read_each_other_in_place() {
    for (on, from) in [(Device::Cpu(0), Device::Cpu(3)), (Device::Cpu(7), Device::Cpu(0))] {
        assert!(readable(on, from) && readable(from, on) && readable(on, on));
        let seed = fresh_seed();
        let mut r = rng(seed);
        let (a, b) =
            (random(DType::F32, 50, Range::General, &mut r), random(DType::F32, 50, Range::General, &mut r));
        let (x, y) = (tensor(DType::F32, &a, [5, 10], on), tensor(DType::F32, &b, [5, 10], from));
        let s = x.mul(&y).unwrap();
        let out = insert_cross_device_copies(std::slice::from_ref(&s)).remove(0);
        assert!(out.same_node(&s), "{from} -> {on}: nothing to insert");
        let want: Vec<f64> = a.iter().zip(&b).map(|(p, q)| (p * q) as f32 as f64).collect();
        check_all(&values(&s), &want, |_| 0.0, &format!("{from} -> {on}, seed {seed}"));
        assert_eq!(s.device(), on);
    }
    assert!(readable(Device::Cuda(0), Device::Cuda(1)), "CUDA peers read each other in place");
    for (on, from) in [(Device::Cpu(0), Device::Cuda(0)), (Device::Vulkan(0), Device::Cpu(1))] {
        assert!(!readable(on, from), "{on} reads {from} only through a copy");
    }
}

/// `reduce_on` and `concat_on` run where they are told: host inputs are read in place by a host
/// device, and copied to a GPU (staged across vendors).
#[test]
fn reduce_on_and_concat_on_run_on_the_given_device() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let xs: Vec<Vec<f64>> = (0..3).map(|_| random(DType::I32, 12, Range::General, &mut r)).collect();
    let ts: Vec<Tensor> =
        xs.iter().enumerate().map(|(i, x)| tensor(DType::I32, x, [3, 4], Device::Cpu(i as u32))).collect();
    let red = Tensor::reduce_on(Device::Cpu(5), &ts, ReduceKind::Sum, Some(Scale::Mul(2.0))).unwrap();
    let cat = Tensor::concat_on(Device::Cpu(6), &ts, 1).unwrap();
    assert_eq!(
        (red.device(), cat.device(), cat.shape().dims()),
        (Device::Cpu(5), Device::Cpu(6), &[3usize, 12][..])
    );
    let out = insert_cross_device_copies(&[red.clone(), cat.clone()]);
    assert!(out[0].same_node(&red) && out[1].same_node(&cat), "host inputs are read in place");
    let want: Vec<f64> = (0..12).map(|i| 2.0 * (xs[0][i] + xs[1][i] + xs[2][i])).collect();
    check_all(&values(&red), &want, |_| 0.0, &format!("reduce_on, seed {seed}"));
    let want: Vec<f64> =
        (0..3).flat_map(|row| xs.iter().flat_map(move |x| x[row * 4..row * 4 + 4].to_vec())).collect();
    check_all(&values(&cat), &want, |_| 0.0, &format!("concat_on, seed {seed}"));
    // On a GPU, every input is copied there: one hop from the host, two from the other vendor.
    let v = Tensor::from_vec(vec![1i32; 12], [3, 4], Device::Vulkan(0)).unwrap();
    let mut on_gpu = ts.clone();
    on_gpu.push(v);
    let red = Tensor::reduce_on(Device::Cuda(1), &on_gpu, ReduceKind::Max, None).unwrap();
    let out = insert_cross_device_copies(&[red]).remove(0);
    assert!(out.inputs().iter().all(|i| i.op() == &Op::Copy { to: Device::Cuda(1) }));
    assert_eq!(copies_below(&out), 5, "three from the host, two for the Vulkan input");
    let cat = Tensor::concat_on(Device::Vulkan(2), &on_gpu, 0).unwrap();
    assert_eq!(copies_below(&insert_cross_device_copies(&[cat]).remove(0)), 5, "Vulkan to Vulkan: two");
    assert_eq!(
        Tensor::reduce_on(Device::Cpu(0), &[], ReduceKind::Sum, None).unwrap_err(),
        Error::NoInputs { op: "reduce" }
    );
    assert_eq!(Tensor::concat_on(Device::Cpu(0), &[], 0).unwrap_err(), Error::NoInputs { op: "concat" });
}

#[test]
fn copy_and_move_consumers_are_skipped() {
    // A user's copy or move is taken as written: the pass puts no copy in front of it.
    let src = input(Device::Cuda(0));
    let c = src.copy_to_device(Device::Cpu(2)).unwrap();
    let m = src.clone().move_to_device(Device::Cuda(1)).unwrap();
    let out = insert_cross_device_copies(&[c.clone(), m.clone()]);
    assert!(out[0].same_node(&c) && out[1].same_node(&m));
    // Below a copy, a compute op with a remote input is still fixed, and the copy is rebuilt on
    // the fixed op with no copy put on the copy's own edge.
    let remote = input(Device::Vulkan(0));
    let c2 = input(Device::Cuda(0)).sub(&remote).unwrap().copy_to_device(Device::Cpu(0)).unwrap();
    let out = insert_cross_device_copies(std::slice::from_ref(&c2)).remove(0);
    assert_eq!(out.op(), &Op::Copy { to: Device::Cpu(0) });
    assert_eq!(out.inputs()[0].op(), &Op::Binary(BinaryOp::Sub));
    assert_eq!(copies_below(&out), 3, "the user's copy and the two staged hops");
}

#[test]
fn the_pass_is_idempotent() {
    let (a, b, c) = (input(Device::Cuda(0)), input(Device::Vulkan(0)), input(Device::Cpu(3)));
    let s = Tensor::reduce(&[a, b, c], ReduceKind::Sum, None).unwrap().scale(Scale::Mul(2.0)).unwrap();
    let once = insert_cross_device_copies(&[s]).remove(0);
    let twice = insert_cross_device_copies(std::slice::from_ref(&once)).remove(0);
    assert!(twice.same_node(&once), "a rewritten graph needs no more copies");
    assert_eq!(copies_below(&once), 3, "vulkan:0 -> cpu:0 -> cuda:0 and cpu:3 -> cuda:0");
}

#[test]
fn a_source_is_copied_once_per_destination() {
    let x = input(Device::Cuda(5));
    let (y0, y1) = (input(Device::Cuda(0)), input(Device::Cpu(1)));
    let (p, q, r) = (y0.add(&x).unwrap(), y0.mul(&x).unwrap(), y1.add(&x).unwrap());
    let out = insert_cross_device_copies(&[p, q, r]);
    assert!(out[0].inputs()[1].same_node(&out[1].inputs()[1]), "one copy to cuda:0 for two readers");
    assert!(!out[0].inputs()[1].same_node(&out[2].inputs()[1]), "another for cpu:1");
    assert_eq!(out[2].inputs()[1].op(), &Op::Copy { to: Device::Cpu(1) });
}

#[test]
fn realized_nodes_are_leaves_of_the_pass() {
    let x = input(Device::Cpu(0)).scale(Scale::Mul(2.0)).unwrap();
    x.realize().unwrap();
    let s = input(Device::Cuda(1)).add(&x).unwrap();
    let out = insert_cross_device_copies(&[s]).remove(0);
    assert!(out.inputs()[1].inputs()[0].same_node(&x), "the copy reads the realized node itself");
    assert_eq!(values(&x), vec![2.0, 4.0, 6.0]);
}

/// Several targets, on several devices, in one realize; each checked against an f64 reference.
#[test]
fn realize_many_targets_across_devices() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let shape = [3, 7, 5];
    let n = 105;
    let dt = DType::F32;
    let xs: Vec<Vec<f64>> = (0..4).map(|_| random(dt, n, Range::General, &mut r)).collect();
    let ts: Vec<Tensor> =
        xs.iter().enumerate().map(|(i, x)| tensor(dt, x, shape, Device::Cpu(i as u32))).collect();
    // On cpu:i, x_i op x_(i+1) with the neighbour read in place; plus a 4-way reduce on cpu:3.
    let ops = [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Sub];
    let mut targets: Vec<Tensor> = (0..4).map(|i| ts[i].binary(ops[i], &ts[(i + 1) % 4]).unwrap()).collect();
    let order = [ts[3].clone(), ts[0].clone(), ts[1].clone(), ts[2].clone()];
    targets.push(Tensor::reduce(&order, ReduceKind::Sum, None).unwrap());
    realize(&targets).unwrap();
    for (i, t) in targets.iter().enumerate() {
        assert!(t.is_realized(), "target {i}");
        assert_eq!(t.device(), Device::Cpu((i % 4) as u32 + 3 * u32::from(i == 4)));
    }
    for i in 0..4 {
        let want: Vec<f64> =
            (0..n).map(|e| ref_binary(dt, ops[i], xs[i][e], xs[(i + 1) % 4][e]) as f32 as f64).collect();
        check_all(&values(&targets[i]), &want, |_| 0.0, &format!("target {i}, seed {seed}"));
    }
    let want: Vec<f64> = (0..n).map(|e| xs[3][e] + xs[0][e] + xs[1][e] + xs[2][e]).collect();
    let tol = |e: usize| 4.0 * f32::EPSILON as f64 * (0..4).map(|k| xs[k][e].abs()).sum::<f64>();
    check_all(&values(&targets[4]), &want, tol, &format!("reduce, seed {seed}"));
    for t in &ts {
        assert!(t.is_realized(), "inputs stay where they were");
    }
}

#[test]
fn realize_caches_targets_and_not_intermediates() {
    let seed = fresh_seed();
    let vals = random(DType::I32, 12, Range::General, &mut rng(seed));
    let x = tensor(DType::I32, &vals, [3, 4], Device::Cpu(0));
    let a = x.scale(Scale::Mul(3.0)).unwrap(); // intermediate on cpu:0
    let moved = a.copy_to_device(Device::Cpu(1)).unwrap(); // intermediate copy
    let b = moved.add(&x).unwrap(); // x read in place from cpu:0
    let c = b.narrow(1, 1, 2).unwrap(); // target
    let d = b.reshape([12]).unwrap(); // target sharing b
    realize(&[c.clone(), d.clone()]).unwrap();
    assert!(c.is_realized() && d.is_realized());
    for (name, t) in [("scale", &a), ("copy", &moved), ("add", &b)] {
        assert!(!t.is_realized(), "{name}: intermediates are released, not cached (seed {seed})");
    }
    assert!(x.is_realized());
    let want_b: Vec<f64> = vals.iter().map(|v| v * 4.0).collect();
    check_all(&values(&d), &want_b, |_| 0.0, &format!("reshape, seed {seed}"));
    let want_c: Vec<f64> = (0..3).flat_map(|r| [want_b[r * 4 + 1], want_b[r * 4 + 2]]).collect();
    check_all(&values(&c), &want_c, |_| 0.0, &format!("narrow, seed {seed}"));
    // An intermediate realized later is recomputed from its inputs, correctly.
    check_all(&values(&b), &want_b, |_| 0.0, &format!("add later, seed {seed}"));
    assert!(!a.is_realized(), "realizing b computed a again without caching it");
}

#[test]
fn realize_edge_cases() {
    realize(&[]).unwrap();
    let x = input(Device::Cpu(2));
    let y = x.add(&x).unwrap();
    realize(&[y.clone(), y.clone(), x.clone()]).unwrap(); // duplicates and a leaf
    assert_eq!(values(&y), vec![2.0, 4.0, 6.0]);
    realize(std::slice::from_ref(&y)).unwrap(); // already realized: nothing to do
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
}

#[test]
fn move_of_the_last_handle_frees_the_source() {
    let seed = fresh_seed();
    let vals = random(DType::F64, 9, Range::General, &mut rng(seed));
    // An input moved away: its host data is released once copied.
    let m = tensor(DType::F64, &vals, [9], Device::Cpu(0)).move_to_device(Device::Cpu(1)).unwrap();
    let w = tensor(DType::F64, &vals, [9], Device::Cpu(1));
    let z = m.add(&w).unwrap();
    realize(std::slice::from_ref(&z)).unwrap();
    assert!(!m.inputs()[0].is_realized(), "the source's buffer was freed (seed {seed})");
    assert!(m.is_realized(), "the move keeps the data, as the source cannot recompute it");
    check_all(&values(&m), &vals, |_| 0.0, &format!("moved input, seed {seed}"));
    let twice: Vec<f64> = vals.iter().map(|v| v * 2.0).collect();
    check_all(&values(&z), &twice, |_| 0.0, &format!("sum, seed {seed}"));

    // A realized computed tensor moved away, as a target.
    let y = tensor(DType::F64, &vals, [9], Device::Cpu(2)).scale(Scale::Mul(2.0)).unwrap();
    y.realize().unwrap();
    let m2 = y.move_to_device(Device::Cpu(3)).unwrap();
    m2.realize().unwrap();
    assert!(!m2.inputs()[0].is_realized(), "the realized source was freed (seed {seed})");
    check_all(&values(&m2), &twice, |_| 0.0, &format!("moved result, seed {seed}"));
    assert_eq!(m2.device(), Device::Cpu(3));

    // A move to the tensor's own device takes the buffer as it is.
    let m3 = tensor(DType::F64, &vals, [9], Device::Cpu(4)).move_to_device(Device::Cpu(4)).unwrap();
    check_all(&values(&m3), &vals, |_| 0.0, &format!("self move, seed {seed}"));
    assert!(!m3.inputs()[0].is_realized());
}

#[test]
fn move_of_a_shared_handle_leaves_the_source_intact() {
    let seed = fresh_seed();
    let vals = random(DType::BF16, 33, Range::General, &mut rng(seed));
    let x = tensor(DType::BF16, &vals, [3, 11], Device::Cpu(0));
    let m = x.clone().move_to_device(Device::Cpu(1)).unwrap();
    check_all(&values(&m), &vals, |_| 0.0, &format!("moved, seed {seed}"));
    assert!(x.is_realized(), "another handle holds the source, so its buffer stays");
    check_all(&values(&x), &vals, |_| 0.0, &format!("source, seed {seed}"));
    // The same for a computed source that is realized and shared.
    let y = x.scale(Scale::Mul(-1.0)).unwrap();
    y.realize().unwrap();
    let m2 = y.clone().move_to_device(Device::Cpu(2)).unwrap();
    let neg: Vec<f64> = vals.iter().map(|v| -v).collect();
    check_all(&values(&m2), &neg, |_| 0.0, &format!("moved, seed {seed}"));
    assert!(y.is_realized());
    check_all(&values(&y), &neg, |_| 0.0, &format!("source after move, seed {seed}"));
    // And for a same-device move.
    let m3 = x.clone().move_to_device(Device::Cpu(0)).unwrap();
    check_all(&values(&m3), &vals, |_| 0.0, &format!("self move, seed {seed}"));
    check_all(&values(&x), &vals, |_| 0.0, &format!("source after self move, seed {seed}"));
}

#[test]
fn copies_chain_across_every_virtual_device() {
    let seed = fresh_seed();
    let vals = random(DType::U8, 1000, Range::General, &mut rng(seed));
    let mut t = tensor(DType::U8, &vals, [10, 100], Device::Cpu(0));
    for d in (1..8).chain(std::iter::once(0)) {
        t = t.copy_to_device(Device::Cpu(d)).unwrap();
        assert_eq!(t.device(), Device::Cpu(d));
    }
    check_all(&values(&t), &vals, |_| 0.0, &format!("round trip, seed {seed}"));
}

/// Graphs deeper than the call stack build, realize and drop (each pass and the executor walk
/// with explicit stacks, and nodes are dropped iteratively).
#[test]
fn deep_graphs_do_not_overflow_the_stack() {
    let depth = 50_000;
    let x = Tensor::from_vec(vec![5i64, -7, 0], [3], Device::Cpu(0)).unwrap();
    let one = Tensor::from_vec(vec![1i64; 3], [3], Device::Cpu(1)).unwrap();
    let mut t = x.clone();
    for _ in 0..depth {
        t = t.add(&one).unwrap(); // every step reads `one` on cpu:1
    }
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![5 + depth, -7 + depth, depth]);
    drop(t);
    let mut u = x.clone();
    for i in 0..depth {
        u = u.copy_to_device(Device::Cpu((i % 3) as u32)).unwrap();
    }
    assert_eq!(u.to_vec::<i64>().unwrap(), vec![5, -7, 0]);
    // Every step's other input its own leaf, read after the chain: a node with two inputs
    // only it holds, dropped unrealized.
    let mut w = x.clone();
    for _ in 0..depth {
        w = x.scale(Scale::Mul(2.0)).unwrap().add(&w).unwrap();
    }
    drop(w);
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![5, -7, 0]);
}

#[test]
fn tensors_are_send_and_sync_and_realize_from_many_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tensor>();
    let seed = fresh_seed();
    let vals = random(DType::F32, 4099, Range::General, &mut rng(seed));
    let x = tensor(DType::F32, &vals, [4099], Device::Cpu(0));
    let y = x.copy_to_device(Device::Cpu(1)).unwrap().add(&x).unwrap();
    let want: Vec<f64> = vals.iter().map(|v| v * 2.0).collect();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| check_all(&values(&y), &want, |_| 0.0, &format!("seed {seed}")));
        }
    });
}

#[test]
fn handles_report_their_node() {
    let x = Tensor::from_vec(vec![0u8; 6], vec![2, 3], Device::Vulkan(1)).unwrap();
    let y = x.clone();
    assert!(x.same_node(&y) && x.id() == y.id());
    let z = x.cast(DType::F64).unwrap();
    assert!(!z.same_node(&x) && z.id() != x.id());
    assert_eq!((z.numel(), z.nbytes(), x.nbytes()), (6, 48, 6));
    assert!(z.inputs()[0].same_node(&x) && x.inputs().is_empty());
    assert_eq!(format!("{z:?}"), format!("Tensor#{}(cast f64 f64 [2, 3] on vulkan:1)", z.id()));
    let flat = z.flatten().unwrap();
    assert_eq!((flat.shape().dims(), flat.op()), (&[6usize][..], &Op::Reshape));
}
