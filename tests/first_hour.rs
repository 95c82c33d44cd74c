//! What a newcomer meets first: the constructors `Tensor::zeros` / `Tensor::full` on every
//! device present (checked element by element against host references), `DeviceGroup::validate`
//! and the discovery report.

use collectives::discover::{self, DiscoveryReport};
use collectives::{DType, Device, DeviceGroup, DeviceKind, Error, ReduceOp, Tensor, available_devices};
use collectives_tests::{Range, check_all, fresh_seed, random, rng, values, with_type};

/// One host device, and one device of each GPU kind present.
fn devices() -> Vec<Device> {
    let all = available_devices();
    let mut out = vec![Device::Cpu(1)];
    out.extend(
        [DeviceKind::Cuda, DeviceKind::Vulkan]
            .iter()
            .filter_map(|&k| all.iter().copied().find(|d| d.kind() == k)),
    );
    out
}

/// The dtypes `device` computes in (a Vulkan device may lack 64-bit shader types).
fn dtypes(device: Device) -> Vec<DType> {
    DType::ALL
        .into_iter()
        .filter(|&d| Tensor::zeros([1], d, device).and_then(|t| t.add(&t)).and_then(|t| t.realize()).is_ok())
        .collect()
}

#[test]
fn zeros_and_full_hold_their_value_in_every_element() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let shape = [7, 70_001];
    let n = 7 * 70_001;
    for device in devices() {
        for dtype in dtypes(device) {
            let context = format!("{dtype} on {device} (seed {seed})");
            let z = Tensor::zeros(shape, dtype, device).unwrap();
            assert_eq!((z.dtype(), z.device(), z.shape().dims()), (dtype, device, &shape[..]), "{context}");
            check_all(&values(&z), &vec![0.0; n], |_| 0.0, &format!("zeros {context}"));
            let v = random(dtype, 1, Range::General, &mut r)[0];
            let f =
                with_type!(dtype, T => Tensor::full(shape, <T as collectives::Element>::from_f64(v), device))
                    .unwrap();
            assert_eq!((f.dtype(), f.device()), (dtype, device), "{context}");
            check_all(&values(&f), &vec![v; n], |_| 0.0, &format!("full({v}) {context}"));
        }
    }
}

#[test]
fn full_shards_all_reduce_to_the_host_reference() {
    let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1), Device::Cpu(2)]).unwrap();
    let shards: Vec<Tensor> =
        (0..3).map(|i| Tensor::full([1000], i as f32 + 0.5, group.devices()[i]).unwrap()).collect();
    let sum = group.all_reduce(&shards, ReduceOp::Sum).unwrap();
    for (t, &d) in sum.iter().zip(group.devices()) {
        assert_eq!(t.device(), d);
        check_all(&values(t), &[4.5; 1000], |_| 0.0, &format!("sum on {d}"));
    }
}

#[test]
fn empty_shapes_and_wrong_element_types() {
    let empty = Tensor::zeros(vec![0usize, 3], DType::F32, Device::Cpu(0)).unwrap();
    assert_eq!((empty.numel(), empty.to_vec::<f32>().unwrap()), (0, vec![]));
    let err = Tensor::full([2], 1u8, Device::Cpu(0)).unwrap().to_vec::<f32>().unwrap_err();
    assert!(matches!(err, Error::ElementType { actual: DType::U8, requested: DType::F32, .. }), "{err}");
}

#[test]
fn validate_names_the_missing_device_and_the_fix() {
    let present = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(3)]).unwrap();
    assert_eq!(present.validate(), Ok(()));
    for absent in [Device::Vulkan(1 << 20), Device::Cuda(1 << 20)] {
        let group = DeviceGroup::new(vec![Device::Cpu(0), absent]).unwrap();
        match group.validate() {
            Err(e @ Error::DeviceUnavailable { device, .. }) => {
                assert_eq!(device, absent);
                let text = e.to_string();
                let fix =
                    if absent.kind() == DeviceKind::Vulkan { "mesa-vulkan-drivers" } else { "NVIDIA driver" };
                assert!(text.contains(&absent.to_string()) && text.contains(fix), "{text}");
            }
            Err(Error::BackendNotBuilt { device, .. }) => assert_eq!(device, absent),
            other => panic!("{absent}: {other:?}"),
        }
    }
}

#[test]
fn the_report_names_every_device_and_says_what_is_missing() {
    let DiscoveryReport { devices, missing } = discover::report();
    let text = discover::report().to_string();
    println!("{text}");
    assert_eq!(devices.iter().map(|d| d.device).collect::<Vec<_>>(), available_devices());
    for d in &devices {
        assert_eq!(discover::device_name(d.device).as_deref(), Some(d.name.as_str()));
        assert!(text.contains(&format!("{}", d.device)) && text.contains(&d.name), "{text}");
    }
    for kind in [DeviceKind::Cuda, DeviceKind::Vulkan] {
        let listed = devices.iter().any(|d| d.device.kind() == kind);
        let m = missing.iter().find(|m| m.kind == kind);
        assert_eq!(listed, m.is_none(), "{kind} is either listed or missing:\n{text}");
        if let Some(m) = m {
            assert!(text.contains(&m.reason) && text.contains(m.fix) && !m.fix.is_empty(), "{text}");
        }
    }
}
