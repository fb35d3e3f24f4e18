//! `queen-bench kv`: its command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::drive::Limit;

/// Which broker, how many clients, and how long each phase runs.
#[derive(Debug, Clone, Args)]
pub struct KvArgs {
    /// Broker base URL; without it the tool starts the broker binary on a fresh embedded
    /// PostgreSQL. Any server answering `POST /api/v1/kv` will do.
    #[arg(long, requires = "database_url")]
    pub url: Option<String>,
    /// The broker's database, with `--url`: the baseline table, the stored-row check and
    /// the round-trip counters run there.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Process id of a broker given by --url, to read its CPU time from /proc.
    #[arg(long)]
    pub broker_pid: Option<i32>,
    /// How to start the broker when --url is absent.
    #[command(flatten)]
    pub launch: crate::launch::LaunchArgs,
    /// Concurrent clients of the put, get, batch, incr and lock phases.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,
    /// Length of each throughput phase, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Ops of each throughput phase instead of a length (shared out over the clients).
    #[arg(long)]
    pub ops: Option<u64>,
    /// Ops in one call of the batch phase (half puts, half gets of the keys just put).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(2..=256))]
    pub batch: u32,
    /// Sequential single-op calls of each latency phase (one client).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub latency_ops: u64,
    /// Increments of one shared key by each client in the incr check.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub incr_per_client: u64,
    /// Also measure lock acquire + release cycles through `POST /api/v1/locks`.
    #[arg(long)]
    pub locks: bool,
    /// Write the figures as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl KvArgs {
    /// Refuses combinations that cannot run, with a message that says what to do.
    pub fn validate(&self) -> Result<(), String> {
        if self.ops.is_none() && !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Err("--seconds must be a positive number".to_owned());
        }
        if self.ops.is_some_and(|n| n < u64::from(self.clients)) {
            return Err("--ops must be at least --clients (each client does its share)".to_owned());
        }
        if self.url.is_some() && self.database_url.is_none() {
            return Err(
                "--url needs --database-url (the baseline runs on the same PostgreSQL)".to_owned(),
            );
        }
        Ok(())
    }

    /// How each throughput phase ends.
    pub fn limit(&self) -> Limit {
        match self.ops {
            Some(n) => Limit::OpsPerClient(n / u64::from(self.clients).max(1)),
            None => Limit::Time(Duration::from_secs_f64(self.seconds)),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{Cli, Command};

    fn kv(args: &[&str]) -> Result<KvArgs, String> {
        let argv = ["queen-bench", "kv"].iter().chain(args).copied();
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Kv(k) => k.validate().map(|()| *k),
            _ => Err("parsed as another command".to_owned()),
        }
    }

    #[test]
    fn defaults_are_eight_clients_for_ten_seconds_with_batches_of_a_hundred() {
        let k = kv(&[]).unwrap();
        assert_eq!((k.clients, k.batch, k.latency_ops), (8, 100, 2000));
        assert_eq!(k.limit(), Limit::Time(Duration::from_secs(10)));
        assert!(!k.locks && k.url.is_none());
    }

    #[test]
    fn ops_are_shared_out_over_the_clients_and_replace_the_length() {
        let k = kv(&["--ops", "8000", "--clients", "4", "--locks"]).unwrap();
        assert_eq!(k.limit(), Limit::OpsPerClient(2000));
        assert!(k.locks);
        assert!(kv(&["--ops", "3", "--clients", "4"]).is_err());
    }

    #[test]
    fn nonsense_is_refused() {
        assert!(kv(&["--seconds", "0"]).is_err());
        assert!(kv(&["--seconds", "-1"]).is_err());
        assert!(kv(&["--clients", "0"]).is_err());
        assert!(kv(&["--batch", "1"]).is_err());
        assert!(kv(&["--batch", "257"]).is_err());
        assert!(kv(&["--url", "http://127.0.0.1:6632"]).is_err());
        assert!(kv(&["--url", "http://x", "--database-url", "host=/tmp"]).is_ok());
    }
}
