//! The plain value types: `Device` (Display, FromStr, kind queries, discovery) and `DType` /
//! `Element` for f32, f64, f16, bf16, i32, i64 and u8.

use collectives::device::{CPU_DEVICES_ENV, DEFAULT_CPU_DEVICES, cpu_device_count};
use collectives::{DType, Device, DeviceKind, Element, Tensor, available_devices, parse_devices};
use half::{bf16, f16};

const KINDS: [(DeviceKind, &str); 3] =
    [(DeviceKind::Cpu, "cpu"), (DeviceKind::Cuda, "cuda"), (DeviceKind::Vulkan, "vulkan")];

fn make(kind: DeviceKind, n: u32) -> Device {
    match kind {
        DeviceKind::Cpu => Device::Cpu(n),
        DeviceKind::Cuda => Device::Cuda(n),
        DeviceKind::Vulkan => Device::Vulkan(n),
    }
}

#[test]
fn device_display_and_parse_round_trip() {
    for (kind, name) in KINDS {
        assert_eq!(kind.name(), name);
        assert_eq!(kind.to_string(), name);
        for n in [0, 1, 7, 12, u32::MAX] {
            let d = make(kind, n);
            assert_eq!(d.to_string(), format!("{name}:{n}"));
            assert_eq!(d.to_string().parse::<Device>().unwrap(), d);
            assert_eq!(
                format!(" {}:{n} ", name.to_uppercase()).parse::<Device>().unwrap(),
                d,
                "case and spaces"
            );
            assert_eq!((d.kind(), d.ordinal()), (kind, n));
        }
        assert_eq!(name.parse::<Device>().unwrap(), make(kind, 0), "a bare kind is ordinal 0");
    }
    assert_eq!("Vulkan:3".parse::<Device>().unwrap(), Device::Vulkan(3));
}

#[test]
fn device_kind_queries() {
    for (a, _) in KINDS {
        for (b, _) in KINDS {
            let (x, y) = (make(a, 0), make(b, 1));
            assert_eq!(x.is_host(), a == DeviceKind::Cpu);
            assert_eq!(x.is_gpu(), a != DeviceKind::Cpu);
            assert_eq!(x.same_vendor(y), a == b);
            let staged = a != b && a != DeviceKind::Cpu && b != DeviceKind::Cpu;
            assert_eq!(x.needs_staging(y), staged, "{x} -> {y}");
            assert_eq!(y.needs_staging(x), staged, "symmetric");
        }
    }
    assert!(
        Device::Cpu(0) < Device::Cpu(1)
            && Device::Cpu(9) < Device::Cuda(0)
            && Device::Cuda(9) < Device::Vulkan(0)
    );
}

#[test]
fn device_lists_parse() {
    let all = parse_devices("cuda:0, cuda:1,vulkan:0,cpu:3,cpu").unwrap();
    assert_eq!(
        all,
        vec![Device::Cuda(0), Device::Cuda(1), Device::Vulkan(0), Device::Cpu(3), Device::Cpu(0)]
    );
    assert_eq!(parse_devices("").unwrap(), vec![]);
    assert_eq!(
        parse_devices("cpu:1,,cpu:2,").unwrap(),
        vec![Device::Cpu(1), Device::Cpu(2)],
        "empty items skipped"
    );
}

#[test]
fn discovery_lists_the_virtual_cpus_first() {
    let n = cpu_device_count();
    assert!(n > 0);
    match std::env::var(CPU_DEVICES_ENV).ok().and_then(|v| v.trim().parse::<u32>().ok()).filter(|&v| v > 0) {
        Some(v) => assert_eq!(n, v),
        None => assert_eq!(n, DEFAULT_CPU_DEVICES),
    }
    let devs = available_devices();
    let cpus: Vec<Device> = (0..n).map(Device::Cpu).collect();
    assert_eq!(&devs[..n as usize], &cpus[..]);
    // After the CPUs: each GPU kind in ordinal order, CUDA before Vulkan, no duplicates.
    let gpus = &devs[n as usize..];
    assert!(gpus.iter().all(|d| d.is_gpu()));
    assert!(gpus.windows(2).all(|w| w[0] < w[1]), "{gpus:?}");
    for kind in [DeviceKind::Cuda, DeviceKind::Vulkan] {
        let ords: Vec<u32> = gpus.iter().filter(|d| d.kind() == kind).map(|d| d.ordinal()).collect();
        assert_eq!(ords, (0..ords.len() as u32).collect::<Vec<_>>(), "{kind} ordinals are 0..n");
    }
}

#[test]
fn dtype_names_sizes_and_classes() {
    let table = [
        (DType::F32, "f32", "f32", 4, true),
        (DType::F64, "f64", "f64", 8, true),
        (DType::F16, "f16", "half::f16", 2, true),
        (DType::BF16, "bf16", "half::bf16", 2, true),
        (DType::I32, "i32", "i32", 4, false),
        (DType::I64, "i64", "i64", 8, false),
        (DType::U8, "u8", "u8", 1, false),
    ];
    assert_eq!(DType::ALL.to_vec(), table.iter().map(|r| r.0).collect::<Vec<_>>());
    for (d, name, rust, size, float) in table {
        assert_eq!((d.name(), d.to_string(), d.rust_name()), (name, name.to_string(), rust));
        assert_eq!((d.size(), d.is_float(), d.is_int()), (size, float, !float));
        assert_eq!(name.parse::<DType>().unwrap(), d);
        assert_eq!(format!(" {} ", name.to_uppercase()).parse::<DType>().unwrap(), d);
    }
    let aliases = [
        ("float", DType::F32),
        ("float32", DType::F32),
        ("double", DType::F64),
        ("float64", DType::F64),
        ("half", DType::F16),
        ("float16", DType::F16),
        ("bfloat16", DType::BF16),
        ("int", DType::I32),
        ("int32", DType::I32),
        ("int64", DType::I64),
        ("long", DType::I64),
        ("uint8", DType::U8),
        ("byte", DType::U8),
    ];
    for (s, d) in aliases {
        assert_eq!(s.parse::<DType>().unwrap(), d, "{s}");
    }
}

/// Each element type: its tag, its size, its f64 conversions, and a tensor round trip.
fn element_case<T: Element>(dtype: DType, samples: &[T], from: &[(f64, T)]) {
    assert_eq!(T::DTYPE, dtype);
    assert_eq!(std::mem::size_of::<T>(), dtype.size());
    for &x in samples {
        assert_eq!(T::from_f64(x.to_f64()), x, "{dtype}: {x:?} survives f64");
    }
    for &(v, want) in from {
        assert_eq!(T::from_f64(v), want, "{dtype}: from_f64({v})");
    }
    let t = Tensor::from_slice(samples, [samples.len()], Device::Cpu(1)).unwrap();
    assert_eq!(t.dtype(), dtype);
    assert_eq!(t.nbytes(), samples.len() * dtype.size());
    assert_eq!(t.to_vec::<T>().unwrap(), samples);
    let copied = t.copy_to_device(Device::Cpu(2)).unwrap().to_vec::<T>().unwrap();
    assert_eq!(copied, samples, "{dtype}: bytes survive a copy");
}

#[test]
fn element_types() {
    element_case::<f32>(
        DType::F32,
        &[0.0, -1.5, f32::MAX, f32::MIN_POSITIVE, 1e-45],
        &[(0.1, 0.1f32), (1e40, f32::INFINITY)],
    );
    element_case::<f64>(DType::F64, &[0.0, -1.5, f64::MAX, 5e-324], &[(0.1, 0.1)]);
    let h = |v: f32| f16::from_f32(v);
    element_case::<f16>(
        DType::F16,
        &[h(0.0), h(-2.5), f16::MAX, f16::MIN_POSITIVE_SUBNORMAL],
        &[(65520.0, f16::INFINITY), (2049.0, h(2048.0))],
    );
    let b = |v: f32| bf16::from_f32(v);
    element_case::<bf16>(
        DType::BF16,
        &[b(0.0), b(3.0), bf16::MAX, b(-1e-30)],
        &[(257.0, b(256.0)), (1.0 + 1.0 / 128.0, b(1.0078125))],
    );
    element_case::<i32>(
        DType::I32,
        &[0, -1, i32::MAX, i32::MIN],
        &[(-2.9, -2), (3e9, i32::MAX), (f64::NAN, 0)],
    );
    element_case::<i64>(
        DType::I64,
        &[0, -1, 1 << 53, -(1 << 53)],
        &[(-2.9, -2), (1e19, i64::MAX), (-1e19, i64::MIN)],
    );
    element_case::<u8>(DType::U8, &[0, 1, 128, 255], &[(-3.0, 0), (300.0, 255), (7.9, 7)]);
}
