//! `queen-bench timers`: its command line.

use clap::Args;

/// Which broker, and the sizes of each phase.
#[derive(Debug, Clone, Args)]
pub struct TimersArgs {
    /// Broker base URL; without it the tool starts the broker binary on a fresh embedded
    /// PostgreSQL. Any server answering `POST /api/v1/timers` and the pop route will do
    /// for the schedule and lateness phases.
    #[arg(long, requires = "database_url")]
    pub url: Option<String>,
    /// The broker's database, with `--url`: the fire phase makes its timers due there, and
    /// PostgreSQL's CPU is read from its postmaster.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Process id of a broker given by --url, to read its CPU time from /proc.
    #[arg(long)]
    pub broker_pid: Option<i32>,
    /// How to start the broker when --url is absent.
    #[command(flatten)]
    pub launch: crate::launch::LaunchArgs,
    /// Concurrent clients of the schedule phases.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub clients: u32,
    /// Ops in one schedule call.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub batch: u32,
    /// Timers left pending (due in a day) before the measured phases.
    #[arg(long, default_value_t = 100_000)]
    pub pending: u64,
    /// Timers of the schedule and fire phases.
    #[arg(long, default_value_t = 20_000)]
    pub timers: u64,
    /// Timers per second of the lateness phase.
    #[arg(long, default_value_t = 1000)]
    pub rate: u64,
    /// Length of the lateness phase, seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Delay of each timer of the lateness phase, milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub delay_ms: i64,
    /// Skip the fire phase (it needs `--database-url`'s write access to make timers due).
    #[arg(long)]
    pub no_fire: bool,
}
