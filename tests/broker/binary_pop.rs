//! `QPF1` framed pop (`frames=true`): whole stored records with the claim's start/end, the
//! answer identity, times to the millisecond, and acks of the decoded messages.

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::qpb1::{compress_frames, framed, Frame};
use crate::support::qpf1::{self, Answer};
use crate::support::{payloads, TestBroker};

/// GETs a framed pop; returns the status, the content type and the raw body.
async fn pop_framed(b: &TestBroker, path_and_query: &str) -> (StatusCode, String, Vec<u8>) {
    let response = b
        .http
        .get(b.url(path_and_query))
        .send()
        .await
        .expect("request reaches the broker");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

/// Pops framed and decodes, asserting a 200 with the framed content type.
async fn pop_answer(b: &TestBroker, path_and_query: &str) -> Answer {
    let (status, content_type, body) = pop_framed(b, path_and_query).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(content_type, "application/x-queen-pop");
    qpf1::decode(&body)
}

/// The stored segment times of a partition, in offset order.
async fn segment_times(b: &TestBroker, partition_id: i64) -> Vec<DateTime<Utc>> {
    b.sql()
        .await
        .query(
            "SELECT created_at FROM queen.log_segments WHERE partition_id = $1 ORDER BY base_offset",
            &[&partition_id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A framed pop after a JSON push carries the answer identity, the payloads, offsets,
/// partition id and millisecond times, and its decoded messages can be acked.
#[actix_rt::test]
async fn a_framed_pop_after_a_json_push_decodes_to_the_pushed_messages_which_ack() {
    // Arrange
    let b = TestBroker::start().await;
    let pushed = b
        .push("fq", "lane", &[json!({"a": 1}), json!("two"), json!([3])])
        .await;
    let partition_id = pushed[0]["partitionId"].as_str().unwrap().to_owned();

    // Act
    let answer = pop_answer(
        &b,
        "/api/v1/pop/queue/fq/partition/lane?batch=10&frames=true",
    )
    .await;
    let messages = answer.messages();
    let acks = b.ack_all(&messages, "completed", None).await;
    let after = b
        .pop_messages("/api/v1/pop/queue/fq/partition/lane?batch=10")
        .await;

    // Assert
    assert_eq!(answer.queue, "fq");
    assert_eq!(answer.consumer_group, "__QUEUE_MODE__");
    assert!(!answer.lease_id.is_empty());
    assert_eq!(answer.claims.len(), 1);
    assert_eq!(answer.claims[0].partition_id.to_string(), partition_id);
    assert_eq!((answer.claims[0].start, answer.claims[0].end), (0, 2));
    assert_eq!(answer.claims[0].delivery_attempt, 1);
    assert_eq!(
        payloads(&messages),
        [json!({"a": 1}), json!("two"), json!([3])]
    );
    let offsets: Vec<&Value> = messages.iter().map(|m| &m["offset"]).collect();
    assert_eq!(offsets, [&json!(0), &json!(1), &json!(2)]);
    for (m, p) in messages.iter().zip(&pushed) {
        assert_eq!(m["id"], p["messageId"]);
        assert_eq!(m["transactionId"], p["transactionId"]);
        assert_eq!(m["partitionId"], partition_id);
        assert_eq!(m["leaseId"], answer.lease_id);
    }
    let stored = segment_times(&b, partition_id.parse().unwrap()).await;
    assert_eq!(
        answer.claims[0].records[0].created_at_us,
        stored[0].timestamp_micros()
    );
    assert_eq!(
        messages[0]["createdAt"],
        stored[0].format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    );
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    assert!(after.is_empty(), "acked messages came back: {after:?}");
}

/// After a flag-8 push the framed pop ships the client's compressed group bytes as the
/// record (codec 1), and the messages keep the client's ids; a consumer group is named in
/// the answer.
#[actix_rt::test]
async fn a_framed_pop_after_a_flag_8_push_ships_the_client_bytes_as_the_record() {
    // Arrange
    let b = TestBroker::start().await;
    let frames: Vec<Frame> = (0..4)
        .map(|i| Frame::new(&format!("t{i}"), &format!(r#"{{"k":{i}}}"#)))
        .collect();
    let z = compress_frames(&frames);
    let (status, body) = b
        .post_raw(
            "/api/v1/push",
            "application/x-queen-push",
            framed(&[("f8", "p", 4, &z)]),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Act
    let answer = pop_answer(
        &b,
        "/api/v1/pop/queue/f8/partition/p?batch=10&consumerGroup=g1&frames=true",
    )
    .await;
    let messages = answer.messages();
    let acks = b.ack_all(&messages, "completed", Some("g1")).await;

    // Assert
    assert_eq!(answer.consumer_group, "g1");
    let record = &answer.claims[0].records[0];
    assert_eq!((record.codec, record.count, record.base_offset), (1, 4, 0));
    assert_eq!(record.bytes, z, "the stored group ships as it is");
    let ids: Vec<String> = frames.iter().map(|f| f.id.to_string()).collect();
    let got: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(got, ids);
    assert_eq!(messages[3]["transactionId"], "t3");
    assert_eq!(messages[3]["consumerGroup"], "g1");
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
}

/// Two pops of three from one ten-message segment each ship the whole record, with start
/// and end marking the three delivered messages.
#[actix_rt::test]
async fn a_claim_starting_mid_record_ships_the_whole_record_with_start_and_end() {
    // Arrange
    let b = TestBroker::start().await;
    let values: Vec<Value> = (0..10).map(|n| json!({ "n": n })).collect();
    b.push("mid", "p", &values).await;
    let path = "/api/v1/pop/queue/mid/partition/p?batch=3&frames=true";

    // Act
    let first = pop_answer(&b, path).await;
    let first_messages = first.messages();
    b.ack_all(&first_messages, "completed", None).await;
    let second = pop_answer(&b, path).await;
    let second_messages = second.messages();

    // Assert
    for (answer, start) in [(&first, 0u64), (&second, 3)] {
        let claim = &answer.claims[0];
        assert_eq!((claim.start, claim.end), (start, start + 2));
        assert_eq!(claim.records.len(), 1);
        assert_eq!(
            (claim.records[0].base_offset, claim.records[0].count),
            (0, 10)
        );
    }
    assert_eq!(payloads(&first_messages), values[0..3]);
    assert_eq!(payloads(&second_messages), values[3..6]);
    let offsets: Vec<&Value> = second_messages.iter().map(|m| &m["offset"]).collect();
    assert_eq!(offsets, [&json!(3), &json!(4), &json!(5)]);
}

/// A framed pop with nothing to deliver is a bodiless 204.
#[actix_rt::test]
async fn an_empty_framed_pop_is_a_204() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (status, _, body) = pop_framed(&b, "/api/v1/pop/queue/nothing?frames=true").await;

    // Assert
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(body.is_empty());
}

/// A wildcard framed pop claiming two partitions answers one claim per partition, each with
/// its own partition id, name and records, under one lease.
#[actix_rt::test]
async fn a_framed_pop_claiming_two_partitions_answers_one_claim_per_partition() {
    // Arrange
    let b = TestBroker::start().await;
    let one = b.push("two", "p1", &[json!(1), json!(2)]).await;
    let two = b.push("two", "p2", &[json!(3)]).await;

    // Act
    let answer = pop_answer(
        &b,
        "/api/v1/pop/queue/two?partitions=2&batch=10&frames=true",
    )
    .await;
    let messages = answer.messages();
    let acks = b.ack_all(&messages, "completed", None).await;

    // Assert
    let mut claims: Vec<(String, String, u64, u64)> = answer
        .claims
        .iter()
        .map(|c| {
            (
                c.partition.clone(),
                c.partition_id.to_string(),
                c.start,
                c.end,
            )
        })
        .collect();
    claims.sort();
    assert_eq!(
        claims,
        [
            (
                "p1".into(),
                one[0]["partitionId"].as_str().unwrap().into(),
                0,
                1
            ),
            (
                "p2".into(),
                two[0]["partitionId"].as_str().unwrap().into(),
                0,
                0
            ),
        ]
    );
    let mut got = payloads(&messages);
    got.sort_by_key(|v| v.as_i64());
    assert_eq!(got, [json!(1), json!(2), json!(3)]);
    assert!(messages.iter().all(|m| m["leaseId"] == answer.lease_id));
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
}
