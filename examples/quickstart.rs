//! Quickstart: find every device present, build a group, all-reduce a shard per device, print
//! the plan, check the result.
//!
//! ```sh
//! cargo run --release -p collectives-examples --example quickstart
//! ```
//!
//! With no GPU this uses four virtual CPU devices (`COLLECTIVES_CPU_DEVICES` changes how many);
//! CUDA and Vulkan devices join the group when their drivers are present. It first prints what
//! discovery found, and for a kind it found none of, why and how to install it.

use std::process::ExitCode;

use collectives::{CollectiveKind, DType, Device, DeviceGroup, Plan, ReduceOp, Tensor};
use collectives_examples::{fold, random_data, tolerance};

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("quickstart: all-reduce a random shard on every device present, check it, print the plan.");
        println!("usage: quickstart   (COLLECTIVES_CPU_DEVICES=N sets how many virtual CPU devices join)");
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", collectives::discover::report());
    let group = DeviceGroup::new(pick_devices())?;
    group.validate()?;
    println!("{group}");

    // Fresh random data, one shard per device.
    let n = 1 << 20;
    let mut rng = rand::rng();
    let data: Vec<Vec<f32>> = (0..group.size()).map(|_| random_data(n, false, &mut rng)).collect();
    let shards = data
        .iter()
        .zip(group.devices())
        .map(|(x, &d)| Tensor::from_vec(x.clone(), [n], d))
        .collect::<Result<Vec<_>, _>>()?;

    let summed = group.all_reduce(&shards, ReduceOp::Sum)?; // lazy: nothing has run yet
    let mut plan = Plan::of(&summed);
    plan.algorithm = Some(group.algorithm_for(CollectiveKind::AllReduce, n * 4));
    println!("plan of all_reduce over {} floats per device:\n{plan}", n);

    collectives::realize(&summed)?;
    let want: Vec<(f64, f64)> = (0..n)
        .map(|j| {
            let xs = data.iter().map(|x| x[j] as f64);
            let mag: f64 = xs.clone().map(f64::abs).sum();
            (fold(DType::F32, ReduceOp::Sum, xs), tolerance(DType::F32, group.size(), mag))
        })
        .collect();
    for (t, &d) in summed.iter().zip(group.devices()) {
        let got = t.to_vec::<f32>()?;
        let wrong = got.iter().zip(&want).filter(|(g, (w, tol))| (**g as f64 - w).abs() > *tol).count();
        println!("{d}: {} elements, {wrong} wrong", got.len());
        if wrong > 0 || t.device() != d {
            return Err(format!("all_reduce result on {d} is wrong").into());
        }
    }
    println!("ok: the sum is on every device");
    Ok(())
}

/// Every device present, best leader first (hardware GPUs, the host, then software GPUs such as
/// lavapipe); at most 8.
fn pick_devices() -> Vec<Device> {
    collectives::discover::preferred_devices().into_iter().take(8).collect()
}
