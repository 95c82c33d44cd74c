//! Virtual CUDA devices: logical devices `Cuda(i)` mapped onto physical GPUs, as the virtual CPU
//! devices are mapped onto the host.
//!
//! By default `Cuda(i)` is physical GPU `i`. [`CUDA_DEVICES_ENV`] lists the physical GPU of each
//! logical device instead: `COLLECTIVES_CUDA_DEVICES=0,0,0,0` gives `Cuda(0)` … `Cuda(3)`, all on
//! GPU 0, each with its own streams and its own buffers (one context and memory pool per GPU, as
//! the driver keeps them). Every n-device path then runs on a one-GPU machine: tests, and
//! tensor-parallel code on a workstation. Copies between two logical devices of one GPU are
//! device-to-device copies, and kernels read each other's buffers in place. NCCL needs distinct
//! GPUs, so groups with two logical devices on one GPU take the native algorithms.

use std::sync::OnceLock;

use super::driver;
use crate::device::Device;

/// Environment variable: the physical GPU of each logical CUDA device, comma separated
/// (`0,0,1,1`); unset, every physical GPU once, in order. Read once per process, before the first
/// CUDA device opens; a list that does not parse makes every CUDA device unavailable, with the
/// reason.
pub const CUDA_DEVICES_ENV: &str = "COLLECTIVES_CUDA_DEVICES";

/// The physical GPU of each logical device, or why the mapping is unusable.
fn map() -> &'static Result<Vec<u32>, String> {
    static MAP: OnceLock<Result<Vec<u32>, String>> = OnceLock::new();
    MAP.get_or_init(|| match std::env::var(CUDA_DEVICES_ENV) {
        Ok(list) => parse(&list, driver::device_count()),
        Err(_) => Ok((0..driver::device_count()).collect()),
    })
}

/// Parses a mapping against a machine of `physical` GPUs.
fn parse(list: &str, physical: u32) -> Result<Vec<u32>, String> {
    let bad = |why: String| format!("{CUDA_DEVICES_ENV}={list:?}: {why}");
    let ords = list
        .split(',')
        .map(|p| p.trim().parse::<u32>().map_err(|_| bad(format!("{:?} is not a GPU ordinal", p.trim()))))
        .collect::<Result<Vec<u32>, String>>()?;
    if let Some(&o) = ords.iter().find(|&&o| o >= physical) {
        return Err(bad(format!("GPU {o} does not exist (this machine has {physical})")));
    }
    Ok(ords)
}

/// How many logical CUDA devices there are (0 without a driver or with an unusable mapping).
pub(crate) fn count() -> u32 {
    map().as_ref().map_or(0, |m| m.len() as u32)
}

/// The physical GPU of logical device `ordinal`, or why it has none.
pub(crate) fn physical(ordinal: u32) -> Result<u32, String> {
    let m = map().as_ref().map_err(Clone::clone)?;
    m.get(ordinal as usize).copied().ok_or_else(|| match std::env::var(CUDA_DEVICES_ENV) {
        Ok(_) => format!("{CUDA_DEVICES_ENV} maps {} CUDA device(s)", m.len()),
        Err(_) => format!("this machine has {} CUDA device(s)", m.len()),
    })
}

/// The physical GPU behind `device`: `None` for a device of another kind, or a CUDA ordinal with
/// none ([`physical`] says why).
pub(crate) fn gpu_of(device: Device) -> Option<u32> {
    match device {
        Device::Cuda(n) => physical(n).ok(),
        _ => None,
    }
}

/// Whether `devices` are two or more logical CUDA devices that all map onto one physical GPU.
pub(crate) fn on_one_gpu(devices: &[Device]) -> bool {
    let first = devices.first().and_then(|&d| gpu_of(d));
    devices.len() >= 2 && first.is_some() && devices.iter().all(|&d| gpu_of(d) == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_parse_against_the_machine() {
        assert_eq!(parse("0,0, 0,0", 1), Ok(vec![0, 0, 0, 0]));
        assert_eq!(parse("1,0", 2), Ok(vec![1, 0]));
        let err = parse("0,2", 2).unwrap_err();
        assert!(err.contains("GPU 2 does not exist") && err.contains(CUDA_DEVICES_ENV), "{err}");
        assert!(parse("0,x", 2).unwrap_err().contains("\"x\" is not a GPU ordinal"));
        assert!(parse("", 2).is_err(), "an empty list maps nothing");
    }

    /// One GPU means two or more CUDA members that all map onto it, by this process's mapping
    /// (none without a driver: then never); a host member, a lone device or an unmapped ordinal
    /// is not.
    #[test]
    fn one_gpu_is_two_or_more_cuda_devices_mapped_onto_one() {
        let (c, n) = (Device::Cuda, count());
        let same = |a: u32, b: u32| physical(a).is_ok() && physical(a) == physical(b);
        assert_eq!(on_one_gpu(&[c(0), c(1)]), same(0, 1), "{n} mapped");
        assert_eq!(on_one_gpu(&[c(0), c(1), c(0)]), same(0, 1), "{n} mapped");
        assert!(!on_one_gpu(&[c(0)]), "one member");
        assert!(!on_one_gpu(&[]), "no member");
        assert!(!on_one_gpu(&[c(0), Device::Cpu(0)]), "a host member");
        assert!(!on_one_gpu(&[c(0), c(n)]), "an ordinal past the mapping");
        if n >= 2 {
            let all: Vec<Device> = (0..n).map(c).collect();
            assert_eq!(on_one_gpu(&all), (1..n).all(|i| same(0, i)));
        }
    }
}
