//! Property tests: random graphs of random ops (every op, every dtype, random shapes including
//! non-powers of two and empty dimensions) over 1–8 virtual CPU devices, realized by the library
//! in one call and by an interpreter of the same graph here, compared element for element.
//!
//! The interpreter computes in f64 and rounds as the library documents — each float op to its
//! compute type (f32 for f32, f16 and bf16; f64 for f64), then once to the dtype; a reduce
//! folds in the compute type and rounds at the end; integers exactly, wrapping at every step —
//! so the comparison is exact (NaN equals NaN), not within a tolerance.
//!
//! A second property builds the same kind of graphs over CPU, CUDA and Vulkan devices (on a
//! machine with neither GPU) and checks what `insert_cross_device_copies` makes of them.

use std::collections::HashSet;

use collectives::graph::opt::{insert_cross_device_copies, readable};
use collectives::{BinaryOp, DType, Device, Error, Op, ReduceKind, Scale, Tensor, realize};
use collectives_tests::{Range, random, ref_concat, ref_slice, rng, round_to, values};
use proptest::prelude::*;
use rand::Rng;
use rand::rngs::StdRng;

/// A node's values: floats as f64 (each exact in the dtype), integers as i64 (exact).
#[derive(Clone, Debug)]
enum Vals {
    F(Vec<f64>),
    I(Vec<i64>),
}

/// What the interpreter knows of a node.
#[derive(Clone, Debug)]
struct Model {
    dtype: DType,
    dims: Vec<usize>,
    device: Device,
    vals: Vals,
    input: bool,
}

/// A random graph: the library's tensors, the interpreter's models, and a log of the ops.
struct Graph {
    tensors: Vec<Tensor>,
    models: Vec<Model>,
    log: Vec<String>,
}

const BINARY: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];
const KINDS: [ReduceKind; 4] = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];

/// Rounds an f64 result to the compute type of `dtype`.
fn cround(dtype: DType, v: f64) -> f64 {
    if dtype == DType::F64 { v } else { v as f32 as f64 }
}

/// The library's float arithmetic (Max/Min as the kernels pick, so signed zeros agree too).
fn fbin(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Min if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Max => {
            if a >= b {
                a
            } else {
                b
            }
        }
        BinaryOp::Min => {
            if a <= b {
                a
            } else {
                b
            }
        }
    }
}

fn ibin(op: BinaryOp, a: i128, b: i128) -> i128 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div if b == 0 => 0,
        BinaryOp::Div => a / b,
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
    }
}

fn wrap(dtype: DType, v: i128) -> i64 {
    match dtype {
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        _ => v as i64,
    }
}

fn fscale(dtype: DType, s: Scale, a: f64) -> f64 {
    let f = cround(dtype, s.factor());
    cround(
        dtype,
        match s {
            Scale::Mul(_) => a * f,
            Scale::Div(_) => a / f,
        },
    )
}

fn iscale(dtype: DType, s: Scale, a: i64) -> i64 {
    let f = s.factor() as i128;
    wrap(
        dtype,
        match s {
            Scale::Mul(_) => a as i128 * f,
            Scale::Div(_) => a as i128 / f,
        },
    )
}

fn interp_reduce(dtype: DType, kind: ReduceKind, scale: Option<Scale>, xs: &[&Vals]) -> Vals {
    let op = kind.binary();
    match xs[0] {
        Vals::F(first) => Vals::F(
            (0..first.len())
                .map(|i| {
                    let mut acc = first[i];
                    for x in &xs[1..] {
                        let Vals::F(x) = x else { unreachable!() };
                        acc = cround(dtype, fbin(op, acc, x[i]));
                    }
                    round_to(dtype, scale.map_or(acc, |s| fscale(dtype, s, acc)))
                })
                .collect(),
        ),
        Vals::I(first) => Vals::I(
            (0..first.len())
                .map(|i| {
                    let mut acc = first[i];
                    for x in &xs[1..] {
                        let Vals::I(x) = x else { unreachable!() };
                        acc = wrap(dtype, ibin(op, acc as i128, x[i] as i128));
                    }
                    scale.map_or(acc, |s| iscale(dtype, s, acc))
                })
                .collect(),
        ),
    }
}

fn interp_cast(from: &Vals, to: DType) -> Vals {
    match (from, to.is_float()) {
        (Vals::F(x), true) => Vals::F(x.iter().map(|&v| round_to(to, v)).collect()),
        (Vals::I(x), true) => Vals::F(x.iter().map(|&v| round_to(to, v as f64)).collect()),
        (Vals::F(x), false) => Vals::I(
            x.iter()
                .map(|&v| match to {
                    DType::I32 => v as i32 as i64,
                    DType::U8 => v as u8 as i64,
                    _ => v as i64,
                })
                .collect(),
        ),
        (Vals::I(x), false) => Vals::I(x.iter().map(|&v| wrap(to, v as i128)).collect()),
    }
}

fn map_vals(v: &Vals, f: impl Fn(&[f64]) -> Vec<f64>, g: impl Fn(&[i64]) -> Vec<i64>) -> Vals {
    match v {
        Vals::F(x) => Vals::F(f(x)),
        Vals::I(x) => Vals::I(g(x)),
    }
}

/// Dimensions from the bits of `c`: rank 1–3, each 1–9 or (one time in 16) 0.
fn dims_from(c: u32) -> Vec<usize> {
    let rank = 1 + (c % 3) as usize;
    (0..rank)
        .map(|j| match (c >> (4 + 4 * j)) & 15 {
            0 => 0,
            v => 1 + (v % 9) as usize,
        })
        .collect()
}

/// Scales valid for `dtype`, picked by `c` (u8 takes factors in 0..=255: its -3 is 253).
fn scale_from(dtype: DType, c: u32) -> Scale {
    let f = if dtype.is_float() {
        [2.0, 0.5, -3.0, 1.5, 0.1][(c % 5) as usize]
    } else if dtype == DType::U8 {
        [2.0, 253.0, 5.0, 1.0, 7.0][(c % 5) as usize]
    } else {
        [2.0, -3.0, 5.0, 1.0, 7.0][(c % 5) as usize]
    };
    if (c / 5).is_multiple_of(2) { Scale::Mul(f) } else { Scale::Div(f) }
}

impl Graph {
    fn push(&mut self, t: Tensor, m: Model, what: String) -> usize {
        assert_eq!(
            (t.dtype(), t.shape().dims(), t.device()),
            (m.dtype, &m.dims[..], m.device),
            "metadata of {what}"
        );
        self.log.push(format!("#{}: {what}", self.tensors.len()));
        self.tensors.push(t);
        self.models.push(m);
        self.tensors.len() - 1
    }

    /// A new input of `dtype` and `dims` on `device`, with fresh random values.
    fn input(&mut self, dtype: DType, dims: Vec<usize>, device: Device, r: &mut StdRng) -> usize {
        let n: usize = dims.iter().product();
        let (t, vals) = if dtype.is_float() {
            let range = if r.random() { Range::General } else { Range::Product };
            let v = random(dtype, n, range, r);
            (collectives_tests::tensor(dtype, &v, dims.as_slice(), device), Vals::F(v))
        } else {
            let full = r.random::<bool>();
            let v: Vec<i64> = (0..n)
                .map(|_| match dtype {
                    DType::U8 => r.random::<u8>() as i64,
                    DType::I32 if full => r.random::<i32>() as i64,
                    DType::I64 if full => r.random::<i64>(),
                    _ => r.random_range(-1000..=1000),
                })
                .collect();
            let t = match dtype {
                DType::U8 => Tensor::from_vec(v.iter().map(|&x| x as u8).collect(), dims.as_slice(), device),
                DType::I32 => {
                    Tensor::from_vec(v.iter().map(|&x| x as i32).collect(), dims.as_slice(), device)
                }
                _ => Tensor::from_vec(v.clone(), dims.as_slice(), device),
            };
            (t.unwrap(), Vals::I(v))
        };
        let m = Model { dtype, dims: dims.clone(), device, vals, input: true };
        self.push(t, m, format!("input {dtype} {dims:?} on {device}"))
    }

    /// An existing node of `a`'s dtype whose dims satisfy `fits`, picked by `c`, or a new input.
    fn partner(&mut self, a: usize, c: u32, dims: Vec<usize>, devices: &[Device], r: &mut StdRng) -> usize {
        let dtype = self.models[a].dtype;
        let found: Vec<usize> = (0..self.models.len())
            .filter(|&i| self.models[i].dtype == dtype && self.models[i].dims == dims)
            .collect();
        if !found.is_empty() && !c.is_multiple_of(4) {
            return found[(c / 4) as usize % found.len()];
        }
        self.input(dtype, dims, devices[(c / 16) as usize % devices.len()], r)
    }

    /// Builds a graph from `steps`, four choice numbers each; inputs live on `devices`.
    fn build(steps: &[[u32; 4]], devices: &[Device], seed: u64) -> Graph {
        let mut r = rng(seed);
        let mut g = Graph { tensors: vec![], models: vec![], log: vec![] };
        let dev = |c: u32| devices[c as usize % devices.len()];
        for c in steps {
            if g.tensors.is_empty() || c[0] % 10 == 0 {
                g.input(DType::ALL[(c[1] % 7) as usize], dims_from(c[2]), dev(c[3]), &mut r);
                continue;
            }
            let a = c[1] as usize % g.tensors.len();
            let (ma, ta) = (g.models[a].clone(), g.tensors[a].clone());
            let device = ma.device;
            match c[0] % 10 {
                1 => {
                    let op = BINARY[(c[2] % 6) as usize];
                    let b = g.partner(a, c[3], ma.dims.clone(), devices, &mut r);
                    let t = ta.binary(op, &g.tensors[b]).unwrap();
                    let vals = match (&ma.vals, &g.models[b].vals) {
                        (Vals::F(x), Vals::F(y)) => Vals::F(
                            x.iter()
                                .zip(y)
                                .map(|(&p, &q)| round_to(ma.dtype, cround(ma.dtype, fbin(op, p, q))))
                                .collect(),
                        ),
                        (Vals::I(x), Vals::I(y)) => Vals::I(
                            x.iter()
                                .zip(y)
                                .map(|(&p, &q)| wrap(ma.dtype, ibin(op, p as i128, q as i128)))
                                .collect(),
                        ),
                        _ => unreachable!("same dtype"),
                    };
                    g.push(t, Model { vals, input: false, ..ma }, format!("#{a} {op:?} #{b}"));
                }
                2 => {
                    let k = 1 + (c[2] % 4) as usize;
                    let mut ids = vec![a];
                    for j in 1..k {
                        ids.push(g.partner(
                            a,
                            c[3].rotate_left(8 * j as u32),
                            ma.dims.clone(),
                            devices,
                            &mut r,
                        ));
                    }
                    let kind = KINDS[(c[3] % 4) as usize];
                    let scale = match (c[2] / 4) % 3 {
                        0 => None,
                        _ => Some(scale_from(ma.dtype, c[2] / 12)),
                    };
                    let inputs: Vec<Tensor> = ids.iter().map(|&i| g.tensors[i].clone()).collect();
                    // Half the time on the first input's device, else on a given one.
                    let (t, on) = match (c[0] / 10) % 2 {
                        0 => (Tensor::reduce(&inputs, kind, scale).unwrap(), device),
                        _ => {
                            (Tensor::reduce_on(dev(c[0] / 20), &inputs, kind, scale).unwrap(), dev(c[0] / 20))
                        }
                    };
                    let xs: Vec<&Vals> = ids.iter().map(|&i| &g.models[i].vals).collect();
                    let vals = interp_reduce(ma.dtype, kind, scale, &xs);
                    let what = format!("reduce {kind:?} {scale:?} of {ids:?} on {on}");
                    g.push(t, Model { vals, input: false, device: on, ..ma }, what);
                }
                3 => {
                    let s = scale_from(ma.dtype, c[2]);
                    let vals = map_vals(
                        &ma.vals,
                        |x| x.iter().map(|&v| round_to(ma.dtype, fscale(ma.dtype, s, v))).collect(),
                        |x| x.iter().map(|&v| iscale(ma.dtype, s, v)).collect(),
                    );
                    g.push(ta.scale(s).unwrap(), Model { vals, input: false, ..ma }, format!("#{a} {s:?}"));
                }
                4 => {
                    let to = DType::ALL[(c[2] % 7) as usize];
                    let vals = interp_cast(&ma.vals, to);
                    g.push(
                        ta.cast(to).unwrap(),
                        Model { dtype: to, vals, input: false, ..ma },
                        format!("#{a} cast {to}"),
                    );
                }
                5 => {
                    let dim = c[2] as usize % ma.dims.len();
                    let size = ma.dims[dim];
                    let start = c[3] as usize % (size + 1);
                    let len = (c[3] >> 8) as usize % (size - start + 1);
                    let t = ta.narrow(dim, start, len).unwrap();
                    let d = &ma.dims;
                    let vals = map_vals(
                        &ma.vals,
                        |x| ref_slice(x, d, dim, start, len),
                        |x| ref_slice(x, d, dim, start, len),
                    );
                    let mut dims = ma.dims.clone();
                    dims[dim] = len;
                    g.push(
                        t,
                        Model { dims, vals, input: false, ..ma },
                        format!("#{a} slice dim {dim} {start}+{len}"),
                    );
                }
                6 if ma.dims.iter().product::<usize>() < 2000 => {
                    let dim = c[2] as usize % ma.dims.len();
                    let mut pd = ma.dims.clone();
                    pd[dim] = (c[3] >> 12) as usize % 5;
                    let b = g.partner(a, c[3], pd, devices, &mut r);
                    let ids = if c[3] & 1 == 0 { vec![a, b] } else { vec![b, a, b] };
                    let inputs: Vec<Tensor> = ids.iter().map(|&i| g.tensors[i].clone()).collect();
                    let on = if (c[0] / 10) % 2 == 0 { g.models[ids[0]].device } else { dev(c[0] / 20) };
                    let t = Tensor::concat_on(on, &inputs, dim).unwrap();
                    let ms: Vec<&Model> = ids.iter().map(|&i| &g.models[i]).collect();
                    let vals = match &ma.vals {
                        Vals::F(_) => Vals::F(ref_concat(
                            &ms.iter().map(|m| (f_of(m), m.dims.as_slice())).collect::<Vec<_>>(),
                            dim,
                        )),
                        Vals::I(_) => Vals::I(ref_concat(
                            &ms.iter().map(|m| (i_of(m), m.dims.as_slice())).collect::<Vec<_>>(),
                            dim,
                        )),
                    };
                    let mut dims = ma.dims.clone();
                    dims[dim] = ms.iter().map(|m| m.dims[dim]).sum();
                    let first = ms[0].clone();
                    let what = format!("concat dim {dim} of {ids:?} on {on}");
                    g.push(t, Model { dims, vals, input: false, device: on, ..first }, what);
                }
                7 => {
                    let n: usize = ma.dims.iter().product();
                    let dims = match c[2] % 3 {
                        0 => vec![n],
                        1 if n > 0 => {
                            let divisors: Vec<usize> = (1..=n).filter(|&d| n.is_multiple_of(d)).collect();
                            let p = divisors[c[3] as usize % divisors.len()];
                            vec![p, n / p]
                        }
                        _ => ma.dims.iter().rev().copied().collect(),
                    };
                    let t = ta.reshape(dims.clone()).unwrap();
                    g.push(
                        t,
                        Model { dims: dims.clone(), input: false, ..ma },
                        format!("#{a} reshape {dims:?}"),
                    );
                }
                8 | 9 => {
                    let to = dev(c[2]);
                    let copy = c[0] % 10 == 8;
                    let t = if copy { ta.copy_to_device(to) } else { ta.clone().move_to_device(to) };
                    match t {
                        Ok(t) => {
                            let what = format!("#{a} {} to {to}", if copy { "copy" } else { "move" });
                            g.push(t, Model { device: to, input: false, ..ma }, what);
                        }
                        Err(e) => assert_eq!(e, Error::CrossVendorCopy { from: device, to }),
                    }
                }
                _ => {}
            }
        }
        g
    }
}

fn f_of(m: &Model) -> &[f64] {
    match &m.vals {
        Vals::F(x) => x,
        Vals::I(_) => unreachable!(),
    }
}

fn i_of(m: &Model) -> &[i64] {
    match &m.vals {
        Vals::I(x) => x,
        Vals::F(_) => unreachable!(),
    }
}

/// The library's values of `t`, exactly.
fn read(t: &Tensor) -> Vals {
    match t.dtype() {
        DType::I32 => Vals::I(t.to_vec::<i32>().unwrap().into_iter().map(i64::from).collect()),
        DType::I64 => Vals::I(t.to_vec::<i64>().unwrap()),
        DType::U8 => Vals::I(t.to_vec::<u8>().unwrap().into_iter().map(i64::from).collect()),
        _ => Vals::F(values(t)),
    }
}

fn same(got: &Vals, want: &Vals) -> Option<String> {
    let diff = |i: usize, g: String, w: String| Some(format!("element {i}: got {g}, want {w}"));
    match (got, want) {
        (Vals::F(g), Vals::F(w)) if g.len() == w.len() => (0..g.len())
            .find(|&i| !(g[i] == w[i] || g[i].is_nan() && w[i].is_nan()))
            .and_then(|i| diff(i, g[i].to_string(), w[i].to_string())),
        (Vals::I(g), Vals::I(w)) if g.len() == w.len() => {
            (0..g.len()).find(|&i| g[i] != w[i]).and_then(|i| diff(i, g[i].to_string(), w[i].to_string()))
        }
        _ => Some(format!("kind or length differs: {} vs {}", len(got), len(want))),
    }
}

fn len(v: &Vals) -> usize {
    match v {
        Vals::F(x) => x.len(),
        Vals::I(x) => x.len(),
    }
}

fn steps() -> impl Strategy<Value = Vec<[u32; 4]>> {
    prop::collection::vec(any::<[u32; 4]>(), 1..28)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// One realize of a random subset of targets, then every node against the interpreter.
    #[test]
    fn random_graphs_over_virtual_cpus_match_the_interpreter(
        steps in steps(),
        ndev in 1u32..=8,
        seed in any::<u64>(),
        mask in any::<u64>(),
    ) {
        let devices: Vec<Device> = (0..ndev).map(Device::Cpu).collect();
        let g = Graph::build(&steps, &devices, seed);
        let log = g.log.join("\n");
        let last = g.tensors.len() - 1;
        let is_target = |i: usize| i == last || mask >> (i % 64) & 1 == 1;
        let targets: Vec<Tensor> = (0..g.tensors.len()).filter(|&i| is_target(i)).map(|i| g.tensors[i].clone()).collect();
        realize(&targets).unwrap();
        for (i, (t, m)) in g.tensors.iter().zip(&g.models).enumerate() {
            let cached = t.is_realized();
            prop_assert_eq!(cached, is_target(i) || m.input, "#{} cached = {}; graph:\n{}", i, cached, log);
        }
        for (i, (t, m)) in g.tensors.iter().zip(&g.models).enumerate() {
            if let Some(d) = same(&read(t), &m.vals) {
                prop_assert!(false, "#{} ({} {:?} on {}): {}; graph:\n{}", i, m.dtype, m.dims, m.device, d, log);
            }
        }
    }

    /// Graphs over CPU, CUDA and Vulkan devices build and pass through the cross-device pass on
    /// a machine with no GPU: afterwards every compute op can read its inputs (on its device,
    /// or another host device for a host op), no copy crosses GPU vendors, each source is copied
    /// at most once per device, and the pass has nothing left to do.
    #[test]
    fn the_pass_makes_every_graph_local(steps in steps(), seed in any::<u64>()) {
        let devices = [Device::Cpu(0), Device::Cpu(1), Device::Cuda(0), Device::Cuda(1), Device::Vulkan(0), Device::Vulkan(1)];
        let g = Graph::build(&steps, &devices, seed);
        let log = g.log.join("\n");
        let out = insert_cross_device_copies(&g.tensors);
        // The user's nodes and their rewrites; anything else below `out` the pass inserted.
        let user: HashSet<u64> = g.tensors.iter().chain(&out).map(Tensor::id).collect();
        let mut seen = HashSet::new();
        let mut copies = HashSet::new();
        let mut stack: Vec<Tensor> = out.clone();
        while let Some(t) = stack.pop() {
            if !seen.insert(t.id()) {
                continue;
            }
            for i in t.inputs() {
                if t.op().is_transfer() {
                    prop_assert!(!i.device().needs_staging(t.device()), "{:?} crosses vendors; graph:\n{}", t, log);
                } else {
                    prop_assert!(readable(t.device(), i.device()), "{:?} has a remote input; graph:\n{}", t, log);
                }
            }
            if !user.contains(&t.id()) {
                let Op::Copy { to } = t.op() else {
                    return Err(TestCaseError::fail(format!("the pass inserted {t:?}; graph:\n{log}")));
                };
                let src = t.inputs()[0].id();
                prop_assert!(copies.insert((src, *to)), "two copies of node {} to {}; graph:\n{}", src, to, log);
            }
            stack.extend(t.inputs().iter().cloned());
        }
        for (o, t) in out.iter().zip(&g.tensors) {
            prop_assert_eq!((o.dtype(), o.shape(), o.device(), o.op()), (t.dtype(), t.shape(), t.device(), t.op()));
        }
        let again = insert_cross_device_copies(&out);
        prop_assert!(again.iter().zip(&out).all(|(a, b)| a.same_node(b)), "not idempotent; graph:\n{}", log);
    }
}
