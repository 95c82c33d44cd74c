//! The tenth probe ([`super`]): whether the reduce kernel's size costs its launch. Through a
//! graph the 4 KiB reduce of two inputs and a synchronize took 0.7 µs more than a binary add of
//! the same bytes, against 0.2 launched directly (`bench/gpu/59-reduce-stack`, run a). The
//! reduce's entry point holds sixteen input and sixteen output slots: 344 bytes of parameters and
//! about 19.6 KiB of code for f32 (NVRTC 12.9, sm_90), where the add takes 72 bytes and 7.5 KiB.
//! Here the library's source is compiled twice — as it is, and with four slots (152 bytes, 9.4
//! KiB) — and the reduces (the loop over inputs, and batches of two, whose two loads issue
//! together) and the add are each launched through the device's graphs and directly, then
//! synchronized, in turn, twice.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, result};
use cudarc::nvrtc::Ptx;

use super::{N, ptr, time, two_inputs};
use crate::backend::cuda::device::CudaDevice;
use crate::backend::cuda::driver;
use crate::backend::cuda::memory::alloc_of;
use crate::backend::cuda::nvrtc;
use crate::backend::cuda::tests::devices;
use crate::backend::timing::row;

/// The kernels' source, as the library compiles it.
const SOURCE: &str = include_str!("../kernels.cu");

/// `src` compiled as the library compiles its kernels for `dev`, and loaded.
fn load(dev: &CudaDevice, src: &str) -> Arc<CudaModule> {
    let cubin = nvrtc::compile(src, dev.arch, dev.device).unwrap();
    dev.ctx.load_module(Ptx::from_binary(cubin)).unwrap()
}

/// A kernel and its parameters' addresses.
struct Form {
    what: String,
    f: CudaFunction,
    params: Vec<*mut c_void>,
}

#[test]
#[ignore = "a timing probe for the GPU machine"]
fn kernel_size_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let four = SOURCE.replace("#define MAXK 16", "#define MAXK 4");
    assert_ne!(four, SOURCE, "kernels.cu defines MAXK 16");
    let forms = "REDUCE(float, f32) REDUCE_B(float, f32, 2)";
    let m16 = load(&dev, &format!("{SOURCE}\n{forms} BINARY(float, f32)\n"));
    let m4 = load(&dev, &format!("{four}\n{forms}\n"));
    let (a, b, out) = two_inputs(&dev);
    let (pa, pb, po) = (alloc_of(&a, "p").unwrap().ptr(), alloc_of(&b, "p").unwrap().ptr(), out.ptr());
    // The reduce's parameters (`struct Ins`, k, acc, `struct Outs`, m, n, part, flags, kind, f,
    // fi, `struct Done`), its slots 16 or 4; the add's (op, a, b, o, n, flags, `struct Done`).
    let (mut in16, mut out16, mut in4, mut out4) = ([0u64; 16], [0u64; 16], [0u64; 4], [0u64; 4]);
    (in16[0], in16[1], out16[0]) = (pa, pb, po);
    (in4[0], in4[1], out4[0]) = (pa, pb, po);
    let (k, acc, m, n, part, vec, kind, f, fi, done) =
        (2i32, 0u64, 1i32, N as u64, 0u64, 4i32, 0i32, 0f64, 0i64, [0u64; 3]);
    let op = 0i32;
    let reduce = |slots_in: *mut c_void, slots_out: *mut c_void| {
        vec![
            slots_in,
            ptr(&k),
            ptr(&acc),
            slots_out,
            ptr(&m),
            ptr(&n),
            ptr(&part),
            ptr(&vec),
            ptr(&kind),
            ptr(&f),
            ptr(&fi),
            ptr(&done),
        ]
    };
    let mut forms = vec![Form {
        what: "binary add (72 B of parameters)".into(),
        f: m16.load_function("binary_f32").unwrap(),
        params: vec![ptr(&op), ptr(&pa), ptr(&pb), ptr(&po), ptr(&n), ptr(&vec), ptr(&done)],
    }];
    for (form, name) in
        [("the loop", "reduce_f32_sum"), ("batches of 2, both loads issued together", "reduce2_f32_sum")]
    {
        let slots = [
            ("16 slots (344 B)", &m16, ptr(&in16), ptr(&out16)),
            ("4 slots (152 B)", &m4, ptr(&in4), ptr(&out4)),
        ];
        for (slots, module, ins, outs) in slots {
            let (what, f) = (format!("reduce, {slots}, {form}"), module.load_function(name).unwrap());
            forms.push(Form { what, f, params: reduce(ins, outs) });
        }
    }
    let raw = dev.compute.cu_stream();
    dev.bind().unwrap();
    // One block of 256 threads: N f32s as 16-byte vectors.
    let dims = (1u32, 256u32);
    for round in 1..=2 {
        for form in &mut forms {
            let func = form.f.cu_function();
            // SAFETY (every launch): the parameters match the kernel, and every pointer holds N
            // f32s on this device, alive to the end; the stream is alive.
            row(
                &format!("round {round}: {}: graph launch + stream synchronize", form.what),
                time(|| unsafe {
                    let through = dev.graphs.launch(func, dims, raw, &mut form.params);
                    assert!(through, "launched through a graph (COLLECTIVES_CUDA_GRAPH_LAUNCH unset or 1)");
                    result::stream::synchronize(raw).unwrap();
                }),
            );
            row(
                &format!("round {round}: {}: launch + stream synchronize", form.what),
                time(|| unsafe {
                    driver::launch(func, dims.0, dims.1, raw, &mut form.params).unwrap();
                    result::stream::synchronize(raw).unwrap();
                }),
            );
            let mut got = vec![0f32; N];
            // SAFETY: `out` holds N f32s on this device; the stream is idle.
            unsafe { result::memcpy_dtoh_sync(&mut got, po) }.unwrap();
            assert!(got.iter().all(|&x| x == 4.0), "{}: every element 1.5 + 2.5", form.what);
        }
    }
}
