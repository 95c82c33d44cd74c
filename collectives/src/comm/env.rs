//! `Launch`: where this process stands in a multi-process job, read from the environment its
//! launcher set.
//!
//! Launchers already tell every process its rank; reading their conventions means a job starts
//! under torchrun, mpirun or srun with no flags of ours. The first family whose rank variable is
//! set wins, in this order (so torchrun inside a Slurm allocation reads torchrun's):
//!
//! | launcher | rank | world size | local rank |
//! |---|---|---|---|
//! | torchrun (and hand-set) | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` |
//! | Open MPI `mpirun` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` |
//! | MPICH / Intel MPI (Hydra) | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` |
//! | Slurm `srun` | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` |
//!
//! Every launcher also needs `MASTER_ADDR` and `MASTER_PORT` (torchrun sets them; under mpirun
//! or srun, export them): where rank 0 listens for the [`super::rendezvous`]. A variable that is
//! missing or does not parse is an [`Error::InvalidArgument`] naming it.
//!
//! ```
//! use collectives::comm::{Launch, Launcher};
//! let vars = [("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1"),
//!             ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")];
//! let launch = Launch::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))?;
//! assert_eq!((launch.rank, launch.world_size, launch.local_rank), (1, 2, 1));
//! assert_eq!(launch.launcher, Launcher::Torchrun);
//! assert_eq!(launch.master(), "127.0.0.1:29500");
//! # Ok::<(), collectives::Error>(())
//! ```

use std::fmt;

use crate::error::{Error, Result};

/// The launcher whose variables gave the rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// `RANK`, `WORLD_SIZE`, `LOCAL_RANK` (torchrun, or set by hand).
    Torchrun,
    /// `OMPI_COMM_WORLD_*` (Open MPI's mpirun).
    OpenMpi,
    /// `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID` (MPICH and Intel MPI's Hydra).
    Mpich,
    /// `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID` (srun).
    Slurm,
}

impl Launcher {
    /// Every launcher, in the order they are looked for.
    pub const ALL: [Launcher; 4] = [Launcher::Torchrun, Launcher::OpenMpi, Launcher::Mpich, Launcher::Slurm];

    /// The variables giving rank, world size and local rank.
    pub fn variables(self) -> [&'static str; 3] {
        match self {
            Launcher::Torchrun => ["RANK", "WORLD_SIZE", "LOCAL_RANK"],
            Launcher::OpenMpi => {
                ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"]
            }
            Launcher::Mpich => ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"],
            Launcher::Slurm => ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"],
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Mpich => "MPICH",
            Launcher::Slurm => "Slurm",
        })
    }
}

/// The master's address variable.
pub const MASTER_ADDR: &str = "MASTER_ADDR";
/// The master's port variable.
pub const MASTER_PORT: &str = "MASTER_PORT";

/// This process's place in a job: its rank, the world size, its rank on this node (which picks
/// its GPU) and where rank 0 listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank, in `0..world_size`.
    pub rank: usize,
    /// Number of processes in the job.
    pub world_size: usize,
    /// This process's rank among those on its node: its GPU is `Device::Cuda(local_rank)`.
    pub local_rank: usize,
    /// Host name or IP address rank 0 listens on.
    pub master_addr: String,
    /// Port rank 0 listens on.
    pub master_port: u16,
    /// The launcher whose variables were read.
    pub launcher: Launcher,
}

impl Launch {
    /// Reads the process environment (see the module docs).
    pub fn from_env() -> Result<Launch> {
        Launch::from_vars(|k| std::env::var(k).ok())
    }

    /// Reads the variables through `get` (the environment, or a table in tests).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Launch> {
        let launcher =
            Launcher::ALL.into_iter().find(|l| get(l.variables()[0]).is_some()).ok_or_else(|| {
                let names: Vec<&str> = Launcher::ALL.iter().map(|l| l.variables()[0]).collect();
                Error::InvalidArgument {
                    what: "launch environment",
                    msg: format!(
                        "no rank variable is set (looked for {}); launch with torchrun, mpirun or srun, \
                     or set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT",
                        names.join(", ")
                    ),
                }
            })?;
        let [rank_var, size_var, local_var] = launcher.variables();
        let rank = number(&get, rank_var, launcher)?;
        let world_size = number(&get, size_var, launcher)?;
        let local_rank = number(&get, local_var, launcher)?;
        check_ranks((rank, world_size, local_rank), launcher)?;
        let master_addr = master_addr(&get)?;
        let master_port = master_port(&get)?;
        Ok(Launch { rank, world_size, local_rank, master_addr, master_port, launcher })
    }

    /// `master_addr:master_port`, an IPv6 address in brackets.
    pub fn master(&self) -> String {
        if self.master_addr.contains(':') && !self.master_addr.starts_with('[') {
            format!("[{}]:{}", self.master_addr, self.master_port)
        } else {
            format!("{}:{}", self.master_addr, self.master_port)
        }
    }
}

/// A required variable's value, trimmed.
fn required(get: &impl Fn(&str) -> Option<String>, var: &'static str, why: &str) -> Result<String> {
    let v = get(var).ok_or_else(|| Error::InvalidArgument { what: var, msg: format!("not set; {why}") })?;
    Ok(v.trim().to_string())
}

/// A required non-negative integer.
fn number(get: &impl Fn(&str) -> Option<String>, var: &'static str, launcher: Launcher) -> Result<usize> {
    let why = format!("{launcher} sets it alongside {}", launcher.variables()[0]);
    let v = required(get, var, &why)?;
    v.parse::<usize>().map_err(|_| Error::InvalidArgument {
        what: var,
        msg: format!("{v:?} is not a non-negative integer"),
    })
}

fn check_ranks((rank, world, local): (usize, usize, usize), launcher: Launcher) -> Result<()> {
    let [rank_var, size_var, local_var] = launcher.variables();
    let bad = |what, msg| Err(Error::InvalidArgument { what, msg });
    if world == 0 {
        return bad(size_var, "is 0; a job has at least one process".into());
    }
    if rank >= world {
        return bad(rank_var, format!("is {rank}, not below {size_var}={world}"));
    }
    if local >= world {
        return bad(local_var, format!("is {local}, not below {size_var}={world}"));
    }
    Ok(())
}

fn master_addr(get: &impl Fn(&str) -> Option<String>) -> Result<String> {
    let addr = required(get, MASTER_ADDR, "set it to the host of rank 0, e.g. MASTER_ADDR=127.0.0.1")?;
    if addr.is_empty() || addr.chars().any(char::is_whitespace) {
        let msg = format!("{addr:?} is not a host name or IP address");
        return Err(Error::InvalidArgument { what: MASTER_ADDR, msg });
    }
    Ok(addr.trim_start_matches('[').trim_end_matches(']').to_string())
}

fn master_port(get: &impl Fn(&str) -> Option<String>) -> Result<u16> {
    let v = required(get, MASTER_PORT, "set it to a free TCP port on rank 0's host, e.g. MASTER_PORT=29500")?;
    match v.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(Error::InvalidArgument {
            what: MASTER_PORT,
            msg: format!("{v:?} is not a port in 1..=65535"),
        }),
    }
}
