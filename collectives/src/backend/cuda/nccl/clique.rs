//! The NCCL clique of an all-CUDA group: one communicator per member (made once per set of
//! ordinals with `ncclCommInitAll`, as cudarc's `Comm::from_devices` does), each collective one
//! NCCL group call across all members, each on its own stream, returning one output [`Buffer`] per
//! member with a CUDA-event fence. [`CliqueCall`] is such a call as a graph node's multi-device
//! kernel.
//!
//! Where libnccl is absent, [`super::nccl_available`] is false and [`NcclClique::get`] answers
//! [`Error::DeviceUnavailable`]; callers fall back to the native ring/star algorithms.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;
use cudarc::nccl::{result, sys};
use parking_lot::Mutex;

use super::super::device::{self, CudaDevice};
use super::super::driver;
use super::super::memory::{DevAlloc, alloc_of, await_on, device_buffer, record};
use super::{RedOp, describe, failed, issue};
use crate::backend::Buffer;
use crate::backend::nccl::NcclCall;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;

/// One NCCL communicator, destroyed on drop.
struct Comm(sys::ncclComm_t);
// SAFETY: an NCCL communicator may be used from any thread, one call at a time; the clique
// serialises every use behind its mutex.
unsafe impl Send for Comm {}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: the communicator came from ncclCommInitAll and is destroyed once, here.
        let _ = unsafe { result::comm_destroy(self.0) };
    }
}

/// The NCCL communicators of one set of CUDA devices, and a stream per member.
pub(crate) struct NcclClique {
    members: Vec<Device>,
    devs: Vec<Arc<CudaDevice>>,
    streams: Vec<Arc<CudaStream>>,
    comms: Mutex<Vec<Comm>>,
}

fn nccl_err(device: Device, what: &str) -> impl Fn(sys::ncclResult_t) -> Error + '_ {
    move |e| Error::driver(device, what, describe(e))
}

impl NcclClique {
    /// The clique of `members` (distinct CUDA devices, in rank order), made on first use.
    pub fn get(members: &[Device]) -> Result<Arc<NcclClique>> {
        type Cache = Mutex<HashMap<Vec<Device>, Arc<NcclClique>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let mut cache = CACHE.get_or_init(Default::default).lock();
        if let Some(c) = cache.get(members) {
            return Ok(c.clone());
        }
        let clique = Arc::new(NcclClique::new(members)?);
        cache.insert(members.to_vec(), clique.clone());
        Ok(clique)
    }

    fn new(members: &[Device]) -> Result<Self> {
        let first = *members.first().ok_or(Error::EmptyGroup)?;
        let mut ordinals = Vec::with_capacity(members.len());
        for (i, &d) in members.iter().enumerate() {
            let Device::Cuda(n) = d else {
                return Err(Error::InvalidArgument {
                    what: "nccl",
                    msg: format!("{d} is not a CUDA device"),
                });
            };
            if let Some(j) = members[..i].iter().position(|&m| m == d) {
                return Err(Error::DuplicateDevice { device: d, first: j, second: i });
            }
            ordinals.push(n);
        }
        let devs = ordinals.iter().map(|&n| device::get(n)).collect::<Result<Vec<_>>>()?;
        for (i, d) in devs.iter().enumerate() {
            if let Some(other) = devs[..i].iter().find(|o| o.physical == d.physical) {
                let reason = format!(
                    "NCCL needs distinct GPUs, and {} is on GPU {} as {} is (virtual CUDA devices, {})",
                    d.device,
                    d.physical,
                    other.device,
                    super::super::CUDA_DEVICES_ENV
                );
                return Err(Error::DeviceUnavailable { device: d.device, reason });
            }
        }
        let ordinals: Vec<i32> = devs.iter().map(|d| d.physical as i32).collect();
        if let Err(reason) = driver::nccl_status() {
            return Err(Error::DeviceUnavailable { device: first, reason: reason.clone() });
        }
        let streams = devs
            .iter()
            .map(|d| d.ctx.new_stream().map_err(driver::err(d.device, "create stream")))
            .collect::<Result<Vec<_>>>()?;
        let mut raw = vec![std::ptr::null_mut(); ordinals.len()];
        // SAFETY: `raw` has one slot per ordinal; the ordinals are distinct existing devices.
        code_of(unsafe { result::comm_init_all(raw.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr()) })
            .map_err(nccl_err(first, "ncclCommInitAll"))?;
        let comms = Mutex::new(raw.into_iter().map(Comm).collect());
        Ok(NcclClique { members: members.to_vec(), devs, streams, comms })
    }

    /// Every member gets a copy of `src`, which lives on member `root`.
    pub fn broadcast(&self, src: &Buffer, root: usize) -> Result<Vec<Buffer>> {
        let inputs: Vec<&Buffer> = vec![src; self.members.len()];
        self.run(NcclCall::Broadcast(root), &inputs)
    }

    /// Checks the inputs and returns (dtype, input length, output length).
    fn check(&self, call: NcclCall, inputs: &[&Buffer]) -> Result<(DType, usize, usize)> {
        let k = self.members.len();
        let bad = |msg: String| Error::InvalidArgument { what: "nccl", msg };
        if inputs.len() != k {
            return Err(bad(format!("{} inputs for a clique of {k}", inputs.len())));
        }
        let (dtype, len) = (inputs[0].dtype, inputs[0].len);
        for (i, b) in inputs.iter().enumerate() {
            let want = match call {
                NcclCall::Broadcast(root) => self.members[root.min(k - 1)],
                _ => self.members[i],
            };
            if b.device != want || b.dtype != dtype || b.len != len {
                return Err(bad(format!(
                    "input {i} is {} x {} on {}, expected {len} x {dtype} on {want}",
                    b.len, b.dtype, b.device
                )));
            }
        }
        let out = match call {
            NcclCall::Reduce(_, root) | NcclCall::Broadcast(root) if root >= k => {
                return Err(bad(format!("root {root} is not a rank of a clique of {k}")));
            }
            NcclCall::AllGather => len.checked_mul(k).ok_or_else(|| bad("size overflows".into()))?,
            NcclCall::ReduceScatter(_) if len % k != 0 => {
                return Err(bad(format!("{len} elements do not split into {k} equal parts")));
            }
            NcclCall::ReduceScatter(_) => len / k,
            NcclCall::Send(_) | NcclCall::Recv(_) | NcclCall::Barrier => {
                return Err(bad(format!("{} is a rank's call, not a clique's", call.name())));
            }
            _ => len,
        };
        Ok((dtype, len, out))
    }

    /// Runs `call` (one input per member) as one group call; returns the outputs of the ranks
    /// that have one (for `Reduce`, just the root's).
    pub fn run(&self, call: NcclCall, inputs: &[&Buffer]) -> Result<Vec<Buffer>> {
        let (dtype, in_len, out_len) = self.check(call, inputs)?;
        let count = match call {
            NcclCall::ReduceScatter(_) => out_len,
            _ => in_len,
        };
        let receives = |r: usize| !matches!(call, NcclCall::Reduce(_, root) if root != r);
        let mut outs: Vec<Option<Arc<DevAlloc>>> = Vec::with_capacity(self.devs.len());
        for (r, (d, s)) in self.devs.iter().zip(&self.streams).enumerate() {
            await_on(s, inputs[r], d.device)?;
            outs.push(if receives(r) { Some(d.alloc(out_len * dtype.size(), s)?) } else { None });
        }
        let srcs = inputs.iter().map(|b| alloc_of(b, "nccl")).collect::<Result<Vec<_>>>()?;
        let issued = self.group((call, dtype, count), &self.comms.lock(), &srcs, &outs);
        // Even after a failed group call, part of it may run: the inputs' memory must not be
        // reused before it has.
        let mut result = Vec::new();
        for (r, (s, out)) in self.streams.iter().zip(outs).enumerate() {
            let event = record(s, self.devs[r].device)?;
            srcs[r].note_use(s, &event);
            if let Some(out) = out {
                result.push(device_buffer(dtype, out_len, out, event, s));
            }
        }
        issued.map(|()| result)
    }

    /// Issues one call per rank between `ncclGroupStart` and `ncclGroupEnd`. `call` is the
    /// collective, the dtype, and the count NCCL takes (the input's length; the output's for
    /// reduce-scatter).
    fn group(
        &self,
        (call, dtype, count): (NcclCall, DType, usize),
        comms: &[Comm],
        srcs: &[&Arc<DevAlloc>],
        outs: &[Option<Arc<DevAlloc>>],
    ) -> Result<()> {
        let dev0 = self.members[0];
        crate::failpoint::hit(dev0, "nccl group call")?;
        let mut ops = Vec::with_capacity(comms.len());
        for (c, &d) in comms.iter().zip(&self.members) {
            // SAFETY: the communicator is live, used under the clique's lock.
            let made = unsafe { RedOp::new(call.red_op(), dtype, c.0, self.members.len()) };
            match made {
                Ok((op, code)) if !failed(code) => ops.push(op),
                Ok((_, code)) => {
                    destroy(&ops, comms);
                    return Err(nccl_err(d, "ncclRedOpCreatePreMulSum")(code));
                }
                Err(e) => {
                    destroy(&ops, comms);
                    return Err(e);
                }
            }
        }
        let started = code_of(result::group_start()).map_err(nccl_err(dev0, "ncclGroupStart"));
        let mut first_err = started.err();
        for r in 0..comms.len() {
            let send = srcs[r].ptr() as *const c_void;
            let recv = outs[r].as_ref().map_or(std::ptr::null_mut(), |a| a.ptr() as *mut c_void);
            let stream = self.streams[r].cu_stream() as sys::cudaStream_t;
            // SAFETY: `send` holds the input and `recv` the output sizes `check` computed, both on
            // rank r's device and alive until the stream has run (outputs are returned, inputs
            // noted); the communicator is rank r's, used under the clique's lock.
            let res = unsafe { issue(call, (send, recv), (count, dtype), ops[r].get(), comms[r].0, stream) };
            if failed(res) && first_err.is_none() {
                first_err = Some(nccl_err(self.members[r], "nccl collective")(res));
            }
        }
        let end = code_of(result::group_end()).map_err(nccl_err(dev0, "ncclGroupEnd"));
        destroy(&ops, comms);
        match first_err {
            Some(e) => Err(e),
            None => end,
        }
    }
}

/// Destroys the pre-multiplied sums among `ops` (one per communicator of `comms`).
fn destroy(ops: &[RedOp], comms: &[Comm]) {
    for (op, c) in ops.iter().zip(comms) {
        // SAFETY: each op was made for this communicator, used under the clique's lock; the
        // calls using it have been enqueued.
        unsafe { op.destroy(c.0) };
    }
}

/// `Ok` for NCCL's success, else its result code.
fn code_of(
    r: std::result::Result<result::NcclStatus, result::NcclError>,
) -> std::result::Result<(), sys::ncclResult_t> {
    match r {
        Ok(_) => Ok(()),
        Err(result::NcclError(e)) => Err(e),
    }
}

/// An NCCL group call over `members`, as the multi-device kernel of an `Op::Collective` node.
/// The clique is made on first use.
pub(crate) struct CliqueCall {
    pub members: Vec<Device>,
    pub call: NcclCall,
}

impl MultiKernel for CliqueCall {
    fn name(&self) -> String {
        format!("nccl {:?}", self.call)
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let inputs = &crate::backend::refs(inputs)[..];
        let clique = NcclClique::get(&self.members)?;
        let outs = match (self.call, inputs) {
            (NcclCall::Broadcast(root), [src]) => clique.broadcast(src, root)?,
            (call, _) => clique.run(call, inputs)?,
        };
        Ok(outs.into_iter().map(Arc::new).collect())
    }
}
