//! `LocalComm` when ranks go wrong: a dropped or panicking rank fails the others promptly, a rank
//! that never calls makes them time out naming it, calls that differ between ranks are errors
//! for every rank, and a rank's own bad argument is its own typed error. Elapsed times are only
//! checked against generous liveness bounds.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use collectives::{Communicator, DType, Device, Error, LocalComm, ReduceOp, Shape, Tensor};
use collectives_tests::collective::cpu_group;

/// A bound no healthy run comes near: a call that should fail promptly must fail within it.
const LIVENESS: Duration = Duration::from_secs(20);

fn ones(comm: &LocalComm, shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(vec![1.0f32; n], shape.to_vec(), comm.device()).unwrap()
}

/// Runs `f` on one thread per rank, each owning its communicator; returns each rank's outcome
/// (`Err` for a rank that panicked).
fn spmd<T: Send>(comms: Vec<LocalComm>, f: impl Fn(LocalComm) -> T + Sync) -> Vec<std::thread::Result<T>> {
    std::thread::scope(|s| {
        let f = &f;
        let hs: Vec<_> = comms.into_iter().map(|c| s.spawn(move || f(c))).collect();
        hs.into_iter().map(|h| h.join()).collect()
    })
}

fn comm_msg(e: &Error) -> &str {
    match e {
        Error::Comm { msg, .. } => msg,
        other => panic!("expected Error::Comm, got {other:?}"),
    }
}

#[test]
fn a_dropped_rank_fails_the_others_promptly() {
    let comms = LocalComm::new(&cpu_group(4)); // the default 60 s timeout: promptness is not a timeout
    let out = spmd(comms, |comm| {
        comm.all_reduce(&ones(&comm, &[3]), ReduceOp::Sum).unwrap();
        if comm.rank() == 3 {
            return None; // drops its communicator
        }
        let start = Instant::now();
        let e = comm.all_reduce(&ones(&comm, &[3]), ReduceOp::Sum).unwrap_err();
        Some((e, start.elapsed()))
    });
    for (rank, o) in out.into_iter().enumerate() {
        let Some((e, took)) = o.unwrap() else { continue };
        assert!(took < LIVENESS, "rank {rank} took {took:?}");
        assert!(comm_msg(&e).contains("rank 3 was dropped before joining it"), "rank {rank}: {e}");
    }
}

#[test]
fn a_rank_dropped_before_calling_fails_every_call() {
    let comms = LocalComm::new(&cpu_group(4));
    let out = spmd(comms, |comm| {
        if comm.rank() == 2 {
            drop(comm);
            return None;
        }
        let start = Instant::now();
        let e = comm.all_reduce(&ones(&comm, &[3]), ReduceOp::Sum).unwrap_err();
        let r = comm.broadcast(&ones(&comm, &[3]), 0).unwrap_err();
        Some((e, r, start.elapsed()))
    });
    for (rank, o) in out.into_iter().enumerate() {
        let Some((e, r, took)) = o.unwrap() else { continue };
        assert!(took < LIVENESS, "rank {rank} took {took:?}");
        for e in [&e, &r] {
            assert!(comm_msg(e).contains("rank 2 was dropped"), "rank {rank}: {e}");
        }
    }
}

#[test]
fn a_panicking_rank_fails_the_others_promptly() {
    let comms = LocalComm::new(&cpu_group(3));
    let start = Instant::now();
    let out = spmd(comms, |comm| {
        let t = ones(&comm, &[2, 3]);
        comm.all_reduce(&t, ReduceOp::Max).unwrap();
        if comm.rank() == 1 {
            panic!("rank 1 fails on purpose");
        }
        comm.all_reduce(&t, ReduceOp::Max).unwrap_err()
    });
    assert!(start.elapsed() < LIVENESS, "took {:?}", start.elapsed());
    for (rank, o) in out.into_iter().enumerate() {
        match (rank, o) {
            (1, o) => assert!(o.is_err(), "rank 1 panicked"),
            (_, Ok(e)) => assert!(comm_msg(&e).contains("rank 1 (cpu:1) panicked"), "rank {rank}: {e}"),
            (_, Err(_)) => panic!("rank {rank} panicked"),
        }
    }
}

#[test]
fn a_rank_that_never_calls_times_out_by_name() {
    let timeout = Duration::from_millis(500);
    let comms = LocalComm::with_timeout(&cpu_group(4), timeout);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let done_rx = std::sync::Mutex::new(done_rx);
    let start = Instant::now();
    let out = spmd(comms, |comm| {
        if comm.rank() == 1 {
            // Hold the communicator without calling until the others have failed.
            for _ in 0..3 {
                done_rx.lock().unwrap().recv().unwrap();
            }
            return None;
        }
        let e = comm.all_gather(&ones(&comm, &[2]), 0).unwrap_err();
        done_tx.clone().send(()).unwrap();
        Some(e)
    });
    assert!(start.elapsed() < LIVENESS, "took {:?}", start.elapsed());
    for (rank, o) in out.into_iter().enumerate() {
        let Some(e) = o.unwrap() else { continue };
        let msg = comm_msg(&e);
        assert!(msg.contains("timed out") && msg.contains("rank(s) 1 "), "rank {rank}: {e}");
    }
}

#[test]
fn a_recv_with_no_send_times_out_naming_the_sender() {
    let comms = LocalComm::with_timeout(&cpu_group(2), Duration::from_millis(300));
    let out = spmd(comms, |comm| {
        if comm.rank() == 0 {
            comm.recv(1, &Shape::new([2]), DType::F32).unwrap_err().to_string()
        } else {
            std::thread::sleep(Duration::from_millis(600));
            String::new()
        }
    });
    let msg = out[0].as_ref().unwrap();
    assert!(msg.contains("waiting for a message from rank 1"), "{msg}");
}

/// Every rank calls `all_reduce` except `odd`, which makes `other`; all must fail, and the next,
/// matching call must succeed.
fn mismatch(odd: usize, other: impl Fn(&LocalComm) -> collectives::Result<()> + Sync, what: &str) {
    let comms = LocalComm::new(&cpu_group(3));
    let out = spmd(comms, |comm| {
        let first = if comm.rank() == odd {
            other(&comm)
        } else {
            comm.all_reduce(&ones(&comm, &[4]), ReduceOp::Sum).map(drop)
        };
        let then = comm.all_reduce(&ones(&comm, &[4]), ReduceOp::Sum).unwrap().to_vec::<f32>().unwrap();
        (first, then)
    });
    for (rank, o) in out.into_iter().enumerate() {
        let (first, then) = o.unwrap();
        let e = first.expect_err(what);
        assert!(comm_msg(&e).contains("called"), "{what}: rank {rank}: {e}");
        assert_eq!(then, vec![3.0; 4], "{what}: rank {rank}: the next call still meets");
    }
}

#[test]
fn calls_that_differ_between_ranks_are_errors_for_every_rank() {
    mismatch(1, |c| c.broadcast(&ones(c, &[4]), 0).map(drop), "another collective");
    mismatch(2, |c| c.all_reduce(&ones(c, &[4]), ReduceOp::Max).map(drop), "another op");
    mismatch(0, |c| c.all_reduce(&ones(c, &[5]), ReduceOp::Sum).map(drop), "another shape");
    mismatch(0, |c| c.all_reduce(&ones(c, &[2, 2]), ReduceOp::Sum).map(drop), "another rank");
    let f64s = |c: &LocalComm| Tensor::from_vec(vec![1.0f64; 4], [4], c.device()).unwrap();
    mismatch(1, move |c| c.all_reduce(&f64s(c), ReduceOp::Sum).map(drop), "another dtype");
    mismatch(2, |c| c.barrier(), "a barrier");
}

#[test]
fn different_roots_are_errors_for_every_rank() {
    let comms = LocalComm::new(&cpu_group(3));
    let out = spmd(comms, |comm| {
        let root = if comm.rank() == 2 { 1 } else { 0 };
        comm.reduce(&ones(&comm, &[4]), ReduceOp::Sum, root).unwrap_err()
    });
    for o in out {
        assert!(comm_msg(&o.unwrap()).contains("root"));
    }
}

#[test]
fn a_bad_argument_is_the_ranks_own_error_and_fails_the_others() {
    let comms = LocalComm::new(&cpu_group(3));
    let out = spmd(comms, |comm| {
        let device = if comm.rank() == 2 { Device::Cpu(0) } else { comm.device() };
        let t = Tensor::from_vec(vec![1.0f32; 4], [4], device).unwrap();
        comm.all_reduce(&t, ReduceOp::Sum).unwrap_err()
    });
    let errors: Vec<Error> = out.into_iter().map(|o| o.unwrap()).collect();
    assert!(matches!(errors[2], Error::DeviceMismatch { expected: Device::Cpu(2), got: Device::Cpu(0), .. }));
    for e in &errors[..2] {
        assert!(comm_msg(e).contains("rank 2 passed a bad argument"), "{e}");
    }
}

#[test]
fn own_checks_give_typed_errors() {
    let comms = LocalComm::new(&cpu_group(2));
    let out = spmd(comms, |comm| {
        let t = Tensor::from_vec(vec![1i32; 6], [3, 2], comm.device()).unwrap();
        [
            comm.reduce(&t, ReduceOp::Sum, 2).unwrap_err(),
            comm.broadcast(&t, 7).unwrap_err(),
            comm.all_gather(&t, 2).unwrap_err(),
            comm.reduce_scatter(&t, ReduceOp::Sum, 0).unwrap_err(),
            comm.all_reduce(&t, ReduceOp::PreMulSum(0.5)).unwrap_err(),
            comm.send(&t, 2).unwrap_err(),
            comm.recv(5, &Shape::new([1]), DType::I32).unwrap_err(),
        ]
    });
    for o in out {
        let [root, bcast, dim, uneven, scalar, send, recv] = o.unwrap();
        assert!(matches!(root, Error::InvalidArgument { what: "reduce", .. }), "{root:?}");
        assert!(matches!(bcast, Error::InvalidArgument { what: "broadcast", .. }), "{bcast:?}");
        assert!(matches!(dim, Error::DimOutOfRange { dim: 2, rank: 2, .. }), "{dim:?}");
        assert!(matches!(uneven, Error::Uneven { len: 3, parts: 2, .. }), "{uneven:?}");
        assert!(matches!(scalar, Error::BadReduceOp { dtype: DType::I32, .. }), "{scalar:?}");
        assert!(matches!(send, Error::InvalidArgument { what: "send", .. }), "{send:?}");
        assert!(matches!(recv, Error::InvalidArgument { what: "recv", .. }), "{recv:?}");
    }
}

#[test]
fn a_message_of_the_wrong_shape_is_an_error_and_sends_to_a_dropped_rank_fail() {
    let comms = LocalComm::new(&cpu_group(3));
    let out = spmd(comms, |comm| match comm.rank() {
        0 => {
            comm.send(&ones(&comm, &[3]), 1).unwrap();
            comm.barrier().unwrap(); // rank 2 is gone after this
            comm.barrier().unwrap_err();
            Some(comm.send(&ones(&comm, &[3]), 2).unwrap_err())
        }
        1 => {
            comm.barrier().unwrap();
            let e = comm.recv(0, &Shape::new([4]), DType::F32).unwrap_err();
            assert!(comm_msg(&e).contains("rank 0 sent f32 [3]"), "{e}");
            let e = comm.recv(2, &Shape::new([1]), DType::F32).unwrap_err();
            assert!(comm_msg(&e).contains("rank 2 was dropped"), "{e}");
            None
        }
        _ => {
            comm.barrier().unwrap();
            None
        }
    });
    let e = out.into_iter().next().unwrap().unwrap().unwrap();
    assert!(comm_msg(&e).contains("rank 2: it was dropped"), "{e}");
}
