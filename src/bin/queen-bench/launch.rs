//! The flags of every subcommand that starts the broker itself: which binary, its extra
//! environment, and where its embedded PostgreSQL lives. Flattened into each subcommand's
//! arguments so they are spelled and documented once.

use std::path::PathBuf;

use clap::Args;

use crate::spawn::{self, SpawnedBroker};

/// How to start a broker of the run.
#[derive(Debug, Clone, Args)]
pub struct LaunchArgs {
    /// Broker binary to start when --url is absent [default: `queen` beside this binary].
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Extra environment for a broker this tool starts (KEY=VALUE, repeatable).
    #[arg(long = "broker-env", value_parser = crate::arg_values::parse_env_pair)]
    pub broker_env: Vec<(String, String)>,
    /// Folder under which a broker this tool starts keeps its embedded PostgreSQL.
    #[arg(long, default_value = "/tmp")]
    pub work_dir: PathBuf,
}

impl LaunchArgs {
    /// The binary to start: `--broker-bin`, or `queen` beside this tool.
    pub fn binary(&self) -> anyhow::Result<PathBuf> {
        match &self.broker_bin {
            Some(b) => Ok(b.clone()),
            None => spawn::default_binary(),
        }
    }

    /// Starts the broker with `--broker-env`, then `extra` on top of it.
    pub async fn start(&self, extra: &[(String, String)]) -> anyhow::Result<SpawnedBroker> {
        let mut env = self.broker_env.clone();
        env.extend_from_slice(extra);
        SpawnedBroker::start(&self.binary()?, &env, &self.work_dir).await
    }
}
