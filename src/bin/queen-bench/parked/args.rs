//! `queen-bench parked`: its command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::arg_values::parse_duration;

/// How many pops to park, where, and how long to watch them.
#[derive(Debug, Clone, Args)]
pub struct ParkedArgs {
    /// Pops to park (each on its own keep-alive connection).
    #[arg(long, default_value_t = 8000)]
    pub pops: usize,
    /// Consumer groups the pops are spread over (round robin).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub groups: u64,
    /// Queues the groups are spread over (round robin).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub queues: u64,
    /// Park the pops as streams of shared HTTP/2 connections (cleartext, prior knowledge;
    /// the broker is started with `QUEEN_HTTP2=true`) instead of one HTTP/1.1 connection
    /// each.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 connections the pops are spread over (round robin), with --http2.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub http2_connections: u64,
    /// Idle keep-alive connections (one `GET /health` each) opened first, to compare a
    /// parked pop with a connection that holds none [default: as many as --pops].
    #[arg(long)]
    pub idle_connections: Option<usize>,
    /// Long-poll deadline of each parked pop, ms (longer than the whole run).
    #[arg(long, default_value_t = 600_000)]
    pub timeout_ms: u64,
    /// Pushes into parked pops whose wake latency is measured (queues round robin).
    #[arg(long, default_value_t = 20)]
    pub wakes: usize,
    /// Pushes that each wake one parked pop: that many more pops park, each alone on a
    /// queue of its own, and each such queue gets one push, one after the other, while
    /// every other pop stays parked.
    #[arg(long, default_value_t = 100)]
    pub single_wakes: usize,
    /// Park the single-wake pops on queues nothing was ever pushed to, so each wake is
    /// also its group's first claim there (the cursor row is made then). Without it each
    /// such queue first gets one message, which its group pops, before the pop parks: an
    /// idle consumer waiting on a queue it has consumed from.
    #[arg(long)]
    pub cold_single_queues: bool,
    /// How long the parked pops are watched for idle CPU.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub idle_window: Duration,
    /// Pause before each RSS reading.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub settle: Duration,
    /// Push-then-pop round trips on another queue, before and while the pops are parked.
    #[arg(long, default_value_t = 50)]
    pub probes: usize,
    /// Connections opened at once.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub connect_concurrency: u64,
    /// How to start the broker when --url is absent.
    #[command(flatten)]
    pub launch: crate::launch::LaunchArgs,
    /// Write the figures as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl ParkedArgs {
    /// Idle connections of the comparison.
    pub fn idle_connections(&self) -> usize {
        self.idle_connections.unwrap_or(self.pops)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::args::{Cli, Command};

    #[test]
    fn defaults_are_the_measurement_of_the_parked_pop_issue() {
        let cli = Cli::try_parse_from(["queen-bench", "parked"]).unwrap();
        let Command::Parked(p) = cli.command else {
            panic!("not parked")
        };
        assert_eq!((p.pops, p.groups, p.queues), (8000, 1000, 20));
        assert_eq!(p.idle_connections(), 8000);
        assert_eq!(p.single_wakes, 100);
        let cli = Cli::try_parse_from([
            "queen-bench",
            "parked",
            "--pops",
            "100000",
            "--groups",
            "10000",
            "--idle-connections",
            "0",
        ])
        .unwrap();
        let Command::Parked(p) = cli.command else {
            panic!("not parked")
        };
        assert_eq!(
            (p.pops, p.groups, p.idle_connections()),
            (100_000, 10_000, 0)
        );
        assert!(!p.http2);
        assert!(Cli::try_parse_from(["queen-bench", "parked", "--groups", "0"]).is_err());
        let cli = Cli::try_parse_from([
            "queen-bench",
            "parked",
            "--http2",
            "--http2-connections",
            "400",
        ])
        .unwrap();
        let Command::Parked(p) = cli.command else {
            panic!("not parked")
        };
        assert!(p.http2);
        assert_eq!(p.http2_connections, 400);
        assert!(
            Cli::try_parse_from(["queen-bench", "parked", "--http2-connections", "0"]).is_err()
        );
    }
}
