//! `NcclComm` as two processes on loopback (the GPU machine, two GPUs): they bootstrap through
//! the environment and the rendezvous, meet at barriers, compute every collective correctly, and
//! a rank killed mid-run makes the other exit with an error instead of hanging.
//!
//! The test binary runs itself as the ranks: the parent spawns it with `COMM_NCCL_CHILD` naming
//! a scenario and the launcher's variables set, and the `child` test plays that rank. Without
//! libcuda, libnccl or two GPUs the tests say they skipped (they fail when `REQUIRE_CUDA=1`).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use collectives::comm::Launch;
use collectives::{Communicator, Error, NcclComm, ReduceOp, Shape, Tensor};
use collectives_tests::cuda_required;

const CHILD: &str = "COMM_NCCL_CHILD";
/// What the killed-rank scenario's survivor exits with when its call fails with `Error::Comm`.
const EXIT_COMM_ERROR: i32 = 3;

/// Whether two GPUs can run NCCL here; prints why not (and fails if CUDA is required).
fn two_gpus() -> bool {
    let why = match NcclComm::available() {
        Ok(n) if n >= 2 => return true,
        Ok(n) => format!("{n} CUDA device(s), need 2"),
        Err(e) => e.to_string(),
    };
    assert!(!cuda_required(), "REQUIRE_CUDA=1 but NCCL cannot run on two GPUs: {why}");
    eprintln!("skipped: {why}");
    false
}

/// Rank `rank` of 2 playing `scenario`, its stdout piped.
fn spawn(scenario: &str, rank: usize, port: u16) -> Child {
    let exe = std::env::current_exe().expect("test binary");
    Command::new(exe)
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, scenario)
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", rank.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("NCCL_NVLS_ENABLE", "0")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn a rank")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
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

#[test]
fn two_processes_meet_at_barriers() {
    if !two_gpus() {
        return;
    }
    let port = free_port();
    let mut ranks: Vec<Child> = (0..2).map(|r| spawn("barrier", r, port)).collect();
    for (r, c) in ranks.iter_mut().enumerate() {
        assert!(wait_bounded(c, Duration::from_secs(120), &format!("rank {r}")).success(), "rank {r}");
    }
}

#[test]
#[ignore = "needs NcclComm's data path (comm/nccl/glue.rs), which waits for the CUDA backend"]
fn two_processes_compute_every_collective() {
    if !two_gpus() {
        return;
    }
    let port = free_port();
    let mut ranks: Vec<Child> = (0..2).map(|r| spawn("collectives", r, port)).collect();
    for (r, c) in ranks.iter_mut().enumerate() {
        assert!(wait_bounded(c, Duration::from_secs(300), &format!("rank {r}")).success(), "rank {r}");
    }
}

#[test]
fn a_killed_rank_makes_the_other_exit_with_an_error() {
    if !two_gpus() {
        return;
    }
    let port = free_port();
    let mut survivor = spawn("kill", 0, port);
    let mut victim = spawn("kill", 1, port);
    let out = victim.stdout.take().unwrap();
    let ready = BufReader::new(out).lines().map_while(Result::ok).any(|l| l == "ready");
    assert!(ready, "rank 1 never got going");
    victim.kill().unwrap();
    victim.wait().unwrap();
    let status = wait_bounded(&mut survivor, Duration::from_secs(90), "the surviving rank");
    assert_eq!(status.code(), Some(EXIT_COMM_ERROR), "the survivor exits with its Error::Comm");
}

/// One rank of a scenario; a no-op unless the parent set `COMM_NCCL_CHILD`.
#[test]
fn child() {
    let Ok(scenario) = std::env::var(CHILD) else { return };
    let launch = Launch::from_env().expect("launch environment");
    let timeout = if scenario == "kill" { Duration::from_secs(5) } else { Duration::from_secs(60) };
    let comm = NcclComm::new(&launch, timeout).expect("NcclComm");
    match scenario.as_str() {
        "barrier" => (0..50).for_each(|_| comm.barrier().expect("barrier")),
        "kill" => keep_meeting(&comm),
        "collectives" => every_collective(&comm),
        other => panic!("unknown scenario {other}"),
    }
}

/// Barriers until one fails; says "ready" after the first ten. Exits with `EXIT_COMM_ERROR` on
/// an `Error::Comm`.
fn keep_meeting(comm: &NcclComm) {
    for i in 0..10_000_000u64 {
        match comm.barrier() {
            Ok(()) if i == 10 => println!("ready"),
            Ok(()) => {}
            Err(e @ Error::Comm { .. }) => {
                eprintln!("rank {}: {e}", comm.rank());
                std::process::exit(EXIT_COMM_ERROR);
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}

/// Every collective on small exact data (integers in f32), checked on the host.
fn every_collective(comm: &NcclComm) {
    let (r, dev) = (comm.rank() as f32, comm.device());
    let t = Tensor::from_vec((0..8).map(|i| r * 100.0 + i as f32).collect::<Vec<_>>(), [2, 4], dev).unwrap();
    let both = |i: usize| [i as f32, 100.0 + i as f32];
    let sum: Vec<f32> = (0..8).map(|i| both(i).iter().sum()).collect();
    assert_eq!(comm.all_reduce(&t, ReduceOp::Sum).unwrap().to_vec::<f32>().unwrap(), sum);
    let max: Vec<f32> = (0..8).map(|i| 100.0 + i as f32).collect();
    let reduced = comm.reduce(&t, ReduceOp::Max, 1).unwrap();
    assert_eq!(reduced.map(|x| x.to_vec::<f32>().unwrap()), (comm.rank() == 1).then_some(max));
    let root: Vec<f32> = (0..8).map(|i| 100.0 + i as f32).collect();
    assert_eq!(comm.broadcast(&t, 1).unwrap().to_vec::<f32>().unwrap(), root);
    let g = comm.all_gather(&t, 1).unwrap();
    assert_eq!(g.shape().dims(), &[2, 8]);
    let want: Vec<f32> =
        [0.0, 1.0, 2.0, 3.0, 100.0, 101.0, 102.0, 103.0, 4.0, 5.0, 6.0, 7.0, 104.0, 105.0, 106.0, 107.0]
            .to_vec();
    assert_eq!(g.to_vec::<f32>().unwrap(), want);
    let part = comm.reduce_scatter(&t, ReduceOp::Sum, 1).unwrap();
    let cols = if comm.rank() == 0 { [0, 1] } else { [2, 3] };
    let want: Vec<f32> = [0, 4].iter().flat_map(|row| cols.map(|c| sum[row + c])).collect();
    assert_eq!(part.to_vec::<f32>().unwrap(), want);
    let peer = 1 - comm.rank();
    if comm.rank() == 0 {
        comm.send(&t, peer).unwrap();
    }
    let got = (comm.rank() == 1).then(|| comm.recv(peer, &Shape::new([2, 4]), t.dtype()).unwrap());
    if let Some(got) = got {
        assert_eq!(got.to_vec::<f32>().unwrap(), (0..8).map(|i| i as f32).collect::<Vec<_>>());
    }
    comm.barrier().unwrap();
}
