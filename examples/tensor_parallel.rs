//! Tensor parallelism as model code: a two-layer MLP `y = relu(x · W1) · W2` whose weights are
//! sharded across the members of a typed group, Megatron style. `W1` is split by columns
//! (column-parallel: each member computes its slice of the hidden layer, `all_gather` assembles
//! it); `W2` by rows (row-parallel: each member's partial product is summed and split with
//! `reduce_scatter`, and `all_gather` assembles the output). Checked against an f64 host matmul;
//! exits non-zero on a mismatch.
//!
//! ```text
//! cargo run -p collectives-examples --example tensor_parallel
//! ```
//!
//! It asks for `device_group!(Cuda, Vulkan, Cpu)`; where those GPUs are absent it says so and runs
//! the same model code on `device_group!(Cpu(0), Cpu(1), Cpu(2))`.

#[allow(dead_code)] // each example uses some of the shared helpers
mod model_ops;

use std::process::ExitCode;

use collectives::typed::{DeviceKind, Group, Shard};
use collectives::{Error, ReduceOp, Result, Tensor, device_group};
use model_ops::{matmul, matmul_f64, max_rel_err};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BATCH: usize = 6;
const IN: usize = 4;
const HIDDEN: usize = 6; // split 3 ways: 2 columns of W1, 2 rows of W2 per member
const OUT: usize = 3;

/// Host data: `x [BATCH, IN]`, `W1 [IN, HIDDEN]`, `W2 [HIDDEN, OUT]`, f32 values kept as f64.
struct Weights {
    x: Vec<f64>,
    w1: Vec<f64>,
    w2: Vec<f64>,
}

fn weights() -> Weights {
    let mut rng = StdRng::seed_from_u64(11);
    let mut draw = |n: usize| -> Vec<f64> { (0..n).map(|_| rng.random_range(-1.0f32..1.0) as f64).collect() };
    Weights { x: draw(BATCH * IN), w1: draw(IN * HIDDEN), w2: draw(HIDDEN * OUT) }
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&a| a as f32).collect()
}

/// `relu(x_shard @ w_shard)` on the shard's device.
fn hidden_slice<K: DeviceKind, B>(x: &Shard<K, B>, w1: &Shard<K, B>) -> Result<Shard<K, B>> {
    x.map(|x| {
        let h = matmul(x, w1.tensor())?;
        let zeros = Tensor::from_vec(vec![0.0f32; h.numel()], h.shape().clone(), h.device())?;
        h.maximum(&zeros)
    })
}

/// The hidden layer and the output, as each member sees them.
struct Seen {
    hs: Vec<Vec<f32>>,
    ys: Vec<Vec<f32>>,
}

/// The model code: the sharded MLP on any three-member group. Returns the hidden layer and the
/// output as every member sees them.
fn forward<K0, K1, K2, L, B>(group: &Group<(K0, K1, K2), L, B>, w: &Weights) -> Result<Seen>
where
    K0: DeviceKind,
    K1: DeviceKind,
    K2: DeviceKind,
    L: DeviceKind,
{
    let leader = group.leader();
    let x = group.broadcast(&leader.tensor(f32s(&w.x), [BATCH, IN])?)?;
    let w1 = group.scatter(&leader.tensor(f32s(&w.w1), [IN, HIDDEN])?, 1)?; // columns
    let w2 = group.scatter(&leader.tensor(f32s(&w.w2), [HIDDEN, OUT])?, 0)?; // rows

    // Column-parallel: member i computes hidden columns 2i..2i+2; all_gather joins them.
    let h = (hidden_slice(&x.0, &w1.0)?, hidden_slice(&x.1, &w1.1)?, hidden_slice(&x.2, &w1.2)?);
    let full_h = group.all_gather(h.clone(), 1)?;

    // Row-parallel: member i multiplies its hidden columns by its rows of W2; the partial
    // products are summed and split by batch rows, then gathered whole.
    let partial = (
        h.0.map(|h| matmul(h, w2.0.tensor()))?,
        h.1.map(|h| matmul(h, w2.1.tensor()))?,
        h.2.map(|h| matmul(h, w2.2.tensor()))?,
    );
    let rows = group.reduce_scatter(partial, ReduceOp::Sum, 0)?;
    let y = group.all_gather(rows, 0)?;

    let hs = vec![full_h.0.to_vec()?, full_h.1.to_vec()?, full_h.2.to_vec()?];
    let ys = vec![y.0.to_vec()?, y.1.to_vec()?, y.2.to_vec()?];
    Ok(Seen { hs, ys })
}

fn run<K0, K1, K2, L, B>(group: &Group<(K0, K1, K2), L, B>) -> Result<()>
where
    K0: DeviceKind,
    K1: DeviceKind,
    K2: DeviceKind,
    L: DeviceKind,
{
    print!("{group}");
    let w = weights();
    let Seen { hs, ys } = forward(group, &w)?;
    let want_h: Vec<f64> = matmul_f64(&w.x, &w.w1, BATCH, IN, HIDDEN).iter().map(|&v| v.max(0.0)).collect();
    let want_y = matmul_f64(&want_h, &w.w2, BATCH, HIDDEN, OUT);
    let h_err = hs.iter().map(|h| max_rel_err(h, &want_h)).fold(0.0, f64::max);
    let y_err = ys.iter().map(|y| max_rel_err(y, &want_y)).fold(0.0, f64::max);
    println!("y[0] = {:?} (f64 host {:?})", &ys[0][..OUT], &want_y[..OUT]);
    println!("max relative error vs f64 on every member: hidden {h_err:.2e}, output {y_err:.2e}");
    if h_err > 1e-5 || y_err > 1e-5 {
        let msg = format!("hidden error {h_err:e}, output error {y_err:e}");
        return Err(Error::InvalidArgument { what: "tensor_parallel check", msg });
    }
    println!("OK: column- and row-parallel layers match the f64 host matmul on every member");
    Ok(())
}

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("tensor_parallel: a column/row-parallel MLP over device_group!(Cuda, Vulkan, Cpu)");
        println!("(virtual CPU devices where those are absent), checked against an f64 host matmul.");
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
            eprintln!("tensor_parallel FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
