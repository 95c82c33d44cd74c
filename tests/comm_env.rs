//! `Launch`: a job's place read from each launcher's variables, with typed errors for what is
//! missing or garbled. Tables stand in for the environment (`Launch::from_vars`).

use std::collections::HashMap;

use collectives::Error;
use collectives::comm::{Launch, Launcher};

fn launch(vars: &[(&str, &str)]) -> collectives::Result<Launch> {
    let table: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Launch::from_vars(|k| table.get(k).cloned())
}

const MASTER: [(&str, &str); 2] = [("MASTER_ADDR", "10.0.0.7"), ("MASTER_PORT", "29500")];

fn with_master<'a>(vars: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    vars.iter().copied().chain(MASTER).collect()
}

fn invalid(e: Error) -> (&'static str, String) {
    match e {
        Error::InvalidArgument { what, msg } => (what, msg),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn every_launcher_is_read() {
    for launcher in Launcher::ALL {
        let [r, w, l] = launcher.variables();
        let got = launch(&with_master(&[(r, "5"), (w, "8"), (l, " 1 ")])).unwrap();
        let want = Launch {
            rank: 5,
            world_size: 8,
            local_rank: 1,
            master_addr: "10.0.0.7".into(),
            master_port: 29500,
            launcher,
        };
        assert_eq!(got, want, "{launcher}");
        assert_eq!(got.master(), "10.0.0.7:29500");
    }
}

#[test]
fn torchrun_wins_over_the_launchers_around_it() {
    let vars = with_master(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_LOCALID", "0"),
        ("OMPI_COMM_WORLD_RANK", "1"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("RANK", "3"),
        ("WORLD_SIZE", "4"),
        ("LOCAL_RANK", "3"),
    ]);
    let got = launch(&vars).unwrap();
    assert_eq!((got.launcher, got.rank, got.world_size), (Launcher::Torchrun, 3, 4));
    let got = launch(&vars[..6].iter().copied().chain(MASTER).collect::<Vec<_>>()).unwrap();
    assert_eq!((got.launcher, got.rank), (Launcher::OpenMpi, 1));
}

#[test]
fn missing_variables_are_named() {
    let (what, msg) = invalid(launch(&MASTER).unwrap_err());
    assert_eq!(what, "launch environment");
    assert!(msg.contains("RANK") && msg.contains("SLURM_PROCID"), "{msg}");
    let (what, _) = invalid(launch(&with_master(&[("RANK", "0"), ("LOCAL_RANK", "0")])).unwrap_err());
    assert_eq!(what, "WORLD_SIZE");
    let (what, _) = invalid(launch(&with_master(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")])).unwrap_err());
    assert_eq!(what, "MPI_LOCALRANKID");
    let ranks = [("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")];
    let (what, _) = invalid(launch(&[ranks[0], ranks[1], ranks[2], MASTER[1]]).unwrap_err());
    assert_eq!(what, "MASTER_ADDR");
    let (what, _) = invalid(launch(&[ranks[0], ranks[1], ranks[2], MASTER[0]]).unwrap_err());
    assert_eq!(what, "MASTER_PORT");
}

#[test]
fn garbled_values_are_errors() {
    let base = [("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")];
    let cases: [(&str, &str, &str); 10] = [
        ("RANK", "-1", "RANK"),
        ("RANK", "one", "RANK"),
        ("RANK", "2", "RANK"),
        ("WORLD_SIZE", "0", "WORLD_SIZE"),
        ("WORLD_SIZE", "2.0", "WORLD_SIZE"),
        ("LOCAL_RANK", "9", "LOCAL_RANK"),
        ("MASTER_PORT", "0", "MASTER_PORT"),
        ("MASTER_PORT", "70000", "MASTER_PORT"),
        ("MASTER_ADDR", "", "MASTER_ADDR"),
        ("MASTER_ADDR", "a b", "MASTER_ADDR"),
    ];
    for (var, value, named) in cases {
        let vars: Vec<(&str, &str)> =
            with_master(&base).into_iter().map(|(k, v)| if k == var { (k, value) } else { (k, v) }).collect();
        let (what, msg) = invalid(launch(&vars).unwrap_err());
        assert_eq!(what, named, "{var}={value:?}: {msg}");
    }
}

#[test]
fn ipv6_masters_are_bracketed() {
    let vars = [("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "::1"), MASTER[1]];
    assert_eq!(launch(&vars).unwrap().master(), "[::1]:29500");
    let vars = [("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "[::1]"), MASTER[1]];
    assert_eq!(launch(&vars).unwrap().master(), "[::1]:29500");
}
