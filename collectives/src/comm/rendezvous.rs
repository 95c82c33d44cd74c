//! The TCP rendezvous: rank 0 hands a payload (the NCCL unique id) to every other rank.
//!
//! Before NCCL can connect the ranks, each needs the 128-byte id rank 0 made. Rank 0 listens on
//! exactly the address it is told (`MASTER_ADDR:MASTER_PORT`, never every interface), accepts
//! `world_size - 1` peers, checks each one's hello, and once all are in answers each with the
//! payload. The payload is opaque bytes, so the protocol knows nothing of NCCL and is tested on
//! any machine.
//!
//! The protocol, every integer big-endian:
//!
//! - hello, peer → master: [`MAGIC`] (8 bytes), [`PROTOCOL_VERSION`] (u32), world size (u32),
//!   rank (u32);
//! - reply, master → peer: [`MAGIC`], [`PROTOCOL_VERSION`], status (u8: 0 accepted, 1 rejected),
//!   length (u32, at most [`MAX_PAYLOAD`]), then the payload or the UTF-8 reason of a rejection.
//!
//! The master rejects a peer that sends anything else — bytes that are not a hello, another
//! version, another world size, a rank out of range or taken — and then fails the whole
//! rendezvous with an error naming the peer, telling the peers already in why: a job whose
//! ranks disagree must not start. Every connect, read and write has a deadline, so a rank that
//! never comes is an error naming it, not a hang. Errors are [`Error::Comm`] with op
//! `"rendezvous"`.
//!
//! ```
//! use std::time::Duration;
//! use collectives::comm::rendezvous::{Master, join};
//! let master = Master::bind("127.0.0.1:0", 3, Duration::from_secs(10))?;
//! let addr = master.local_addr()?.to_string();
//! let peers: Vec<_> = (1..3)
//!     .map(|rank| {
//!         let addr = addr.clone();
//!         std::thread::spawn(move || join(&addr, 3, rank, Duration::from_secs(10)))
//!     })
//!     .collect();
//! master.serve(b"the id")?;
//! for p in peers {
//!     assert_eq!(p.join().unwrap()?, b"the id");
//! }
//! # Ok::<(), collectives::Error>(())
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::env::Launch;
use crate::error::{Error, Result};

/// The first bytes of every message.
pub const MAGIC: [u8; 8] = *b"collrdzv";
/// The protocol's version; master and peers must agree.
pub const PROTOCOL_VERSION: u32 = 1;
/// The largest payload or rejection reason a reply may carry.
pub const MAX_PAYLOAD: usize = 1 << 16;

const HELLO_LEN: usize = 20;
const REPLY_HEAD_LEN: usize = 17;
const ACCEPTED: u8 = 0;
const REJECTED: u8 = 1;

fn err(msg: impl Into<String>) -> Error {
    Error::Comm { op: "rendezvous", msg: msg.into() }
}

/// What is left of `deadline`, at least a millisecond (sockets refuse a zero timeout).
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

/// Rank 0's end: a listener bound to one address, waiting for `world_size - 1` peers.
#[derive(Debug)]
pub struct Master {
    listener: TcpListener,
    world_size: usize,
    timeout: Duration,
}

impl Master {
    /// Listens on `addr` (`host:port`; port 0 picks a free one, see [`Master::local_addr`]) and
    /// nowhere else, for a job of `world_size` ranks; [`Master::serve`] waits at most `timeout`.
    pub fn bind(addr: &str, world_size: usize, timeout: Duration) -> Result<Master> {
        if world_size == 0 || world_size > u32::MAX as usize {
            return Err(err(format!("world size {world_size} is not in 1..=2^32-1")));
        }
        let listener = TcpListener::bind(addr).map_err(|e| err(format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true).map_err(|e| err(format!("listener on {addr}: {e}")))?;
        Ok(Master { listener, world_size, timeout })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(|e| err(format!("listener address: {e}")))
    }

    /// Accepts every peer, checks its hello, then sends each one `payload`. Fails, telling the
    /// peers already in, when a peer is malformed or mismatched or when the timeout passes first.
    pub fn serve(self, payload: &[u8]) -> Result<()> {
        if payload.len() > MAX_PAYLOAD {
            return Err(err(format!("payload of {} bytes exceeds {MAX_PAYLOAD}", payload.len())));
        }
        let deadline = Instant::now() + self.timeout;
        let mut peers: Vec<Peer> = Vec::with_capacity(self.world_size - 1);
        while peers.len() + 1 < self.world_size {
            let failure = match self.listener.accept() {
                Ok((stream, addr)) => match self.greet(&stream, addr, deadline, &peers) {
                    Ok(rank) => {
                        peers.push(Peer { rank, stream });
                        continue;
                    }
                    Err(why) => {
                        reject(&stream, &why);
                        format!("rejected peer {addr}: {why}")
                    }
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.timed_out(&peers),
                Err(e) => format!("accept failed: {e}"),
            };
            return Err(self.fail(&peers, failure));
        }
        for p in &peers {
            reply(&p.stream, ACCEPTED, payload, deadline)
                .map_err(|e| err(format!("sending the payload to rank {}: {e}", p.rank)))?;
        }
        Ok(())
    }

    /// Reads and checks one peer's hello; returns its rank or why it is rejected.
    fn greet(
        &self,
        s: &TcpStream,
        addr: SocketAddr,
        deadline: Instant,
        peers: &[Peer],
    ) -> Result<usize, String> {
        let mut hello = [0u8; HELLO_LEN];
        read_full(s, &mut hello, deadline).map_err(|e| format!("no hello from {addr}: {e}"))?;
        let (version, world, rank) = parse_hello(&hello)?;
        if version != PROTOCOL_VERSION {
            return Err(format!("protocol version {version}, but the master speaks {PROTOCOL_VERSION}"));
        }
        if world != self.world_size as u64 {
            return Err(format!("world size {world}, but the master's job has {}", self.world_size));
        }
        let rank = rank as usize;
        if rank == 0 || rank >= self.world_size {
            return Err(format!(
                "rank {rank}, which is not in 1..{} (rank 0 is the master)",
                self.world_size
            ));
        }
        if peers.iter().any(|p| p.rank == rank) {
            return Err(format!("rank {rank}, which another peer already took"));
        }
        Ok(rank)
    }

    fn timed_out(&self, peers: &[Peer]) -> String {
        let missing: Vec<usize> =
            (1..self.world_size).filter(|r| peers.iter().all(|p| p.rank != *r)).collect();
        format!(
            "timed out after {:?}: rank(s) {} of {} did not connect",
            self.timeout,
            super::check::rank_list(&missing),
            self.world_size
        )
    }

    /// Tells the peers already in that the rendezvous failed, and returns the error.
    fn fail(&self, peers: &[Peer], why: String) -> Error {
        let addr = self.local_addr().map_or_else(|_| "?".into(), |a| a.to_string());
        let why = format!("master on {addr}: {why}");
        for p in peers {
            reject(&p.stream, &why);
        }
        err(why)
    }
}

struct Peer {
    rank: usize,
    stream: TcpStream,
}

/// `(version, world size, rank)` of a hello, or why its bytes are not one.
fn parse_hello(b: &[u8; HELLO_LEN]) -> Result<(u32, u64, u32), String> {
    if b[..8] != MAGIC {
        let shown: Vec<String> = b[..8].iter().map(|x| format!("{x:02x}")).collect();
        return Err(format!("bytes that are not a rendezvous hello (began {})", shown.join(" ")));
    }
    let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Ok((word(8), word(12) as u64, word(16)))
}

/// Reads exactly `buf.len()` bytes before `deadline`.
fn read_full(mut s: &TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    let mut got = 0;
    while got < buf.len() {
        s.set_read_timeout(Some(left(deadline)))?;
        match s.read(&mut buf[got..]) {
            Ok(0) => {
                let msg = format!("connection closed after {got} of {} bytes", buf.len());
                return Err(std::io::Error::new(ErrorKind::UnexpectedEof, msg));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let msg = format!("timed out after {got} of {} bytes", buf.len());
                return Err(std::io::Error::new(ErrorKind::TimedOut, msg));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends a rejection, then reads whatever the peer still sends (briefly) before the stream is
/// closed: closing with unread bytes would reset the connection and lose the reply.
fn reject(s: &TcpStream, why: &str) {
    let grace = Instant::now() + Duration::from_millis(200);
    if reply(s, REJECTED, why.as_bytes(), grace).is_err() {
        return;
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 512];
    while Instant::now() < grace {
        let _ = s.set_read_timeout(Some(left(grace)));
        match (&*s).read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

/// Writes a reply with `status` and `body` before `deadline`.
fn reply(mut s: &TcpStream, status: u8, body: &[u8], deadline: Instant) -> std::io::Result<()> {
    let body = &body[..body.len().min(MAX_PAYLOAD)];
    let mut msg = Vec::with_capacity(REPLY_HEAD_LEN + body.len());
    msg.extend_from_slice(&MAGIC);
    msg.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    msg.push(status);
    msg.extend_from_slice(&(body.len() as u32).to_be_bytes());
    msg.extend_from_slice(body);
    s.set_nonblocking(false)?;
    s.set_write_timeout(Some(left(deadline)))?;
    s.write_all(&msg)?;
    s.flush()
}

/// A peer's end: connects to the master at `master` (`host:port`, retrying until it listens),
/// says it is `rank` of `world_size`, and returns the master's payload. Waits at most `timeout`
/// in all.
pub fn join(master: &str, world_size: usize, rank: usize, timeout: Duration) -> Result<Vec<u8>> {
    if world_size > u32::MAX as usize || rank >= world_size || rank == 0 {
        return Err(err(format!("rank {rank} of {world_size} cannot join: peers are ranks 1..{world_size}")));
    }
    let deadline = Instant::now() + timeout;
    let s = connect(master, deadline, timeout)?;
    let mut hello = Vec::with_capacity(HELLO_LEN);
    hello.extend_from_slice(&MAGIC);
    hello.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    hello.extend_from_slice(&(world_size as u32).to_be_bytes());
    hello.extend_from_slice(&(rank as u32).to_be_bytes());
    let sent = s.set_write_timeout(Some(left(deadline))).and_then(|_| (&s).write_all(&hello));
    sent.map_err(|e| err(format!("rank {rank}: sending the hello to {master}: {e}")))?;
    read_reply(&s, deadline).map_err(|why| err(format!("rank {rank}: master {master}: {why}")))
}

/// Connects to `master`, retrying while nothing listens there yet.
fn connect(master: &str, deadline: Instant, timeout: Duration) -> Result<TcpStream> {
    let mut last = String::from("no address");
    loop {
        let addrs = master.to_socket_addrs().map_err(|e| err(format!("cannot resolve {master}: {e}")))?;
        for a in addrs {
            match TcpStream::connect_timeout(&a, left(deadline).min(Duration::from_secs(5))) {
                Ok(s) => return Ok(s),
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        if Instant::now() >= deadline {
            return Err(err(format!("could not reach the master at {master} within {timeout:?} ({last})")));
        }
        std::thread::sleep(Duration::from_millis(50).min(left(deadline)));
    }
}

/// Reads the master's reply: the payload, or why the master rejected this rank.
fn read_reply(s: &TcpStream, deadline: Instant) -> Result<Vec<u8>, String> {
    let mut head = [0u8; REPLY_HEAD_LEN];
    read_full(s, &mut head, deadline).map_err(|e| format!("no reply: {e}"))?;
    if head[..8] != MAGIC {
        return Err("the reply is not a rendezvous message (bad magic bytes)".into());
    }
    let version = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    if version != PROTOCOL_VERSION {
        return Err(format!("the master speaks protocol {version}, this rank {PROTOCOL_VERSION}"));
    }
    let len = u32::from_be_bytes([head[13], head[14], head[15], head[16]]) as usize;
    if len > MAX_PAYLOAD {
        return Err(format!("the reply claims {len} bytes, more than {MAX_PAYLOAD}"));
    }
    let mut body = vec![0u8; len];
    read_full(s, &mut body, deadline).map_err(|e| format!("truncated reply: {e}"))?;
    match head[12] {
        ACCEPTED => Ok(body),
        REJECTED => Err(format!("rejected: {}", String::from_utf8_lossy(&body))),
        other => Err(format!("the reply has unknown status {other}")),
    }
}

/// The whole exchange for `launch`'s rank: rank 0 makes the payload with `make`, listens on
/// `launch.master()` and serves it; every other rank joins and returns the master's payload.
pub fn exchange(
    launch: &Launch,
    timeout: Duration,
    make: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    if launch.rank != 0 {
        return join(&launch.master(), launch.world_size, launch.rank, timeout);
    }
    let master = Master::bind(&launch.master(), launch.world_size, timeout)?;
    let payload = make()?;
    master.serve(&payload)?;
    Ok(payload)
}
