//! `POST /api/v1/fetch?frames=true` over real HTTP and a real PostgreSQL: the `QPF1` answer
//! decodes (with the test-side decoder, `support::qpf1`) to the records the JSON answer
//! gives, entry by entry, with the JSON entry's keys in the own-keys section; stored
//! segments ship whole; a stored-byte budget cuts on a segment end and reading on from
//! `nextOffset` gives every record once; an encrypted queue's payloads ship opened.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, sql_count};
use crate::support::qpf1::{self, Answer};
use crate::support::TestBroker;

const KEY: (&str, &str) = (
    "QUEEN_ENCRYPTION_KEY",
    "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
);

/// One entry asking `queue`/`partition` from `offset`.
fn ask(queue: &str, partition: &str, offset: i64) -> Value {
    json!({"queue": queue, "partition": partition, "offset": offset, "maxBytes": 8 << 20})
}

/// Pushes `n` numbered messages from `from` as one push (one segment) with ids `t<n>`.
async fn push_numbered(b: &TestBroker, queue: &str, partition: &str, from: i64, n: i64) {
    let items: Vec<Value> = (from..from + n)
        .map(|i| {
            json!({"queue": queue, "partition": partition, "payload": {"n": i, "pad": "x".repeat(40)},
                        "transactionId": format!("{partition}-t{i}")})
        })
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({"items": items})).await;
    assert!(status.is_success(), "{body}");
}

/// The JSON answer's entries.
async fn fetch_json(b: &TestBroker, entries: &[Value], max_bytes: i64) -> Vec<Value> {
    let (status, body) = b
        .post(
            "/api/v1/fetch",
            &json!({"entries": entries, "maxBytes": max_bytes}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["entries"].as_array().cloned().unwrap_or_default()
}

/// The framed answer, decoded; asserts a 200 with the framed content type.
async fn fetch_framed(b: &TestBroker, entries: &[Value], max_bytes: i64) -> Answer {
    let response = b
        .http
        .post(b.url("/api/v1/fetch?frames=true"))
        .json(&json!({"entries": entries, "maxBytes": max_bytes}))
        .send()
        .await
        .expect("request reaches the broker");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.bytes().await.unwrap().to_vec();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(content_type, "application/x-queen-pop");
    qpf1::decode(&body)
}

/// `(offset, transactionId, payload)` of a record or a decoded message.
type Triple = (i64, String, Value);

/// `(offset, transactionId, payload)` of JSON records.
fn json_records(entry: &Value) -> Vec<Triple> {
    entry["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["offset"].as_i64().unwrap(),
                r["transactionId"].as_str().unwrap().to_owned(),
                r["payload"].clone(),
            )
        })
        .collect()
}

/// Per asked entry, its own-keys entry and the `(offset, transactionId, payload)` of its
/// claim's messages (claims belong, in order, to the entries with `recordCount > 0`).
fn framed_entries(answer: Answer) -> Vec<(Value, Vec<Triple>)> {
    let keys = answer.own_keys["entries"].as_array().cloned().unwrap();
    let mut claims = answer.claims.into_iter();
    let entries: Vec<_> = keys
        .into_iter()
        .map(|entry| {
            let count = entry["recordCount"].as_i64().expect("a recordCount");
            if count == 0 {
                return (entry, Vec::new());
            }
            let claim = claims.next().expect("a claim per delivering entry");
            assert_eq!(claim.delivery_attempt, 0);
            assert_eq!(claim.partition, entry["partition"].as_str().unwrap());
            assert_eq!(
                claim.partition_id.to_string(),
                entry["partitionId"].as_str().unwrap()
            );
            let one = Answer {
                own_keys: Value::Null,
                queue: answer.queue.clone(),
                lease_id: answer.lease_id.clone(),
                consumer_group: answer.consumer_group.clone(),
                claims: vec![claim],
            };
            let records: Vec<_> = one
                .messages()
                .iter()
                .map(|m| {
                    (
                        m["offset"].as_i64().unwrap(),
                        m["transactionId"].as_str().unwrap().to_owned(),
                        m["data"].clone(),
                    )
                })
                .collect();
            assert_eq!(records.len() as i64, count, "{entry}");
            (entry, records)
        })
        .collect();
    assert!(claims.next().is_none(), "a claim of no entry");
    entries
}

/// The JSON entry without its records, and the framed own-keys entry without its count.
fn heads(json_entry: &Value, framed_entry: &Value) -> (Value, Value) {
    let mut j = json_entry.clone();
    j.as_object_mut().unwrap().remove("records");
    let mut f = framed_entry.clone();
    f.as_object_mut().unwrap().remove("recordCount");
    (j, f)
}

/// Several entries (from the start, mid-segment, another partition, another queue, at the
/// high watermark, past it, an unknown queue): each framed entry carries the JSON entry's
/// keys and decodes to exactly its records; the stored segments ship whole, the first one
/// starting before a mid-segment offset; the header names no queue, lease or group.
#[actix_rt::test]
async fn a_framed_fetch_decodes_to_the_json_records_entry_by_entry() {
    // Arrange: ff/p holds 0-2, 3-4 and 5-8; ff/q 0-3; other/p 0-1.
    let b = TestBroker::start().await;
    push_numbered(&b, "ff", "p", 0, 3).await;
    push_numbered(&b, "ff", "p", 3, 2).await;
    push_numbered(&b, "ff", "p", 5, 4).await;
    push_numbered(&b, "ff", "q", 0, 4).await;
    push_numbered(&b, "other", "p", 0, 2).await;
    let entries = [
        ask("ff", "p", 0),
        ask("ff", "p", 4),
        ask("ff", "q", 2),
        ask("other", "p", 0),
        ask("ff", "p", 9),
        ask("ff", "p", 12),
        ask("nosuch", "p", 0),
    ];

    // Act
    let json = fetch_json(&b, &entries, 8 << 20).await;
    let answer = fetch_framed(&b, &entries, 8 << 20).await;
    let cursors = sql_count(&b, "SELECT count(*) FROM queen.log_consumers").await;

    // Assert
    assert_eq!(cursors, 0, "a framed fetch wrote a cursor");
    assert_eq!(
        (
            answer.queue.as_str(),
            answer.lease_id.as_str(),
            answer.consumer_group.as_str()
        ),
        ("", "", "")
    );
    assert_eq!(answer.claims.len(), 4);
    let mid = &answer.claims[1];
    assert_eq!((mid.start, mid.end), (4, 8));
    let bases: Vec<u64> = mid.records.iter().map(|r| r.base_offset).collect();
    assert_eq!(
        bases,
        [3, 5],
        "whole segments, the first before the asked offset"
    );
    assert!(
        mid.records.iter().all(|r| r.codec == 1),
        "stored blobs ship as they are"
    );
    let framed = framed_entries(answer);
    assert_eq!(framed.len(), entries.len());
    for (json_entry, (framed_entry, records)) in json.iter().zip(&framed) {
        let (j, f) = heads(json_entry, framed_entry);
        assert_eq!(j, f);
        assert_eq!(json_records(json_entry), *records, "{json_entry}");
    }
    let counts: Vec<usize> = framed.iter().map(|(_, r)| r.len()).collect();
    assert_eq!(counts, [9, 5, 2, 2, 0, 0, 0]);
    assert_eq!(framed[5].0["error"], "OFFSET_OUT_OF_RANGE");
    assert_eq!(framed[6].0["error"], "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(framed[4].0["nextOffset"], 9);
    assert!(framed[4].0.get("error").is_none());
    b.stop().await;
}

/// A call budget of one byte: the framed call still delivers (the call's first segment,
/// whole from the asked offset, the JSON answer's record first), the next entry nothing
/// and no error; reading on from each `nextOffset` to the high watermark gives every
/// record once, exactly the JSON records of the whole partition.
#[actix_rt::test]
async fn a_budget_that_cuts_a_framed_call_ends_on_a_segment_and_reading_on_misses_nothing() {
    // Arrange: ff/p holds 0-3, 4-7 and 8-11; ff/q 0-3.
    let b = TestBroker::start().await;
    for from in [0, 4, 8] {
        push_numbered(&b, "ff", "p", from, 4).await;
    }
    push_numbered(&b, "ff", "q", 0, 4).await;
    let entries = [ask("ff", "p", 1), ask("ff", "q", 0)];

    // Act
    let json_cut = fetch_json(&b, &entries, 1).await;
    let cut = framed_entries(fetch_framed(&b, &entries, 1).await);
    let mut next = [1i64, 0];
    let mut read: [Vec<Triple>; 2] = [Vec::new(), Vec::new()];
    for _call in 0..20 {
        let asks = [ask("ff", "p", next[0]), ask("ff", "q", next[1])];
        let got = framed_entries(fetch_framed(&b, &asks, 1).await);
        for (i, (entry, records)) in got.into_iter().enumerate() {
            next[i] = entry["nextOffset"].as_i64().unwrap();
            read[i].extend(records);
        }
        if next == [12, 4] {
            break;
        }
    }
    let whole = fetch_json(&b, &[ask("ff", "p", 1), ask("ff", "q", 0)], 8 << 20).await;

    // Assert
    assert_eq!(json_records(&json_cut[0]).len(), 1);
    let (first, records) = &cut[0];
    assert_eq!(first["recordCount"], 3, "{first}");
    assert_eq!(first["nextOffset"], 4);
    assert_eq!(records[..1], json_records(&json_cut[0])[..]);
    assert_eq!(records[..], json_records(&whole[0])[..3]);
    assert_eq!(cut[1].0["recordCount"], 0);
    assert_eq!(cut[1].0["nextOffset"], 0);
    assert!(cut[1].0.get("error").is_none());
    assert_eq!(next, [12, 4]);
    assert_eq!(read[0], json_records(&whole[0]));
    assert_eq!(read[1], json_records(&whole[1]));
    b.stop().await;
}

/// On an encrypted queue the stored blobs hold no plaintext (a raw SELECT), and the framed
/// fetch ships the payloads opened (raw frames, codec 0, no frame flag 4), the JSON
/// answer's records exactly.
#[actix_rt::test]
async fn a_framed_fetch_of_an_encrypted_queue_ships_opened_payloads() {
    // Arrange
    let b = TestBroker::start_with(&[KEY]).await;
    configure(&b, "vault", json!({"encryptionEnabled": true})).await;
    let secrets: Vec<Value> = (0..5)
        .map(|i| json!({"card": format!("4111-{i}")}))
        .collect();
    b.push("vault", "Default", &secrets).await;
    b.push("vault", "Default", &[json!({"card": "4111-5"})])
        .await;
    let entries = [ask("vault", "Default", 2)];

    // Act
    let json = fetch_json(&b, &entries, 8 << 20).await;
    let answer = fetch_framed(&b, &entries, 8 << 20).await;
    let blobs: Vec<Vec<u8>> = b
        .sql()
        .await
        .query(
            "SELECT s.blob FROM queen.log_segments s \
             JOIN queen.log_partitions p ON p.id = s.partition_id \
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'vault'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();

    // Assert
    assert_eq!(blobs.len(), 2);
    for blob in &blobs {
        let raw = zstd::decode_all(blob.as_slice()).expect("segments are zstd");
        assert!(!raw.windows(4).any(|w| w == b"4111"), "plaintext at rest");
    }
    assert!(answer.claims[0].records.iter().all(|r| r.codec == 0));
    let framed = framed_entries(answer);
    let payloads: Vec<Value> = framed[0].1.iter().map(|r| r.2.clone()).collect();
    assert_eq!(payloads[..3], secrets[2..]);
    assert_eq!(payloads[3], json!({"card": "4111-5"}));
    assert_eq!(framed[0].1, json_records(&json[0]));
    b.stop().await;
}

/// A `frames` value that is not a boolean is a 400 naming it, with a JSON body.
#[actix_rt::test]
async fn a_malformed_frames_flag_is_a_400_naming_it() {
    // Arrange
    let b = TestBroker::start().await;
    push_numbered(&b, "ff", "p", 0, 2).await;

    // Act
    let (status, body) = b
        .post(
            "/api/v1/fetch?frames=maybe",
            &json!({"entries": [ask("ff", "p", 0)]}),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.to_string().contains("frames must be true or false"),
        "{body}"
    );
    b.stop().await;
}
