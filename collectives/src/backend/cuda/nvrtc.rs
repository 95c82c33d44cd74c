//! Compiling the kernels (`kernels.cu`) with NVRTC: once per kernel group and compute
//! capability, cached for the process, so devices of one architecture share one compile.
//!
//! The source is compiled for the device's real architecture (`sm_XY`) to a CUBIN, which the
//! driver loads without a PTX JIT step (and without caring which PTX version it understands).
//! Options: C++17 and `--fmad=false`, so `a * b + c` is never contracted and results match the
//! CPU backend bit for bit.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, OnceLock};

use cudarc::nvrtc::{Ptx, result, sys};
use parking_lot::Mutex;

use super::driver;
use super::launch::REDUCE_BATCHES;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The kernels' CUDA C++ source, without entry points (each group adds its own).
const SOURCE: &str = include_str!("kernels.cu");

/// A compiled module image.
pub(crate) struct Image(Vec<u8>);

impl Image {
    /// The image as cudarc loads it.
    pub fn to_ptx(&self) -> Ptx {
        Ptx::from_binary(self.0.clone())
    }
}

/// The C++ type of a dtype in `kernels.cu`.
pub(crate) fn ctype(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
    }
}

/// The group holding kernel `name`: its prefix, and for the reductions also the dtype
/// (`reduce_f32_sum` is in `reduce_f32`, `reduce4_f32_sum` in `reduce4_f32`).
pub(crate) fn group_of(name: &str) -> &str {
    let mut parts = name.match_indices('_').map(|(i, _)| i);
    match (name.starts_with("reduce"), parts.next(), parts.next()) {
        (true, _, Some(second)) => &name[..second],
        (_, Some(first), _) => &name[..first],
        _ => name,
    }
}

/// The lines instantiating `group`'s entry points.
fn entry_points(group: &str) -> Option<String> {
    Some(match group {
        "binary" => "FOR_TYPES(BINARY)".into(),
        "scale" => "FOR_TYPES(SCALE)".into(),
        "cast" => "FOR_TYPES(CAST_ROW)".into(),
        "copy2d" => {
            "COPY2D(u8, 1) COPY2D(unsigned short, 2) COPY2D(u32, 4) COPY2D(u64, 8) COPY2D(w16, 16)".into()
        }
        "copyseg" => {
            "COPYSEG(u8, 1) COPYSEG(unsigned short, 2) COPYSEG(u32, 4) COPYSEG(u64, 8) COPYSEG(w16, 16)"
                .into()
        }
        "copysegw" => {
            "COPYSEGW(u8, 1) COPYSEGW(unsigned short, 2) COPYSEGW(u32, 4) COPYSEGW(u64, 8) COPYSEGW(w16, 16)"
                .into()
        }
        g => {
            // `reduce_<dtype>` (the loop over inputs) or `reduce<B>_<dtype>` (batches of B); with
            // a `p` after the form (`reducep_<dtype>`, `reduce<B>p_<dtype>`), the split result;
            // `reducei_<dtype>`, the loop with inputs carried in the parameters (`reducei256_<dtype>`
            // with a block of 256 bytes); `reducef_<dtype>`, the few-slot form.
            let (form, dtype) = g.strip_prefix("reduce")?.split_once('_')?;
            let dtype: DType = dtype.parse().ok()?;
            let (batch, p) = form.strip_suffix('p').map_or((form, ""), |b| (b, "P"));
            match batch {
                "i" if p.is_empty() => format!("REDUCE_I({}, {})", ctype(dtype), dtype.name()),
                "i256" if p.is_empty() => format!("REDUCE_I256({}, {})", ctype(dtype), dtype.name()),
                "f" if p.is_empty() => format!("REDUCE_F({}, {})", ctype(dtype), dtype.name()),
                "" if p.is_empty() => format!("REDUCE({}, {})", ctype(dtype), dtype.name()),
                "" => format!("REDUCE_P({}, {})", ctype(dtype), dtype.name()),
                b if REDUCE_BATCHES.iter().any(|n| n.to_string() == b) => {
                    format!("REDUCE_B{p}({}, {}, {b})", ctype(dtype), dtype.name())
                }
                _ => return None,
            }
        }
    })
}

/// The compiled image of `group` for compute capability `arch` (compiling it on first use).
/// Different groups compile concurrently; one group compiles once.
pub(crate) fn image(group: &str, arch: (i32, i32), device: Device) -> Result<Arc<Image>> {
    type Slot = Arc<Mutex<Option<Arc<Image>>>>;
    type Cache = Mutex<HashMap<(String, (i32, i32)), Slot>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    if let Err(reason) = driver::nvrtc_status() {
        let reason = format!("CUDA kernels need NVRTC: {reason}");
        return Err(Error::DeviceUnavailable { device, reason });
    }
    let entries = entry_points(group)
        .ok_or_else(|| Error::driver(device, "compile kernels", format!("no kernel group {group:?}")))?;
    let slot: Slot = {
        let mut cache = CACHE.get_or_init(Default::default).lock();
        cache.entry((group.to_string(), arch)).or_default().clone()
    };
    // Held while compiling, so devices of one architecture compile the group once.
    let mut slot = slot.lock();
    if let Some(img) = slot.as_ref() {
        return Ok(img.clone());
    }
    let src = format!("{SOURCE}\n{entries}\n");
    let img = Arc::new(Image(compile(&src, arch, device)?));
    *slot = Some(img.clone());
    Ok(img)
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn nvrtc_err(device: Device, what: &str) -> impl Fn(result::NvrtcError) -> Error + '_ {
    // SAFETY: nvrtcGetErrorString returns a static string for any code.
    move |e| Error::driver(device, what, driver::c_text(unsafe { sys::nvrtcGetErrorString(e.0) }))
}

/// Compiles `src` to a CUBIN for `sm_{arch}`.
pub(super) fn compile(src: &str, arch: (i32, i32), device: Device) -> Result<Vec<u8>> {
    let c_src =
        CString::new(src).map_err(|_| Error::driver(device, "compile kernels", "source has a NUL byte"))?;
    let prog = Program(
        result::create_program(&c_src, Some(c"collectives_kernels.cu"))
            .map_err(nvrtc_err(device, "nvrtc"))?,
    );
    let opts =
        [format!("--gpu-architecture=sm_{}{}", arch.0, arch.1), "--std=c++17".into(), "--fmad=false".into()];
    // SAFETY: `prog` is a live program.
    if let Err(e) = unsafe { result::compile_program(prog.0, &opts) } {
        // SAFETY: as above.
        let log = unsafe { result::get_program_log(prog.0) }.unwrap_or_default();
        let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
        let msg = format!("{}: {}", nvrtc_err(device, "")(e), String::from_utf8_lossy(&log));
        return Err(Error::driver(device, "compile kernels", msg));
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; `size` is written during the call.
    unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size).result() }.map_err(nvrtc_err(device, "get cubin"))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has the size NVRTC reported.
    unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut std::ffi::c_char).result() }
        .map_err(nvrtc_err(device, "get cubin"))?;
    Ok(cubin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_map_to_groups() {
        assert_eq!(group_of("reduce_bf16_max"), "reduce_bf16");
        assert_eq!(group_of("reduce4_f16_sum"), "reduce4_f16");
        assert_eq!(group_of("reduce16_u8_min"), "reduce16_u8");
        assert_eq!(group_of("binary_f32"), "binary");
        assert_eq!(group_of("cast_i64_f16"), "cast");
        assert_eq!(group_of("copy2d_16"), "copy2d");
        assert_eq!(group_of("copyseg_4"), "copyseg");
        assert_eq!(group_of("copysegw_16"), "copysegw");
        for g in ["binary", "scale", "cast", "copy2d", "copyseg", "copysegw", "reduce_u8", "reduce_f16"] {
            assert!(entry_points(g).is_some(), "{g}");
        }
        assert!(entry_points("reduce_f8").is_none());
        for b in REDUCE_BATCHES {
            assert_eq!(entry_points(&format!("reduce{b}_f16")).unwrap(), format!("REDUCE_B(f16, f16, {b})"));
            assert_eq!(
                entry_points(&format!("reduce{b}p_f16")).unwrap(),
                format!("REDUCE_BP(f16, f16, {b})")
            );
        }
        assert_eq!(group_of("reducep_f32_sum"), "reducep_f32");
        assert_eq!(entry_points("reducep_i64").unwrap(), "REDUCE_P(i64, i64)");
        assert_eq!(group_of("reducei_bf16_prod"), "reducei_bf16");
        assert_eq!(entry_points("reducei_bf16").unwrap(), "REDUCE_I(bf16, bf16)");
        assert_eq!(group_of("reducei256_u8_min"), "reducei256_u8");
        assert_eq!(entry_points("reducei256_u8").unwrap(), "REDUCE_I256(u8, u8)");
        assert_eq!(group_of("reducef_f16_max"), "reducef_f16");
        assert_eq!(entry_points("reducef_f16").unwrap(), "REDUCE_F(f16, f16)");
        for bad in [
            "reduce4i_f32",
            "reduceip_f32",
            "reducei256p_f32",
            "reducei128_f32",
            "reducei_f8",
            "reduce3_f32",
            "reduce0_f32",
            "reduce4_f8",
            "reduce4",
            "reducex_f32",
            "reducepp_f32",
            "reduce3p_f32",
            "reducefp_f32",
            "reduce4f_f32",
            "reducef_f8",
        ] {
            assert!(entry_points(bad).is_none(), "{bad}");
        }
    }

    /// Compiles every group where NVRTC is present (no GPU needed): catches source errors on a
    /// development machine with only libnvrtc installed. Set `COLLECTIVES_NVRTC_ARCH=90` to pick
    /// the architecture (default sm_90).
    #[test]
    fn every_group_compiles_where_nvrtc_is_present() {
        if let Err(why) = driver::nvrtc_status() {
            println!("skipped: {why}");
            return;
        }
        let arch = crate::knob::var("COLLECTIVES_NVRTC_ARCH", "an SM version such as 90", |&a: &i32| a > 0)
            .unwrap_or(90);
        let mut groups: Vec<String> =
            ["binary", "scale", "cast", "copy2d", "copyseg", "copysegw"].map(String::from).into();
        groups.extend(DType::ALL.iter().map(|d| format!("reduce_{}", d.name())));
        groups.extend(DType::ALL.iter().map(|d| format!("reducep_{}", d.name())));
        groups.extend(DType::ALL.iter().map(|d| format!("reducef_{}", d.name())));
        // Parameters past 4 KiB compile from CUDA 12.1 on.
        if driver::nvrtc_version().is_some_and(|v| v >= (12, 1)) {
            groups.extend(
                DType::ALL.iter().flat_map(|d| ["", "256"].map(|b| format!("reducei{b}_{}", d.name()))),
            );
        }
        groups.extend(
            REDUCE_BATCHES.iter().flat_map(|b| [format!("reduce{b}_f16"), format!("reduce{b}p_f16")]),
        );
        for g in groups {
            let t = std::time::Instant::now();
            let img =
                image(&g, (arch / 10, arch % 10), Device::Cuda(0)).unwrap_or_else(|e| panic!("{g}: {e}"));
            println!("{g}: {} bytes in {:.2?}", img.0.len(), t.elapsed());
        }
    }
}
