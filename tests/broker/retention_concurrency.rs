//! Retention under real concurrency: the sweeper deleting consumed segments while
//! producers push and consumers pop and ack loses and duplicates nothing; time retention
//! under a slow consumer only ever skips what it deleted, never repeats; and across nodes
//! one sweeper runs at a time and a dead holder's turn passes on.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::drain::{assert_exactly_once_in_order, consume};
use crate::support::fixtures::{configure, metrics};
use crate::support::{eventually, postgres, TestBroker};

const PARTITIONS: usize = 8;
const ROUNDS: usize = 40;
const PER_ROUND: usize = 5;

/// Pushes `ROUNDS` rounds of `PER_ROUND` messages to each partition, 40 ms apart, so the
/// sweeper runs many times while the queue is being pushed and consumed.
async fn produce(b: Arc<TestBroker>, queue: &'static str) {
    for round in 0..ROUNDS {
        let mut items = Vec::new();
        for p in 0..PARTITIONS {
            for k in 0..PER_ROUND {
                items.push(json!({"queue": queue, "partition": format!("p{p}"),
                                  "payload": {"p": p, "i": round * PER_ROUND + k}}));
            }
        }
        let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// Completed retention of 1 s with a sweeper every 50 ms in batches of 3, while one
/// producer pushes and four queue-mode consumers plus a consumer group pop and ack: every
/// message reaches queue mode and the group exactly once, in order, and segments were
/// deleted meanwhile.
#[actix_rt::test]
async fn completed_retention_during_pushes_and_acks_loses_and_duplicates_nothing() {
    // Arrange
    let b = Arc::new(
        TestBroker::start_with(&[
            ("QUEEN_RETENTION_INTERVAL_MS", "50"),
            ("QUEEN_RETENTION_PAUSE_MS", "0"),
            ("QUEEN_RETENTION_BATCH", "3"),
            ("DB_POOL_SIZE", "30"),
        ])
        .await,
    );
    // A segment stays for the queue's dedup window whatever the retention: a short one.
    configure(
        &b,
        "rc-done",
        json!({"completedRetentionSeconds": 1, "dedupWindowSeconds": 1}),
    )
    .await;
    let total = PARTITIONS * ROUNDS * PER_ROUND;
    let deadline = Instant::now() + Duration::from_secs(120);

    // Act
    let producer = tokio::spawn(produce(b.clone(), "rc-done"));
    let qm_seen = Arc::new(AtomicUsize::new(0));
    let g_seen = Arc::new(AtomicUsize::new(0));
    let mut queue_mode = Vec::new();
    for _ in 0..4 {
        queue_mode.push(tokio::spawn(consume(
            b.clone(),
            "/api/v1/pop/queue/rc-done?batch=7&partitions=2&wait=true&timeout=300".to_owned(),
            None,
            qm_seen.clone(),
            total,
            deadline,
        )));
    }
    let group = tokio::spawn(consume(
        b.clone(),
        "/api/v1/pop/queue/rc-done?batch=9&consumerGroup=g&wait=true&timeout=300".to_owned(),
        Some("g"),
        g_seen.clone(),
        total,
        deadline,
    ));
    producer.await.expect("producer");
    let mut qm = Vec::new();
    for c in queue_mode {
        qm.push(c.await.expect("consumer"));
    }
    let g = vec![group.await.expect("group consumer")];

    // Assert
    let per = (ROUNDS * PER_ROUND) as u64;
    assert_exactly_once_in_order("queue mode", &qm, PARTITIONS as u64, per);
    assert_exactly_once_in_order("group g", &g, PARTITIONS as u64, per);
    let removed = eventually(Duration::from_secs(20), || async {
        let n = metrics(&b).await["retention"]["removed"]["segments"]
            .as_u64()
            .unwrap_or(0);
        (n >= (PARTITIONS * ROUNDS) as u64).then_some(n)
    })
    .await;
    assert!(removed.is_some(), "consumed segments were not all deleted");
}

/// Time retention of 1 s with a consumer group slower than the producer: it never gets a
/// message twice nor out of order, and whatever it never got was deleted by retention
/// (below every segment still stored in its partition).
#[actix_rt::test]
async fn time_retention_under_a_slow_consumer_skips_only_deleted_messages_and_repeats_none() {
    // Arrange
    let b = Arc::new(
        TestBroker::start_with(&[
            ("QUEEN_RETENTION_INTERVAL_MS", "50"),
            ("QUEEN_RETENTION_PAUSE_MS", "0"),
            ("QUEEN_RETENTION_BATCH", "5"),
        ])
        .await,
    );
    // A segment stays for the queue's dedup window whatever the retention: a short one.
    configure(
        &b,
        "rc-time",
        json!({"retentionSeconds": 1, "dedupWindowSeconds": 1}),
    )
    .await;

    // Act: the producer runs; the group pops slowly, then drains what is left.
    let producer = tokio::spawn(produce(b.clone(), "rc-time"));
    let mut got: Vec<(u64, u64)> = Vec::new();
    loop {
        let finished = producer.is_finished();
        let messages = b
            .pop_messages(
                "/api/v1/pop/queue/rc-time?batch=10&partitions=2&consumerGroup=slow&autoAck=true",
            )
            .await;
        for m in &messages {
            got.push((
                m["data"]["p"].as_u64().unwrap(),
                m["data"]["i"].as_u64().unwrap(),
            ));
        }
        if finished && messages.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
    }

    // Assert
    let sql = b.sql().await;
    let mut skipped = 0;
    for p in 0..PARTITIONS as u64 {
        let mine: Vec<u64> = got
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, i)| *i)
            .collect();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "partition {p}: {mine:?}"
        );
        let first_stored: Option<i64> = sql
            .query_one(
                "SELECT min(s.base_offset) FROM queen.log_segments s
                 JOIN queen.log_partitions lp ON lp.id = s.partition_id
                 JOIN queen.queues q ON q.id = lp.queue_id
                 WHERE q.name = 'rc-time' AND lp.name = $1",
                &[&format!("p{p}")],
            )
            .await
            .unwrap()
            .get(0);
        let floor = first_stored.map_or(u64::MAX, |b| b as u64);
        for i in 0..(ROUNDS * PER_ROUND) as u64 {
            if !mine.contains(&i) {
                skipped += 1;
                assert!(
                    i < floor,
                    "partition {p}: {i} was neither delivered nor deleted"
                );
            }
        }
    }
    let removed = metrics(&b).await["retention"]["removed"]["segments"]
        .as_u64()
        .unwrap();
    assert!(removed > 0, "retention deleted nothing");
    eprintln!(
        "slow consumer: {} delivered, {skipped} deleted before delivery",
        got.len()
    );
}

/// Two nodes on one database: only one sweeps while it lives; a lease left by a node that
/// died passes on when it expires; a stopping holder hands over at once.
#[actix_rt::test]
async fn one_node_sweeps_at_a_time_and_a_dead_or_stopped_holders_turn_passes_on() {
    // Arrange: a lease held by a node that died, valid for two more seconds.
    let pg = postgres::fresh_installed_database().await;
    let vars = [("QUEEN_RETENTION_INTERVAL_MS", "100")];
    let a = TestBroker::start_on(pg.clone(), &vars).await;
    a.sql()
        .await
        .execute(
            "INSERT INTO queen.sweeper_lease (id, holder, expires_at)
             VALUES (1, 'dead-node', clock_timestamp() + interval '2 seconds')
             ON CONFLICT (id) DO UPDATE SET holder = 'dead-node', expires_at = EXCLUDED.expires_at",
            &[],
        )
        .await
        .unwrap();
    let b = TestBroker::start_on(pg, &vars).await;
    let runs = |m: serde_json::Value| m["retention"]["runs"].as_u64().unwrap_or(0);
    // Node a swept once at start-up, before the dead node's lease was written: count only
    // the runs after it (a sweep under way at the write ends well within 300 ms).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (a0, b0) = (runs(metrics(&a).await), runs(metrics(&b).await));
    let skipped_before = metrics(&a).await["retention"]["skipped"].as_u64().unwrap();

    // Act / Assert: the dead node's lease expires and one of the two takes over.
    let holder = eventually(Duration::from_secs(15), || async {
        let (ra, rb) = (runs(metrics(&a).await) - a0, runs(metrics(&b).await) - b0);
        (ra + rb >= 5).then_some((ra, rb))
    })
    .await
    .expect("someone sweeps after the dead node's lease expired");
    assert!(
        metrics(&a).await["retention"]["skipped"].as_u64().unwrap() > skipped_before,
        "the dead node's lease was respected"
    );
    let (ra, rb) = holder;
    assert!(ra == 0 || rb == 0, "both nodes swept: {ra} and {rb}");
    let (holder, other) = if ra > 0 { (a, b) } else { (b, a) };
    let other_runs = runs(metrics(&other).await);
    holder.stop().await;
    let took_over = eventually(Duration::from_secs(5), || async {
        (runs(metrics(&other).await) > other_runs).then_some(())
    })
    .await;
    assert!(
        took_over.is_some(),
        "the stopped holder's turn did not pass on"
    );
}

/// Segments of partition `p` of queue `q` still stored.
async fn segments_of(sql: &tokio_postgres::Client, queue: &str) -> i64 {
    sql.query_one(
        "SELECT count(*) FROM queen.log_segments s \
         JOIN queen.log_partitions p ON p.id = s.partition_id \
         JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1",
        &[&queue],
    )
    .await
    .unwrap()
    .get(0)
}

/// A group that starts its cursor on a partition while the sweeper runs (its first claim,
/// not yet committed) keeps completed retention off that partition: the sweeper does not
/// delete what that group is about to lease, and once the cursor is committed at the
/// start, nothing it has not consumed goes either.
#[actix_rt::test]
async fn a_cursor_starting_during_a_sweep_keeps_completed_retention_off_its_partition() {
    // Arrange: queue mode consumed everything more than the completed retention ago; the
    // broker's own sweeper stays idle so the test calls the batch itself.
    let b = TestBroker::start_with(&[("QUEEN_RETENTION_INTERVAL_MS", "3600000")]).await;
    // A segment stays for the queue's dedup window whatever the retention: a short one.
    configure(
        &b,
        "rc-race",
        json!({"completedRetentionSeconds": 1, "dedupWindowSeconds": 1}),
    )
    .await;
    for round in 0..3 {
        b.push("rc-race", "p", &[json!(round)]).await;
    }
    let popped = b.pop_messages("/api/v1/pop/queue/rc-race?batch=10").await;
    assert_eq!(popped.len(), 3);
    b.ack_all(&popped, "completed", None).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let starter = b.sql().await;
    let sweeper = b.sql().await;
    let stored = segments_of(&sweeper, "rc-race").await;
    assert!(stored >= 1, "nothing was stored");

    // Act: a new group's first cursor on the partition, in a transaction still open while a
    // sweep batch runs.
    starter.batch_execute("BEGIN").await.unwrap();
    starter
        .execute(
            "INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id) \
             SELECT 'late', q.id FROM queen.queues q WHERE q.name = 'rc-race'",
            &[],
        )
        .await
        .unwrap();
    starter
        .execute(
            "INSERT INTO queen.log_consumers (partition_id, consumer_group, committed) \
             SELECT p.id, 'late', -1 FROM queen.log_partitions p \
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rc-race'",
            &[],
        )
        .await
        .unwrap();
    let sweep = "SELECT coalesce(sum(segments), 0)::bigint \
                 FROM queen.retention_segments_v2(NULL, 100, 0, 0, 0)";
    let during: i64 = sweeper.query_one(sweep, &[]).await.unwrap().get(0);
    starter.batch_execute("COMMIT").await.unwrap();
    let after: i64 = sweeper.query_one(sweep, &[]).await.unwrap().get(0);

    // Assert
    assert_eq!(
        during, 0,
        "the sweep deleted segments under a starting cursor"
    );
    assert_eq!(
        after, 0,
        "the sweep deleted segments the new group has not consumed"
    );
    assert_eq!(segments_of(&sweeper, "rc-race").await, stored);
}
