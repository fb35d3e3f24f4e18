//! One scenario, start to end: start (or reach) the broker (with `--citus`, on a Citus
//! cluster it starts too), then on the same PostgreSQL and in the same run: broker push and
//! drain, baseline enqueue and drain, the raw ceiling, and the latency phase of both at the
//! same offered load.
//!
//! Every timed phase starts after a CHECKPOINT, so none pays for the previous one's dirty
//! pages, and is metered for broker, PostgreSQL and tool CPU and for WAL bytes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::args::{Limit, RunArgs};
use crate::baseline::{self, BaselineConsumer, BaselineProducer, SCHEMA};
use crate::broker::{BrokerConsumer, BrokerProducer, PopOptions, Target};
use crate::ceiling::{self, CeilingProducer};
use crate::citus::CitusCluster;
use crate::meter::{Meter, Server};
use crate::pg;
use crate::phase::{self, Progress, PushPlan};
use crate::result::{Ceiling, Live, Phase, RunResult, Scenario, SystemResult};
use crate::spawn::{self, SpawnedBroker};
use crate::stats::Latency;
use crate::system::{Consumer, Producer};
use crate::verify::Verifier;
use crate::workload::Workload;

/// Sequence numbers of the latency phase start here, far from the throughput phases', so
/// a stray delivery from one phase can never pass for a message of the other.
const LIVE_FIRST_SEQ: u64 = 1 << 40;

/// Runs the scenario and returns its figures.
pub async fn run(args: &RunArgs, command: String) -> anyhow::Result<RunResult> {
    args.validate().map_err(anyhow::Error::msg)?;
    let started_at = chrono::Utc::now().to_rfc3339();
    // Declared before the broker, so dropped after it: the broker stops first.
    let citus = match &args.citus {
        Some(script) => Some(CitusCluster::start(
            script,
            args.citus_workers,
            args.citus_port,
            &args.work_dir,
        )?),
        None => None,
    };
    let mut spawned = None;
    let (url, database_url, broker_pid) = match &args.url {
        Some(url) => (
            url.trim_end_matches('/').to_owned(),
            args.database_url
                .clone()
                .expect("validated: --url needs --database-url"),
            args.broker_pid,
        ),
        None => {
            let binary = match &args.broker_bin {
                Some(b) => b.clone(),
                None => spawn::default_binary()?,
            };
            let mut env = args.broker_env.clone();
            if let Some(cluster) = &citus {
                eprintln!("starting {} on the Citus coordinator", binary.display());
                env.push(("DATABASE_URL".to_owned(), cluster.dsn()));
                env.push(("QUEEN_CITUS".to_owned(), "true".to_owned()));
            } else {
                eprintln!(
                    "starting {} on a fresh embedded PostgreSQL",
                    binary.display()
                );
            }
            let b = SpawnedBroker::start(&binary, &env, &args.work_dir).await?;
            let database_url = match &citus {
                Some(cluster) => cluster.dsn(),
                None => b.database_url.clone(),
            };
            let found = (b.url.clone(), database_url, b.pid());
            spawned = Some(b);
            found
        }
    };
    let nodes = citus.as_ref().map(CitusCluster::nodes).unwrap_or_default();
    let result = measure(
        args,
        command,
        started_at,
        (&url, &database_url, broker_pid),
        &nodes,
    )
    .await;
    if let Some(mut b) = spawned {
        b.stop();
    }
    result
}

/// One scenario on a reachable broker: `(url, database_url, broker_pid)`; `nodes` names the
/// connection strings of a Citus cluster's nodes (empty: one PostgreSQL server, metered
/// whole).
async fn measure(
    args: &RunArgs,
    command: String,
    started_at: String,
    (url, database_url, broker_pid): (&str, &str, Option<i32>),
    nodes: &[(String, String)],
) -> anyhow::Result<RunResult> {
    let pg_config = pg::parse_config(database_url)?;
    let admin = pg::connect(&pg_config).await?;
    admin
        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
        .await
        .context("creating the tool's schema")?;
    let mut servers = Vec::new();
    if nodes.is_empty() {
        servers.push(Server::connect("postgres", &pg_config).await?);
    }
    for (name, dsn) in nodes {
        servers.push(Server::connect(name, &pg::parse_config(dsn)?).await?);
    }
    let meter = Meter {
        admin,
        broker_pid,
        per_node: !nodes.is_empty(),
        servers,
    };
    let postgres: BTreeMap<String, String> =
        pg::settings(&meter.admin).await?.into_iter().collect();
    let groups = args.group_slots();
    let workload = Arc::new(Workload {
        batch: u64::from(args.batch),
        partitions: args.partitions as usize,
        payload: args.payload,
    });
    let progress = Arc::new(Progress::default());
    let ticker = phase::spawn_ticker(progress.clone());
    let ctx = Ctx {
        args,
        workload,
        progress,
        meter: &meter,
    };

    // The broker.
    let stamp = chrono::Utc::now().format("%Y%m%d%H%M%S");
    let target = Target {
        base: url.to_owned(),
        queue: format!("bench-{}-{stamp}", args.name()),
    };
    let (producers, consumers) = broker_clients(args, &target, args.binary, args.frames)?;
    let (broker, producers, consumers) =
        throughput(&ctx, "broker", producers, consumers, 0).await?;
    // What the broker stored for it: the compressed segment bytes the WAL is measured against.
    let stored_blob_bytes = pg::stored_blob_bytes(&meter.admin).await.ok();

    // The broker again, binary push and framed pop, on its own queue of the same shape.
    let wire = if args.compare_wire {
        let target = Target {
            base: target.base.clone(),
            queue: format!("{}-binary", target.queue),
        };
        let (producers, consumers) = broker_clients(args, &target, true, true)?;
        Some(
            throughput(&ctx, "broker binary", producers, consumers, 0)
                .await?
                .0,
        )
    } else {
        None
    };

    // The baseline, on the same PostgreSQL.
    let mut baseline_parts = None;
    if !args.no_baseline {
        baseline::create_tables(&meter.admin, groups).await?;
        let mut producers = Vec::new();
        for _ in 0..args.producers {
            producers.push(BaselineProducer::connect(&pg_config, groups).await?);
        }
        let mut consumers = Vec::new();
        for i in 0..args.consumer_count() {
            consumers.push(
                BaselineConsumer::connect(
                    &pg_config,
                    i % groups,
                    args.pop_batch(),
                    Duration::from_millis(args.pop_timeout_ms),
                )
                .await?,
            );
        }
        baseline_parts = Some(throughput(&ctx, "baseline", producers, consumers, 0).await?);
    }

    // The raw ceiling of the push path.
    let ceiling = if args.no_ceiling {
        None
    } else {
        let count = broker.push.messages;
        let mut phases = Vec::new();
        for with_dedup in [false, true] {
            ceiling::create_tables(&meter.admin).await?;
            let offsets = ceiling::offsets(args.partitions as usize);
            let mut producers = Vec::new();
            for _ in 0..args.producers {
                producers
                    .push(CeilingProducer::connect(&pg_config, with_dedup, offsets.clone()).await?);
            }
            let label = if with_dedup {
                "ceiling +dedup"
            } else {
                "ceiling"
            };
            let (phase, _) = timed_push(&ctx, label, producers, Limit::Messages(count)).await?;
            phases.push(phase);
        }
        let segments_dedup = phases.pop().expect("two ceiling phases");
        let segments = phases.pop().expect("two ceiling phases");
        Some(Ceiling {
            segments,
            segments_dedup,
        })
    };

    // Latency at the same offered load for both: a fraction of the slower one's rate.
    let sustainable = |s: &SystemResult| live_capacity(s.push.rate, s.drain.rate, groups);
    let mut offered = sustainable(&broker);
    if let Some((b, _, _)) = &baseline_parts {
        offered = offered.min(sustainable(b));
    }
    let offered = offered * args.live_load;
    let mut broker = broker;
    let first_live = LIVE_FIRST_SEQ;
    if !args.live.is_zero() && offered > 0.0 {
        broker.live = Some(
            live(
                &ctx,
                "broker live",
                producers,
                consumers,
                offered,
                first_live,
            )
            .await?,
        );
    }
    let baseline = match baseline_parts {
        Some((mut b, producers, consumers)) => {
            if !args.live.is_zero() && offered > 0.0 {
                b.live = Some(
                    live(
                        &ctx,
                        "baseline live",
                        producers,
                        consumers,
                        offered,
                        first_live,
                    )
                    .await?,
                );
            }
            Some(b)
        }
        None => None,
    };
    ticker.abort();
    eprintln!();

    Ok(RunResult {
        name: args.name(),
        command,
        started_at,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        scenario: Scenario {
            producers: args.producers,
            consumers: args.consumer_count(),
            batch: args.batch,
            pop_batch: args.pop_batch(),
            pop_partitions: args.pop_partitions,
            partitions: args.partitions,
            groups: args.groups,
            payload: args.payload,
            live_load: args.live_load,
        },
        postgres,
        broker_env: args.broker_env.clone(),
        broker,
        stored_blob_bytes,
        wire,
        baseline,
        ceiling,
    })
}

/// The broker's producers and consumers for `target`, pushing binary bodies and popping
/// framed answers when asked.
fn broker_clients(
    args: &RunArgs,
    target: &Target,
    binary: bool,
    frames: bool,
) -> anyhow::Result<(Vec<BrokerProducer>, Vec<BrokerConsumer>)> {
    let mut producers = Vec::new();
    for _ in 0..args.producers {
        producers.push(BrokerProducer::new(target, binary)?);
    }
    let options = PopOptions {
        batch: args.pop_batch(),
        partitions: args.pop_partitions,
        timeout_ms: args.pop_timeout_ms,
        frames,
    };
    let groups = args.group_slots();
    let mut consumers = Vec::new();
    for i in 0..args.consumer_count() {
        let g = i % groups;
        let name = (args.groups > 0).then(|| format!("g{g}"));
        consumers.push(BrokerConsumer::new(target, g, name, options)?);
    }
    Ok((producers, consumers))
}

/// Messages per second a system can take in and hand out at once, from its push rate and its
/// pop+ack rate (deliveries, `groups` per message) each measured alone: in the latency phase
/// producers and consumers share the same cores, so a message costs the time of its push
/// plus that of its deliveries (the harmonic combination, not the smaller of the two).
fn live_capacity(push_rate: f64, drain_rate: f64, groups: usize) -> f64 {
    if push_rate <= 0.0 || drain_rate <= 0.0 {
        return 0.0;
    }
    1.0 / (1.0 / push_rate + groups as f64 / drain_rate)
}

struct Ctx<'a> {
    args: &'a RunArgs,
    workload: Arc<Workload>,
    progress: Arc<Progress>,
    meter: &'a Meter,
}

/// Push phase then drain phase of one system.
async fn throughput<P: Producer, C: Consumer>(
    ctx: &Ctx<'_>,
    who: &str,
    producers: Vec<P>,
    consumers: Vec<C>,
    first: u64,
) -> anyhow::Result<(SystemResult, Vec<P>, Vec<C>)> {
    let (push, producers) =
        timed_push(ctx, &format!("{who} push"), producers, ctx.args.limit()).await?;
    ctx.meter.checkpoint().await;
    ctx.progress.begin(&format!("{who} pop+ack"));
    let before = ctx.meter.read().await;
    let drained = phase::drain(
        consumers,
        Verifier::new(first, push.messages, ctx.args.group_slots()),
        ctx.args.drain_timeout,
        false,
        ctx.progress.clone(),
    )
    .await?;
    let drain = ctx
        .meter
        .phase(before, drained.deliveries, drained.elapsed)
        .await;
    Ok((
        SystemResult {
            push,
            drain,
            drain_check: drained.check,
            live: None,
        },
        producers,
        drained.consumers,
    ))
}

async fn timed_push<P: Producer>(
    ctx: &Ctx<'_>,
    label: &str,
    producers: Vec<P>,
    limit: Limit,
) -> anyhow::Result<(Phase, Vec<P>)> {
    ctx.meter.checkpoint().await;
    ctx.progress.begin(label);
    let before = ctx.meter.read().await;
    let pushed = phase::push(
        producers,
        ctx.workload.clone(),
        PushPlan {
            first: 0,
            limit,
            pace: None,
        },
        ctx.progress.clone(),
    )
    .await?;
    let phase = ctx
        .meter
        .phase(before, pushed.messages, pushed.elapsed)
        .await;
    Ok((phase, pushed.producers))
}

async fn live<P: Producer, C: Consumer>(
    ctx: &Ctx<'_>,
    label: &str,
    producers: Vec<P>,
    consumers: Vec<C>,
    rate: f64,
    first: u64,
) -> anyhow::Result<Live> {
    let batch = ctx.workload.batch;
    let batches = ((rate * ctx.args.live.as_secs_f64()) / batch as f64)
        .ceil()
        .max(1.0) as u64;
    let messages = batches * batch;
    ctx.meter.checkpoint().await;
    ctx.progress.begin(label);
    let (pushed, drained) = tokio::join!(
        phase::push(
            producers,
            ctx.workload.clone(),
            PushPlan {
                first,
                limit: Limit::Messages(messages),
                pace: Some(rate),
            },
            Arc::new(Progress::default()),
        ),
        phase::drain(
            consumers,
            Verifier::new(first, messages, ctx.args.group_slots()),
            ctx.args.live + ctx.args.drain_timeout,
            true,
            ctx.progress.clone(),
        )
    );
    let pushed = pushed?;
    let mut drained = drained?;
    Ok(Live {
        offered_rate: rate,
        messages: pushed.messages,
        latency: Latency::from_micros(&mut drained.latencies),
        check: drained.check,
    })
}

#[cfg(test)]
mod tests {
    use super::live_capacity;

    #[test]
    fn push_and_delivery_share_the_cores_in_the_latency_phase() {
        assert_eq!(live_capacity(40_000.0, 40_000.0, 1), 20_000.0);
        assert_eq!(live_capacity(30_000.0, 60_000.0, 2), 15_000.0);
        assert_eq!(live_capacity(0.0, 1.0, 1), 0.0);
    }
}
