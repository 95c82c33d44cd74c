//! The raw layer: whether the CUDA libraries load, and the few unsafe driver calls the backend
//! makes, each returning [`Result`] with the crate's [`Error`].
//!
//! cudarc loads libcuda, libnvrtc and libnccl at run time and *panics* when a library or one of
//! its symbols is missing. So before anything calls into a library, [`driver_status`],
//! [`nvrtc_status`] and [`nccl_status`] check (once per process) that it loads and that every
//! symbol this backend uses is there; a missing one becomes an error naming it.

use std::ffi::{CStr, c_void};
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};
use cudarc::driver::{DriverError, result};

use crate::device::Device;
use crate::error::{Error, Result};

/// Driver entry points the backend (and the parts of cudarc it uses) calls.
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetUuid",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventDestroy_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemcpyPeerAsync",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuLaunchKernel",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuDeviceCanAccessPeer",
    "cuCtxEnablePeerAccess",
    "cuDeviceGetDefaultMemPool",
    "cuMemPoolSetAccess",
    "cuMemPoolSetAttribute",
    "cuMemPoolTrimTo",
    "cuGetErrorString",
    "cuGetErrorName",
];

/// Driver entry points of the device bridge (memory exported by Vulkan, imported here); checked
/// when a bridge is made, not when the driver loads.
const INTEROP_SYMBOLS: &[&str] =
    &["cuImportExternalMemory", "cuExternalMemoryGetMappedBuffer", "cuDestroyExternalMemory", "cuMemFree_v2"];

/// Driver entry points of the bridge's ordering (Vulkan timeline semaphores imported here, waited
/// on and signalled); checked when a timeline is first imported.
const SEMAPHORE_SYMBOLS: &[&str] =
    &["cuImportExternalSemaphore", "cuWaitExternalSemaphoresAsync", "cuSignalExternalSemaphoresAsync"];

/// Driver entry points of launches through a CUDA graph ([`super::relaunch`]); checked when the
/// first is made.
const GRAPH_SYMBOLS: &[&str] = &[
    "cuGraphCreate",
    "cuGraphAddKernelNode_v2",
    "cuGraphInstantiateWithFlags",
    "cuGraphExecKernelNodeSetParams_v2",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
];

/// Driver entry points that give a kernel's parameter layout (CUDA 12.4 on): a launch through a
/// graph compares its parameters with those the graph holds by them.
const PARAM_INFO_SYMBOLS: &[&str] = &["cuFuncGetParamInfo"];

/// NVRTC entry points used to compile the kernels.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcVersion",
];

/// NCCL entry points used by the clique.
const NCCL_SYMBOLS: &[&str] = &[
    "ncclCommInitAll",
    "ncclCommDestroy",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllReduce",
    "ncclReduce",
    "ncclBroadcast",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclRedOpCreatePreMulSum",
    "ncclRedOpDestroy",
    "ncclGetErrorString",
];

/// `Ok` when a library loads (`present`) and `has` finds every symbol of `names`, else why not.
fn check(lib: &str, present: bool, has: impl Fn(&str) -> bool, names: &[&str]) -> Result<(), String> {
    if !present {
        return Err(format!("{lib} was not found on the library path"));
    }
    let lacking: Vec<&str> = names.iter().copied().filter(|n| !has(n)).collect();
    if !lacking.is_empty() {
        return Err(format!("{lib} lacks symbols {}", lacking.join(", ")));
    }
    Ok(())
}

/// A closure telling whether the library of cudarc module `$m` exports a symbol.
macro_rules! has_symbol {
    ($m:path) => {{
        use $m as m;
        |name: &str| {
            // SAFETY: `check` calls this only once `is_culib_present()` said the library loads,
            // so `culib()` does not panic; looking a symbol up does not call it.
            unsafe { m::culib().get::<unsafe extern "C" fn()>(name.as_bytes()).is_ok() }
        }
    }};
}

/// Whether libcuda loads with every symbol the backend uses and `cuInit` succeeds (cached).
pub(crate) fn driver_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to open the library.
        let present = unsafe { sys::is_culib_present() };
        check("libcuda", present, has_symbol!(cudarc::driver::sys), DRIVER_SYMBOLS)?;
        result::init().map_err(|e| format!("cuInit failed: {}", describe(e)))
    })
}

/// Whether libnvrtc loads with every symbol the kernel compiler uses (cached).
pub(crate) fn nvrtc_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to open the library.
        let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        check("libnvrtc", present, has_symbol!(cudarc::nvrtc::sys), NVRTC_SYMBOLS)
    })
}

/// Whether both the driver and NVRTC are CUDA 12.1 or later (cached): kernels whose parameters
/// pass 4 KiB in all compile and launch from that version on. The reduce that carries small host
/// inputs in its parameters (`launch/carried.rs`) needs it.
pub(crate) fn large_parameters() -> bool {
    static S: OnceLock<bool> = OnceLock::new();
    *S.get_or_init(|| {
        let drv = driver_status().is_ok() && {
            let mut v = 0;
            // SAFETY: libcuda loads with this symbol (`driver_status`); `v` is a valid out pointer.
            let r = unsafe { sys::cuDriverGetVersion(&mut v) };
            r == sys::CUresult::CUDA_SUCCESS && v >= 12010
        };
        drv && nvrtc_version().is_some_and(|v| v >= (12, 1))
    })
}

/// The CUDA version of libnvrtc (major, minor), where it loads.
pub(crate) fn nvrtc_version() -> Option<(i32, i32)> {
    nvrtc_status().as_ref().ok()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: libnvrtc loads with this symbol (`nvrtc_status`); both are valid out pointers.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Whether libnccl loads with every symbol the clique uses (cached).
pub(crate) fn nccl_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to open the library.
        let present = unsafe { cudarc::nccl::sys::is_culib_present() };
        check("libnccl", present, has_symbol!(cudarc::nccl::sys), NCCL_SYMBOLS)
    })
}

/// `Ok` when libcuda loads with the device bridge's entry points, else why not (cached).
pub(crate) fn interop_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        driver_status().clone()?;
        check("libcuda", true, has_symbol!(cudarc::driver::sys), INTEROP_SYMBOLS)
    })
}

/// `Ok` when libcuda loads with the entry points of launches through a graph, else why not
/// (cached).
pub(crate) fn graph_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        driver_status().clone()?;
        check("libcuda", true, has_symbol!(cudarc::driver::sys), GRAPH_SYMBOLS)
    })
}

/// `Ok` when libcuda loads with the entry point that gives a kernel's parameter layout, else why
/// not (cached).
pub(crate) fn param_info_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        driver_status().clone()?;
        check("libcuda", true, has_symbol!(cudarc::driver::sys), PARAM_INFO_SYMBOLS)
    })
}

/// `Ok` when libcuda loads with the entry points that import a Vulkan timeline semaphore, wait on
/// it and signal it, else why not (cached).
pub(crate) fn semaphore_status() -> &'static Result<(), String> {
    static S: OnceLock<Result<(), String>> = OnceLock::new();
    S.get_or_init(|| {
        driver_status().clone()?;
        check("libcuda", true, has_symbol!(cudarc::driver::sys), SEMAPHORE_SYMBOLS)
    })
}

/// Imports the timeline semaphore `fd` names (an opaque file descriptor from Vulkan); the driver
/// takes the descriptor over on success.
///
/// # Safety
/// The current context is the importing device's; `fd` names a timeline semaphore of the same
/// GPU.
pub(crate) unsafe fn import_timeline(
    fd: std::os::fd::OwnedFd,
) -> Result<sys::CUexternalSemaphore, DriverError> {
    use std::os::fd::{AsRawFd, IntoRawFd};
    // SAFETY: a C union of an int, pointers and a pointer pair, valid all zero.
    let mut handle: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 = unsafe { std::mem::zeroed() };
    handle.fd = fd.as_raw_fd();
    let desc = sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_: sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD,
        handle,
        flags: 0,
        reserved: [0; 16],
    };
    let mut sem = std::ptr::null_mut();
    // SAFETY: as the caller guarantees; `desc` names an open descriptor.
    unsafe { sys::cuImportExternalSemaphore(&mut sem, &desc) }.result()?;
    // The driver owns the descriptor now: it must not be closed here.
    let _ = fd.into_raw_fd();
    Ok(sem)
}

/// Makes `stream` wait, on the device, until the timeline `sem` reaches `value`.
///
/// # Safety
/// `sem` was imported into the stream's context and is not yet destroyed; `stream` is live.
pub(crate) unsafe fn wait_timeline(
    sem: sys::CUexternalSemaphore,
    value: u64,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: a C struct of integers and unions of integers and pointers, valid all zero.
    let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
    params.params.fence.value = value;
    // SAFETY: as the caller guarantees; one semaphore, one set of parameters.
    unsafe { sys::cuWaitExternalSemaphoresAsync(&sem, &params, 1, stream) }.result()
}

/// Makes `stream` set the timeline `sem` to `value` once the work issued to it before has run.
///
/// # Safety
/// `sem` was imported into the stream's context and is not yet destroyed; `stream` is live.
pub(crate) unsafe fn signal_timeline(
    sem: sys::CUexternalSemaphore,
    value: u64,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: a C struct of integers and unions of integers and pointers, valid all zero.
    let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
    params.params.fence.value = value;
    // SAFETY: as the caller guarantees; one semaphore, one set of parameters.
    unsafe { sys::cuSignalExternalSemaphoresAsync(&sem, &params, 1, stream) }.result()
}

/// Imports the memory object `fd` names (`size` bytes, an opaque file descriptor from Vulkan) and
/// maps its first `len` bytes; the driver takes the descriptor over on success.
///
/// # Safety
/// The current context is the importing device's; `size` is the memory object's size; the
/// mapping is freed with [`unmap_external`] before the memory object is destroyed.
pub(crate) unsafe fn import_external(
    fd: std::os::fd::OwnedFd,
    size: u64,
    len: usize,
) -> Result<(sys::CUexternalMemory, CUdeviceptr), DriverError> {
    use std::os::fd::{AsRawFd, IntoRawFd};
    // SAFETY: as the caller guarantees; the descriptor is open.
    let ext = unsafe { result::external_memory::import_external_memory_opaque_fd(fd.as_raw_fd(), size) }?;
    // The driver owns the descriptor now: it must not be closed here.
    let _ = fd.into_raw_fd();
    // SAFETY: `ext` was just imported, `len <= size`.
    match unsafe { result::external_memory::get_mapped_buffer(ext, 0, len as u64) } {
        Ok(ptr) => Ok((ext, ptr)),
        Err(e) => {
            // SAFETY: nothing is mapped onto `ext`; destroyed once.
            let _ = unsafe { result::external_memory::destroy_external_memory(ext) };
            Err(e)
        }
    }
}

/// Frees the mapping `ptr` of `ext`, then `ext` itself.
///
/// # Safety
/// Both come from one [`import_external`]; no work uses the mapping any more; called once.
pub(crate) unsafe fn unmap_external(ext: sys::CUexternalMemory, ptr: CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe {
        result::memory_free(ptr)?;
        result::external_memory::destroy_external_memory(ext)
    }
}

/// Which of `names` libnccl lacks (for callers using entry points beyond the clique's); call once
/// [`nccl_status`] is `Ok`.
pub(crate) fn nccl_lacks(names: &[&'static str]) -> Vec<&'static str> {
    if nccl_status().is_err() {
        return names.to_vec();
    }
    let has = has_symbol!(cudarc::nccl::sys);
    names.iter().copied().filter(|n| !has(n)).collect()
}

/// The driver's `NAME: description` for an error code.
pub(crate) fn describe(e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
    match (name, text) {
        (Ok(n), Ok(t)) => format!("{n}: {t}"),
        _ => format!("{:?}", e.0),
    }
}

/// Whether `e` is the driver's out-of-memory error.
pub(crate) fn is_oom(e: DriverError) -> bool {
    e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

/// Maps a driver error during `op` on `device` to the crate's error. `op` becomes a `String` only
/// when there is an error: most calls pass a literal, and a call that succeeds allocates nothing.
pub(crate) fn err(device: Device, op: impl Into<String> + Clone) -> impl Fn(DriverError) -> Error {
    move |e| Error::driver(device, op.clone(), describe(e))
}

/// The number of CUDA devices, or 0 when the driver is absent.
pub(crate) fn device_count() -> u32 {
    if driver_status().is_err() {
        return 0;
    }
    result::device::get_count().map_or(0, |n| n.max(0) as u32)
}

/// Allocates `bytes` of device memory ordered on `stream` (from the device's default pool).
///
/// # Safety
/// `stream` must be a live stream of the context current on this thread.
pub(crate) unsafe fn alloc_async(stream: CUstream, bytes: usize) -> Result<CUdeviceptr, DriverError> {
    // SAFETY: the caller guarantees the stream; the memory is uninitialised until written.
    unsafe { result::malloc_async(stream, bytes) }
}

/// Frees device memory ordered on `stream`.
///
/// # Safety
/// `ptr` came from [`alloc_async`] on this device, is freed once, and every use of it is ordered
/// before this point of `stream`.
pub(crate) unsafe fn free_async(ptr: CUdeviceptr, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::free_async(ptr, stream) }
}

/// Copies `bytes` from host `src` to device `dst` on `stream`.
///
/// # Safety
/// `src` is readable and `dst` writable for `bytes` until the copy has run on `stream`.
pub(crate) unsafe fn htod_async(
    dst: CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream).result() }
}

/// Copies `bytes` from device `src` to host `dst` on `stream`.
///
/// # Safety
/// `dst` is writable and `src` readable for `bytes` until the copy has run on `stream`.
pub(crate) unsafe fn dtoh_async(
    dst: *mut u8,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream).result() }
}

/// Copies `bytes` between two buffers of one device on `stream`.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy has run on `stream`.
pub(crate) unsafe fn dtod_async(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, stream) }
}

/// Copies `bytes` from `src` (context `src_ctx`) to `dst` (context `dst_ctx`) on `stream`.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy has run; the contexts own the pointers.
pub(crate) unsafe fn peer_async(
    (dst, dst_ctx): (CUdeviceptr, sys::CUcontext),
    (src, src_ctx): (CUdeviceptr, sys::CUcontext),
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::memcpy_peer_async(dst_ctx, dst, src_ctx, src, bytes, stream) }
}

/// Launches `f` with `params` (pointers to each argument's value) on `stream`.
///
/// # Safety
/// `params` must match the kernel's signature exactly, every pointer argument must stay valid
/// until the kernel has run, and `f` must belong to the current context.
pub(crate) unsafe fn launch(
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    stream: CUstream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::launch_kernel(f, (grid, 1, 1), (block, 1, 1), 0, stream, params) }
}

/// Page-locked host memory of `bytes`, usable by every context (portable).
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn alloc_pinned(bytes: usize) -> Result<*mut u8, DriverError> {
    // SAFETY: as the caller guarantees; the memory is uninitialised.
    unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE).map(|p| p as *mut u8) }
}

/// Frees memory from [`alloc_pinned`].
///
/// # Safety
/// `ptr` came from [`alloc_pinned`], is freed once, and no device work still uses it.
pub(crate) unsafe fn free_pinned(ptr: *mut u8) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::free_host(ptr as *mut c_void) }
}

/// Page-locks the `bytes` of host memory at `ptr` for every context (portable), so copies to and
/// from it run as DMA.
///
/// # Safety
/// A context must be current; `ptr..ptr + bytes` is host memory that stays allocated until
/// [`host_unregister`].
pub(crate) unsafe fn host_register(ptr: *mut u8, bytes: usize) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { sys::cuMemHostRegister_v2(ptr.cast(), bytes, sys::CU_MEMHOSTREGISTER_PORTABLE).result() }
}

/// Undoes [`host_register`].
///
/// # Safety
/// `ptr` was registered by [`host_register`], once, and no device work still uses it.
pub(crate) unsafe fn host_unregister(ptr: *mut u8) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { sys::cuMemHostUnregister(ptr.cast()).result() }
}

/// Makes `stream` wait for `event` (recorded in any context) without blocking the host.
///
/// # Safety
/// Both handles are live.
pub(crate) unsafe fn stream_wait(stream: CUstream, event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::stream::wait_event(stream, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
}

/// The device's default memory pool, set to keep freed memory cached (not released at every
/// synchronization) and made readable and writable by `peers`.
///
/// # Safety
/// `dev` is a valid device handle and its context is current.
pub(crate) unsafe fn default_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
    // SAFETY: as the caller guarantees; the attribute value is a u64, as the driver documents.
    unsafe {
        let pool = result::device::get_default_mem_pool(dev)?;
        let mut keep = u64::MAX;
        let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        result::mem_pool::set_attribute(pool, attr, &mut keep as *mut u64 as *mut c_void)?;
        Ok(pool)
    }
}

/// Releases a pool's cached, unused memory to the system.
///
/// # Safety
/// `pool` is a live pool.
pub(crate) unsafe fn trim_pool(pool: sys::CUmemoryPool) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    unsafe { result::mem_pool::trim_to(pool, 0) }
}

/// Lets device `peer` read and write memory of `pool`.
///
/// # Safety
/// `pool` is a live pool of another device.
pub(crate) unsafe fn grant_pool_access(pool: sys::CUmemoryPool, peer: i32) -> Result<(), DriverError> {
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: peer },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `desc` is one valid descriptor, read during the call.
    unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1).result() }
}

/// The device handle of physical GPU `ordinal` (`cuDeviceGet`; no context is made).
pub(crate) fn gpu(ordinal: u32) -> Result<sys::CUdevice, DriverError> {
    result::device::get(ordinal as i32)
}

/// The UUID of physical GPU `ordinal` (`cuDeviceGetUuid`; no context is made).
pub(crate) fn gpu_uuid(ordinal: u32) -> Result<[u8; 16], DriverError> {
    let id = result::device::get_uuid(gpu(ordinal)?)?;
    Ok(id.bytes.map(|b| b as u8))
}

/// Whether device `dev` can access device `peer`'s memory directly.
pub(crate) fn can_access_peer(dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool, DriverError> {
    let mut can = 0;
    // SAFETY: both are device handles from cuDeviceGet; `can` is written during the call.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer).result()? };
    Ok(can != 0)
}

/// Lets the current context access `peer`'s allocations (an already enabled peer is fine).
///
/// # Safety
/// `peer` is a live context other than the current one.
pub(crate) unsafe fn enable_peer(peer: sys::CUcontext) -> Result<(), DriverError> {
    // SAFETY: as the caller guarantees.
    match unsafe { sys::cuCtxEnablePeerAccess(peer, 0).result() } {
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        other => other,
    }
}

/// A C string from the NVRTC/NCCL error text APIs.
pub(crate) fn c_text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::from("(no message)");
    }
    // SAFETY: the libraries return NUL-terminated static strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
