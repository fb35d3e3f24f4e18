//! `POST /api/v1/partitions/changed` over real HTTP and a real PostgreSQL: pages by name,
//! `since` inclusive, `safeTime` in its one fixed format, watermarks consistent with
//! fetch, and a write committed late by a slow transaction found by the next call. The
//! same across two broker processes with concurrent writers is `nodes::changed`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// One call for one queue; asserts a 200 with one entry and returns (safeTime, entry).
pub async fn changed(b: &TestBroker, entry: Value) -> (String, Value) {
    let (status, body) = b
        .post("/api/v1/partitions/changed", &json!({"entries": [entry]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let safe = body["safeTime"].as_str().expect("a safeTime").to_owned();
    assert_fixed_format(&safe);
    assert_eq!(body["entries"].as_array().map(Vec::len), Some(1), "{body}");
    (safe, body["entries"][0].clone())
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, exactly.
pub fn assert_fixed_format(t: &str) {
    let ok = t.len() == 27
        && t.bytes().enumerate().all(|(i, c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            26 => c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(ok, "not the fixed format: {t:?}");
}

/// Names of a page's partitions.
fn names(entry: &Value) -> Vec<String> {
    entry["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Every partition, paged by name with `next` echoed as `after`, each once; lastOffset
/// and logStart equal fetch's highWatermark - 1 and logStartOffset; an unknown queue is
/// UNKNOWN_TOPIC_OR_PARTITION; a malformed `since` is a 400 JSON error.
#[actix_rt::test]
async fn pages_list_every_partition_once_by_name_with_fetch_s_watermarks() {
    let b = TestBroker::start().await;
    for (p, n) in [("c", 1), ("a", 3), ("e", 2), ("b", 1), ("d", 4)] {
        let payloads: Vec<Value> = (0..n).map(|i| json!(i)).collect();
        b.push("ch", p, &payloads).await;
    }

    let mut seen = Vec::new();
    let mut after = Value::Null;
    let mut pages = 0;
    loop {
        let (_, entry) = changed(&b, json!({"queue": "ch", "limit": 2, "after": after})).await;
        pages += 1;
        seen.extend(names(&entry));
        for p in entry["partitions"].as_array().into_iter().flatten() {
            let (_, f) = b
                .post(
                    "/api/v1/fetch",
                    &json!({"entries": [{"queue": "ch", "partition": p["name"], "offset": 0}]}),
                )
                .await;
            let f = &f["entries"][0];
            assert_eq!(
                p["lastOffset"].as_i64().map(|o| o + 1),
                f["highWatermark"].as_i64(),
                "{p} {f}"
            );
            assert_eq!(p["logStart"], f["logStartOffset"], "{p} {f}");
            assert_eq!(p["id"].as_str(), f["partitionId"].as_str(), "{p} {f}");
            assert_fixed_format(p["lastWriteAt"].as_str().unwrap_or(""));
        }
        match &entry["next"] {
            Value::String(n) => after = json!(n),
            _ => break,
        }
    }
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    assert_eq!(pages, 3);

    let (_, unknown) = changed(&b, json!({"queue": "nope", "limit": 1000})).await;
    assert_eq!(unknown["error"], "UNKNOWN_TOPIC_OR_PARTITION", "{unknown}");
    let (status, body) = b
        .post(
            "/api/v1/partitions/changed",
            &json!({"entries": [{"queue": "ch", "since": "last tuesday"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap_or("").contains("since"),
        "{body}"
    );
    b.stop().await;
}

/// With `since` = the previous answer's safeTime, only partitions written since come back,
/// and a write that a slow transaction held open across the previous call, committed only
/// after it, is found though its lastWriteAt is older than that call.
#[actix_rt::test]
async fn a_write_committed_late_by_a_slow_transaction_is_not_skipped_by_the_next_since() {
    // Arrange: three partitions, last written an hour ago.
    let b = TestBroker::start().await;
    for p in ["old", "slow", "fresh"] {
        b.push("lt", p, &[json!(1)]).await;
    }
    let sql = b.sql().await;
    sql.execute(
        // Through `AT TIME ZONE 'UTC'` (immutable): Citus refuses the STABLE
        // `timestamptz - interval` of a column in an UPDATE of a distributed table.
        "UPDATE queen.log_partitions
         SET last_write_at = (last_write_at AT TIME ZONE 'UTC' - interval '1 hour')
             AT TIME ZONE 'UTC'",
        &[],
    )
    .await
    .expect("age the partitions");
    // A writer that stamps its write as the broker's writers do, then stalls.
    let mut slow = b.sql().await;
    let tx = slow.transaction().await.expect("begin");
    // The stamp read first and bound: Citus refuses a VOLATILE function in an UPDATE of a
    // distributed table (the broker's writers read the clock into a variable too).
    let stamp: std::time::SystemTime = tx
        .query_one("SELECT date_trunc('second', clock_timestamp())", &[])
        .await
        .expect("the slow write's stamp")
        .get(0);
    tx.execute(
        "UPDATE queen.log_partitions p SET last_write_at = $1
         FROM queen.queues q WHERE q.id = p.queue_id AND q.name = 'lt' AND p.name = 'slow'",
        &[&stamp],
    )
    .await
    .expect("the slow write");
    // Two seconds on, so a bare now(), and now() - 1 s truncated to the second, would
    // already lie above its stamp.
    tokio::time::sleep(Duration::from_millis(2100)).await;

    // Act: a pass while it is open, then a push, the commit, and the next pass.
    let (safe, first) = changed(&b, json!({"queue": "lt", "limit": 1000})).await;
    b.push("lt", "fresh", &[json!(2)]).await;
    tx.commit().await.expect("commit");
    let (_, next) = changed(&b, json!({"queue": "lt", "limit": 1000, "since": safe})).await;

    // Assert
    assert_eq!(names(&first), ["fresh", "old", "slow"]);
    assert_eq!(names(&next), ["fresh", "slow"], "since {safe}: {next}");
    b.stop().await;
}
