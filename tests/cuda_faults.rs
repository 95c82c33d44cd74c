//! Fault paths of the CUDA backend as errors: an allocation beyond the device's memory fails with
//! `Error::OutOfMemory`, leaves its inputs untouched, and the device keeps working.

mod cuda_common;

use collectives::{Device, Error, Scale, Tensor};
use cuda_common::cuda_devices;
use rand::RngCore;

#[test]
fn allocation_beyond_device_memory_is_out_of_memory() {
    for dev in cuda_devices() {
        let n = 1usize << 30; // 1 GiB of u8
        let mut data = vec![0u8; n];
        collectives_tests::rng(collectives_tests::fresh_seed()).fill_bytes(&mut data);
        let x = Tensor::from_vec(data.clone(), [n], dev).unwrap();
        x.realize().unwrap();
        // 256 GiB: more than any current GPU holds.
        let huge = Tensor::concat(&vec![x.clone(); 256], 0).unwrap();
        match huge.realize() {
            Err(Error::OutOfMemory { device, bytes, .. }) => {
                assert_eq!(device, dev);
                assert_eq!(bytes, 256 * n);
            }
            other => panic!("{dev}: expected OutOfMemory, got {other:?}"),
        }
        assert!(!huge.is_realized(), "{dev}: a failed realize caches nothing");
        assert!(x.to_vec::<u8>().unwrap() == data, "{dev}: the input changed");
        // The device still works: a large allocation that fits, and a small kernel.
        let big = Tensor::concat(&vec![x.clone(); 8], 0).unwrap().narrow(0, 7 * n, n).unwrap();
        assert!(big.to_vec::<u8>().unwrap() == data, "{dev}: after OOM");
        let y = x.narrow(0, 0, 1024).unwrap().scale(Scale::Mul(2.0)).unwrap();
        let want: Vec<u8> = data[..1024].iter().map(|v| v.wrapping_mul(2)).collect();
        assert_eq!(y.to_vec::<u8>().unwrap(), want, "{dev}: after OOM");
    }
}

#[test]
fn absent_ordinal_is_unavailable() {
    let devs = cuda_devices();
    if devs.is_empty() {
        return;
    }
    let missing = Device::Cuda(devs.len() as u32 + 7);
    let err = Tensor::from_vec(vec![1f32], [1], missing).unwrap().to_vec::<f32>().unwrap_err();
    assert!(matches!(err, Error::DeviceUnavailable { .. }), "{err}");
}
