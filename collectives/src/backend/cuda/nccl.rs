//! NCCL for groups whose members are all CUDA devices: an [`NcclClique`] holds one communicator
//! per member (made once per set of ordinals with `ncclCommInitAll`, as cudarc's
//! `Comm::from_devices` does) and runs each collective as one NCCL group call across all members,
//! each on its own stream, returning one output [`Buffer`] per member with a CUDA-event fence.
//!
//! Semantics are NCCL's, which differ from the library's native kernels at rounding level:
//! `Avg` on floats and `PreMulSum` multiply each input by the scalar before summing (integers:
//! sum, then divide truncating — as the native path). For NaN, NCCL 2.28's f32 `Max` was seen to
//! propagate it on the H200s (the native kernels guarantee it); NCCL does not document this, so
//! choose the native path where NaN propagation must be guaranteed.
//!
//! Where libnccl is absent, [`nccl_available`] is false and [`NcclClique::get`] answers
//! [`Error::DeviceUnavailable`]; callers fall back to the native ring/star algorithms.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;
use cudarc::nccl::{result, sys};
use half::{bf16, f16};
use parking_lot::Mutex;

use super::device::{self, CudaDevice};
use super::driver;
use super::memory::{DevAlloc, alloc_of, await_on, device_buffer, record};
use crate::backend::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A reduction operator as NCCL runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NcclRedOp {
    /// Sum (integers wrap).
    Sum,
    /// Product (integers wrap).
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Sum divided by the number of members.
    Avg,
    /// Each input multiplied by the scalar, then summed (`ncclRedOpCreatePreMulSum`). Integer
    /// dtypes need an integral scalar.
    PreMulSum(f64),
}

impl NcclRedOp {
    /// NCCL's built-in operator, or the scalar of a pre-multiplied sum (whose operator is made
    /// for each call with `ncclRedOpCreatePreMulSum`).
    pub fn builtin(self) -> std::result::Result<sys::ncclRedOp_t, f64> {
        use sys::ncclRedOp_t as O;
        Ok(match self {
            NcclRedOp::Sum => O::ncclSum,
            NcclRedOp::Prod => O::ncclProd,
            NcclRedOp::Max => O::ncclMax,
            NcclRedOp::Min => O::ncclMin,
            NcclRedOp::Avg => O::ncclAvg,
            NcclRedOp::PreMulSum(s) => return Err(s),
        })
    }
}

/// Whether NCCL can run here: libcuda and libnccl load with every symbol used.
pub(crate) fn nccl_available() -> bool {
    driver::driver_status().is_ok() && driver::nccl_status().is_ok()
}

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

fn nccl_err(device: Device, what: &str) -> impl Fn(result::NcclError) -> Error + '_ {
    // SAFETY: ncclGetErrorString returns a static string for any code.
    move |e| Error::driver(device, what, driver::c_text(unsafe { sys::ncclGetErrorString(e.0) }))
}

/// NCCL's name for `d`.
pub(crate) fn nccl_type(d: DType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as T;
    match d {
        DType::F32 => T::ncclFloat32,
        DType::F64 => T::ncclFloat64,
        DType::F16 => T::ncclFloat16,
        DType::BF16 => T::ncclBfloat16,
        DType::I32 => T::ncclInt32,
        DType::I64 => T::ncclInt64,
        DType::U8 => T::ncclUint8,
    }
}

/// What one group call does.
#[derive(Clone, Copy)]
enum Coll {
    AllReduce(NcclRedOp),
    Reduce(usize, NcclRedOp),
    Broadcast(usize),
    AllGather,
    ReduceScatter(NcclRedOp),
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
            ordinals.push(n as i32);
        }
        let devs = ordinals.iter().map(|&n| device::get(n as u32)).collect::<Result<Vec<_>>>()?;
        if let Err(reason) = driver::nccl_status() {
            return Err(Error::DeviceUnavailable { device: first, reason: reason.clone() });
        }
        let streams = devs
            .iter()
            .map(|d| d.ctx.new_stream().map_err(driver::err(d.device, "create stream")))
            .collect::<Result<Vec<_>>>()?;
        let mut raw = vec![std::ptr::null_mut(); ordinals.len()];
        // SAFETY: `raw` has one slot per ordinal; the ordinals are distinct existing devices.
        unsafe { result::comm_init_all(raw.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr()) }
            .map_err(nccl_err(first, "ncclCommInitAll"))?;
        let comms = Mutex::new(raw.into_iter().map(Comm).collect());
        Ok(NcclClique { members: members.to_vec(), devs, streams, comms })
    }

    /// The members, in rank order.
    #[allow(dead_code)] // part of the clique's API for the collectives
    pub fn members(&self) -> &[Device] {
        &self.members
    }

    /// Every member gets `op` over all inputs (one per member).
    pub fn all_reduce(&self, inputs: &[&Buffer], op: NcclRedOp) -> Result<Vec<Buffer>> {
        self.run(Coll::AllReduce(op), inputs)
    }

    /// Member `root` gets `op` over all inputs; returns that one buffer.
    pub fn reduce(&self, inputs: &[&Buffer], root: usize, op: NcclRedOp) -> Result<Buffer> {
        let mut outs = self.run(Coll::Reduce(root, op), inputs)?;
        Ok(outs.swap_remove(0))
    }

    /// Every member gets a copy of `src`, which lives on member `root`.
    pub fn broadcast(&self, src: &Buffer, root: usize) -> Result<Vec<Buffer>> {
        let inputs: Vec<&Buffer> = vec![src; self.members.len()];
        self.run(Coll::Broadcast(root), &inputs)
    }

    /// Every member gets all inputs concatenated in rank order.
    pub fn all_gather(&self, inputs: &[&Buffer]) -> Result<Vec<Buffer>> {
        self.run(Coll::AllGather, inputs)
    }

    /// Member i gets part i (of `len / members` elements) of `op` over all inputs.
    pub fn reduce_scatter(&self, inputs: &[&Buffer], op: NcclRedOp) -> Result<Vec<Buffer>> {
        self.run(Coll::ReduceScatter(op), inputs)
    }

    /// Checks the inputs and returns (dtype, input length, output length).
    fn check(&self, coll: Coll, inputs: &[&Buffer]) -> Result<(DType, usize, usize)> {
        let k = self.members.len();
        let bad = |msg: String| Error::InvalidArgument { what: "nccl", msg };
        if inputs.len() != k {
            return Err(bad(format!("{} inputs for a clique of {k}", inputs.len())));
        }
        let (dtype, len) = (inputs[0].dtype, inputs[0].len);
        for (i, b) in inputs.iter().enumerate() {
            let want = match coll {
                Coll::Broadcast(root) => self.members[root.min(k - 1)],
                _ => self.members[i],
            };
            if b.device != want || b.dtype != dtype || b.len != len {
                return Err(bad(format!(
                    "input {i} is {} x {} on {}, expected {len} x {dtype} on {want}",
                    b.len, b.dtype, b.device
                )));
            }
        }
        let out = match coll {
            Coll::Reduce(root, _) | Coll::Broadcast(root) if root >= k => {
                return Err(bad(format!("root {root} is not a rank of a clique of {k}")));
            }
            Coll::AllGather => len.checked_mul(k).ok_or_else(|| bad("size overflows".into()))?,
            Coll::ReduceScatter(_) if len % k != 0 => {
                return Err(bad(format!("{len} elements do not split into {k} equal parts")));
            }
            Coll::ReduceScatter(_) => len / k,
            _ => len,
        };
        Ok((dtype, len, out))
    }

    /// Runs `coll` as one group call; returns the outputs of the ranks that have one (for
    /// `Reduce`, just the root's).
    fn run(&self, coll: Coll, inputs: &[&Buffer]) -> Result<Vec<Buffer>> {
        let (dtype, in_len, out_len) = self.check(coll, inputs)?;
        let count = match coll {
            Coll::ReduceScatter(_) => out_len,
            _ => in_len,
        };
        let receives = |r: usize| !matches!(coll, Coll::Reduce(root, _) if root != r);
        let mut outs: Vec<Option<Arc<DevAlloc>>> = Vec::with_capacity(self.devs.len());
        for (r, (d, s)) in self.devs.iter().zip(&self.streams).enumerate() {
            await_on(s, inputs[r], d.device)?;
            outs.push(if receives(r) { Some(d.alloc(out_len * dtype.size(), s)?) } else { None });
        }
        let srcs = inputs.iter().map(|b| alloc_of(b, "nccl")).collect::<Result<Vec<_>>>()?;
        let issued = {
            let comms = self.comms.lock();
            RedOps::create(coll, dtype, &comms, self.members[0])
                .and_then(|ops| self.group((coll, dtype, count), &comms, &ops, &srcs, &outs))
        };
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

    /// Issues one collective per rank between `ncclGroupStart` and `ncclGroupEnd`.
    /// `call` is the collective, the dtype, and the count NCCL takes (the input's length; the
    /// output's for reduce-scatter).
    fn group(
        &self,
        call: (Coll, DType, usize),
        comms: &[Comm],
        ops: &RedOps,
        srcs: &[&Arc<DevAlloc>],
        outs: &[Option<Arc<DevAlloc>>],
    ) -> Result<()> {
        let dev0 = self.members[0];
        result::group_start().map_err(nccl_err(dev0, "ncclGroupStart"))?;
        let mut first_err = None;
        for r in 0..comms.len() {
            let send = srcs[r].ptr() as *const c_void;
            let recv = outs[r].as_ref().map_or(std::ptr::null_mut(), |a| a.ptr() as *mut c_void);
            let stream = self.streams[r].cu_stream() as sys::cudaStream_t;
            // SAFETY: `send` holds the input and `recv` the output sizes `check` computed, both on
            // rank r's device and alive until the stream has run (outputs are returned, inputs
            // noted); the communicator is rank r's, used under the clique's lock.
            let res = unsafe { issue(call, send, recv, ops.get(r), comms[r].0, stream) };
            if let Err(e) = res {
                first_err.get_or_insert(nccl_err(self.members[r], "nccl collective")(e));
            }
        }
        let end = result::group_end().map_err(nccl_err(dev0, "ncclGroupEnd"));
        match first_err {
            Some(e) => Err(e),
            None => end.map(|_| ()),
        }
    }
}

/// One NCCL call of rank `comm` (`call` as [`NcclClique::group`] takes it).
///
/// # Safety
/// As [`NcclClique::group`] guarantees.
unsafe fn issue(
    (coll, dtype, count): (Coll, DType, usize),
    send: *const c_void,
    recv: *mut c_void,
    op: sys::ncclRedOp_t,
    comm: sys::ncclComm_t,
    stream: sys::cudaStream_t,
) -> std::result::Result<result::NcclStatus, result::NcclError> {
    let t = nccl_type(dtype);
    // SAFETY: as the caller guarantees.
    unsafe {
        match coll {
            Coll::AllReduce(_) => result::all_reduce(send, recv, count, t, op, comm, stream),
            Coll::Reduce(root, _) => result::reduce(send, recv, count, t, op, root as i32, comm, stream),
            Coll::Broadcast(root) => result::broadcast(send, recv, count, t, root as i32, comm, stream),
            Coll::AllGather => result::all_gather(send, recv, count, t, comm, stream),
            Coll::ReduceScatter(_) => result::reduce_scatter(send, recv, count, t, op, comm, stream),
        }
    }
}

/// The NCCL operator of each rank for one call: built in, or a pre-multiplied sum made for each
/// communicator and destroyed after the call.
struct RedOps<'a> {
    ops: Vec<sys::ncclRedOp_t>,
    custom: Option<&'a [Comm]>,
}

impl<'a> RedOps<'a> {
    fn create(coll: Coll, dtype: DType, comms: &'a [Comm], dev: Device) -> Result<Self> {
        let op = match coll {
            Coll::AllReduce(op) | Coll::Reduce(_, op) | Coll::ReduceScatter(op) => op,
            Coll::Broadcast(_) | Coll::AllGather => NcclRedOp::Sum,
        };
        match op.builtin() {
            Ok(builtin) => Ok(RedOps { ops: vec![builtin; comms.len()], custom: None }),
            Err(s) => Self::pre_mul_sum(s, dtype, comms, dev),
        }
    }

    fn pre_mul_sum(s: f64, dtype: DType, comms: &'a [Comm], dev: Device) -> Result<Self> {
        let mut scalar = scalar_bytes(s, dtype)?;
        let mut made = RedOps { ops: Vec::with_capacity(comms.len()), custom: Some(comms) };
        for c in comms {
            let mut op = sys::ncclRedOp_t::ncclSum;
            // SAFETY: `scalar` holds one value of `dtype`, read during the call (host-immediate).
            unsafe {
                result::reduce_op_create_pre_mul_sum(
                    &mut op,
                    scalar.as_mut_ptr() as *mut c_void,
                    nccl_type(dtype),
                    sys::ncclScalarResidence_t::ncclScalarHostImmediate,
                    c.0,
                )
            }
            .map_err(nccl_err(dev, "ncclRedOpCreatePreMulSum"))?;
            made.ops.push(op);
        }
        Ok(made)
    }

    fn get(&self, rank: usize) -> sys::ncclRedOp_t {
        self.ops[rank]
    }
}

impl Drop for RedOps<'_> {
    fn drop(&mut self) {
        if let Some(comms) = self.custom {
            for (op, c) in self.ops.iter().zip(comms) {
                // SAFETY: each op was made for this communicator; the calls using it have returned.
                let _ = unsafe { result::reduce_op_destroy(*op, c.0) };
            }
        }
    }
}

/// The bytes of `s` as one value of `dtype` (integers need an integral `s`; they wrap as the
/// library's integer scales do).
pub(crate) fn scalar_bytes(s: f64, dtype: DType) -> Result<[u8; 8]> {
    if dtype.is_int() && !(s.is_finite() && s.fract() == 0.0) {
        let redop = format!("PreMulSum({s})");
        let reason = "an integer dtype needs an integral scalar";
        return Err(Error::BadReduceOp { op: "nccl", redop, dtype, reason });
    }
    let mut b = [0u8; 8];
    let i = s as i64;
    match dtype {
        DType::F32 => b[..4].copy_from_slice(&(s as f32).to_ne_bytes()),
        DType::F64 => b.copy_from_slice(&s.to_ne_bytes()),
        DType::F16 => b[..2].copy_from_slice(&f16::from_f64(s).to_bits().to_ne_bytes()),
        DType::BF16 => b[..2].copy_from_slice(&bf16::from_f64(s).to_bits().to_ne_bytes()),
        DType::I32 => b[..4].copy_from_slice(&(i as i32).to_ne_bytes()),
        DType::I64 => b.copy_from_slice(&i.to_ne_bytes()),
        DType::U8 => b[0] = i as u8,
    }
    Ok(b)
}
