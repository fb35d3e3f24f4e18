//! `queen-bench timers`: durable timers' costs on one broker.
//!
//! Phases: fill `--pending` timers due in a day (they stay pending through the run);
//! schedule `--timers` timers in calls of `--batch` from `--clients` clients (timers/s,
//! call p50/p99, PostgreSQL CPU per timer); make them all due at once in the database
//! and time the fire loop until none is left (fired/s, PostgreSQL CPU per timer); then
//! schedule `--rate` timers a second for `--seconds`, each due `--delay-ms` later, and pop
//! them as they come: lateness (popped − deliverAt) p50/p99, what a client sees.
//!
//! Map: [`args`] (command line), [`phases`] (each phase and its figures).

use crate::pg;
use crate::spawn::SpawnedBroker;

mod args;
mod phases;

pub use args::TimersArgs;

/// Runs the phases and prints their figures; fails when a phase could not finish.
pub async fn main(args: TimersArgs) -> anyhow::Result<()> {
    let (base, database_url, spawned) = match (&args.url, &args.database_url) {
        (Some(u), Some(d)) => (u.clone(), Some(d.clone()), None),
        (Some(u), None) => (u.clone(), None, None),
        _ => {
            let s = args.launch.start(&[]).await?;
            (s.url.clone(), Some(s.database_url.clone()), Some(s))
        }
    };
    let admin = match &database_url {
        Some(d) => Some(pg::connect(&pg::parse_config(d)?).await?),
        None => None,
    };
    let postmaster = match &admin {
        Some(a) => pg::postmaster_pid(a).await.ok().flatten(),
        None => None,
    };
    let broker_pid = spawned
        .as_ref()
        .and_then(SpawnedBroker::pid)
        .or(args.broker_pid);
    let bench = phases::Bench::new(&args, &base, admin, postmaster, broker_pid)?;
    let outcome = bench.run().await;
    drop(bench);
    drop(spawned);
    let lines = outcome?;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}
