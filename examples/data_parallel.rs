//! Data-parallel training as model code: a linear regression `y = x·w + b`, its batch split
//! across the members of a typed group. Each member computes the gradient of its own rows with
//! lazy tensor ops; the typed `all_reduce(Avg)` averages the gradients; every member applies the
//! same update, so the parameters are identical on every device after each step. The run is
//! checked against the same training in f64 on the host, and exits non-zero on a mismatch.
//!
//! ```text
//! cargo run -p collectives-examples --example data_parallel
//! ```
//!
//! It asks for `device_group!(Cuda, Vulkan, Cpu)`; where those GPUs are absent it says so and runs
//! the same model code — generic over the group's kinds — on `device_group!(Cpu(0), Cpu(1), Cpu(2))`.

#[allow(dead_code)] // each example uses some of the shared helpers
mod model_ops;

use std::process::ExitCode;

use collectives::typed::{DeviceKind, Group, Member, Shard};
use collectives::{Error, ReduceOp, Result, Scale, Tensor, device_group};
use model_ops::{max_rel_err, sum_dim, tile_cols, tile_rows};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const FEATURES: usize = 3;
const ROWS: usize = 8; // per member
const STEPS: usize = 25;
const LR: f64 = 0.1;
const TRUE_W: [f64; FEATURES] = [0.5, -1.25, 2.0];
const TRUE_B: f64 = 0.3;

/// One member's replica of the parameters and its rows of the batch.
struct Replica<K, B> {
    w: Shard<K, B>, // [1, FEATURES]
    b: Shard<K, B>, // [1, 1]
    x: Shard<K, B>, // [ROWS, FEATURES]
    y: Shard<K, B>, // [ROWS, 1]
}

impl<K: DeviceKind, B> Replica<K, B> {
    fn new(on: Member<K, B>, x: &[f64], y: &[f64]) -> Result<Self> {
        let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<_>>();
        Ok(Replica {
            w: on.tensor(vec![0.0f32; FEATURES], [1, FEATURES])?,
            b: on.tensor(vec![0.0f32], [1, 1])?,
            x: on.tensor(f32s(x), [ROWS, FEATURES])?,
            y: on.tensor(f32s(y), [ROWS, 1])?,
        })
    }

    /// This member's loss (mean squared error, `[1, 1]`) and gradient (`[1, FEATURES + 1]`:
    /// d/dw then d/db), built lazily on its device.
    fn loss_and_grad(&self) -> Result<(Shard<K, B>, Shard<K, B>)> {
        let (w, b, y) = (self.w.tensor(), self.b.tensor(), self.y.tensor());
        let residual = self.x.map(|x| {
            let pred = sum_dim(&x.mul(&tile_rows(w, ROWS)?)?, 1)?.add(&tile_rows(b, ROWS)?)?;
            pred.sub(y)
        })?;
        let r = residual.tensor();
        let loss = residual.map(|r| sum_dim(&r.mul(r)?, 0)?.scale(Scale::Div(ROWS as f64)))?;
        let two_over_n = Scale::Mul(2.0 / ROWS as f64);
        let grad = self.x.map(|x| {
            let gw = sum_dim(&x.mul(&tile_cols(r, FEATURES)?)?, 0)?;
            let gb = sum_dim(r, 0)?;
            Tensor::concat(&[gw, gb], 1)?.scale(two_over_n)
        })?;
        Ok((loss, grad))
    }

    /// The replica after one step along the averaged gradient `g`.
    fn update(self, g: &Shard<K, B>) -> Result<Self> {
        let g = g.tensor().scale(Scale::Mul(LR))?;
        let w = self.w.map(|w| w.sub(&g.narrow(1, 0, FEATURES)?))?;
        let b = self.b.map(|b| b.sub(&g.narrow(1, FEATURES, 1)?))?;
        Ok(Replica { w, b, ..self })
    }

    /// The parameters' lazy tensors.
    fn live(&self) -> Vec<Tensor> {
        vec![self.w.tensor().clone(), self.b.tensor().clone()]
    }

    fn params(&self) -> Result<Vec<f32>> {
        Ok([self.w.to_vec::<f32>()?, self.b.to_vec::<f32>()?].concat())
    }
}

/// The batch: one `(x, y)` block of `ROWS` rows per member, `y = x·TRUE_W + TRUE_B + noise`.
fn batch(members: usize) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut rng = StdRng::seed_from_u64(7);
    (0..members)
        .map(|_| {
            let x: Vec<f64> = (0..ROWS * FEATURES).map(|_| (rng.random_range(-1.0f32..1.0)) as f64).collect();
            let y = (0..ROWS)
                .map(|i| {
                    let dot: f64 = (0..FEATURES).map(|j| x[i * FEATURES + j] * TRUE_W[j]).sum();
                    (dot + TRUE_B + rng.random_range(-0.05f32..0.05) as f64) as f32 as f64
                })
                .collect();
            (x, y)
        })
        .collect()
}

/// What a training run saw: the mean loss before each step and the final parameters.
struct Trace {
    losses: Vec<f64>,
    params: Vec<f64>,
}

/// The model code: train on any three-member group, whatever its kinds.
fn train<K0, K1, K2, L, B>(group: &Group<(K0, K1, K2), L, B>, data: &[(Vec<f64>, Vec<f64>)]) -> Result<Trace>
where
    K0: DeviceKind,
    K1: DeviceKind,
    K2: DeviceKind,
    L: DeviceKind,
{
    let (m0, m1, m2) = group.members();
    let mut r = (
        Replica::new(m0, &data[0].0, &data[0].1)?,
        Replica::new(m1, &data[1].0, &data[1].1)?,
        Replica::new(m2, &data[2].0, &data[2].1)?,
    );
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let ((l0, g0), (l1, g1), (l2, g2)) =
            (r.0.loss_and_grad()?, r.1.loss_and_grad()?, r.2.loss_and_grad()?);
        let (a0, a1, a2) = group.all_reduce((g0, g1, g2), ReduceOp::Avg)?;
        let loss = group.reduce((l0, l1, l2), ReduceOp::Avg)?;
        r = (r.0.update(&a0)?, r.1.update(&a1)?, r.2.update(&a2)?);
        // Realize the new parameters together, so the next step starts from computed buffers.
        let outs = [r.0.live(), r.1.live(), r.2.live(), vec![loss.tensor().clone()]].concat();
        collectives::realize(&outs)?;
        losses.push(loss.to_vec::<f32>()?[0] as f64);
        let (p0, p1, p2) = (r.0.params()?, r.1.params()?, r.2.params()?);
        if p0 != p1 || p0 != p2 {
            return Err(mismatch(format!("step {step}: replicas differ: {p0:?} {p1:?} {p2:?}")));
        }
    }
    let params = r.0.params()?.iter().map(|&p| p as f64).collect();
    Ok(Trace { losses, params })
}

/// The same training in f64 on the host.
fn train_f64(data: &[(Vec<f64>, Vec<f64>)]) -> Trace {
    let mut p = vec![0.0f64; FEATURES + 1];
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let mut grad = vec![0.0; FEATURES + 1];
        let mut loss = 0.0;
        for (x, y) in data {
            for i in 0..ROWS {
                let row = &x[i * FEATURES..(i + 1) * FEATURES];
                let r = row.iter().zip(&p).map(|(a, w)| a * w).sum::<f64>() + p[FEATURES] - y[i];
                loss += r * r / ROWS as f64 / data.len() as f64;
                for j in 0..FEATURES {
                    grad[j] += 2.0 * r * row[j] / ROWS as f64 / data.len() as f64;
                }
                grad[FEATURES] += 2.0 * r / ROWS as f64 / data.len() as f64;
            }
        }
        losses.push(loss);
        p.iter_mut().zip(&grad).for_each(|(w, g)| *w -= LR * g);
    }
    Trace { losses, params: p }
}

fn mismatch(msg: String) -> Error {
    Error::InvalidArgument { what: "data_parallel check", msg }
}

fn run<K0, K1, K2, L, B>(group: &Group<(K0, K1, K2), L, B>) -> Result<()>
where
    K0: DeviceKind,
    K1: DeviceKind,
    K2: DeviceKind,
    L: DeviceKind,
{
    print!("{group}");
    let data = batch(group.size());
    let got = train(group, &data)?;
    let want = train_f64(&data);
    for (step, (g, w)) in got.losses.iter().zip(&want.losses).enumerate() {
        if step % 5 == 0 || step + 1 == STEPS {
            println!("step {step:2}: loss {g:.6} (f64 host {w:.6})");
        }
    }
    let f32s: Vec<f32> = got.params.iter().map(|&p| p as f32).collect();
    let (loss_err, param_err) = (
        max_rel_err(&got.losses.iter().map(|&l| l as f32).collect::<Vec<_>>(), &want.losses),
        max_rel_err(&f32s, &want.params),
    );
    println!("params {f32s:?} (true w {TRUE_W:?}, b {TRUE_B})");
    println!("max relative error vs f64: loss {loss_err:.2e}, params {param_err:.2e}");
    if loss_err > 1e-4 || param_err > 1e-4 {
        return Err(mismatch(format!("loss error {loss_err:e}, param error {param_err:e}")));
    }
    let decreasing = got.losses.windows(2).all(|w| w[1] <= w[0]);
    if !decreasing || got.losses[STEPS - 1] > got.losses[0] / 10.0 {
        return Err(mismatch(format!("loss did not decrease: {:?}", got.losses)));
    }
    println!("OK: replicas identical after every step, loss decreasing, matches the f64 host run");
    Ok(())
}

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("data_parallel: a data-parallel linear regression over device_group!(Cuda, Vulkan, Cpu)");
        println!("(virtual CPU devices where those are absent), checked against f64 on the host.");
        println!("usage: {} (no options)", env!("CARGO_CRATE_NAME"));
        return ExitCode::SUCCESS;
    }
    let result = match device_group!(Cuda, Vulkan, Cpu) {
        Ok(group) => run(&group),
        Err(Error::DeviceUnavailable { device, .. }) => {
            println!("note: {device} is absent, so device_group!(Cuda, Vulkan, Cpu) cannot open;");
            println!("      running the same model code on virtual CPU devices instead");
            device_group!(Cpu(0), Cpu(1), Cpu(2)).and_then(|group| run(&group))
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("data_parallel FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
