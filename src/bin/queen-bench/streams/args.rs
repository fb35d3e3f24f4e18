//! `queen-bench streams`: its command line.

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
    /// How to start the broker when --url is absent.
    #[command(flatten)]
    pub launch: crate::launch::LaunchArgs,
    /// Source partitions, each holding one batch of `--batch` messages.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub partitions: u32,
    /// Messages per batch: one pop, one cycle (or one push and one ack).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub batch: u32,
}
