//! Registration: a new name is fresh, the same hash is not, another hash is a 409 that
//! changes nothing unless `reset`, which wipes the query's state and records the hash.

use reqwest::StatusCode;
use serde_json::json;

use super::{register, state};
use crate::support::TestBroker;

#[actix_rt::test]
async fn fresh_then_same_then_conflict_then_reset_wipes_state() {
    let b = TestBroker::start().await;
    b.push("src", "Default", &[json!(1)]).await;
    let (s1, first) = register(&b, "q", "src", "h1", false).await;
    assert_eq!(s1, StatusCode::OK, "{first}");
    assert_eq!(
        (&first["success"], &first["fresh"]),
        (&json!(true), &json!(true))
    );
    let id = first["query_id"].as_str().expect("query_id").to_owned();

    let (s2, same) = register(&b, "q", "src", "h1", false).await;
    assert_eq!(s2, StatusCode::OK, "{same}");
    assert_eq!(
        (&same["fresh"], &same["reset"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(same["query_id"], json!(id), "a known name keeps its id");

    // Some state, written through an idle flush.
    let pid = partition(&b).await;
    let (s, flushed) = b
        .post(
            "/streams/v1/cycle",
            &json!({"query_id": id, "partition_id": pid, "consumer_group": "streams.q",
                    "state_ops": [{"type": "upsert", "key": "k", "value": 1}], "ack": null}),
        )
        .await;
    assert_eq!(
        (s, &flushed["success"]),
        (StatusCode::OK, &json!(true)),
        "{flushed}"
    );

    let (s3, conflict) = register(&b, "q", "src", "h2", false).await;
    assert_eq!(s3, StatusCode::CONFLICT, "{conflict}");
    assert!(
        conflict["error"]
            .as_str()
            .is_some_and(|e| e.contains("config_hash")),
        "{conflict}"
    );
    assert_eq!(
        state(&b, &id, &pid, json!({})).await.len(),
        1,
        "409 changed nothing"
    );
    let (s4, still) = register(&b, "q", "src", "h1", false).await;
    assert_eq!(s4, StatusCode::OK, "the old hash still registered: {still}");

    let (s5, reset) = register(&b, "q", "src", "h2", true).await;
    assert_eq!(s5, StatusCode::OK, "{reset}");
    assert_eq!(
        (&reset["fresh"], &reset["reset"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(reset["query_id"], json!(id));
    assert!(
        state(&b, &id, &pid, json!({})).await.is_empty(),
        "reset wiped the state"
    );
    let (s6, after) = register(&b, "q", "src", "h2", false).await;
    assert_eq!(
        (s6, &after["reset"]),
        (StatusCode::OK, &json!(false)),
        "{after}"
    );
}

#[actix_rt::test]
async fn names_are_per_tenant_and_bad_input_is_a_400() {
    let b = TestBroker::start().await;
    let (status, body) = b
        .post(
            "/streams/v1/queries",
            &json!({"name": "q", "config_hash": "h"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]
        .as_str()
        .is_some_and(|e| e.contains("source_queue")));
    let (status, body) = b
        .post(
            "/streams/v1/state/get",
            &json!({"query_id": uuid::Uuid::now_v7().to_string(), "partition_id": "1"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let rows: i64 = b
        .sql()
        .await
        .query_one("SELECT count(*) FROM queen.streams_queries", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(rows, 0);
}

/// The id of the one partition of `src`.
pub async fn partition(b: &TestBroker) -> String {
    let id: i64 = b
        .sql()
        .await
        .query_one(
            "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = 'src' LIMIT 1",
            &[],
        )
        .await
        .expect("the partition")
        .get(0);
    id.to_string()
}
