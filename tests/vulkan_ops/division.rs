//! Division on `VK` is IEEE's, bit for bit: `Tensor::div` and `Scale::Div` on 2^20 random pairs
//! per float dtype (all finite bit patterns, subnormals, divisors 3..=13, huge and tiny
//! quotients, zeros, infinities, NaN) against the host's `/`; integer division truncates toward
//! zero as the CPU backend's does; and an f64 `Avg` of seven shards is the host's quotient.

use super::{VK, dtypes, have_vulkan};
use collectives::{DType, Device, DeviceGroup, ReduceOp, Scale, Tensor};
use collectives_tests::{fresh_seed, rng};
use rand::{Rng, rngs::StdRng};

/// Pairs divided per float dtype.
const PAIRS: usize = 1 << 20;

/// A float type's bits, as the test needs them.
trait Bits: collectives::Element + Copy + PartialEq + std::fmt::Debug + std::ops::Div<Output = Self> {
    /// The value of these bits.
    fn from_bits64(b: u64) -> Self;
    /// The bits, widened.
    fn bits64(self) -> u64;
    /// From a small integer or an f64 (rounded).
    fn of(x: f64) -> Self;
    /// Bits in a value (32 or 64).
    const WIDTH: u32;
    /// Whether it is NaN.
    fn nan(self) -> bool;
}

impl Bits for f32 {
    fn from_bits64(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn bits64(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn of(x: f64) -> Self {
        x as f32
    }
    const WIDTH: u32 = 32;
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Bits for f64 {
    fn from_bits64(b: u64) -> Self {
        f64::from_bits(b)
    }
    fn bits64(self) -> u64 {
        self.to_bits()
    }
    fn of(x: f64) -> Self {
        x
    }
    const WIDTH: u32 = 64;
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Any bit pattern of `T` (finite or not), with a random sign.
fn any<T: Bits>(r: &mut StdRng) -> T {
    T::from_bits64(r.random::<u64>() >> (64 - T::WIDTH))
}

/// A subnormal of `T` (mantissa bits only, random sign).
fn subnormal<T: Bits>(r: &mut StdRng) -> T {
    let mant = T::WIDTH - if T::WIDTH == 32 { 9 } else { 12 };
    let sign = u64::from(r.random::<bool>()) << (T::WIDTH - 1);
    T::from_bits64(sign | (r.random::<u64>() >> (64 - mant)))
}

/// One random pair, drawn from the cases division gets wrong most easily.
fn pair<T: Bits>(r: &mut StdRng) -> (T, T) {
    let small = |r: &mut StdRng| T::of(r.random_range(3..=13) as f64 * if r.random() { 1.0 } else { -1.0 });
    let near_one = |r: &mut StdRng| T::of(r.random_range(0.5..2.0));
    let special = |r: &mut StdRng| {
        let s = [0.0, -0.0, f64::INFINITY, -f64::INFINITY, f64::NAN, f64::MAX, f64::MIN_POSITIVE, 1.0];
        T::of(s[r.random_range(0..s.len())])
    };
    match r.random_range(0..10) {
        0..=3 => (any(r), small(r)),
        4 => (subnormal(r), small(r)),
        5 => (any(r), any(r)),
        6 => (subnormal(r), any(r)),
        7 => (any(r), subnormal(r)),
        8 => (near_one(r), near_one(r)),
        _ => (special(r), any(r)),
    }
}

/// Same bits, or both NaN.
fn same<T: Bits>(a: T, b: T) -> bool {
    a.bits64() == b.bits64() || (a.nan() && b.nan())
}

/// The elements where `got` is not `want`, printed (the first 20) with their operands; panics
/// if there are any.
fn check_bits<T: Bits>(what: &str, a: &[T], b: &[T], got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let wrong: Vec<usize> = (0..want.len()).filter(|&i| !same(got[i], want[i])).collect();
    for &i in wrong.iter().take(20) {
        eprintln!("{what}[{i}]: {:?} / {:?} = {:?}, IEEE {:?}", a[i], b[i], got[i], want[i]);
    }
    assert!(wrong.is_empty(), "{what}: {} of {} wrong", wrong.len(), want.len());
}

/// `Tensor::div` of random pairs, and `Scale::Div` by each of 3..=13, against the host.
fn check_float<T: Bits>(dtype: DType) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let (a, b): (Vec<T>, Vec<T>) = (0..PAIRS).map(|_| pair::<T>(&mut r)).unzip();
    let want: Vec<T> = a.iter().zip(&b).map(|(&x, &y)| x / y).collect();
    let ta = Tensor::from_slice(&a, [PAIRS], VK).unwrap();
    let tb = Tensor::from_slice(&b, [PAIRS], VK).unwrap();
    let got = ta.div(&tb).unwrap().to_vec::<T>().unwrap();
    check_bits(&format!("{dtype} div (seed {seed})"), &a, &b, &got, &want);
    for d in 3..=13 {
        let f = T::of(d as f64);
        let want: Vec<T> = a.iter().map(|&x| x / f).collect();
        let got = ta.scale(Scale::Div(d as f64)).unwrap().to_vec::<T>().unwrap();
        let divisors = vec![f; PAIRS];
        check_bits(&format!("{dtype} Scale::Div({d}) (seed {seed})"), &a, &divisors, &got, &want);
    }
}

#[test]
fn float_division_is_ieee_bit_for_bit() {
    if !have_vulkan() {
        return;
    }
    let have = dtypes();
    check_float::<f32>(DType::F32);
    if have.contains(&DType::F64) {
        check_float::<f64>(DType::F64);
    }
}

/// i64 division truncated toward zero, x / 0 = 0, MIN / -1 = MIN (the CPU backend's rule).
fn int_div(a: i64, b: i64) -> i64 {
    if b == 0 { 0 } else { a.wrapping_div(b) }
}

/// Random integers: small, extreme and any, with 0, ±1 and MIN among them.
fn int_value(r: &mut StdRng, min: i64, max: i64) -> i64 {
    match r.random_range(0..4) {
        0 => r.random_range(-13..=13i64).clamp(min, max),
        1 => [min, max, 0, 1, -1, min + 1][r.random_range(0..6)].clamp(min, max),
        _ => r.random_range(min..=max),
    }
}

/// `Tensor::div` and `Scale::Div` of one integer dtype against `int_div`.
fn check_int<T: collectives::Element + Copy + PartialEq + std::fmt::Debug>(
    dtype: DType,
    from: fn(i64) -> T,
    (min, max): (i64, i64),
) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let n = 1 << 16;
    let a: Vec<i64> = (0..n).map(|_| int_value(&mut r, min, max)).collect();
    let b: Vec<i64> = (0..n).map(|_| int_value(&mut r, min, max)).collect();
    let ta = Tensor::from_vec(a.iter().map(|&x| from(x)).collect(), [n], VK).unwrap();
    let tb = Tensor::from_vec(b.iter().map(|&x| from(x)).collect(), [n], VK).unwrap();
    let got = ta.div(&tb).unwrap().to_vec::<T>().unwrap();
    for i in 0..n {
        let want = from(int_div(a[i], b[i]));
        assert_eq!(got[i], want, "{dtype} div [{i}]: {} / {} (seed {seed})", a[i], b[i]);
    }
    for d in [1, 2, 3, 5, 7, 11, 13, max, min].into_iter().filter(|&d| d != 0) {
        let got = ta.scale(Scale::Div(d as f64)).unwrap().to_vec::<T>().unwrap();
        for i in 0..n {
            let want = from(int_div(a[i], d));
            assert_eq!(got[i], want, "{dtype} Scale::Div({d}) [{i}]: {} (seed {seed})", a[i]);
        }
    }
}

#[test]
fn integer_division_truncates_like_the_cpu_backend() {
    if !have_vulkan() {
        return;
    }
    let have = dtypes();
    check_int::<i32>(DType::I32, |x| x as i32, (i32::MIN.into(), i32::MAX.into()));
    check_int::<u8>(DType::U8, |x| x as u8, (0, 255));
    if have.contains(&DType::I64) {
        // Scale factors are f64: the extremes of i64 are exact only at MIN.
        check_int::<i64>(DType::I64, |x| x, (i64::MIN, 1 << 53));
    }
}

#[test]
fn avg_of_seven_shards_is_the_ieee_quotient() {
    if !have_vulkan() || !dtypes().contains(&DType::F64) {
        return;
    }
    let mut devices = vec![VK];
    devices.extend((0..6).map(Device::Cpu));
    let group = DeviceGroup::new(devices.clone()).unwrap();
    let shards: Vec<Tensor> = devices
        .iter()
        .enumerate()
        .map(|(i, &d)| Tensor::from_vec(vec![if i == 0 { -7500.0f64 } else { 0.0 }], [1], d).unwrap())
        .collect();
    let out = group.all_reduce(&shards, ReduceOp::Avg).unwrap();
    assert_eq!(-7500.0f64 / 7.0, -1071.4285714285713);
    for (t, d) in out.iter().zip(&devices) {
        let got = t.to_vec::<f64>().unwrap();
        assert_eq!(got[0].to_bits(), (-1071.4285714285713f64).to_bits(), "Avg on {d}: {}", got[0]);
    }
}
