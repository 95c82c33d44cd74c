//! `LocalComm`: ranks as threads over a group of virtual CPU devices. Every collective, every
//! `ReduceOp` and several dtypes against the f64 reference on fresh random data, every element
//! of every rank's result; point-to-point; lazy results; and many calls in a row.

use collectives::{Communicator, DType, Device, DeviceGroup, LocalComm, ReduceOp, Shape, Tensor};
use collectives_tests::collective::{
    DTYPES, Shards, all_ops, cpu_group, op_tol, range_for, ref_concat, ref_narrow, ref_op,
};
use collectives_tests::{check_all, fresh_seed, rng, values};
use rand::Rng;
use rand::rngs::StdRng;

/// Runs `f` on one thread per rank, each owning its communicator; returns every rank's output.
fn spmd<T: Send>(comms: Vec<LocalComm>, f: impl Fn(LocalComm) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let f = &f;
        let hs: Vec<_> = comms.into_iter().map(|c| s.spawn(move || f(c))).collect();
        hs.into_iter().map(|h| h.join().expect("rank thread")).collect()
    })
}

/// One collective call of the test, with its random shards.
#[derive(Clone, Copy, Debug)]
enum Case {
    AllReduce(ReduceOp),
    Reduce(ReduceOp, usize),
    Broadcast(usize),
    AllGather(usize),
    ReduceScatter(ReduceOp, usize),
}

struct Input {
    case: Case,
    shape: Vec<usize>,
    shards: Shards,
}

/// What a rank got back: device, shape and values.
type Got = Option<(Device, Vec<usize>, Vec<f64>)>;

fn call(comm: &LocalComm, case: Case, t: &Tensor) -> collectives::Result<Option<Tensor>> {
    Ok(match case {
        Case::AllReduce(op) => Some(comm.all_reduce(t, op)?),
        Case::Reduce(op, root) => comm.reduce(t, op, root)?,
        Case::Broadcast(root) => Some(comm.broadcast(t, root)?),
        Case::AllGather(dim) => Some(comm.all_gather(t, dim)?),
        Case::ReduceScatter(op, dim) => Some(comm.reduce_scatter(t, op, dim)?),
    })
}

/// Random inputs on `group`: every op for every dtype in `dtypes`, for each collective.
fn inputs(group: &DeviceGroup, dtypes: &[DType], r: &mut StdRng) -> Vec<Input> {
    let n = group.size();
    let mut out = Vec::new();
    for &dtype in dtypes {
        for op in all_ops(dtype, r) {
            let (root, dim) = (r.random_range(0..n), r.random_range(0..2));
            let cases = [
                Case::AllReduce(op),
                Case::Reduce(op, root),
                Case::ReduceScatter(op, dim),
                Case::Broadcast(root),
                Case::AllGather(dim),
            ];
            for case in cases {
                let shape = vec![n * r.random_range(1..=2), n * r.random_range(1..=2)];
                let shards = Shards::even(dtype, &shape, group.devices(), range_for(op), r);
                out.push(Input { case, shape, shards });
            }
        }
    }
    out
}

/// Checks what rank `rank` of `n` got for `inp`, every element.
fn check(inp: &Input, rank: usize, n: usize, got: &Got, ctx: &str) {
    let (dtype, dev) = (inp.shards.tensors[0].dtype(), Device::Cpu(rank as u32));
    let ins = inp.shards.slices();
    let (want_shape, want, tol): (Vec<usize>, Vec<f64>, Vec<f64>) = match inp.case {
        Case::AllReduce(op) | Case::Reduce(op, _) => {
            let want = ref_op(dtype, op, &ins);
            let tol = op_tol(dtype, op, &ins, &want);
            (inp.shape.clone(), want, tol)
        }
        Case::ReduceScatter(op, dim) => {
            let full = ref_op(dtype, op, &ins);
            let tol = op_tol(dtype, op, &ins, &full);
            let part = inp.shape[dim] / n;
            let cut = |v: &[f64]| ref_narrow(v, &inp.shape, dim, rank * part, part);
            let mut shape = inp.shape.clone();
            shape[dim] = part;
            (shape, cut(&full), cut(&tol))
        }
        Case::Broadcast(root) => (inp.shape.clone(), inp.shards.vals[root].clone(), vec![0.0; ins[0].len()]),
        Case::AllGather(dim) => {
            let parts: Vec<(&[f64], &[usize])> = ins.iter().map(|v| (*v, inp.shape.as_slice())).collect();
            let mut shape = inp.shape.clone();
            shape[dim] *= n;
            let want = ref_concat(&parts, dim);
            let len = want.len();
            (shape, want, vec![0.0; len])
        }
    };
    if let Case::Reduce(_, root) = inp.case
        && rank != root
    {
        assert!(got.is_none(), "{ctx}: a rank other than the root gets None");
        return;
    }
    let (device, shape, vals) = got.as_ref().unwrap_or_else(|| panic!("{ctx}: no result"));
    assert_eq!((*device, shape), (dev, &want_shape), "{ctx}: device and shape");
    check_all(vals, &want, |i| tol[i], ctx);
}

/// Runs every input on a group of `n` threads and checks every rank's every result.
fn run_all(n: usize, dtypes: &[DType], seed: u64) {
    let mut r = rng(seed);
    let group = cpu_group(n);
    let ins = inputs(&group, dtypes, &mut r);
    let results: Vec<Vec<Got>> = spmd(LocalComm::new(&group), |comm| {
        let rank = comm.rank();
        ins.iter()
            .map(|inp| {
                let got = call(&comm, inp.case, &inp.shards.tensors[rank]).expect("collective");
                got.map(|g| (g.device(), g.shape().dims().to_vec(), values(&g)))
            })
            .collect()
    });
    for (rank, got) in results.iter().enumerate() {
        for (inp, g) in ins.iter().zip(got) {
            let dtype = inp.shards.tensors[0].dtype();
            let ctx = format!("seed {seed}: {n} ranks, rank {rank}: {:?} {dtype} {:?}", inp.case, inp.shape);
            check(inp, rank, n, g, &ctx);
        }
    }
    for inp in &ins {
        inp.shards.assert_untouched(&format!("seed {seed}: {n} ranks: {:?}", inp.case));
    }
}

#[test]
fn every_collective_and_op_on_one_to_eight_ranks() {
    let seed = fresh_seed();
    for n in 1..=8 {
        run_all(n, &[DType::F32, DType::BF16, DType::I32], seed.wrapping_add(n as u64));
    }
}

#[test]
fn every_dtype_on_three_and_five_ranks() {
    let seed = fresh_seed();
    for n in [3, 5] {
        run_all(n, &DTYPES, seed.wrapping_add(n as u64));
    }
}

#[test]
fn results_are_lazy_and_on_each_rank_device() {
    let group = cpu_group(3);
    let out = spmd(LocalComm::new(&group), |comm| {
        let t = Tensor::from_vec(vec![comm.rank() as f32; 5], [5], comm.device()).unwrap();
        let s = comm.all_reduce(&t, ReduceOp::Sum).unwrap();
        let lazy = !s.is_realized();
        (lazy, s.device(), s.to_vec::<f32>().unwrap())
    });
    for (rank, (lazy, device, vals)) in out.into_iter().enumerate() {
        assert!(lazy, "rank {rank}: the result is realized by the caller");
        assert_eq!(device, Device::Cpu(rank as u32));
        assert_eq!(vals, vec![3.0; 5]);
    }
}

#[test]
fn send_and_recv_around_a_ring() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in [1, 2, 5] {
        let group = cpu_group(n);
        let shards = Shards::even(DType::F64, &[4, 3], group.devices(), range_for(ReduceOp::Sum), &mut r);
        let got = spmd(LocalComm::new(&group), |comm| {
            let (rank, n) = (comm.rank(), comm.world_size());
            comm.send(&shards.tensors[rank], (rank + 1) % n).unwrap();
            comm.send(&shards.tensors[rank], (rank + 1) % n).unwrap();
            let from = (rank + n - 1) % n;
            let a = comm.recv(from, &Shape::new([4, 3]), DType::F64).unwrap();
            let b = comm.recv(from, &Shape::new([4, 3]), DType::F64).unwrap();
            assert_eq!(a.device(), comm.device());
            (values(&a), values(&b))
        });
        for (rank, (a, b)) in got.iter().enumerate() {
            let want = &shards.vals[(rank + n - 1) % n];
            check_all(a, want, |_| 0.0, &format!("seed {seed}: {n} ranks, rank {rank}, first"));
            check_all(b, want, |_| 0.0, &format!("seed {seed}: {n} ranks, rank {rank}, second"));
        }
    }
}

#[test]
fn barrier_and_the_world() {
    let group = DeviceGroup::new(vec![Device::Cpu(3), Device::Cpu(1), Device::Cpu(7)]).unwrap();
    let comms = LocalComm::new(&group);
    assert_eq!(comms[1].timeout(), LocalComm::DEFAULT_TIMEOUT);
    assert!(format!("{:?}", comms[2]).contains("cpu:7"));
    let ranks = spmd(comms, |comm| {
        comm.barrier().unwrap();
        comm.barrier().unwrap();
        (comm.rank(), comm.world_size(), comm.device())
    });
    assert_eq!(ranks, vec![(0, 3, Device::Cpu(3)), (1, 3, Device::Cpu(1)), (2, 3, Device::Cpu(7))]);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LocalComm>();
    let boxed: Box<dyn Communicator> = Box::new(LocalComm::new(&cpu_group(1)).remove(0));
    assert_eq!(boxed.world_size(), 1);
}

#[test]
fn eight_threads_five_hundred_calls() {
    let group = cpu_group(8);
    let calls = 500;
    let sums = spmd(LocalComm::new(&group), |comm| {
        let (rank, n) = (comm.rank() as i64, comm.world_size() as i64);
        let mut checked = 0;
        for i in 0..calls as i64 {
            let t = Tensor::from_vec(vec![rank + i, rank * i], [2], comm.device()).unwrap();
            let got = match i % 5 {
                0 => comm.all_reduce(&t, ReduceOp::Sum).unwrap().to_vec::<i64>().unwrap(),
                1 => comm.broadcast(&t, (i % n) as usize).unwrap().to_vec::<i64>().unwrap(),
                2 => comm.all_gather(&t, 0).unwrap().to_vec::<i64>().unwrap()[..2].to_vec(),
                3 => {
                    comm.barrier().unwrap();
                    vec![0, 0]
                }
                _ => {
                    comm.send(&t, ((rank + 1) % n) as usize).unwrap();
                    let from = ((rank + n - 1) % n) as usize;
                    comm.recv(from, &Shape::new([2]), DType::I64).unwrap().to_vec::<i64>().unwrap()
                }
            };
            let want = match i % 5 {
                0 => vec![n * (n - 1) / 2 + n * i, n * (n - 1) / 2 * i],
                1 => vec![i % n + i, (i % n) * i],
                2 => vec![i, 0],
                3 => vec![0, 0],
                _ => vec![(rank + n - 1) % n + i, ((rank + n - 1) % n) * i],
            };
            assert_eq!(got, want, "rank {rank}, call {i}");
            checked += 1;
        }
        checked
    });
    assert_eq!(sums, vec![calls; 8]);
}

#[test]
fn identity_comm_sends_to_itself() {
    let comm = collectives::IdentityComm::new(Device::Cpu(2));
    let t = Tensor::from_vec(vec![1u8, 2, 3], [3], Device::Cpu(2)).unwrap();
    comm.send(&t, 0).unwrap();
    comm.barrier().unwrap();
    let got = comm.recv(0, &Shape::new([3]), DType::U8).unwrap();
    assert_eq!((got.device(), got.to_vec::<u8>().unwrap()), (Device::Cpu(2), vec![1, 2, 3]));
    let e = comm.recv(0, &Shape::new([3]), DType::U8).unwrap_err();
    assert!(matches!(e, collectives::Error::Comm { op: "recv", .. }), "{e:?}");
    assert!(matches!(
        comm.send(&t, 1).unwrap_err(),
        collectives::Error::InvalidArgument { what: "send", .. }
    ));
    comm.send(&t, 0).unwrap();
    let e = comm.recv(0, &Shape::new([4]), DType::U8).unwrap_err();
    assert!(matches!(e, collectives::Error::Comm { op: "recv", .. }), "{e:?}");
}
