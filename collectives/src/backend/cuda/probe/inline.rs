//! The eighth probe ([`super`]): a small host input carried in a launch's parameters against one
//! the kernel reads across the bus from pinned memory (`bench/gpu/52-inline`).

use super::{N, compile, ptr, time};
use crate::backend::cuda::tests::{devices, upload};
use crate::backend::timing::row;

/// The 4 KiB all_reduce of `cuda:0, cpu:0` as its kernel does it: the host shard plus the device
/// shard into a device output and a pinned host output, a flag stored after both, the host
/// spinning on it and reading the result out. Rows: the host shard copied into pinned memory and
/// read by the kernel across the bus (the library's path today); the host shard copied into the
/// launch's parameters (`__grid_constant__`, 64 B to 4 KiB of data, past 4 KiB of parameters in
/// all at 4 KiB); the same kernel with no work, for the floor. Rounds alternate the forms.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn inline_host_input_probe() {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicU32, Ordering};
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    const SRC: &str = r#"
template <int M> struct Inl { float x[M]; };
__device__ __forceinline__ void body(const float* h, const float* d, float* od, float* oh, int n,
                                     volatile unsigned* flag, unsigned seq) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) { float r = h[i] + d[i]; od[i] = r; oh[i] = r; }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) *flag = seq;
}
extern "C" __global__ void mapped(const float* h, const float* d, float* od, float* oh, int n,
                                  volatile unsigned* flag, unsigned seq) { body(h, d, od, oh, n, flag, seq); }
extern "C" __global__ void inl16(const __grid_constant__ Inl<16> h, const float* d, float* od, float* oh, int n,
                                 volatile unsigned* flag, unsigned seq) { body(h.x, d, od, oh, n, flag, seq); }
extern "C" __global__ void inl960(const __grid_constant__ Inl<960> h, const float* d, float* od, float* oh, int n,
                                  volatile unsigned* flag, unsigned seq) { body(h.x, d, od, oh, n, flag, seq); }
extern "C" __global__ void inl1024(const __grid_constant__ Inl<1024> h, const float* d, float* od, float* oh, int n,
                                   volatile unsigned* flag, unsigned seq) { body(h.x, d, od, oh, n, flag, seq); }
"#;
    let module = compile(&dev, SRC);
    let f = |name: &str| module.load_function(name).unwrap();
    let (mapped, inl16, inl960, inl1024) = (f("mapped"), f("inl16"), f("inl960"), f("inl1024"));
    let d = upload(&dev, vec![1.5f32; N]);
    d.wait().unwrap();
    let od = dev.alloc(N * 4, &dev.compute).unwrap();
    let pin = |bytes| crate::backend::cuda::pinned::take(bytes, &dev.ctx, dev.device).unwrap();
    let (mut pin_in, pin_out, flag_block) = (pin(N * 4), pin(N * 4), pin(64));
    // SAFETY: the block is 64 bytes of pinned memory, aligned for u32s, alive to the end; the
    // host touches it only through this atomic.
    let flag = unsafe { &*(flag_block.ptr() as *const AtomicU32) };
    flag.store(0, Ordering::SeqCst);
    let host: Vec<f32> = (0..N).map(|i| i as f32 * 0.25).collect();
    let mut back = vec![0f32; N];
    let raw = dev.compute.cu_stream();
    dev.bind().unwrap();
    let (pd, pod, poh, pin_p) = (
        crate::backend::cuda::memory::alloc_of(&d, "p").unwrap().ptr(),
        od.ptr(),
        pin_out.ptr() as u64,
        pin_in.ptr() as u64,
    );
    let flag_p = flag.as_ptr() as u64;
    let mut seq = 0u32;
    let spin = |seq: u32| {
        while flag.load(Ordering::Acquire) != seq {
            std::hint::spin_loop();
        }
    };
    let out_bytes = |back: &mut [f32], n: usize| {
        // SAFETY: the kernel wrote n f32s into the pinned output before storing the flag.
        let src = unsafe { std::slice::from_raw_parts(poh as *const f32, n) };
        back[..n].copy_from_slice(src);
    };
    for round in 1..=2 {
        for n in [16usize, 960, N] {
            let ni = n as i32;
            row(
                &format!(
                    "round {round}: {} B: pageable -> pinned, kernel reads it across the bus, flag, read out",
                    n * 4
                ),
                time(|| {
                    seq += 1;
                    pin_in.bytes_mut(n * 4).copy_from_slice(bytemuck::cast_slice(&host[..n]));
                    let s = seq;
                    let mut params: Vec<*mut c_void> =
                        vec![ptr(&pin_p), ptr(&pd), ptr(&pod), ptr(&poh), ptr(&ni), ptr(&flag_p), ptr(&s)];
                    // SAFETY: the parameters match `mapped`; every pointer holds n f32s on this
                    // device or in pinned memory mapped under unified addressing.
                    unsafe {
                        crate::backend::cuda::driver::launch(mapped.cu_function(), 1, 256, raw, &mut params)
                            .unwrap()
                    };
                    spin(s);
                    out_bytes(&mut back, n);
                }),
            );
            let forms: &[(&cudarc::driver::CudaFunction, usize)] = match n {
                16 => &[(&inl16, 16), (&inl1024, N)],
                960 => &[(&inl960, 960), (&inl1024, N)],
                _ => &[(&inl1024, N)],
            };
            for &(func, cap) in forms {
                row(
                    &format!(
                        "round {round}: {} B: pageable -> launch parameters ({} B of them), flag, read out",
                        n * 4,
                        cap * 4
                    ),
                    time(|| {
                        seq += 1;
                        let mut inl = [0f32; N];
                        inl[..n].copy_from_slice(&host[..n]);
                        let s = seq;
                        let mut params: Vec<*mut c_void> =
                            vec![ptr(&inl), ptr(&pd), ptr(&pod), ptr(&poh), ptr(&ni), ptr(&flag_p), ptr(&s)];
                        // SAFETY: the parameters match the kernel (its first, `cap` floats, read
                        // from the start of `inl`, which holds N); the pointers as above.
                        unsafe {
                            crate::backend::cuda::driver::launch(func.cu_function(), 1, 256, raw, &mut params)
                                .unwrap()
                        };
                        spin(s);
                        out_bytes(&mut back, n);
                    }),
                );
            }
            assert!(
                back[..n].iter().zip(&host).all(|(b, h)| *b == h + 1.5),
                "the result of {n} elements, round {round}"
            );
        }
        let zero = 0i32;
        row(
            &format!("round {round}: the floor: the mapped kernel with no elements, flag"),
            time(|| {
                seq += 1;
                let s = seq;
                let mut params: Vec<*mut c_void> =
                    vec![ptr(&pin_p), ptr(&pd), ptr(&pod), ptr(&poh), ptr(&zero), ptr(&flag_p), ptr(&s)];
                // SAFETY: as above; the kernel touches no element.
                unsafe {
                    crate::backend::cuda::driver::launch(mapped.cu_function(), 1, 256, raw, &mut params)
                        .unwrap()
                };
                spin(s);
            }),
        );
    }
}
