//! The seventh probe ([`super`]): a resident worker kernel polling a mailbox against a launch per
//! call (`bench/gpu/29-resident`).

use std::time::Instant;

use cudarc::driver::result;

use super::{N, compile, ptr, time, two_inputs};
use crate::backend::cuda::memory::alloc_of;
use crate::backend::cuda::tests::devices;
use crate::backend::timing::{self, row};

/// A resident worker kernel against a launch per call: the worker (one block, on a stream of its
/// own) polls a mailbox of mapped pinned memory for a job, runs it (the 4 KiB add), and stores the
/// job's number into a done word the host spins on — no launch on the call's path. Rows: the
/// launched add with its flag (the floor measured in run 28a), the worker's add, the worker's
/// empty job (the mailbox round trip alone), the launched add while the worker polls beside it,
/// and the first job of a freshly launched worker.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn resident_worker_probe() {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicU32, Ordering};
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    const SRC: &str = r#"
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v; asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
extern "C" __global__ void add_flag(const float* a, const float* b, float* out, int n,
                                    volatile unsigned int* flag, unsigned int seq) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = a[i] + b[i];
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) *flag = seq;
}
// mail (u32 words): [0] job number, [1] n, [2..3] a, [4..5] b, [6..7] out.
// mode bit 0: poll by volatile loads (else ld.acquire.sys); bit 1: read the clock every 256 polls
// (else every poll); bit 2: no __threadfence_system before the done store.
extern "C" __global__ void worker(const unsigned* mail, volatile unsigned* done, unsigned start,
                                  unsigned long long idle_ns, unsigned mode) {
    __shared__ unsigned s[8];
    unsigned last = start;
    for (;;) {
        if (threadIdx.x == 0) {
            unsigned long long t0 = now_ns();
            unsigned q;
            for (unsigned k = 0;; k++) {
                q = (mode & 1) ? *(volatile const unsigned*)mail : ld_acquire(mail);
                if (q != last) break;
                if ((!(mode & 2) || (k & 255) == 0) && now_ns() - t0 > idle_ns) break;
            }
            s[0] = q;
            for (int k = 1; k < 8; k++) s[k] = ((volatile const unsigned*)mail)[k];
        }
        __syncthreads();
        unsigned q = s[0];
        if (q == last) return;
        int n = (int)s[1];
        const float* a = (const float*)(((unsigned long long)s[3] << 32) | s[2]);
        const float* b = (const float*)(((unsigned long long)s[5] << 32) | s[4]);
        float* out = (float*)(((unsigned long long)s[7] << 32) | s[6]);
        for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = a[i] + b[i];
        if (!(mode & 4)) __threadfence_system();
        __syncthreads();
        if (threadIdx.x == 0) *done = q;
        last = q;
    }
}
"#;
    let module = compile(&dev, SRC);
    let (add, work) = (module.load_function("add_flag").unwrap(), module.load_function("worker").unwrap());
    let (a, b, out) = two_inputs(&dev);
    let block = crate::backend::cuda::pinned::take(4096, &dev.ctx, dev.device).unwrap();
    // SAFETY: the block is 4096 bytes of pinned memory, aligned for u32s, alive to the end; the
    // host touches it only through these atomics.
    let words = unsafe { std::slice::from_raw_parts(block.ptr() as *const AtomicU32, 64) };
    for w in words {
        w.store(0, Ordering::SeqCst);
    }
    let (mail, done, flag) = (&words[0], &words[16], &words[32]);
    let side = dev.ctx.new_stream().unwrap();
    let (raw, side_raw) = (dev.compute.cu_stream(), side.cu_stream());
    dev.bind().unwrap();
    let (pa, pb, po, n) =
        (alloc_of(&a, "p").unwrap().ptr(), alloc_of(&b, "p").unwrap().ptr(), out.ptr(), N as i32);
    let (mail_p, done_p, flag_p) = (mail.as_ptr() as u64, done.as_ptr() as u64, flag.as_ptr() as u64);
    let spin = |w: &AtomicU32, seq: u32| {
        while w.load(Ordering::Acquire) != seq {
            std::hint::spin_loop();
        }
    };
    let mut seq = 0u32;
    let launched = |seq: u32| {
        let mut params: Vec<*mut c_void> =
            vec![ptr(&pa), ptr(&pb), ptr(&po), ptr(&n), ptr(&flag_p), ptr(&seq)];
        // SAFETY: the parameters match `add_flag`; every pointer holds N f32s on this device or
        // is the pinned flag, mapped under unified addressing.
        unsafe { crate::backend::cuda::driver::launch(add.cu_function(), 1, 256, raw, &mut params).unwrap() };
        spin(flag, seq);
    };
    let start_worker = |start: u32, idle_ns: u64, mode: u32| {
        let mut params: Vec<*mut c_void> =
            vec![ptr(&mail_p), ptr(&done_p), ptr(&start), ptr(&idle_ns), ptr(&mode)];
        // SAFETY: the parameters match `worker`; the mailbox and done word are pinned and mapped.
        unsafe {
            crate::backend::cuda::driver::launch(work.cu_function(), 1, 256, side_raw, &mut params).unwrap()
        };
    };
    let post = |job: u32, n: u32| {
        let wp =
            [n, pa as u32, (pa >> 32) as u32, pb as u32, (pb >> 32) as u32, po as u32, (po >> 32) as u32];
        for (k, v) in wp.iter().enumerate() {
            words[1 + k].store(*v, Ordering::Relaxed);
        }
        mail.store(job, Ordering::Release);
        spin(done, job);
    };
    row(
        "launched add writing its flag + spin (the floor of run 28a)",
        time(|| {
            seq += 1;
            launched(seq);
        }),
    );
    let mut job = 0u32;
    for mode in [1u32, 2, 3, 7] {
        start_worker(job, 1_000_000, mode);
        row(
            &format!("resident worker mode {mode}: 4 KiB add"),
            time(|| {
                job += 1;
                post(job, N as u32);
            }),
        );
        row(
            &format!("resident worker mode {mode}: empty job"),
            time(|| {
                job += 1;
                post(job, 0);
            }),
        );
        // SAFETY: the side stream is alive; the worker idles out 1 ms after its last job.
        unsafe { result::stream::synchronize(side_raw).unwrap() };
    }
    start_worker(job, 2_000_000_000, 0);
    row(
        "resident worker: 4 KiB add posted + spin on its done word",
        time(|| {
            job += 1;
            post(job, N as u32);
        }),
    );
    row(
        "resident worker: empty job (the mailbox round trip alone)",
        time(|| {
            job += 1;
            post(job, 0);
        }),
    );
    row(
        "launched add writing its flag + spin, the worker polling beside it",
        time(|| {
            seq += 1;
            launched(seq);
        }),
    );
    row(
        "resident worker: 4 KiB add again",
        time(|| {
            job += 1;
            post(job, N as u32);
        }),
    );
    // Idle a worker out after 20 µs, so each job below finds none and launches one first.
    let t = Instant::now();
    // SAFETY: the side stream is alive.
    unsafe { result::stream::synchronize(side_raw).unwrap() };
    println!(
        "probe: worker exited {:.0} ms after its idle budget was cut (2 s budget: expected ~2000)",
        t.elapsed().as_secs_f64() * 1e3
    );
    row(
        "a worker launched per job (idles out after 20 us) + 4 KiB add + spin",
        timing::time(400, || {
            // SAFETY: the side stream is alive.
            unsafe { result::stream::synchronize(side_raw).unwrap() };
            start_worker(job, 20_000, 0);
            job += 1;
            post(job, N as u32);
        }),
    );
    // SAFETY: the side stream is alive.
    unsafe { result::stream::synchronize(side_raw).unwrap() };
    let mut got = vec![0f32; N];
    // SAFETY: `out` holds N f32s on this device; every job on it has finished.
    unsafe { result::memcpy_dtoh_sync(&mut got, po).unwrap() };
    assert!(got.iter().all(|&v| v == 4.0), "the worker's add wrote a wrong sum");
    drop(block);
}
