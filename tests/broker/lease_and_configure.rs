//! Lease extension, configure and health over HTTP, and the refusal of a malformed ack.

use reqwest::StatusCode;
use serde_json::{json, Value};

use std::time::Duration;

use crate::support::fixtures::{consumer_row, entry, numbers, partition_id, sql_count};
use crate::support::{ack_batch, citus, eventually, two_nodes, TestBroker};

/// A bodiless lease extend renews every partition claimed under the lease.
#[actix_rt::test]
async fn extending_a_lease_with_no_body_renews_every_partition_under_it() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("extend", "A", &[json!("a")]).await;
    b.push("extend", "B", &[json!("b")]).await;
    let (_, popped) = b
        .get("/api/v1/pop/queue/extend?partitions=2&leaseSeconds=5")
        .await;
    assert_eq!(popped["partitionsClaimed"], 2, "{popped}");
    let lease = popped["leaseId"].as_str().unwrap().to_owned();

    // Act
    let (status, answer) = post_empty(&b, &format!("/api/v1/lease/{lease}/extend")).await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    assert!(
        answer["renewed"].as_i64().is_some_and(|n| n >= 2),
        "{answer}"
    );
    assert!(answer["newExpiresAt"].is_string(), "{answer}");
    let renewed = sql_count(
        &b,
        &format!(
            "SELECT count(*) FROM queen.log_consumers WHERE worker_id = '{lease}' \
             AND lease_expires_at > now() + interval '30 seconds'"
        ),
    )
    .await;
    assert_eq!(
        renewed, 2,
        "both partition leases run to the queue's lease time"
    );
}

/// A one-partition pop's lease names its partition, and another node finds it by that
/// name alone: it extends the lease, and a bundle requiring it commits there.
#[actix_rt::test]
async fn a_one_partition_lease_is_extended_and_required_through_another_node() {
    if crate::support::citus::layout() {
        eprintln!(
            "skipped on the Citus layout: the one-partition claim that names its partition \
             in the lease is plain PostgreSQL's fast path, left out there"
        );
        return;
    }
    // Arrange
    let [a, b] = two_nodes().await;
    a.push("named", "A", &[json!("a"), json!("b")]).await;
    // The group's first pop creates its cursor row through the SQL functions; the next
    // one is the one-partition claim.
    let first = a.pop_messages("/api/v1/pop/queue/named?batch=1").await;
    a.ack_all(&first, "completed", None).await;
    let popped = a
        .pop_messages("/api/v1/pop/queue/named?batch=1&leaseSeconds=5")
        .await;
    assert_eq!(popped.len(), 1, "{popped:?}");
    let lease = popped[0]["leaseId"].as_str().unwrap().to_owned();
    let pid = popped[0]["partitionId"].as_str().unwrap().to_owned();
    assert!(
        lease.ends_with(&format!(".{pid}")),
        "{lease} names partition {pid}"
    );

    // Act
    let (status, extended) = post_empty(&b, &format!("/api/v1/lease/{lease}/extend")).await;
    let (_, bundle) = b
        .post(
            "/api/v1/transaction",
            &json!({
                "operations": [{"type": "ack", "transactionId": popped[0]["transactionId"],
                                "partitionId": pid, "status": "completed", "leaseId": lease}],
                "requiredLeases": [lease],
            }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{extended}");
    assert_eq!(extended["success"], true, "{extended}");
    assert_eq!(extended["renewed"], 1, "{extended}");
    assert_eq!(bundle["success"], true, "{bundle}");
    assert_eq!(bundle["results"][0]["leaseReleased"], true, "{bundle}");
    assert!(a.pop_messages("/api/v1/pop/queue/named").await.is_empty());
}

/// An unknown bare lease id (no `.partition` suffix) is answered "not found" through the
/// indexes alone: looking it up never scans the cursor rows, however many there are.
#[actix_rt::test]
async fn an_unknown_bare_lease_id_is_looked_up_without_scanning_the_cursor_rows() {
    // Arrange: cursor rows in several partitions, one leased under a bare id the way a
    // several-partition claim leaves it, and one under a bare id that no claim wrote.
    let b = TestBroker::start().await;
    for p in ["A", "B", "C"] {
        b.push("bare", p, &[json!(p)]).await;
    }
    let (_, popped) = b.get("/api/v1/pop/queue/bare?partitions=2").await;
    let shared = popped["leaseId"].as_str().unwrap().to_owned();
    let single = b.pop_messages("/api/v1/pop/queue/bare").await;
    let pid = partition_id(&single[0]);
    let stray = "0190a5b2-0000-7000-8000-0000000000aa";
    let mut client = b.sql().await;
    client
        .execute(
            "UPDATE queen.log_consumers SET worker_id = $1 WHERE partition_id = $2",
            &[&stray, &pid],
        )
        .await
        .unwrap();

    // Act: the lookups the extend and the requiredLeases fence make, with sequential
    // scans priced out so any that remains is one no index can serve.
    let txn = client.transaction().await.unwrap();
    txn.batch_execute("SET LOCAL enable_seqscan = off")
        .await
        .unwrap();
    let found = |lease: String| {
        let txn = &txn;
        async move {
            txn.query("SELECT * FROM queen.lease_holders_v1(ARRAY[$1])", &[&lease])
                .await
                .unwrap()
                .len()
        }
    };
    let unknown = found("zzz".to_owned()).await;
    let stray_rows = found(stray.to_owned()).await;
    let shared_rows = found(shared.clone()).await;
    let scans: i64 = txn
        .query_one(
            "SELECT seq_scan FROM pg_stat_xact_user_tables \
             WHERE relid = 'queen.log_consumers'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    txn.rollback().await.unwrap();
    let (status, extended) = post_empty(&b, "/api/v1/lease/zzz/extend").await;

    // Assert
    assert_eq!(scans, 0, "log_consumers was scanned {scans} times");
    assert_eq!((unknown, stray_rows, shared_rows), (0, 0, 2));
    assert_eq!(status, StatusCode::OK, "{extended}");
    assert_eq!(extended["success"], false, "{extended}");
}

/// The cursor row of a partition popped and acked over and over is rewritten in place (a
/// HOT update): no claim or release touches an indexed column, so no index entry is
/// written per cycle.
#[actix_rt::test]
async fn popping_and_acking_rewrites_the_cursor_row_in_place() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("hot", "A", &numbers(0..40)).await;

    // Act: forty cycles of a one-message pop and its ack.
    for _ in 0..40 {
        let popped = b.pop_messages("/api/v1/pop/queue/hot?batch=1").await;
        assert_eq!(popped.len(), 1);
        let acked = ack_batch(&b.http, &b.base, &popped, "completed", None).await;
        assert_eq!(acked[0]["success"], true, "{acked:?}");
    }

    // Assert: PostgreSQL's statistics reach the view within its flush interval. On the
    // Citus layout the rows live in the table's shards (`log_consumers_<shard id>`) on the
    // workers: summed over every node.
    let query = "SELECT coalesce(sum(n_tup_upd), 0)::bigint, \
                        coalesce(sum(n_tup_hot_upd), 0)::bigint FROM pg_stat_user_tables \
                 WHERE schemaname = 'queen' AND relname ~ '^log_consumers(_[0-9]+)?$'";
    let nodes = match citus::layout() {
        true => citus::every_node(&b.pg),
        false => vec![b.pg.clone()],
    };
    let mut clients = Vec::new();
    for node in &nodes {
        let (client, connection) = node.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        if citus::layout() {
            // Citus hides shards from the catalog views of client sessions by default.
            client
                .batch_execute("SET citus.show_shards_for_app_name_prefixes = '*'")
                .await
                .unwrap();
        }
        clients.push(client);
    }
    let (updates, hot) = eventually(Duration::from_secs(30), || async {
        let (mut updates, mut hot) = (0i64, 0i64);
        for client in &clients {
            let row = client.query_one(query, &[]).await.unwrap();
            updates += row.get::<_, i64>(0);
            hot += row.get::<_, i64>(1);
        }
        (updates >= 80).then_some((updates, hot))
    })
    .await
    .expect("eighty cursor-row updates counted");
    assert!(hot >= updates - 4, "{hot} of {updates} updates were HOT");
}

/// Extending an unknown lease answers success false with HTTP 200.
#[actix_rt::test]
async fn extending_an_unknown_lease_answers_success_false_with_http_200() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (status, answer) = post_empty(
        &b,
        "/api/v1/lease/00000000-0000-7000-8000-000000000000/extend",
    )
    .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["renewed"], 0, "{answer}");
}

/// Configure answers configured:true, stores its options (an upsert), and pops use its leaseTime.
#[actix_rt::test]
async fn configure_answers_configured_and_stores_its_options() {
    // Arrange
    let b = TestBroker::start().await;
    let body = |lease: i64| {
        json!({
            "queue": "cfg", "namespace": "ns", "task": "tk",
            "options": { "leaseTime": lease, "retryLimit": 4, "priority": 5,
                         "delayedProcessing": 0, "windowBuffer": 0, "someFutureKey": "kept" },
        })
    };

    // Act
    let (status, answer) = b.post("/api/v1/configure", &body(17)).await;
    b.push("cfg", "Default", &[json!(1)]).await;
    let popped = b.pop_messages("/api/v1/pop/queue/cfg").await;
    let (again_status, again) = b.post("/api/v1/configure", &body(30)).await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["configured"], true, "{answer}");
    assert_eq!(answer["queue"], "cfg");
    assert_eq!(answer["options"]["leaseTime"], 17, "{answer}");
    assert_eq!(again_status, StatusCode::OK, "{again}");
    assert_eq!(again["configured"], true, "{again}");
    let sql = b.sql().await;
    let rows = sql
        .query(
            "SELECT namespace, task, lease_time, retry_limit, priority, delayed_processing, \
             window_buffer FROM queen.queues WHERE name = 'cfg'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "configure is an upsert");
    let r = &rows[0];
    assert_eq!(r.get::<_, Option<String>>(0).as_deref(), Some("ns"));
    assert_eq!(r.get::<_, Option<String>>(1).as_deref(), Some("tk"));
    assert_eq!(r.get::<_, Option<i32>>(2), Some(30));
    assert_eq!(r.get::<_, i32>(3), 4);
    assert_eq!(r.get::<_, i32>(4), 5);
    assert_eq!(r.get::<_, i32>(5), 0);
    assert_eq!(r.get::<_, i32>(6), 0);
    assert_eq!(popped.len(), 1);
    let lease_seconds: f64 = sql
        .query_one(
            "SELECT extract(epoch FROM lease_expires_at - lease_acquired_at)::float8 \
             FROM queen.log_consumers WHERE worker_id = $1",
            &[&popped[0]["leaseId"].as_str().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        lease_seconds, 17.0,
        "a pop leases for the queue's leaseTime"
    );
}

/// GET /health answers 200 with status healthy.
#[actix_rt::test]
async fn health_answers_200_healthy() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (status, body) = b.get("/health").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "healthy", "{body}");
}

/// An ack without a partitionId answers 400 with a JSON error and applies nothing.
#[actix_rt::test]
async fn an_ack_without_a_partition_id_answers_400_and_applies_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("malformed", "Default", &numbers(0..2)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/malformed").await;
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().unwrap().to_owned();
    let mut no_partition = entry(&batch[1], "completed", None);
    no_partition.as_object_mut().unwrap().remove("partitionId");

    // Act
    let (single, single_body) = b.post("/api/v1/ack", &no_partition).await;
    let (many, many_body) = b
        .post(
            "/api/v1/ack/batch",
            &json!({
                "acknowledgments": [entry(&batch[0], "completed", None), no_partition],
                "consumerGroup": null,
            }),
        )
        .await;

    // Assert
    for (status, body) in [(single, &single_body), (many, &many_body)] {
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "no JSON error in {body}"
        );
    }
    assert_eq!(
        consumer_row(&b, pid, "__QUEUE_MODE__").await,
        (-1, Some(lease)),
        "the valid entry of a refused batch was applied"
    );
}

/// Ack fields of the wrong type answer 400 naming the field and apply nothing; a partition
/// id sent as a JSON number and a transaction id written with JSON escapes are the same
/// ack as their plain forms (fields are read from the body without a JSON value each, so
/// these are the cases that reading has to get right).
#[actix_rt::test]
async fn ack_fields_of_the_wrong_type_are_refused_and_escaped_or_numeric_forms_ack() {
    // Arrange: two messages under one lease, transaction ids `tx-a` and `tx-b`.
    let b = TestBroker::start().await;
    let items: Vec<Value> = ["tx-a", "tx-b"]
        .iter()
        .map(|t| json!({"queue": "fields", "transactionId": t, "payload": t}))
        .collect();
    let (status, answer) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let batch = b.pop_messages("/api/v1/pop/queue/fields?batch=2").await;
    assert_eq!(batch.len(), 2);
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().unwrap().to_owned();
    let wrong = [
        (
            "transactionId",
            json!(5),
            "acknowledgments[0].transactionId must be a string",
        ),
        (
            "status",
            json!(["completed"]),
            "acknowledgments[0].status must be a string",
        ),
        (
            "leaseId",
            json!({"id": 1}),
            "acknowledgments[0].leaseId must be a string",
        ),
        (
            "partitionId",
            json!(true),
            "acknowledgments[0].partitionId is required",
        ),
    ];

    // Act + Assert: each wrong type is a 400 naming its field, and the lease stays.
    for (field, value, message) in wrong {
        let mut bad = entry(&batch[0], "completed", None);
        bad[field] = value;
        let (status, body) = b
            .post("/api/v1/ack/batch", &json!({ "acknowledgments": [bad] }))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(message), "{field}: {body}");
    }
    let (status, body) = b
        .post(
            "/api/v1/ack/batch",
            &json!({ "acknowledgments": [entry(&batch[0], "completed", None)],
                     "consumerGroup": 7 }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"], "consumerGroup must be a string or null",
        "{body}"
    );
    assert_eq!(
        consumer_row(&b, pid, "__QUEUE_MODE__").await,
        (-1, Some(lease.clone()))
    );

    // Act: the partition id as a number, the transaction ids with escapes.
    let body = format!(
        r#"{{"acknowledgments": [
              {{"transactionId": "tx-a", "partitionId": {pid}, "leaseId": "{lease}"}},
              {{"transactionId": "tx-b", "partitionId": "{pid}", "leaseId": "{lease}",
                "status": "completed", "consumerGroup": null}}]}}"#
    );
    let (status, answer) = b
        .post_raw("/api/v1/ack/batch", "application/json", body.into_bytes())
        .await;

    // Assert: both acked, the lease released, answered as sent.
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer[0]["transactionId"], "tx-a", "{answer}");
    assert_eq!(answer[1]["transactionId"], "tx-b", "{answer}");
    assert_eq!(answer[0]["partitionId"], pid.to_string(), "{answer}");
    assert!(
        answer
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["success"] == true),
        "{answer}"
    );
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, None));
}

/// POSTs with no body and no content type, as the client's lease extend does.
async fn post_empty(b: &TestBroker, path: &str) -> (StatusCode, Value) {
    let response = b.http.post(b.url(path)).send().await.expect("request");
    let status = response.status();
    let bytes = response.bytes().await.expect("answer");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("a JSON answer")
    };
    (status, body)
}
