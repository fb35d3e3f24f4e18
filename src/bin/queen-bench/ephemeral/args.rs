//! `queen-bench ephemeral`: its command line.

use clap::Args;

use crate::launch::LaunchArgs;

/// Which broker, and the sizes of each phase.
#[derive(Debug, Clone, Args)]
pub struct EphemeralArgs {
    /// Broker base URL; without it the tool starts two brokers (separate processes sharing
    /// one embedded PostgreSQL and the mesh). With it, the forwarded-latency phase is
    /// skipped, and the flood too unless --broker-pid says whose memory to read.
    #[arg(long)]
    pub url: Option<String>,
    /// Process id of a broker given by --url: its CPU time and resident memory are read
    /// from /proc.
    #[arg(long)]
    pub broker_pid: Option<i32>,
    /// How to start the brokers when --url is absent.
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// Concurrent clients of the throughput phase, each on its own queue.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub clients: u32,
    /// Messages per push, pop and ack call of the throughput phase.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub batch: u32,
    /// Push + pop + ack cycles of each client in the throughput phase, per system.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub cycles: u64,
    /// Bytes of each message's payload (a JSON string of this length plus its stamp).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub payload_bytes: u64,
    /// Messages timed one by one from push to a parked consumer, per latency phase.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub latency_samples: u64,
    /// `QUEEN_EPHEMERAL_MAX_BYTES` of a broker this tool starts, MiB (the flood's cap).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub cap_mib: u64,
    /// Length of the flood, seconds.
    #[arg(long, default_value_t = 5.0)]
    pub flood_seconds: f64,
    /// Bytes of each flood message's payload.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub flood_payload_bytes: u64,
    /// Messages per flood push.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub flood_batch: u32,
    /// Skip the durable comparison of the throughput phase.
    #[arg(long)]
    pub no_durable: bool,
}

impl EphemeralArgs {
    /// Refuses combinations that cannot run, with a message that says what to do.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.flood_seconds.is_finite() && self.flood_seconds >= 0.0) {
            return Err("--flood-seconds must be a number of seconds, 0 to skip".to_owned());
        }
        if self.broker_pid.is_some() && self.url.is_none() {
            return Err(
                "--broker-pid goes with --url (a started broker's pid is known)".to_owned(),
            );
        }
        Ok(())
    }

    /// The flood's cap in bytes.
    pub fn cap_bytes(&self) -> u64 {
        self.cap_mib << 20
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{Cli, Command};

    fn ephemeral(args: &[&str]) -> Result<EphemeralArgs, String> {
        let argv = ["queen-bench", "ephemeral"].iter().chain(args).copied();
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Ephemeral(e) => e.validate().map(|()| *e),
            _ => Err("parsed as another command".to_owned()),
        }
    }

    #[test]
    fn defaults_are_batch_ten_and_a_cap_of_64_mib() {
        let e = ephemeral(&[]).unwrap();
        assert_eq!((e.batch, e.clients, e.cap_bytes()), (10, 4, 64 << 20));
        assert!(e.url.is_none() && e.launch.broker_env.is_empty());
    }

    #[test]
    fn the_shared_launch_flags_parse_and_nonsense_is_refused() {
        let e = ephemeral(&["--broker-env", "A=1", "--work-dir", "/var/tmp"]).unwrap();
        assert_eq!(e.launch.broker_env, vec![("A".to_owned(), "1".to_owned())]);
        assert_eq!(e.launch.work_dir.to_str(), Some("/var/tmp"));
        assert!(ephemeral(&["--url", "http://x:1", "--broker-pid", "7"]).is_ok());
        assert!(ephemeral(&["--broker-pid", "7"]).is_err());
        assert!(ephemeral(&["--flood-seconds", "-1"]).is_err());
        assert!(ephemeral(&["--batch", "0"]).is_err());
        assert!(ephemeral(&["--clients", "0"]).is_err());
    }
}
