//! The Citus layout (src/db/schema/citus.rs) and the key migration 072 made for it.
//!
//! The tests about Citus itself need the Citus test mode (`QUEEN_TEST_CITUS`, see
//! bench/citus-tests.sh) and say so and pass without it; the others run on plain
//! PostgreSQL in both modes.

use queen::db::schema::{self, citus, Outcome};
use serde_json::json;
use tokio_postgres::{Client, NoTls};

use crate::support::{self, postgres, TestBroker};

async fn connect(config: &tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Where Citus holds each of the broker's tables: (table, partition method, replication
/// model, distribution column), sorted by table.
async fn placements(client: &Client) -> Vec<(String, String, String, Option<String>)> {
    client
        .query(
            "SELECT logicalrelid::regclass::text, partmethod::text, repmodel::text,
                    column_to_column_name(logicalrelid, partkey)
             FROM pg_dist_partition
             WHERE logicalrelid::regclass::text LIKE 'queen.%'
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// The layout [`placements`] must show: every table of src/db/schema/citus.rs where it
/// says, and the trace tables (their foreign key to a reference table makes Citus add them
/// as local tables of the coordinator).
fn expected() -> Vec<(String, String, String, Option<String>)> {
    let mut want: Vec<(String, String, String, Option<String>)> = Vec::new();
    for t in citus::REFERENCE_TABLES {
        want.push((t.to_string(), "n".into(), "t".into(), None));
    }
    for (t, c) in citus::BY_PARTITION {
        want.push((t.to_string(), "h".into(), "s".into(), Some(c.to_string())));
    }
    for (t, c) in citus::BY_TENANT {
        want.push((t.to_string(), "h".into(), "s".into(), Some(c.to_string())));
    }
    for t in ["queen.message_traces", "queen.message_trace_names"] {
        want.push((t.to_string(), "n".into(), "s".into(), None));
    }
    want.sort();
    want
}

/// The names of the functions delegated by an argument, with force_delegation, sorted.
async fn delegated(client: &Client) -> Vec<String> {
    client
        .query(
            "SELECT p.proname::text FROM pg_dist_object o JOIN pg_proc p ON p.oid = o.objid
             WHERE o.classid = 'pg_proc'::regclass AND p.pronamespace = 'queen'::regnamespace
               AND o.distribution_argument_index IS NOT NULL AND o.force_delegation
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Shards of log_segments whose placement is on each worker: (port, shards).
async fn shards_per_worker(client: &Client) -> Vec<(i32, i64)> {
    client
        .query(
            "SELECT nodeport, count(*) FROM citus_shards
             WHERE table_name = 'queen.log_segments'::regclass GROUP BY 1 ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// On a fresh Citus database an install without QUEEN_CITUS keeps plain tables (the layout
/// is opted into); with `QUEEN_CITUS=true` it lays every table and hot function out as
/// src/db/schema/citus.rs says, the shards spread over both workers, and a second start
/// finds nothing to do.
#[tokio::test]
async fn a_fresh_citus_database_is_laid_out_and_a_second_start_changes_nothing() {
    if support::citus::script().is_none() {
        eprintln!("not in the Citus test mode (QUEEN_TEST_CITUS): nothing to check");
        return;
    }
    let pg = postgres::fresh_database().await;
    let mut client = connect(&pg).await;
    schema::install(&mut client, None).await.unwrap();
    assert!(placements(&client).await.is_empty(), "laid out unasked");
    let Outcome::Applied(applied) = schema::install(&mut client, Some(true)).await.unwrap() else {
        panic!("a fresh database was up to date");
    };
    assert!(
        applied.iter().any(|s| s.starts_with("citus: ")),
        "{applied:?}"
    );
    assert_eq!(placements(&client).await, expected());
    let mut want: Vec<String> = citus::DELEGATED
        .iter()
        .map(|(f, _)| f.to_string())
        .collect();
    want.sort();
    assert_eq!(delegated(&client).await, want);
    let spread = shards_per_worker(&client).await;
    assert_eq!(spread.len(), support::citus::WORKERS as usize, "{spread:?}");
    assert_eq!(
        schema::install(&mut client, Some(true)).await.unwrap(),
        Outcome::UpToDate
    );
}

/// A Citus database a broker used unsharded (`QUEEN_CITUS=false`: every table a plain
/// table of the coordinator) is laid out by the next start with `QUEEN_CITUS=true`, and the
/// messages stored before are still there, on the workers.
#[actix_rt::test]
async fn an_existing_unsharded_citus_database_is_laid_out_keeping_its_messages() {
    if support::citus::script().is_none() {
        eprintln!("not in the Citus test mode (QUEEN_TEST_CITUS): nothing to check");
        return;
    }
    let pg = postgres::fresh_database().await;
    let before = TestBroker::start_on(pg.clone(), &[("QUEEN_CITUS", "false")]).await;
    let items: Vec<_> = (0..6)
        .map(|i| json!({"queue": "kept", "partition": format!("p{i}"), "payload": {"i": i}}))
        .collect();
    let (status, body) = before
        .post("/api/v1/push", &json!({ "items": items }))
        .await;
    assert!(status.is_success(), "{status}: {body}");
    before.stop().await;
    let client = connect(&pg).await;
    assert!(placements(&client).await.is_empty());

    let _after = TestBroker::start_on(pg.clone(), &[("QUEEN_CITUS", "true")]).await;
    assert_eq!(placements(&client).await, expected());
    let stored: i64 = client
        .query_one("SELECT sum(msg_count)::bigint FROM queen.log_segments", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 6);
}

/// QUEEN_CITUS=true on a database without the citus extension stops the start with an
/// error naming the setting, before the installer writes anything.
#[actix_rt::test]
async fn queen_citus_true_without_the_extension_refuses_to_start_and_installs_nothing() {
    let pg = postgres::fresh_plain_database().await;
    let refused = TestBroker::try_start_on(pg.clone(), &[("QUEEN_CITUS", "true")]).await;
    let error = refused.err().expect("the start is refused");
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert!(
        cause.as_deref().unwrap_or("").contains("QUEEN_CITUS=true"),
        "{error}: {cause:?}"
    );
    let client = connect(&pg).await;
    let history: Option<String> = client
        .query_one("SELECT to_regclass('queen.schema_versions')::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(history, None);
}

/// Migration 072: a dead letter's key holds its partition (what Citus needs to distribute
/// the table), and a lookup by id alone keeps an index.
#[tokio::test]
async fn the_dead_letter_key_holds_the_partition_id() {
    let pg = postgres::fresh_plain_database().await;
    let mut client = connect(&pg).await;
    schema::install(&mut client, None).await.unwrap();
    let key: String = client
        .query_one(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint
             WHERE conrelid = 'queen.dead_letters'::regclass AND contype = 'p'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(key, "PRIMARY KEY (partition_id, id)");
    let by_id: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'queen'
                 AND indexname = 'dead_letters_id_idx')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(by_id);
}

/// Where Citus holds each partition of `queue`: (partition name, worker port).
async fn workers_of_partitions(client: &Client, queue: &str) -> Vec<(String, i32)> {
    client
        .query(
            "SELECT p.name, s.nodeport
             FROM queen.log_partition_names p JOIN queen.queues q ON q.id = p.queue_id
             JOIN citus_shards s
               ON s.table_name = 'queen.log_segments'::regclass
              AND s.shardid = get_shard_id_for_distribution_column('queen.log_segments', p.id)
             WHERE q.name = $1 ORDER BY p.name",
            &[&queue],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// On the distributed layout, four producers (two pushing one partition per request, two
/// pushing all of theirs in one request) and six wildcard consumers (pop, then ack) run at
/// once over sixteen partitions whose shards sit on both workers: every message is
/// delivered exactly once and in order within its partition, nothing is left, and every
/// cursor ends at its partition's last offset.
#[actix_rt::test]
async fn producers_and_consumers_over_partitions_on_both_workers_lose_and_repeat_nothing() {
    if support::citus::script().is_none() {
        eprintln!("not in the Citus test mode (QUEEN_TEST_CITUS): nothing to check");
        return;
    }
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::support::drain::{assert_exactly_once_in_order, consume};

    let pg = postgres::fresh_database().await;
    let broker = Arc::new(TestBroker::start_on(pg.clone(), &[("DB_POOL_SIZE", "30")]).await);
    let (producers, partitions, per_partition) = (4usize, 16usize, 40usize);
    let total = partitions * per_partition;
    let seen = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(240);
    let consumers: Vec<_> = (0..6)
        .map(|_| {
            tokio::spawn(consume(
                broker.clone(),
                "/api/v1/pop/queue/spread?batch=7&partitions=2&wait=true&timeout=300".to_owned(),
                None,
                seen.clone(),
                total,
                deadline,
            ))
        })
        .collect();
    let pushers: Vec<_> = (0..producers)
        .map(|k| {
            let broker = broker.clone();
            tokio::spawn(async move {
                let mine: Vec<usize> = (k..partitions).step_by(producers).collect();
                for i in 0..per_partition {
                    let items: Vec<_> = mine
                        .iter()
                        .map(|p| {
                            json!({"queue": "spread", "partition": format!("p{p}"),
                                   "payload": {"p": p, "i": i}})
                        })
                        .collect();
                    let bodies: Vec<Vec<_>> = if k % 2 == 0 {
                        items.into_iter().map(|item| vec![item]).collect()
                    } else {
                        vec![items]
                    };
                    for body in bodies {
                        let (status, answer) =
                            broker.post("/api/v1/push", &json!({ "items": body })).await;
                        assert!(status.is_success(), "push answered {status}: {answer}");
                    }
                }
            })
        })
        .collect();
    for pusher in pushers {
        pusher.await.expect("producer task");
    }
    let mut all = Vec::new();
    for consumer in consumers {
        all.push(consumer.await.expect("consumer task"));
    }
    assert_exactly_once_in_order("spread", &all, partitions as u64, per_partition as u64);
    let leftover = broker
        .pop_messages("/api/v1/pop/queue/spread?batch=10")
        .await;
    assert!(leftover.is_empty(), "left after the drain: {leftover:?}");

    let client = connect(&pg).await;
    let spread = workers_of_partitions(&client, "spread").await;
    let mut ports: Vec<i32> = spread.iter().map(|(_, port)| *port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), support::citus::WORKERS as usize, "{spread:?}");
    let behind: i64 = client
        .query_one(
            "SELECT count(*) FROM queen.log_partitions p
             JOIN queen.queues q ON q.id = p.queue_id
             LEFT JOIN queen.log_consumers c ON c.partition_id = p.id
             WHERE q.name = 'spread' AND c.committed IS DISTINCT FROM p.last_offset",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(behind, 0, "cursors behind their partitions");
}
