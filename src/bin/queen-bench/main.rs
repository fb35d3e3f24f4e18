//! `queen-bench`: drives a running Queen broker over HTTP, and the same workload against a
//! row-per-message `FOR UPDATE SKIP LOCKED` queue on the same PostgreSQL, in the same run.
//!
//! Map: [`args`] (command line), [`run`] (one scenario's phases) over [`phase`] (push and
//! drain, any system) and the systems [`broker`], [`baseline`] and [`ceiling`] (all behind
//! [`system`]), with [`workload`] (the messages), [`verify`] (exactly-once), [`qpb1`] and [`qpf1`]
//! (binary push and framed pop bodies), [`wire`] (JSON against binary), [`stats`]
//! (percentiles), [`cpu`], [`pg`] and [`meter`] (metering), [`spawn`] (starting the broker), [`result`]
//! (the JSON file and the table), and [`report`] with [`plot`] (BENCHMARKS.md and its PNG);
//! [`reads`] is the offset-read comparison (`queen-bench reads`), [`parked`] what parked
//! long-polls cost (`queen-bench parked`), [`kv`] the key/value route against a plain
//! table (`queen-bench kv`), [`timers`] durable timers' schedule, fire and lateness
//! figures (`queen-bench timers`), [`streams`] a streams cycle against plain pop + push +
//! ack (`queen-bench streams`), [`ephemeral`] ephemeral queues against durable ones, their
//! push → parked-pop latency and their memory under a flood (`queen-bench ephemeral`);
//! [`launch`] holds the flags of every subcommand that starts the broker; [`citus`] starts a
//! Citus cluster for `run --citus` (each node's CPU metered on its own).

mod arg_values;
mod args;
mod baseline;
mod broker;
mod ceiling;
mod citus;
mod cpu;
mod ephemeral;
mod kv;
mod launch;
mod meter;
mod parked;
mod pg;
mod phase;
mod plot;
mod qpb1;
mod qpf1;
mod reads;
mod report;
mod result;
mod run;
mod spawn;
mod stats;
mod streams;
mod system;
mod table;
mod timers;
mod verify;
mod wire;
mod workload;

/// mimalloc, as the broker has: the tool shares the machine's cores with what it measures,
/// and glibc's malloc and free were about a sixth of its CPU in a profile of pop+ack (its
/// JSON parsing of the broker's answers); both systems' clients get the same allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(run_args) => {
            let command = shell_words(std::env::args());
            on_runtime(run_and_write(*run_args, command))
        }
        Command::Report(report_args) => report::write(&report_args),
        Command::Reads(reads_args) => on_runtime(reads::run(&reads_args)),
        Command::Parked(parked_args) => on_runtime(parked::main(*parked_args)),
        Command::Kv(kv_args) => on_runtime(kv::main(*kv_args)),
        Command::Timers(timers_args) => on_runtime(timers::main(*timers_args)),
        Command::Streams(streams_args) => on_runtime(streams::main(*streams_args)),
        Command::Ephemeral(e) => on_runtime(ephemeral::main(*e)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("queen-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command's future on the two-thread runtime every measuring command uses.
fn on_runtime(work: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(work))
}

async fn run_and_write(args: args::RunArgs, command: String) -> anyhow::Result<()> {
    // Ctrl-C drops the run, whose guard stops a broker this tool started.
    let result = tokio::select! {
        r = run::run(&args, command) => r?,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
    };
    print!("{}", table::render(&result));
    if let Some(path) = &args.out {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, serde_json::to_vec_pretty(&result)?)?;
        eprintln!("result written to {}", path.display());
    }
    let clean = result.broker.exactly_once()
        && result.wire.as_ref().map_or(true, |w| w.exactly_once())
        && result.baseline.as_ref().map_or(true, |b| b.exactly_once());
    anyhow::ensure!(clean, "a system did not deliver exactly once (see above)");
    Ok(())
}

/// The command line as one string a shell would run again.
fn shell_words(args: impl Iterator<Item = String>) -> String {
    args.enumerate()
        .map(|(i, a)| {
            let a = if i == 0 {
                "target/release/queen-bench".to_owned()
            } else {
                a
            };
            if a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=./:,".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
