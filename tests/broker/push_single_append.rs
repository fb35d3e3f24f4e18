//! The single-statement append: a push of one segment to a partition whose last offset the
//! node's dedup window covers is appended by one plain statement
//! (`push.singleStatementAppends`); everything else (a partition's first push, appends
//! other writers made meanwhile) goes through `log_push_v3` and answers as it always did.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{counter, sql_count};
use crate::support::{postgres, two_nodes, TestBroker};

/// False, with the reason printed, in the harness's Citus mode: the layout leaves the
/// single-statement append (and its one-round-trip commit) out (docs/scale-out.md, "What
/// runs"), so what a test checks of that path alone has nothing to check there; the
/// rest of the test (dense offsets, dedup, every message once) still runs.
fn single_append_on() -> bool {
    let citus = crate::support::citus::script().is_some();
    if citus {
        eprintln!("the Citus layout leaves the single-statement append out: not checked");
    }
    !citus
}

/// Both append counters, read now: (one statement, log_push_v3).
async fn appends(b: &TestBroker) -> (i64, i64) {
    (
        counter(b, "/push/singleStatementAppends").await,
        counter(b, "/push/functionAppends").await,
    )
}

/// Every string payload of `queue`, popped with auto-ack until a pop finds nothing.
async fn drain(b: &TestBroker, queue: &str) -> Vec<String> {
    let path = format!("/api/v1/pop/queue/{queue}?batch=100&autoAck=true");
    let mut delivered = Vec::new();
    loop {
        let got = b.pop_messages(&path).await;
        if got.is_empty() {
            return delivered;
        }
        delivered.extend(got.iter().map(|m| m["data"].as_str().unwrap().to_owned()));
    }
}

/// Two nodes x four tasks at once, each task posting `body(node, task, round)` for rounds
/// 0..`rounds` one after the other; every answer item, per task.
async fn push_from_two_nodes(
    a: &TestBroker,
    b: &TestBroker,
    rounds: usize,
    body: impl Fn(usize, usize, usize) -> Value,
) -> Vec<Vec<Value>> {
    let body = &body;
    let tasks = (0..2).flat_map(|node| (0..4).map(move |task| (node, task)));
    join_all(tasks.map(|(node, task)| {
        let broker = if node == 0 { a } else { b };
        async move {
            let mut out = Vec::new();
            for round in 0..rounds {
                let (status, answer) = broker.post("/api/v1/push", &body(node, task, round)).await;
                assert_eq!(status, StatusCode::CREATED, "{answer}");
                out.extend(answer.as_array().unwrap().iter().cloned());
            }
            out
        }
    }))
    .await
}

/// Asserts every answer is `queued` and every partition's offsets are dense from 0;
/// returns how many offsets each partition holds, by partition id.
fn assert_dense_offsets(answers: &[Vec<Value>]) -> BTreeMap<String, usize> {
    let mut by_partition: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for a in answers.iter().flatten() {
        assert_eq!(a["status"], "queued", "{a}");
        by_partition
            .entry(a["partitionId"].to_string())
            .or_default()
            .push(a["offset"].as_i64().unwrap());
    }
    by_partition
        .into_iter()
        .map(|(partition, mut offsets)| {
            offsets.sort_unstable();
            assert_eq!(offsets, (0..offsets.len() as i64).collect::<Vec<_>>());
            (partition, offsets.len())
        })
        .collect()
}

/// Drains `queue` and asserts no payload but `skip` arrived twice; returns how many
/// distinct payloads (besides `skip`) arrived.
async fn delivered_once(b: &TestBroker, queue: &str, skip: &str) -> usize {
    let mut delivered = drain(b, queue).await;
    delivered.retain(|d| d != skip);
    delivered.sort();
    let all = delivered.len();
    delivered.dedup();
    assert_eq!(all, delivered.len(), "a message was delivered twice");
    all
}

/// A partition's first push creates it through `log_push_v3`; the pushes after it are one
/// statement each, at the offsets that follow.
#[actix_rt::test]
async fn after_the_first_push_a_partition_is_appended_by_one_statement() {
    if !single_append_on() {
        return;
    }
    // Arrange
    let b = TestBroker::start().await;
    let before = appends(&b).await;

    // Act
    let first = b.push("sa-one", "P", &[json!(0), json!(1)]).await;
    let after_first = appends(&b).await;
    let second = b.push("sa-one", "P", &[json!(2)]).await;
    let third = b.push("sa-one", "P", &[json!(3), json!(4)]).await;

    // Assert
    assert_eq!(after_first, (before.0, before.1 + 1));
    assert_eq!(appends(&b).await, (before.0 + 2, before.1 + 1));
    let offsets: Vec<i64> = [first, second, third]
        .iter()
        .flatten()
        .map(|a| a["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4]);
    let popped = b.pop_messages("/api/v1/pop/queue/sa-one?batch=10").await;
    let got: Vec<Value> = popped.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(got, (0..5).map(|n| json!(n)).collect::<Vec<_>>());
}

/// A push none of whose ids the windows hold, over partitions the windows cover, is
/// appended and committed in one round trip (`push.oneRoundTripCommits`), over one
/// partition or several; a repeat (a window holds its id) and a push to a new partition
/// take the transaction, and everything answers and pops back as before.
#[actix_rt::test]
async fn a_push_the_windows_cover_commits_in_one_round_trip_and_others_take_the_transaction() {
    if !single_append_on() {
        return;
    }
    // Arrange
    let b = TestBroker::start().await;
    let item = |partition: &str, id: &str| json!({"queue": "sa-alone", "partition": partition, "transactionId": id, "payload": id});
    let push = |items: Vec<Value>| {
        let b = &b;
        async move {
            let (status, answer) = b.post("/api/v1/push", &json!({ "items": items })).await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            let statuses: Vec<String> = answer
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["status"].as_str().unwrap().to_owned())
                .collect();
            statuses
        }
    };
    let alone = || counter(&b, "/push/oneRoundTripCommits");
    push(vec![item("A", "a0"), item("B", "b0")]).await;
    let at_start = alone().await;

    // Act
    let one_partition = push(vec![item("A", "a1"), item("A", "a2")]).await;
    let after_one = alone().await;
    let two_partitions = push(vec![item("A", "a3"), item("B", "b1"), item("B", "b2")]).await;
    let after_two = alone().await;
    let repeat = push(vec![item("A", "a2"), item("A", "a4")]).await;
    let new_partition = push(vec![item("A", "a5"), item("C", "c0")]).await;
    let at_end = alone().await;

    // Assert
    assert_eq!(one_partition, ["queued", "queued"]);
    assert_eq!(after_one, at_start + 1);
    assert_eq!(two_partitions, ["queued", "queued", "queued"]);
    assert_eq!(after_two, after_one + 1);
    assert_eq!(repeat, ["duplicate", "queued"]);
    assert_eq!(new_partition, ["queued", "queued"]);
    assert_eq!(
        at_end, after_two,
        "neither the repeat nor the new partition went alone"
    );
    for (partition, ids) in [
        ("A", &["a0", "a1", "a2", "a3", "a4", "a5"][..]),
        ("B", &["b0", "b1", "b2"][..]),
        ("C", &["c0"][..]),
    ] {
        let path = format!("/api/v1/pop/queue/sa-alone/partition/{partition}?batch=10");
        let popped = b.pop_messages(&path).await;
        let got: Vec<Value> = popped.iter().map(|m| m["data"].clone()).collect();
        let want: Vec<Value> = ids.iter().map(|s| json!(s)).collect();
        assert_eq!(got, want, "partition {partition}");
    }
}

/// Two nodes push concurrently into the same three partitions: each node's window is often
/// stale (the other node appended), so both paths run; every message is stored exactly
/// once, at dense offsets per partition, and a repeat of every tenth id through the other
/// node is answered duplicate.
#[actix_rt::test]
async fn two_nodes_pushing_into_the_same_partitions_keep_offsets_dense_and_dedup() {
    // Arrange
    let [a, b] = two_nodes().await;
    let body = |node: usize, task: usize, round: usize| -> Value {
        let items: Vec<Value> = (0..5)
            .map(|k| {
                let id = format!("n{node}-t{task}-r{round}-k{k}");
                json!({"queue": "sa-two", "partition": format!("p{}", (task + round) % 3),
                       "transactionId": id, "payload": id})
            })
            .collect();
        json!({ "items": items })
    };

    // Act: 2 nodes x 4 tasks x 10 rounds of 5 messages.
    let answers = push_from_two_nodes(&a, &b, 10, body).await;
    let repeat = json!({"items": [{"queue": "sa-two", "partition": "p0",
                                   "transactionId": "n0-t0-r0-k0", "payload": "again"}]});
    let (status, again) = b.post("/api/v1/push", &repeat).await;

    // Assert
    let by_partition = assert_dense_offsets(&answers);
    assert_eq!(by_partition.len(), 3);
    assert_eq!(by_partition.values().sum::<usize>(), 400);
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(again[0]["status"], "duplicate", "{again}");
    if single_append_on() {
        let (single_a, _) = appends(&a).await;
        let (single_b, _) = appends(&b).await;
        assert!(single_a > 0 && single_b > 0, "{single_a} / {single_b}");
    }
    assert_eq!(delivered_once(&a, "sa-two", "").await, 400);
}

/// Two nodes, four tasks each, push requests that span three of four partitions in varying
/// orders, every second request repeating an id of the one before: one-round-trip commits
/// and transactional appends lock the same partitions concurrently (as far as the
/// interleaving lets a node's window stay fresh; a quiet tail makes sure both paths ran).
/// Nothing deadlocks or fails, offsets stay dense, every id is stored once and every repeat
/// answers duplicate.
#[actix_rt::test]
async fn concurrent_pushes_over_several_shared_partitions_store_each_id_once() {
    // Arrange
    let [a, b] = two_nodes().await;
    let fresh = |node: usize, task: usize, round: usize| -> Vec<Value> {
        (0..6)
            .map(|k| {
                let id = format!("n{node}-t{task}-r{round}-k{k}");
                let partition = format!("p{}", (task + round + k) % 4);
                json!({"queue": "sa-many", "partition": partition, "transactionId": id,
                       "payload": id})
            })
            .filter(|item| item["partition"] != format!("p{}", (round + node) % 4))
            .collect()
    };
    let body = |node: usize, task: usize, round: usize| -> Value {
        let mut items = fresh(node, task, round);
        if round % 2 == 1 {
            items.push(fresh(node, task, round - 1)[0].clone());
        }
        json!({ "items": items })
    };

    // Act: 2 nodes x 4 tasks x 12 rounds.
    let tasks = (0..2).flat_map(|node| (0..4).map(move |task| (node, task)));
    let answers: Vec<Vec<(Value, Value)>> = join_all(tasks.map(|(node, task)| {
        let broker = if node == 0 { &a } else { &b };
        async move {
            let mut out = Vec::new();
            for round in 0..12 {
                let sent = body(node, task, round);
                let (status, answer) = broker.post("/api/v1/push", &sent).await;
                assert_eq!(status, StatusCode::CREATED, "{answer}");
                let items = sent["items"].as_array().unwrap().clone();
                out.extend(items.into_iter().zip(answer.as_array().unwrap().clone()));
            }
            out
        }
    }))
    .await;

    // Assert
    let mut offsets: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut queued: Vec<String> = Vec::new();
    let mut duplicates = 0;
    for (sent, answer) in answers.iter().flatten() {
        let id = sent["transactionId"].as_str().unwrap().to_owned();
        match answer["status"].as_str().unwrap() {
            "queued" => {
                queued.push(id);
                offsets
                    .entry(answer["partitionId"].to_string())
                    .or_default()
                    .push(answer["offset"].as_i64().unwrap());
            }
            "duplicate" => duplicates += 1,
            other => panic!("{other}: {answer}"),
        }
    }
    // Then each node alone pushes twice more over all four partitions: whether the
    // scheduler let any commit above go in one round trip depends on the interleaving (a
    // node's window is stale while the other appends), but after its own push nothing
    // else writes, so the second of these goes alone.
    for (node, broker) in [&a, &b].into_iter().enumerate() {
        for j in 0..2 {
            let items: Vec<Value> = (0..4)
                .map(|k| {
                    let id = format!("n{node}-quiet{j}-k{k}");
                    json!({"queue": "sa-many", "partition": format!("p{k}"),
                           "transactionId": id, "payload": id})
                })
                .collect();
            let (status, answer) = broker
                .post("/api/v1/push", &json!({ "items": items }))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            for (sent, answer) in items.iter().zip(answer.as_array().unwrap()) {
                assert_eq!(answer["status"], "queued", "{answer}");
                queued.push(sent["transactionId"].as_str().unwrap().to_owned());
                offsets
                    .entry(answer["partitionId"].to_string())
                    .or_default()
                    .push(answer["offset"].as_i64().unwrap());
            }
        }
    }
    let (mut sorted, total) = (queued.clone(), queued.len());
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), total, "an id was stored twice");
    assert_eq!(duplicates, 2 * 4 * 6, "every repeat answers duplicate");
    for list in offsets.values_mut() {
        list.sort_unstable();
        assert_eq!(*list, (0..list.len() as i64).collect::<Vec<_>>());
    }
    if single_append_on() {
        let alone = counter(&a, "/push/oneRoundTripCommits").await
            + counter(&b, "/push/oneRoundTripCommits").await;
        assert!(alone > 0, "some commits went in one round trip");
    }
    let mut delivered = drain(&b, "sa-many").await;
    delivered.sort();
    assert_eq!(delivered, sorted);
}

/// A push of 100 small messages (a segment of several kB, past PostgreSQL's 2 kB TOAST
/// threshold) is stored in the segment row itself: no TOAST chunk is written for it, so
/// the push writes one row and a pop reads it without the TOAST index.
#[actix_rt::test]
async fn a_segment_of_a_hundred_small_messages_stays_in_its_row() {
    // Arrange
    let b = TestBroker::start().await;
    // Padding of pseudo-random hex, so zstd leaves the segment well past 2 kB.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut pad = || {
        (0..4)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                format!("{seed:016x}")
            })
            .collect::<String>()
    };
    let payloads: Vec<Value> = (0..100).map(|n| json!({ "n": n, "pad": pad() })).collect();
    let toast = "SELECT count(*) FROM pg_class c \
                 WHERE c.oid = (SELECT reltoastrelid FROM pg_class \
                                WHERE oid = 'queen.log_segments'::regclass)";
    assert_eq!(
        sql_count(&b, toast).await,
        1,
        "log_segments has a TOAST table"
    );
    let chunks = "SELECT (xpath('/row/c/text()', \
                  query_to_xml(format('SELECT count(*) AS c FROM pg_toast.%I', c.relname), \
                  false, true, '')))[1]::text::bigint \
                  FROM pg_class c WHERE c.oid = (SELECT reltoastrelid FROM pg_class \
                                                 WHERE oid = 'queen.log_segments'::regclass)";

    // Act
    b.push("inline", "P", &payloads).await;
    b.push("inline", "P", &payloads).await;

    // Assert
    let size = "SELECT max(octet_length(blob))::bigint FROM queen.log_segments s \
                JOIN queen.log_partitions p ON p.id = s.partition_id \
                JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'inline'";
    assert!(
        sql_count(&b, size).await > 2048,
        "the segment is past the TOAST threshold"
    );
    assert_eq!(sql_count(&b, chunks).await, 0, "no TOAST chunk was written");
    let popped = b.pop_messages("/api/v1/pop/queue/inline?batch=200").await;
    assert_eq!(popped.len(), 200);
    assert_eq!(popped[99]["data"], payloads[99]);
}

/// A push is answered only after the commit that holds it, on the one-round-trip path too:
/// a deferred trigger that refuses the segment at commit time (after the statement itself
/// succeeded and returned its rows) makes the push fail with nothing stored, and the next
/// push takes the offset the refused one would have had.
#[actix_rt::test]
async fn a_push_whose_commit_fails_after_its_statement_ran_is_not_answered_as_stored() {
    if !single_append_on() {
        return;
    }
    // Arrange
    let b = TestBroker::start().await;
    b.push("sa-commit", "P", &[json!("first")]).await;
    b.push("sa-commit", "P", &[json!("second")]).await;
    let sql = b.sql().await;
    sql.batch_execute(
        "CREATE FUNCTION public.refuse_three() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NEW.msg_count = 3 THEN
                 RAISE EXCEPTION 'segment of three refused at commit';
             END IF;
             RETURN NULL;
         END $$;
         CREATE CONSTRAINT TRIGGER refuse_three AFTER INSERT ON queen.log_segments
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.refuse_three();",
    )
    .await
    .unwrap();
    let alone = || counter(&b, "/push/oneRoundTripCommits");
    let before = alone().await;
    let items: Vec<Value> = ["x", "y", "z"]
        .iter()
        .map(|p| json!({"queue": "sa-commit", "partition": "P", "payload": p}))
        .collect();

    // Act
    let (status, answer) = b.post("/api/v1/push", &json!({ "items": items })).await;
    let after = alone().await;
    let next = b.push("sa-commit", "P", &[json!("third")]).await;

    // Assert
    assert!(
        status.is_server_error(),
        "a push whose commit failed answered {status}: {answer}"
    );
    assert_eq!(after, before, "no one-round-trip commit was counted");
    assert_eq!(next[0]["offset"], 2, "{next:?}");
    let stored = sql_count(
        &b,
        "SELECT count(*) FROM queen.log_segments s \
         JOIN queen.log_partitions p ON p.id = s.partition_id WHERE p.name = 'P' \
         AND s.msg_count = 3",
    )
    .await;
    assert_eq!(stored, 0);
    let popped = b
        .pop_messages("/api/v1/pop/queue/sa-commit/partition/P?batch=10")
        .await;
    let got: Vec<Value> = popped.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(got, vec![json!("first"), json!("second"), json!("third")]);
}

/// A partition's first push into an existing queue creates the partition and appends its
/// first segment in one statement (no `log_push_v3`); a second node, whose window knows
/// nothing of the partition yet, finds it created (`log_push_v3` answers it stale, with
/// what the window lacks) and appends at the next offset.
#[actix_rt::test]
async fn a_first_push_into_an_existing_queue_creates_its_partition_in_one_statement() {
    if !single_append_on() {
        return;
    }
    // Arrange
    let [a, b] = two_nodes().await;
    a.push("sa-first", "old", &[json!("o")]).await;
    let before_a = appends(&a).await;
    let before_b = appends(&b).await;

    // Act
    let first = a
        .push("sa-first", "new", &[json!("x"), json!("y"), json!("z")])
        .await;
    let after_first = appends(&a).await;
    let other_node = b.push("sa-first", "new", &[json!("w")]).await;
    let after_other = appends(&b).await;

    // Assert
    assert_eq!(after_first, (before_a.0 + 1, before_a.1), "one statement");
    let offsets: Vec<i64> = first
        .iter()
        .chain(&other_node)
        .map(|m| m["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![0, 1, 2, 3]);
    assert_eq!(after_other, (before_b.0 + 1, before_b.1), "after learning");
    let last = sql_count(
        &a,
        "SELECT p.last_offset FROM queen.log_partitions p \
         JOIN queen.queues q ON q.id = p.queue_id \
         WHERE q.name = 'sa-first' AND p.name = 'new'",
    )
    .await;
    assert_eq!(last, 3);
    let popped = a
        .pop_messages("/api/v1/pop/queue/sa-first/partition/new?batch=10")
        .await;
    let got: Vec<Value> = popped.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(got, vec![json!("x"), json!("y"), json!("z"), json!("w")]);
}

/// Two nodes, four tasks each, push the first requests into six new partitions of an
/// existing queue at once, each task in its own order: the partitions' creators race (one
/// statement creating each, the others finding it created), yet every partition's offsets
/// are dense and every message is stored and delivered once.
#[actix_rt::test]
async fn concurrent_first_pushes_into_new_partitions_store_each_message_once() {
    // Arrange
    let [a, b] = two_nodes().await;
    a.push("sa-race", "seed", &[json!("seed")]).await;
    let body = |node: usize, task: usize, p: usize| -> Value {
        let items: Vec<Value> = (0..3)
            .map(|k| {
                let id = format!("n{node}-t{task}-p{p}-k{k}");
                json!({"queue": "sa-race", "partition": format!("p{p}"),
                       "transactionId": id, "payload": id})
            })
            .collect();
        json!({ "items": items })
    };

    // Act: 2 nodes x 4 tasks x 6 partitions, one request of 3 messages each.
    let answers = push_from_two_nodes(&a, &b, 6, |node, task, round| {
        body(node, task, (round + task * 5 + node) % 6)
    })
    .await;

    // Assert
    let by_partition = assert_dense_offsets(&answers);
    assert_eq!(by_partition.len(), 6);
    assert!(by_partition.values().all(|&n| n == 24), "{by_partition:?}");
    if single_append_on() {
        let (single_a, _) = appends(&a).await;
        let (single_b, _) = appends(&b).await;
        assert!(single_a + single_b > 0, "{single_a} / {single_b}");
    }
    assert_eq!(delivered_once(&a, "sa-race", "seed").await, 144);
}

/// A node whose window knows nothing of an existing partition (another node created it)
/// appends to it without trying to create it again: with a partition limit set, the
/// limit's per-queue lock (held here by another session, as a transaction creating a
/// partition of the queue would hold it) does not hold the push up.
#[actix_rt::test]
async fn a_first_contact_with_an_existing_partition_takes_no_partition_limit_lock() {
    // Arrange
    let pg = postgres::fresh_installed_database().await;
    let limit = [("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE", "5")];
    let a = TestBroker::start_on(pg.clone(), &limit).await;
    let b = TestBroker::start_on(pg, &limit).await;
    a.push("sa-limit", "P", &[json!("from a")]).await;
    let holder = a.sql().await;
    holder
        .execute(
            "SELECT pg_advisory_lock(hashtextextended('queen.limit.partitions/' || q.id, 0)) \
             FROM queen.queues q WHERE q.name = 'sa-limit'",
            &[],
        )
        .await
        .unwrap();

    // Act
    let pushed = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        b.post(
            "/api/v1/push",
            &json!({"items": [{"queue": "sa-limit", "partition": "P", "payload": "from b"}]}),
        ),
    )
    .await;
    holder
        .execute("SELECT pg_advisory_unlock_all()", &[])
        .await
        .unwrap();

    // Assert
    let (status, answer) = pushed.expect("the push waited for the partition limit's lock");
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer[0]["status"], "queued", "{answer}");
    assert_eq!(answer[0]["offset"], 1, "{answer}");
}
