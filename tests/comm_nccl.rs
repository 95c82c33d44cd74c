//! `NcclComm` as two processes on loopback (the GPU machine, two GPUs): they bootstrap through
//! the environment and the rendezvous, meet at barriers, compute every collective correctly, and
//! a rank that dies mid-run makes the other exit with an error instead of hanging.
//!
//! The test binary runs itself as the ranks: the parent spawns it with `COMM_NCCL_CHILD` naming
//! a scenario, `COMM_NCCL_SEED` a fresh seed and the launcher's variables set, and the `child`
//! test plays that rank. Each rank draws every case's inputs of *both* ranks from the shared seed
//! (seeded per case and rank), feeds its own to the collective and checks every element of the
//! result against an f64 reference over both. Without libcuda, libnccl or two GPUs the tests say
//! they skipped (they fail when `REQUIRE_CUDA=1`).

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use collectives::comm::Launch;
use collectives::{
    Communicator, DType, Device, DeviceGroup, Error, LocalComm, NcclComm, ReduceOp, Shape, Tensor,
};
use collectives_tests::collective::{all_ops, op_tol, range_for, ref_concat, ref_narrow, ref_op};
use collectives_tests::{Range, check_all, cuda_required, fresh_seed, random, rng, tensor, values};

const CHILD: &str = "COMM_NCCL_CHILD";
const SEED: &str = "COMM_NCCL_SEED";
/// What the killed-rank scenario's survivor exits with when a call fails with `Error::Comm`.
const EXIT_COMM_ERROR: i32 = 3;
/// The survivor's timeout in the killed-rank scenario.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether two GPUs can run NCCL here; prints why not. `REQUIRE_CUDA=1` fails the test when
/// CUDA or NCCL is missing, not when the machine has one GPU (NCCL needs two distinct GPUs, so
/// virtual devices cannot stand in): that is a skip, with the reason.
fn two_gpus() -> bool {
    match NcclComm::available() {
        Ok(n) if n >= 2 => true,
        Ok(n) => {
            eprintln!("skipped: {n} CUDA device(s); NCCL ranks need 2 distinct GPUs");
            false
        }
        Err(e) => {
            assert!(!cuda_required(), "REQUIRE_CUDA=1 but NCCL cannot run: {e}");
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// Rank `rank` of 2 playing `scenario` with the shared `seed`.
fn spawn(scenario: &str, rank: usize, port: u16, seed: u64) -> Child {
    let exe = std::env::current_exe().expect("test binary");
    Command::new(exe)
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, scenario)
        .env(SEED, seed.to_string())
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", rank.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("NCCL_NVLS_ENABLE", "0")
        .spawn()
        .expect("spawn a rank")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits at most `limit` for `child` to exit; kills it and fails past that.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not exit within {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `scenario` as two ranks and asserts both succeed within `limit`.
fn both_succeed(scenario: &str, limit: Duration) {
    let (port, seed) = (free_port(), fresh_seed());
    eprintln!("{scenario}: seed {seed}");
    let mut ranks: Vec<Child> = (0..2).map(|r| spawn(scenario, r, port, seed)).collect();
    for (r, c) in ranks.iter_mut().enumerate() {
        let status = wait_bounded(c, limit, &format!("rank {r}"));
        assert!(status.success(), "{scenario}: rank {r} failed ({status}); seed {seed}");
    }
}

#[test]
fn two_processes_meet_at_barriers() {
    if two_gpus() {
        both_succeed("barrier", Duration::from_secs(120));
    }
}

#[test]
fn two_processes_compute_every_collective() {
    if two_gpus() {
        both_succeed("collectives", Duration::from_secs(300));
    }
}

#[test]
fn a_killed_rank_makes_the_other_exit_with_an_error() {
    if !two_gpus() {
        return;
    }
    let (port, seed) = (free_port(), fresh_seed());
    let mut survivor = spawn("kill", 0, port, seed);
    let mut victim = spawn("kill", 1, port, seed);
    let start = Instant::now();
    let limit = KILL_TIMEOUT + Duration::from_secs(90);
    assert!(wait_bounded(&mut victim, limit, "the leaving rank").success(), "rank 1 failed before leaving");
    let status = wait_bounded(&mut survivor, limit, "the surviving rank");
    assert_eq!(status.code(), Some(EXIT_COMM_ERROR), "the survivor exits with its Error::Comm");
    eprintln!("the survivor exited with its error {:?} after the start", start.elapsed());
}

/// The collectives scenario's own logic (inputs, references, tolerances) on two threads of
/// virtual CPU devices through `LocalComm`, so it is checked on any machine.
#[test]
fn the_collectives_scenario_checks_itself_on_local_threads() {
    let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1)]).unwrap();
    let seed = fresh_seed();
    std::thread::scope(|s| {
        for comm in LocalComm::new(&group) {
            s.spawn(move || every_collective(&Cases { comm: &comm, seed }));
        }
    });
}

/// One rank of a scenario; a no-op unless the parent set `COMM_NCCL_CHILD`.
#[test]
fn child() {
    let Ok(scenario) = std::env::var(CHILD) else { return };
    let seed: u64 = std::env::var(SEED).expect("seed").parse().expect("seed");
    let launch = Launch::from_env().expect("launch environment");
    let timeout = if scenario == "kill" { KILL_TIMEOUT } else { Duration::from_secs(60) };
    let comm = NcclComm::new(&launch, timeout).expect("NcclComm");
    let cases = Cases { comm: &comm, seed };
    match scenario.as_str() {
        "barrier" => (0..50).for_each(|_| comm.barrier().expect("barrier")),
        "kill" => die_or_survive(&cases),
        "collectives" => every_collective(&cases),
        other => panic!("unknown scenario {other}"),
    }
}

/// Both ranks' inputs of every case, drawn from the shared seed, and the checks.
struct Cases<'a> {
    comm: &'a dyn Communicator,
    seed: u64,
}

impl Cases<'_> {
    /// Both ranks' values of the case `label` (`n` of `dtype` each); each rank draws both.
    fn inputs(&self, label: &str, dtype: DType, n: usize, range: Range) -> [Vec<f64>; 2] {
        let case =
            label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        [0u64, 1].map(|r| random(dtype, n, range, &mut rng(self.seed ^ case ^ (r << 61))))
    }

    /// This rank's tensor of `vals[rank]` shaped `shape`.
    fn mine(&self, vals: &[Vec<f64>; 2], dtype: DType, shape: &[usize]) -> Tensor {
        tensor(dtype, &vals[self.comm.rank()], shape, self.comm.device())
    }

    fn ctx(&self, label: &str) -> String {
        format!("rank {} {label} (seed {})", self.comm.rank(), self.seed)
    }

    /// Checks `got` (`shape`, on this rank's device) against `want` within `tol`.
    fn check(&self, got: &Tensor, shape: &[usize], want: &[f64], tol: &[f64], label: &str) {
        let ctx = self.ctx(label);
        assert_eq!(got.device(), self.comm.device(), "{ctx}: device");
        assert_eq!(got.shape().dims(), shape, "{ctx}: shape");
        check_all(&values(got), want, |i| tol[i], &ctx);
    }
}

const SHAPE: [usize; 3] = [4, 6, 5];

fn every_collective(c: &Cases) {
    for dtype in [DType::F32, DType::BF16, DType::I32] {
        for op in all_ops(dtype, &mut rng(c.seed ^ dtype.size() as u64 ^ dtype.is_int() as u64)) {
            all_reduce(c, dtype, op, &SHAPE);
            (0..2).for_each(|root| reduce(c, dtype, op, root));
            (0..2).for_each(|dim| reduce_scatter(c, dtype, op, dim));
        }
        (0..2).for_each(|root| broadcast(c, dtype, root));
        (0..3).for_each(|dim| all_gather(c, dtype, dim));
        send_recv(c, dtype);
    }
    for dtype in [DType::F64, DType::F16, DType::I64, DType::U8] {
        all_reduce(c, dtype, ReduceOp::Sum, &SHAPE);
        all_gather(c, dtype, 1);
    }
    all_reduce(c, DType::F32, ReduceOp::Sum, &[(1 << 22) + 7]);
    results_feed_more_work(c);
    many_in_flight(c);
    bad_arguments_are_typed_errors(c);
    c.comm.barrier().expect("barrier");
}

fn all_reduce(c: &Cases, dtype: DType, op: ReduceOp, shape: &[usize]) {
    let label = format!("all_reduce({op}) {dtype} {shape:?}");
    let n = shape.iter().product();
    let v = c.inputs(&label, dtype, n, range_for(op));
    let got = c.comm.all_reduce(&c.mine(&v, dtype, shape), op).expect(&label);
    let want = ref_op(dtype, op, &[&v[0], &v[1]]);
    c.check(&got, shape, &want, &op_tol(dtype, op, &[&v[0], &v[1]], &want), &label);
}

fn reduce(c: &Cases, dtype: DType, op: ReduceOp, root: usize) {
    let label = format!("reduce({op}, root {root}) {dtype}");
    let v = c.inputs(&label, dtype, SHAPE.iter().product(), range_for(op));
    let got = c.comm.reduce(&c.mine(&v, dtype, &SHAPE), op, root).expect(&label);
    assert_eq!(got.is_some(), c.comm.rank() == root, "{}: only the root gets a result", c.ctx(&label));
    if let Some(got) = got {
        let want = ref_op(dtype, op, &[&v[0], &v[1]]);
        c.check(&got, &SHAPE, &want, &op_tol(dtype, op, &[&v[0], &v[1]], &want), &label);
    }
}

fn reduce_scatter(c: &Cases, dtype: DType, op: ReduceOp, dim: usize) {
    let label = format!("reduce_scatter({op}, dim {dim}) {dtype}");
    let v = c.inputs(&label, dtype, SHAPE.iter().product(), range_for(op));
    let got = c.comm.reduce_scatter(&c.mine(&v, dtype, &SHAPE), op, dim).expect(&label);
    let (want, tol) = {
        let want = ref_op(dtype, op, &[&v[0], &v[1]]);
        let tol = op_tol(dtype, op, &[&v[0], &v[1]], &want);
        (want, tol)
    };
    let part = SHAPE[dim] / 2;
    let start = c.comm.rank() * part;
    let mut shape = SHAPE.to_vec();
    shape[dim] = part;
    let (want, tol) =
        (ref_narrow(&want, &SHAPE, dim, start, part), ref_narrow(&tol, &SHAPE, dim, start, part));
    c.check(&got, &shape, &want, &tol, &label);
}

fn broadcast(c: &Cases, dtype: DType, root: usize) {
    let label = format!("broadcast(root {root}) {dtype}");
    let v = c.inputs(&label, dtype, SHAPE.iter().product(), Range::General);
    let got = c.comm.broadcast(&c.mine(&v, dtype, &SHAPE), root).expect(&label);
    c.check(&got, &SHAPE, &v[root], &vec![0.0; v[root].len()], &label);
}

fn all_gather(c: &Cases, dtype: DType, dim: usize) {
    let label = format!("all_gather(dim {dim}) {dtype}");
    let v = c.inputs(&label, dtype, SHAPE.iter().product(), Range::General);
    let got = c.comm.all_gather(&c.mine(&v, dtype, &SHAPE), dim).expect(&label);
    let want = ref_concat(&[(&v[0], &SHAPE), (&v[1], &SHAPE)], dim);
    let mut shape = SHAPE.to_vec();
    shape[dim] *= 2;
    c.check(&got, &shape, &want, &vec![0.0; want.len()], &label);
}

/// Rank 0 sends to rank 1, then rank 1 to rank 0 (each receive posted opposite its send).
fn send_recv(c: &Cases, dtype: DType) {
    let (rank, shape) = (c.comm.rank(), Shape::new(SHAPE));
    for from in 0..2 {
        let label = format!("send/recv {from} -> {} {dtype}", 1 - from);
        let v = c.inputs(&label, dtype, SHAPE.iter().product(), Range::General);
        if rank == from {
            c.comm.send(&c.mine(&v, dtype, &SHAPE), 1 - from).expect(&label);
        } else {
            let got = c.comm.recv(from, &shape, dtype).expect(&label);
            c.check(&got, &SHAPE, &v[from], &vec![0.0; v[from].len()], &label);
        }
    }
}

/// A result read by a CUDA op (which waits for it on the device) and by the next call.
fn results_feed_more_work(c: &Cases) {
    let label = "all_reduce feeding an add and another all_reduce";
    let v = c.inputs(label, DType::F32, 1000, Range::General);
    let x = c.mine(&v, DType::F32, &[1000]);
    let sum = c.comm.all_reduce(&x, ReduceOp::Sum).expect(label);
    let plus = sum.add(&x).expect(label);
    let twice = c.comm.all_reduce(&sum, ReduceOp::Sum).expect(label);
    let s: Vec<f64> = (0..1000).map(|i| (v[0][i] + v[1][i]) as f32 as f64).collect();
    let want_plus: Vec<f64> = s.iter().zip(&v[c.comm.rank()]).map(|(a, b)| (a + b) as f32 as f64).collect();
    let want_twice: Vec<f64> = s.iter().map(|a| 2.0 * a).collect();
    let zero = vec![0.0; 1000];
    c.check(&plus, &[1000], &want_plus, &zero, &format!("{label}: the add"));
    c.check(&twice, &[1000], &want_twice, &zero, &format!("{label}: the second call"));
}

/// Fifty calls issued before any result is read.
fn many_in_flight(c: &Cases) {
    let label = "50 all_reduces in flight";
    let v = c.inputs(label, DType::I32, 4096, Range::General);
    let x = c.mine(&v, DType::I32, &[4096]);
    let outs: Vec<Tensor> = (0..50).map(|_| c.comm.all_reduce(&x, ReduceOp::Sum).expect(label)).collect();
    collectives::realize(&outs).expect(label);
    let want: Vec<f64> = (0..4096).map(|i| v[0][i] + v[1][i]).collect();
    outs.iter().for_each(|o| c.check(o, &[4096], &want, &vec![0.0; 4096], label));
}

/// Arguments each rank rejects itself, before meeting the other (so both stay in step).
fn bad_arguments_are_typed_errors(c: &Cases) {
    let comm = c.comm;
    let elsewhere = Tensor::from_vec(vec![1.0f32; 4], [4], Device::Cpu(9)).unwrap();
    let mine = Tensor::from_vec(vec![1.0f32; 6], [3, 2], comm.device()).unwrap();
    let ctx = c.ctx("bad arguments");
    assert!(matches!(comm.all_reduce(&elsewhere, ReduceOp::Sum), Err(Error::DeviceMismatch { .. })), "{ctx}");
    assert!(matches!(comm.reduce_scatter(&mine, ReduceOp::Sum, 0), Err(Error::Uneven { .. })), "{ctx}");
    assert!(matches!(comm.reduce(&mine, ReduceOp::Sum, 2), Err(Error::InvalidArgument { .. })), "{ctx}");
    assert!(matches!(comm.broadcast(&mine, 7), Err(Error::InvalidArgument { .. })), "{ctx}");
    assert!(matches!(comm.send(&mine, 2), Err(Error::InvalidArgument { .. })), "{ctx}");
    assert!(matches!(comm.all_gather(&mine, 2), Err(Error::DimOutOfRange { .. })), "{ctx}");
    let bad = comm.all_reduce(&mine.cast(DType::I32).unwrap(), ReduceOp::PreMulSum(0.5));
    assert!(matches!(bad, Err(Error::BadReduceOp { .. })), "{ctx}: {bad:?}");
}

/// The killed-rank scenario: both ranks complete one all_reduce, then rank 1 exits; rank 0 keeps
/// calling until a call (or reading its result) fails, and exits with `EXIT_COMM_ERROR`.
fn die_or_survive(c: &Cases) {
    let label = "all_reduce before rank 1 leaves";
    let v = c.inputs(label, DType::F32, 1 << 16, Range::General);
    let x = c.mine(&v, DType::F32, &[1 << 16]);
    let got = c.comm.all_reduce(&x, ReduceOp::Sum).expect(label);
    let want: Vec<f64> = (0..1 << 16).map(|i| (v[0][i] + v[1][i]) as f32 as f64).collect();
    c.check(&got, &[1 << 16], &want, &vec![0.0; 1 << 16], label);
    if c.comm.rank() == 1 {
        eprintln!("rank 1: leaving without a word");
        std::process::exit(0);
    }
    let start = Instant::now();
    for i in 0..1000 {
        match c.comm.all_reduce(&x, ReduceOp::Sum).and_then(|y| y.realize()) {
            Ok(()) => {}
            Err(e @ Error::Comm { .. }) => {
                eprintln!("rank 0: call {i} failed after {:?}: {e}", start.elapsed());
                std::process::exit(EXIT_COMM_ERROR);
            }
            Err(e) => panic!("rank 0: unexpected error: {e}"),
        }
    }
    panic!("rank 0: 1000 all_reduces completed without rank 1");
}
