//! `POST /api/v1/fetch` over real HTTP and a real PostgreSQL: the offsets a pop reports,
//! before and after retention removed the head; out-of-range on both sides; the entry
//! ceiling; the byte budgets; tenants and roles. Nothing a fetch does moves a cursor.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::retention::{age_segments, until_segments, FAST_SWEEP, PAST_RETENTION};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::fixtures::{configure, sql_count};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;
use crate::tenants::HS256;

/// One entry asking `queue`/`partition` from `offset`.
fn ask(queue: &str, partition: &str, offset: i64) -> Value {
    json!({"queue": queue, "partition": partition, "offset": offset, "maxBytes": 8 << 20})
}

/// Fetches `entries` with the call budget `max_bytes`; asserts a 200 with one answer
/// entry per asked entry and returns them.
async fn fetch(b: &TestBroker, entries: &[Value], max_bytes: Value) -> Vec<Value> {
    let (status, body) = b
        .post(
            "/api/v1/fetch",
            &json!({"entries": entries, "maxBytes": max_bytes}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answered = body["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(answered.len(), entries.len(), "{body}");
    answered
}

/// `(offset, transactionId, payload)` of fetched records or popped messages.
fn triples(list: &Value, payload_key: &str) -> Vec<(i64, String, Value)> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["offset"].as_i64().expect("an offset"),
                m["transactionId"].as_str().expect("a txn").to_owned(),
                m[payload_key].clone(),
            )
        })
        .collect()
}

/// Pushes `n` numbered messages from `from` as one push (one segment) with ids `t<n>`.
async fn push_numbered(b: &TestBroker, queue: &str, from: i64, n: i64) {
    let items: Vec<Value> = (from..from + n)
        .map(|i| {
            json!({"queue": queue, "partition": "p", "payload": {"n": i},
                        "transactionId": format!("t{i}")})
        })
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({"items": items})).await;
    assert!(status.is_success(), "{body}");
}

/// Fetch answers the offsets, transaction ids and payloads a pop answers for the same
/// messages, reading from the start, from inside a segment, and again after retention
/// removed the first segment; the head it removed is out of range below, the high
/// watermark is valid and empty, past it is out of range; no cursor is written.
#[actix_rt::test]
async fn fetch_answers_the_pop_s_offsets_before_and_after_retention_removes_the_head() {
    // Arrange: three segments, offsets 0-2, 3-4 and 5-8.
    let b = TestBroker::start_with(FAST_SWEEP).await;
    configure(&b, "rf", json!({"retentionSeconds": 60})).await;
    push_numbered(&b, "rf", 0, 3).await;
    push_numbered(&b, "rf", 3, 2).await;
    push_numbered(&b, "rf", 5, 4).await;

    // Act: fetch everything, from inside the second segment, then pop it all.
    let all = fetch(&b, &[ask("rf", "p", 0), ask("rf", "p", 4)], json!(8 << 20)).await;
    let cursors_after_fetch = sql_count(&b, "SELECT count(*) FROM queen.log_consumers").await;
    let popped = b
        .pop_messages("/api/v1/pop/queue/rf/partition/p?batch=100&consumerGroup=g&autoAck=true")
        .await;

    // Assert
    assert_eq!(cursors_after_fetch, 0, "a fetch wrote a cursor");
    let popped = triples(&json!(popped), "data");
    assert_eq!(popped.len(), 9);
    assert_eq!(triples(&all[0]["records"], "payload"), popped);
    assert_eq!(triples(&all[1]["records"], "payload"), popped[4..]);
    for entry in &all {
        assert_eq!(
            (
                entry["highWatermark"].as_i64(),
                entry["logStartOffset"].as_i64()
            ),
            (Some(9), Some(0)),
            "{entry}"
        );
        assert!(entry.get("error").is_none(), "{entry}");
        assert!(
            entry["records"][0]["ts"]
                .as_str()
                .unwrap_or("")
                .ends_with('Z'),
            "{entry}"
        );
    }

    // Act: retention removes the first segment.
    age_segments(&b, "rf", "p", 0, PAST_RETENTION).await;
    until_segments(&b, "rf", 2).await;
    let after = fetch(
        &b,
        &[
            ask("rf", "p", 0),
            ask("rf", "p", 2),
            ask("rf", "p", 3),
            ask("rf", "p", 9),
            ask("rf", "p", 10),
        ],
        json!(8 << 20),
    )
    .await;
    let popped_h = b
        .pop_messages("/api/v1/pop/queue/rf/partition/p?batch=100&consumerGroup=h&autoAck=true")
        .await;

    // Assert: below the log start and past the high watermark are out of range, with the
    // watermarks; the rest is what a new group pops.
    for (i, entry) in after.iter().enumerate() {
        assert_eq!(
            (
                entry["highWatermark"].as_i64(),
                entry["logStartOffset"].as_i64()
            ),
            (Some(9), Some(3)),
            "{i}: {entry}"
        );
    }
    for i in [0, 1, 4] {
        assert_eq!(
            after[i]["error"], "OFFSET_OUT_OF_RANGE",
            "{i}: {}",
            after[i]
        );
        assert_eq!(after[i]["records"], json!([]), "{i}");
    }
    let popped_h = triples(&json!(popped_h), "data");
    assert_eq!(popped_h, popped[3..]);
    assert_eq!(triples(&after[2]["records"], "payload"), popped_h);
    assert!(
        after[3].get("error").is_none(),
        "at the high watermark: {}",
        after[3]
    );
    assert_eq!(after[3]["records"], json!([]));
    b.stop().await;
}

/// An unknown queue answers UNKNOWN_TOPIC_OR_PARTITION; a partition nobody wrote of a
/// known queue answers empty with both watermarks 0 (past 0: out of range).
#[actix_rt::test]
async fn unknown_queues_and_unwritten_partitions_answer_no_records() {
    let b = TestBroker::start().await;
    b.push("known", "p", &[json!(1)]).await;

    let got = fetch(
        &b,
        &[
            ask("nope", "p", 0),
            ask("known", "other", 0),
            ask("known", "other", 1),
        ],
        json!(null),
    )
    .await;

    assert_eq!(got[0]["error"], "UNKNOWN_TOPIC_OR_PARTITION", "{}", got[0]);
    assert!(got[1].get("error").is_none(), "{}", got[1]);
    assert_eq!(
        (
            got[1]["highWatermark"].clone(),
            got[1]["logStartOffset"].clone()
        ),
        (json!(0), json!(0))
    );
    assert_eq!(got[2]["error"], "OFFSET_OUT_OF_RANGE", "{}", got[2]);
    b.stop().await;
}

/// 1025 entries are refused with 400 and the JSON envelope; 1024 are served, one answer
/// entry each. A malformed entry is a 400 naming it.
#[actix_rt::test]
async fn more_than_1024_entries_is_a_400_json_error_and_1024_are_served() {
    let b = TestBroker::start().await;
    b.push("many", "p", &[json!(1)]).await;
    let entries = |n: usize| -> Vec<Value> { (0..n).map(|_| ask("many", "p", 0)).collect() };

    let (status, body) = b
        .post("/api/v1/fetch", &json!({"entries": entries(1025)}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap_or("").contains("1024"),
        "{body}"
    );

    let served = fetch(&b, &entries(1024), json!(8 << 20)).await;
    assert_eq!(served[0]["records"].as_array().map(Vec::len), Some(1));

    let (status, body) = b
        .post(
            "/api/v1/fetch",
            &json!({"entries": [{"queue": "many", "partition": "p", "offset": -1}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("entries[0].offset"),
        "{body}"
    );
    b.stop().await;
}

/// Byte budgets are clamped, never refused: 0, negative or a tiny budget still delivers
/// the call's first record (and only that), a budget of two records delivers two, a huge
/// one everything; a later entry past the call's budget answers its watermarks and no
/// records.
#[actix_rt::test]
async fn max_bytes_is_clamped_and_the_call_s_first_record_always_comes() {
    // Arrange: ten records of about 1 KiB each.
    let b = TestBroker::start().await;
    let big = "x".repeat(1000);
    for i in 0..10 {
        b.push("mb", "p", &[json!({"i": i, "pad": big})]).await;
    }
    b.push("mb", "q", &[json!(1)]).await;
    let count = |e: &Value| e["records"].as_array().map_or(0, Vec::len);

    for budget in [json!(0), json!(-7), json!(1), json!(500)] {
        let got = fetch(&b, &[ask("mb", "p", 0), ask("mb", "q", 0)], budget.clone()).await;
        assert_eq!(
            (count(&got[0]), count(&got[1])),
            (1, 0),
            "call budget {budget}"
        );
        assert_eq!(got[1]["highWatermark"], 1, "{budget}: {}", got[1]);
    }
    let two = fetch(&b, &[ask("mb", "p", 0)], json!(2500)).await;
    assert_eq!(count(&two[0]), 2);
    assert_eq!(two[0]["records"][1]["offset"], 1);
    let huge = fetch(&b, &[ask("mb", "p", 0), ask("mb", "q", 0)], json!(1e15)).await;
    assert_eq!((count(&huge[0]), count(&huge[1])), (10, 1));
    // An entry's own budget stops that entry only.
    let entry_budget = fetch(
        &b,
        &[
            json!({"queue": "mb", "partition": "p", "offset": 0, "maxBytes": 1}),
            ask("mb", "q", 0),
        ],
        json!(8 << 20),
    )
    .await;
    assert_eq!((count(&entry_budget[0]), count(&entry_budget[1])), (1, 1));
    b.stop().await;
}

/// A tenant reads only its own partitions: the same queue and partition names of another
/// tenant answer UNKNOWN_TOPIC_OR_PARTITION, and a read-only token suffices to fetch.
#[actix_rt::test]
async fn a_tenant_fetches_only_its_own_partitions_with_a_read_only_token() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let reader_of = |tenant: &str| {
        Caller::new(
            &b.base,
            &hs256(SECRET, &tenant_claims("r", Some(tenant), "read-only")),
        )
    };
    acme.push("orders", "eu", &[json!({"who": "acme"})]).await;
    Caller::admin_of(&b.base, "umbrella")
        .push("mine", "eu", &[json!(1)])
        .await;

    let body = json!({"entries": [ask("orders", "eu", 0)]});
    let (status, mine) = reader_of("acme").post("/api/v1/fetch", &body).await;
    let (status_other, theirs) = reader_of("umbrella").post("/api/v1/fetch", &body).await;
    let (push_status, _) = reader_of("acme")
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "orders", "payload": 1}]}),
        )
        .await;

    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!(
        mine["entries"][0]["records"][0]["payload"]["who"], "acme",
        "{mine}"
    );
    assert_eq!(status_other, StatusCode::OK, "{theirs}");
    assert_eq!(
        theirs["entries"][0]["error"], "UNKNOWN_TOPIC_OR_PARTITION",
        "{theirs}"
    );
    assert!(!theirs.to_string().contains("acme"), "{theirs}");
    assert_eq!(push_status, StatusCode::FORBIDDEN, "read-only may not push");
    b.stop().await;
}

/// On an encrypted queue fetch answers the payloads as pushed (opened with the node's key),
/// and an erased message keeps its offset with a `null` payload.
#[actix_rt::test]
async fn fetch_opens_encrypted_payloads_and_answers_an_erased_message_as_null() {
    // Arrange
    let b = TestBroker::start_with(&[(
        "QUEEN_ENCRYPTION_KEY",
        "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
    )])
    .await;
    configure(&b, "vault", json!({"encryptionEnabled": true})).await;
    let secrets: Vec<Value> = (0..3)
        .map(|i| json!({"card": format!("4111-{i}")}))
        .collect();
    b.push("vault", "p", &secrets).await;
    let first = fetch(&b, &[ask("vault", "p", 0)], json!(null)).await;
    let pid = first[0]["partitionId"]
        .as_str()
        .expect("a partition id")
        .to_owned();
    let txn = first[0]["records"][1]["transactionId"]
        .as_str()
        .expect("a txn")
        .to_owned();

    // Act
    let erased = b
        .http
        .delete(b.url(&format!("/api/v1/messages/{pid}/{txn}")))
        .send()
        .await
        .expect("the erase answers")
        .status();
    let after = fetch(&b, &[ask("vault", "p", 0)], json!(null)).await;

    // Assert
    assert_eq!(erased, StatusCode::OK);
    let got: Vec<Value> = first[0]["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["payload"].clone())
        .collect();
    assert_eq!(got, secrets);
    let got: Vec<Value> = after[0]["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["payload"].clone())
        .collect();
    assert_eq!(got, [secrets[0].clone(), Value::Null, secrets[2].clone()]);
    b.stop().await;
}
