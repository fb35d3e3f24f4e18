//! `queen-bench streams`: its command line.

use std::path::PathBuf;

use clap::Args;

/// Which broker and how many messages.
#[derive(Debug, Clone, Args)]
pub struct StreamsArgs {
    /// Broker base URL; without it the tool starts the broker binary on a fresh embedded
    /// PostgreSQL.
    #[arg(long, requires = "database_url")]
    pub url: Option<String>,
    /// The broker's database, with `--url`: transactions and PostgreSQL CPU are read there.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Broker binary to start when --url is absent [default: `queen` beside this binary].
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Extra environment for a broker this tool starts (KEY=VALUE, repeatable).
    #[arg(long = "broker-env", value_parser = crate::arg_values::parse_env_pair)]
    pub broker_env: Vec<(String, String)>,
    /// Folder under which a broker this tool starts keeps its embedded PostgreSQL.
    #[arg(long, default_value = "/tmp")]
    pub work_dir: PathBuf,
    /// Source partitions, each holding one batch of `--batch` messages.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub partitions: u32,
    /// Messages per batch: one pop, one cycle (or one push and one ack).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub batch: u32,
}
