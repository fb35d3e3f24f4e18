//! `queen-bench kv`: the broker's key/value route against a plain PostgreSQL table of the
//! same shape, in the same run, on the same database.
//!
//! Phases, each with `--clients` concurrent clients for `--seconds` (or `--ops`): a batch
//! of `--batch` mixed ops per call (its `kv_apply_v1` calls per HTTP call counted while the
//! baseline runs), the baseline's upserts and selects, the broker's single-op puts and
//! gets of the same keys and values, one client's sequential puts and gets (latency), the
//! clients' increments of one shared key, and with `--locks` lock acquire + release cycles.
//! Checks: the rows each side stored equal the puts it answered applied, every get found
//! its key, and the shared counter equals the increments answered applied.
//!
//! Map: [`args`] (command line), [`drive`] (the load loop and CPU metering), [`http`] (the
//! broker's routes), [`baseline`] (the table), [`phases`] (each phase and the checks of
//! what it left), [`rounds`] (function calls per HTTP call), [`locks`] (the lock phase),
//! [`figures`] (the arithmetic and the table).

use std::time::Instant;

use tokio_postgres::Client;

use crate::pg;
use crate::spawn::SpawnedBroker;

mod args;
mod baseline;
mod drive;
mod figures;
mod http;
mod locks;
mod phases;
mod rounds;

pub use args::KvArgs;
use baseline::BaselineTable;
use drive::{Limit, Meter};
use figures::{Check, Figures, LocksOutcome, RoundTrips};
use http::Kv;
use phases::{
    baseline_get_phase, baseline_put_phase, batch_phase, every_get_found, get_phase, incr_phase,
    per_client, put_phase, stored_rows,
};
use rounds::Counter;

/// Runs the measurement, prints its table, writes the JSON file when asked, and fails when
/// a check failed or a client stopped on an error.
pub async fn main(args: KvArgs) -> anyhow::Result<()> {
    args.validate().map_err(anyhow::Error::msg)?;
    let figures = run(&args).await?;
    print!("{}", figures::render(&figures));
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)?;
        eprintln!("figures written to {}", path.display());
    }
    anyhow::ensure!(
        figures.clean(),
        "a check failed or a client stopped (see above)"
    );
    Ok(())
}

/// Where the run's server is, and the broker this tool started, if it did.
async fn server(args: &KvArgs) -> anyhow::Result<(String, String, Option<SpawnedBroker>)> {
    match (&args.url, &args.database_url) {
        (Some(u), Some(d)) => Ok((u.clone(), d.clone(), None)),
        _ => {
            let s = args.launch.start(&[]).await?;
            Ok((s.url.clone(), s.database_url.clone(), Some(s)))
        }
    }
}

async fn run(args: &KvArgs) -> anyhow::Result<Figures> {
    let (base, database_url, spawned) = server(args).await?;
    let config = pg::parse_config(&database_url)?;
    let admin = pg::connect(&config).await?;
    let meter = Meter {
        broker: spawned
            .as_ref()
            .and_then(SpawnedBroker::pid)
            .or(args.broker_pid),
        postmaster: pg::postmaster_pid(&admin).await.ok().flatten(),
    };
    let table = BaselineTable::create(&admin).await?;
    let counter = Counter::start(&admin).await;
    // Ctrl-C ends the phases but not the cleanup: track_functions is reset, the baseline
    // table dropped, and a broker this tool started stopped.
    let outcome = tokio::select! {
        o = phases(args, &base, &config, &admin, &table, &counter, meter) => o,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    counter.finish(&admin).await;
    if let Err(e) = table.drop_all(&admin).await {
        eprintln!("queen-bench: {e:#}");
    }
    // The database connection first: the broker's stop takes its PostgreSQL down.
    drop(admin);
    drop(spawned);
    outcome
}

/// The namespaces of one run: a prefix of this process, one namespace per phase.
struct Names {
    tag: String,
}

impl Names {
    fn ns(&self, phase: &str) -> String {
        format!("{}.{phase}", self.tag)
    }
}

async fn phases(
    args: &KvArgs,
    base: &str,
    config: &tokio_postgres::Config,
    admin: &Client,
    table: &BaselineTable,
    counter: &Counter,
    meter: Meter,
) -> anyhow::Result<Figures> {
    let kv = Kv::new(base)?;
    let names = Names {
        tag: format!("kvb{}", std::process::id()),
    };
    let (clients, limit) = (args.clients, args.limit());
    let mut checks = Vec::new();

    // Batch first, so that the baseline phases give the broker's connections time to
    // report their function counts before the second reading.
    let calls_before = counter.calls(admin, "kv_apply_v1", None).await;
    let batch = batch_phase(&kv, &names.ns("batch"), args.batch, clients, limit, meter).await;
    let batch_end = Instant::now();
    checks.push(Check::equal(
        "batch: every put applied, every get found",
        batch.hits as i64,
        batch.ops as i64,
        "ops",
    ));

    let pool = table.clients(config, clients).await?;
    let ns_put = names.ns("put");
    let written = per_client(clients);
    let baseline_put =
        baseline_put_phase(&pool, &ns_put, clients, limit, meter, written.clone()).await;
    checks.push(match table.rows(admin, &ns_put).await {
        Ok(rows) => Check::equal(
            "baseline rows = upserts answered",
            rows,
            baseline_put.hits as i64,
            "rows",
        ),
        Err(e) => Check::skipped("baseline rows = upserts answered", format!("{e:#}")),
    });
    let baseline_get = baseline_get_phase(&pool, &ns_put, clients, limit, meter, written).await;
    drop(pool);
    checks.push(every_get_found(&baseline_get));
    let calls_after = counter.calls(admin, "kv_apply_v1", Some(batch_end)).await;
    let batch_round_trips = round_trips(
        counter,
        "kv_apply_v1",
        calls_before,
        calls_after,
        batch.calls,
    );

    let written = per_client(clients);
    let put = put_phase(
        "broker put",
        &kv,
        &ns_put,
        clients,
        limit,
        meter,
        written.clone(),
    )
    .await;
    checks.push(stored_rows(admin, &ns_put, &put).await);
    let get = get_phase("broker get", &kv, &ns_put, clients, limit, meter, written).await;
    checks.push(every_get_found(&get));

    let ns_lat = names.ns("latency");
    let sequential = Limit::OpsPerClient(args.latency_ops);
    let written = per_client(1);
    let latency_put = put_phase(
        "latency put",
        &kv,
        &ns_lat,
        1,
        sequential,
        meter,
        written.clone(),
    )
    .await;
    let latency_get = get_phase("latency get", &kv, &ns_lat, 1, sequential, meter, written).await;

    let (incr, incr_checks) =
        incr_phase(&kv, &names.ns("incr"), clients, args.incr_per_client, meter).await;
    checks.extend(incr_checks);

    let locks = if args.locks {
        let before = counter.calls(admin, "locks_apply_v1", None).await;
        match locks::run(&kv, &format!("{}-lock", names.tag), clients, limit, meter).await? {
            locks::LockRun::NoRoute => LocksOutcome::NoRoute,
            locks::LockRun::Ran(phase, contended) => {
                let after = counter
                    .calls(admin, "locks_apply_v1", Some(Instant::now()))
                    .await;
                // The probe's acquire and release come before the phase.
                let http_calls = phase.ops + 2;
                LocksOutcome::Ran {
                    round_trips: round_trips(counter, "locks_apply_v1", before, after, http_calls),
                    phase: Box::new(phase),
                    contended,
                }
            }
        }
    } else {
        LocksOutcome::NotAsked
    };

    Ok(Figures {
        url: base.to_owned(),
        clients,
        limit: match limit {
            Limit::Time(d) => format!("{} s", d.as_secs_f64()),
            Limit::OpsPerClient(n) => format!("{n} ops a client"),
        },
        put,
        baseline_put,
        get,
        baseline_get,
        batch,
        batch_round_trips,
        latency_put,
        latency_get,
        incr,
        locks,
        checks,
    })
}

fn round_trips(
    counter: &Counter,
    function: &str,
    before: Option<i64>,
    after: Option<i64>,
    http_calls: u64,
) -> Option<RoundTrips> {
    Some(RoundTrips {
        function: function.to_owned(),
        source: counter.source_name()?.to_owned(),
        function_calls: after? - before?,
        http_calls,
    })
}
