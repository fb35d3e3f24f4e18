//! The command line: `queen-bench run` (one scenario against a broker and the baseline) and
//! `queen-bench report` (BENCHMARKS.md and the plot from a folder of results).
//!
//! Parsing and validation only; what the options do lives in `run` and `report`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::arg_values::{parse_duration, parse_env_pair, parse_fraction};

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "queen-bench",
    about = "Load tool for the Queen broker, side by side with a row-per-message PostgreSQL queue"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario: broker, baseline and raw ceiling on the same PostgreSQL.
    Run(Box<RunArgs>),
    /// Write BENCHMARKS.md and the partitions plot from a folder of result files.
    Report(ReportArgs),
    /// Offset reads (fetch) against pop+ack and a raw SELECT of one backlog.
    Reads(crate::reads::ReadsArgs),
    /// Park many long-poll pops on a broker and measure what they cost: memory per parked
    /// pop against idle keep-alive connections, idle CPU, and wake latency.
    Parked(Box<crate::parked::ParkedArgs>),
    /// The key/value route (single ops, batches, latency, increments, and with --locks
    /// lock cycles) against a plain PostgreSQL table of the same shape, in the same run.
    Kv(Box<crate::kv::KvArgs>),
    /// Durable timers: scheduling at batch 100 with many pending, the fire rate with all
    /// due, and lateness at a steady rate, with PostgreSQL CPU per timer.
    Timers(Box<crate::timers::TimersArgs>),
    /// A streams cycle (one batch's sink pushes and ack in one transaction) against plain
    /// pop + push + ack of the same messages, in the same run.
    Streams(Box<crate::streams::StreamsArgs>),
    /// Ephemeral queues: push + pop + ack at batch 10 against durable queues, push →
    /// parked-pop latency on the owner node and forwarded, resident memory under a flood.
    Ephemeral(Box<crate::ephemeral::EphemeralArgs>),
}

/// One scenario.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Broker base URL (http://host:port). Without it, the tool starts the broker binary
    /// itself on a fresh embedded PostgreSQL in a temporary folder.
    #[arg(long, requires = "database_url")]
    pub url: Option<String>,
    /// The broker's PostgreSQL (libpq key=value string or postgresql:// URL); the baseline
    /// and the raw ceiling run there too. Required with --url.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Broker binary to start when --url is absent [default: `queen` beside this binary].
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Process id of a broker given by --url, to read its CPU time from /proc.
    #[arg(long)]
    pub broker_pid: Option<i32>,
    /// Extra environment for a broker this tool starts (KEY=VALUE, repeatable).
    #[arg(long = "broker-env", value_parser = parse_env_pair)]
    pub broker_env: Vec<(String, String)>,
    /// Folder under which a broker this tool starts keeps its embedded PostgreSQL (a tmpfs
    /// such as /dev/shm takes the disk's fsync out of the measurement, to compare CPU costs
    /// on a machine whose disk other work shares).
    #[arg(long, default_value = "/tmp")]
    pub work_dir: PathBuf,
    /// Run on a Citus cluster: the cluster script (`cluster.sh` of ../shared/citus) starts
    /// a coordinator and --citus-workers workers under --work-dir, the broker points at the
    /// coordinator with QUEEN_CITUS=true, and each node's CPU is printed.
    #[arg(long, conflicts_with = "url")]
    pub citus: Option<PathBuf>,
    /// Workers of the --citus cluster.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub citus_workers: u16,
    /// The --citus coordinator's port; worker i listens at this port + i.
    #[arg(long, default_value_t = 9700)]
    pub citus_port: u16,

    /// Producer connections (each pushes one batch at a time).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub producers: u32,
    /// Consumer connections (each serves one consumer group, round robin; at least one per group).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub consumers: u32,
    /// Messages per push request (all to one partition).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: u32,
    /// Messages per pop [default: the push batch].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub pop_batch: Option<u32>,
    /// Partitions a pop may claim at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub pop_partitions: u32,
    /// Partitions of the queue; push requests go to them round robin.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub partitions: u32,
    /// Consumer groups: 0 = queue mode (one shared work queue), N = N groups that each see
    /// every message (bus mode).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub groups: u32,
    /// Size of each message's JSON document (100, 100B, 1KB, 10KB; 1 KB = 1024 bytes).
    #[arg(long, default_value = "100", value_parser = parse_size)]
    pub payload: usize,
    /// Send binary push bodies instead of JSON: `QPB1` flag 8, as the published client does
    /// with binary push and compression (client-minted UUIDv7 ids, zstd per group).
    #[arg(long)]
    pub binary: bool,
    /// Pop framed answers (`frames=true`, `QPF1`) instead of JSON.
    #[arg(long)]
    pub frames: bool,
    /// Measure the broker twice in this run, on the same PostgreSQL: JSON push and pop, then
    /// binary push and framed pop (each on its own queue), and print them side by side.
    #[arg(long, conflicts_with_all = ["binary", "frames"])]
    pub compare_wire: bool,
    /// Messages in the push phase (the drain phase consumes them all).
    #[arg(long, conflicts_with = "duration")]
    pub messages: Option<u64>,
    /// Push for this long instead of a message count (10s, 500ms, 2m; plain number = seconds).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Length of the latency phase (producers paced, consumers live); 0 skips it.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub live: Duration,
    /// Offered load of the latency phase, as a fraction of the slower system's capacity (push and
    /// pop+ack sharing the cores).
    #[arg(long, default_value_t = 0.5, value_parser = parse_fraction)]
    pub live_load: f64,
    /// Long-poll deadline of each broker pop; also the baseline's longest idle sleep.
    #[arg(long, default_value_t = 1000)]
    pub pop_timeout_ms: u64,
    /// Give up draining after this long (whatever is left is reported as lost).
    #[arg(long, default_value = "180s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// Skip the row-per-message baseline.
    #[arg(long)]
    pub no_baseline: bool,
    /// Skip the raw PostgreSQL ceiling.
    #[arg(long)]
    pub no_ceiling: bool,
    /// Write the JSON result here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Scenario name for the report (default: derived from the options).
    #[arg(long)]
    pub label: Option<String>,
}

/// Messages in the push phase when neither --messages nor --duration is given.
pub const DEFAULT_MESSAGES: u64 = 100_000;

/// How the push phase ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// After this many messages.
    Messages(u64),
    /// When this much time has passed (batches already started finish).
    Duration(Duration),
}

impl RunArgs {
    /// How the push phase ends.
    pub fn limit(&self) -> Limit {
        match (self.messages, self.duration) {
            (_, Some(d)) => Limit::Duration(d),
            (Some(n), None) => Limit::Messages(n),
            (None, None) => Limit::Messages(DEFAULT_MESSAGES),
        }
    }

    /// Messages per pop.
    pub fn pop_batch(&self) -> u32 {
        self.pop_batch.unwrap_or(self.batch)
    }

    /// Consumer groups that actually consume: queue mode counts as one.
    pub fn group_slots(&self) -> usize {
        self.groups.max(1) as usize
    }

    /// Consumer connections: at least one per group.
    pub fn consumer_count(&self) -> usize {
        (self.consumers as usize).max(self.group_slots())
    }

    /// The scenario's name: the label, or the options that vary between scenarios.
    pub fn name(&self) -> String {
        self.label.clone().unwrap_or_else(|| {
            format!(
                "p{}-b{}-g{}-{}",
                self.partitions,
                self.batch,
                self.groups,
                size_label(self.payload)
            )
        })
    }

    /// Refuses combinations that cannot run, with a message that says what to do.
    pub fn validate(&self) -> Result<(), String> {
        if self.payload < MIN_PAYLOAD {
            return Err(format!(
                "--payload must be at least {MIN_PAYLOAD} bytes (the sequence number and send time \
                 travel inside it)"
            ));
        }
        if self.url.is_some() && self.database_url.is_none() {
            return Err(
                "--url needs --database-url (the baseline runs on the same PostgreSQL)".to_owned(),
            );
        }
        if let Limit::Messages(0) = self.limit() {
            return Err("--messages must be at least 1".to_owned());
        }
        Ok(())
    }
}

/// Smallest payload: `{"seq":…,"ts":…,"pad":""}` with room for the numbers.
pub const MIN_PAYLOAD: usize = 64;

/// `report`: turn result files into BENCHMARKS.md and a PNG.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Folder of result files written by `run --out`.
    #[arg(long)]
    pub results: PathBuf,
    /// Markdown file to write.
    #[arg(long, default_value = "BENCHMARKS.md")]
    pub out: PathBuf,
    /// PNG of msg/s against partitions.
    #[arg(long, default_value = "bench/partitions.png")]
    pub plot: PathBuf,
    /// Hand-written analysis to include verbatim (what bounds each missed target).
    #[arg(long)]
    pub analysis: Option<PathBuf>,
}

/// Parses `100`, `100B`, `1KB`, `1K`, `10KiB`, `1MB` (binary multiples).
pub fn parse_size(raw: &str) -> Result<usize, String> {
    let s = raw.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{raw:?} is not a size (try 100, 1KB, 10KB)"))?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        other => return Err(format!("unknown size unit {other:?} in {raw:?}")),
    };
    n.checked_mul(factor)
        .ok_or_else(|| format!("{raw:?} is too large"))
}

/// `100B`, `1KB`, `10KB`: the way sizes appear in scenario names.
pub fn size_label(bytes: usize) -> String {
    if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{}KB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<RunArgs, String> {
        let argv = ["queen-bench", "run"].iter().chain(args).copied();
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Run(r) => r.validate().map(|()| *r),
            Command::Report(_)
            | Command::Reads(_)
            | Command::Parked(_)
            | Command::Kv(_)
            | Command::Timers(_)
            | Command::Streams(_)
            | Command::Ephemeral(_) => Err("parsed as another command".to_owned()),
        }
    }

    #[test]
    fn defaults_give_a_queue_mode_run_of_the_default_count() {
        let r = run(&[]).unwrap();
        assert_eq!(r.producers, 4);
        assert_eq!(r.batch, 100);
        assert_eq!(r.pop_batch(), 100);
        assert_eq!(r.groups, 0);
        assert_eq!(r.group_slots(), 1);
        assert_eq!(r.payload, 100);
        assert_eq!(r.limit(), Limit::Messages(DEFAULT_MESSAGES));
        assert_eq!(r.name(), "p10-b100-g0-100B");
    }

    #[test]
    fn every_axis_option_parses_with_units() {
        let r = run(&[
            "--partitions",
            "10000",
            "--batch",
            "10",
            "--pop-batch",
            "50",
            "--groups",
            "5",
            "--payload",
            "10KB",
            "--duration",
            "500ms",
            "--consumers",
            "2",
            "--broker-env",
            "QUEEN_ZSTD_LEVEL=3",
        ])
        .unwrap();
        assert_eq!(r.partitions, 10_000);
        assert_eq!(r.pop_batch(), 50);
        assert_eq!(r.payload, 10 * 1024);
        assert_eq!(r.limit(), Limit::Duration(Duration::from_millis(500)));
        assert_eq!(r.consumer_count(), 5, "at least one consumer per group");
        assert_eq!(
            r.broker_env,
            vec![("QUEEN_ZSTD_LEVEL".to_owned(), "3".to_owned())]
        );
        assert_eq!(r.name(), "p10000-b10-g5-10KB");
    }

    #[test]
    fn binary_push_and_framed_pop_are_accepted_alone_or_compared_but_not_both() {
        let r = run(&["--binary", "--frames"]).unwrap();
        assert!(r.binary && r.frames && !r.compare_wire);
        let r = run(&["--binary"]).unwrap();
        assert!(r.binary && !r.frames);
        assert!(run(&["--compare-wire"]).unwrap().compare_wire);
        assert!(run(&["--compare-wire", "--binary"]).is_err());
        assert!(run(&["--compare-wire", "--frames"]).is_err());
    }

    #[test]
    fn messages_and_duration_exclude_each_other_and_url_needs_a_database() {
        assert!(run(&["--messages", "10", "--duration", "1s"]).is_err());
        assert!(run(&["--url", "http://127.0.0.1:6632"]).is_err());
        assert!(run(&["--url", "http://x", "--database-url", "host=/tmp"]).is_ok());
        assert!(run(&["--messages", "0"]).is_err());
        assert!(run(&["--batch", "0"]).is_err());
        assert!(run(&["--payload", "10"]).is_err());
        assert!(run(&["--live-load", "1.5"]).is_err());
    }

    #[test]
    fn a_citus_run_names_its_script_and_workers_and_cannot_take_a_url() {
        let r = run(&["--citus", "cluster.sh", "--citus-workers", "1"]).unwrap();
        assert_eq!(r.citus, Some(PathBuf::from("cluster.sh")));
        assert_eq!((r.citus_workers, r.citus_port), (1, 9700));
        assert_eq!(run(&["--citus", "c.sh"]).unwrap().citus_workers, 2);
        assert!(run(&["--citus", "c.sh", "--citus-workers", "0"]).is_err());
        assert!(run(&[
            "--citus",
            "c.sh",
            "--url",
            "http://x",
            "--database-url",
            "host=/tmp"
        ])
        .is_err());
    }

    #[test]
    fn sizes_and_durations_parse_and_reject_nonsense() {
        assert_eq!(parse_size("100B"), Ok(100));
        assert_eq!(parse_size("1KB"), Ok(1024));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("2MiB"), Ok(2 * 1024 * 1024));
        assert!(parse_size("1 parsec").is_err());
        assert!(parse_size("KB").is_err());
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(size_label(1024), "1KB");
        assert_eq!(size_label(100), "100B");
    }

    #[test]
    fn report_has_defaults_for_its_outputs() {
        let cli = Cli::try_parse_from(["queen-bench", "report", "--results", "r"]).unwrap();
        let Command::Report(r) = cli.command else {
            panic!("not a report")
        };
        assert_eq!(r.out, PathBuf::from("BENCHMARKS.md"));
        assert_eq!(r.plot, PathBuf::from("bench/partitions.png"));
    }
}
