//! The TCP rendezvous on loopback: peers get the master's payload; malformed and mismatched
//! peers (garbage bytes, short hellos, another world size, version or rank) are rejected with an
//! error on both sides; missing ranks and absent masters are timeouts naming them; the master
//! listens only on the address it is given. Elapsed times are only liveness bounds.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use collectives::Error;
use collectives::comm::rendezvous::{MAGIC, Master, PROTOCOL_VERSION, exchange, join};
use collectives::comm::{Launch, Launcher};
use rand::Rng;

const LONG: Duration = Duration::from_secs(20);
const SHORT: Duration = Duration::from_millis(400);
const LIVENESS: Duration = Duration::from_secs(15);

fn msg(e: &Error) -> &str {
    match e {
        Error::Comm { op: "rendezvous", msg } => msg,
        other => panic!("expected a rendezvous Error::Comm, got {other:?}"),
    }
}

fn master(world: usize, timeout: Duration) -> (Master, String) {
    let m = Master::bind("127.0.0.1:0", world, timeout).unwrap();
    let addr = m.local_addr().unwrap().to_string();
    (m, addr)
}

/// A hello as the protocol spells it, with any field.
fn hello(magic: [u8; 8], version: u32, world: u32, rank: u32) -> Vec<u8> {
    let mut b = magic.to_vec();
    for w in [version, world, rank] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b
}

/// The reply the master sends a raw client: (status, body).
fn read_reply(s: &mut TcpStream) -> (u8, String) {
    s.set_read_timeout(Some(LONG)).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert_eq!(all[..8], MAGIC, "reply magic");
    (all[12], String::from_utf8_lossy(&all[17..]).into_owned())
}

/// Serves `master` on a thread while a raw client sends `bytes`; returns the master's error and
/// the client's reply.
fn raw_peer(world: usize, bytes: &[u8]) -> (Error, (u8, String)) {
    let (m, addr) = master(world, LONG);
    let served = thread::spawn(move || m.serve(b"payload"));
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(bytes).unwrap();
    let reply = read_reply(&mut s);
    (served.join().unwrap().unwrap_err(), reply)
}

#[test]
fn every_peer_gets_the_payload() {
    for world in 1..=6 {
        let payload: Vec<u8> = (0..128).map(|_| rand::rng().random()).collect();
        let (m, addr) = master(world, LONG);
        let peers: Vec<_> = (1..world)
            .map(|rank| {
                let addr = addr.clone();
                thread::spawn(move || join(&addr, world, rank, LONG))
            })
            .collect();
        m.serve(&payload).unwrap();
        for (i, p) in peers.into_iter().enumerate() {
            assert_eq!(p.join().unwrap().unwrap(), payload, "world {world}, rank {}", i + 1);
        }
    }
}

#[test]
fn exchange_runs_both_ends_from_a_launch() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let at = |rank| Launch {
        rank,
        world_size: 3,
        local_rank: rank,
        master_addr: "127.0.0.1".into(),
        master_port: port,
        launcher: Launcher::Torchrun,
    };
    let got: Vec<Vec<u8>> = thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|r| s.spawn(move || exchange(&at(r), LONG, || Ok(b"made by rank 0".to_vec())).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(got, vec![b"made by rank 0".to_vec(); 3]);
}

#[test]
fn garbage_bytes_are_rejected() {
    let (e, (status, body)) = raw_peer(2, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(msg(&e).contains("not a rendezvous hello (began 47 45 54 20"), "{e}");
    assert!(msg(&e).contains("rejected peer 127.0.0.1:"), "the master names the peer: {e}");
    assert_eq!(status, 1, "rejected");
    assert!(body.contains("not a rendezvous hello"), "{body}");
}

#[test]
fn a_short_hello_is_rejected() {
    let (m, addr) = master(2, LONG);
    let served = thread::spawn(move || m.serve(b"payload"));
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&MAGIC[..5]).unwrap();
    drop(s);
    let e = served.join().unwrap().unwrap_err();
    assert!(msg(&e).contains("closed after 5 of 20 bytes"), "{e}");
}

#[test]
fn a_silent_peer_is_a_timeout() {
    let (m, addr) = master(2, SHORT);
    let start = Instant::now();
    let served = thread::spawn(move || m.serve(b"payload"));
    let s = TcpStream::connect(&addr).unwrap();
    let e = served.join().unwrap().unwrap_err();
    assert!(start.elapsed() < LIVENESS);
    assert!(msg(&e).contains("no hello") && msg(&e).contains("timed out"), "{e}");
    drop(s);
}

#[test]
fn mismatched_hellos_are_rejected() {
    let cases = [
        (hello(MAGIC, PROTOCOL_VERSION + 1, 2, 1), "protocol version 2"),
        (hello(MAGIC, PROTOCOL_VERSION, 3, 1), "world size 3, but the master's job has 2"),
        (hello(MAGIC, PROTOCOL_VERSION, 2, 0), "rank 0, which is not in 1..2"),
        (hello(MAGIC, PROTOCOL_VERSION, 2, 2), "rank 2, which is not in 1..2"),
    ];
    for (bytes, want) in cases {
        let (e, (status, body)) = raw_peer(2, &bytes);
        assert!(msg(&e).contains(want), "{want}: {e}");
        assert_eq!(status, 1, "{want}");
        assert!(body.contains(want), "{want}: {body}");
    }
}

#[test]
fn a_wrong_world_size_fails_the_peer_the_master_and_the_others() {
    let (m, addr) = master(3, LONG);
    let served = thread::spawn(move || m.serve(b"payload"));
    let a = addr.clone();
    let good = thread::spawn(move || join(&a, 3, 1, Duration::from_secs(3)));
    thread::sleep(Duration::from_millis(100));
    let bad = join(&addr, 4, 2, LONG).unwrap_err();
    assert!(msg(&bad).contains("rejected: world size 4"), "{bad}");
    let e = served.join().unwrap().unwrap_err();
    assert!(msg(&e).contains("world size 4, but the master's job has 3"), "{e}");
    assert!(good.join().unwrap().is_err(), "a peer of a failed rendezvous gets an error");
}

#[test]
fn a_taken_rank_is_rejected() {
    let (m, addr) = master(3, LONG);
    let served = thread::spawn(move || m.serve(b"payload"));
    let a = addr.clone();
    let first = thread::spawn(move || join(&a, 3, 1, Duration::from_secs(3)));
    thread::sleep(Duration::from_millis(100));
    let second = join(&addr, 3, 1, LONG);
    let e = served.join().unwrap().unwrap_err();
    assert!(msg(&e).contains("rank 1, which another peer already took"), "{e}");
    assert!(first.join().unwrap().is_err() && second.is_err());
}

#[test]
fn missing_ranks_are_named_when_the_master_times_out() {
    let (m, addr) = master(4, SHORT);
    let start = Instant::now();
    let served = thread::spawn(move || m.serve(b"payload"));
    let peer = join(&addr, 4, 2, LONG).unwrap_err();
    let e = served.join().unwrap().unwrap_err();
    assert!(start.elapsed() < LIVENESS);
    assert!(msg(&e).contains("rank(s) 1, 3 of 4 did not connect"), "{e}");
    assert!(msg(&peer).contains("rank(s) 1, 3 of 4 did not connect"), "the peer is told why: {peer}");
}

#[test]
fn a_peer_with_no_master_times_out() {
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let start = Instant::now();
    let e = join(&addr, 2, 1, SHORT).unwrap_err();
    assert!(start.elapsed() < LIVENESS);
    assert!(msg(&e).contains("could not reach the master"), "{e}");
}

/// A fake master that reads a hello and answers `reply`.
fn fake_master(reply: Vec<u8>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut hello = [0u8; 20];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&reply).unwrap();
    });
    addr
}

#[test]
fn a_malformed_reply_is_an_error() {
    let addr = fake_master(b"HTTP/1.1 200 OK\r\n\r\nhello there".to_vec());
    let e = join(&addr, 2, 1, LONG).unwrap_err();
    assert!(msg(&e).contains("not a rendezvous message"), "{e}");
    let mut huge = MAGIC.to_vec();
    huge.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    huge.push(0);
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    let e = join(&fake_master(huge), 2, 1, LONG).unwrap_err();
    assert!(msg(&e).contains("claims 4294967295 bytes"), "{e}");
    let mut short = MAGIC.to_vec();
    short.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    short.push(0);
    short.extend_from_slice(&128u32.to_be_bytes());
    short.extend_from_slice(&[7; 10]);
    let e = join(&fake_master(short), 2, 1, LONG).unwrap_err();
    assert!(msg(&e).contains("truncated reply"), "{e}");
}

#[test]
fn bad_arguments_are_errors() {
    assert!(Master::bind("127.0.0.1:0", 0, LONG).is_err());
    assert!(Master::bind("not an address", 2, LONG).is_err());
    assert!(join("127.0.0.1:1", 2, 0, SHORT).is_err(), "rank 0 is the master");
    assert!(join("127.0.0.1:1", 2, 2, SHORT).is_err(), "rank out of range");
    let (m, _) = master(1, LONG);
    m.serve(b"a world of one needs no peers").unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn the_master_listens_only_where_told() {
    // All of 127.0.0.0/8 is loopback on Linux: bound to 127.0.0.2, nothing answers on 127.0.0.1.
    let m = Master::bind("127.0.0.2:0", 2, LONG).unwrap();
    let at = m.local_addr().unwrap();
    assert_eq!(at.ip().to_string(), "127.0.0.2");
    let elsewhere = format!("127.0.0.1:{}", at.port());
    assert!(TcpStream::connect_timeout(&elsewhere.parse().unwrap(), SHORT).is_err(), "not on 127.0.0.1");
    let served = thread::spawn(move || m.serve(b"here"));
    assert_eq!(join(&at.to_string(), 2, 1, LONG).unwrap(), b"here");
    served.join().unwrap().unwrap();
}
