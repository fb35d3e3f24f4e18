//! Encrypted queues: payloads are sealed at rest with the broker's AES-256-GCM key and
//! opened before any answer; a queue cannot be made encrypted on a broker without a key.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::configure;
use crate::support::{payloads, postgres, TestBroker};

const KEY: (&str, &str) = (
    "QUEEN_ENCRYPTION_KEY",
    "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
);

/// The decompressed stored bytes of every segment of a queue.
async fn stored_bytes(b: &TestBroker, queue: &str) -> Vec<u8> {
    let rows = b
        .sql()
        .await
        .query(
            "SELECT s.blob FROM queen.log_segments s \
             JOIN queen.log_partitions p ON p.id = s.partition_id \
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1",
            &[&queue],
        )
        .await
        .expect("read segments");
    let mut out = Vec::new();
    for row in rows {
        let blob: Vec<u8> = row.get(0);
        out.extend(zstd::decode_all(blob.as_slice()).expect("segments are zstd"));
    }
    out
}

/// On an encrypted queue the stored bytes never hold the payload, and pops return it as
/// pushed; a plain queue beside it still stores plain JSON.
#[actix_rt::test]
async fn an_encrypted_queue_stores_no_plaintext_and_pops_return_the_payload() {
    // Arrange
    let b = TestBroker::start_with(&[KEY]).await;
    configure(&b, "vault", json!({"encryptionEnabled": true})).await;
    let secrets: Vec<_> = (0..5)
        .map(|i| json!({"card": format!("4111-{i}")}))
        .collect();

    // Act
    b.push("vault", "Default", &secrets).await;
    b.push("open", "Default", &[json!({"card": "4111-plain"})])
        .await;
    let popped = b.pop_messages("/api/v1/pop/queue/vault?batch=10").await;
    let acks = b.ack_all(&popped, "completed", None).await;

    // Assert
    let sealed = stored_bytes(&b, "vault").await;
    assert!(!sealed.is_empty());
    assert!(
        !sealed.windows(4).any(|w| w == b"4111"),
        "plaintext found in an encrypted queue's segments"
    );
    assert!(stored_bytes(&b, "open")
        .await
        .windows(10)
        .any(|w| w == b"4111-plain"));
    assert_eq!(payloads(&popped), secrets);
    assert!(acks.iter().all(|a| a["success"] == json!(true)));
    b.stop().await;
}

/// A broker without a key refuses to make a queue encrypted (400, nothing changed), and
/// answers a clear 500, not a panic, when asked to pop one a keyed node filled.
#[actix_rt::test]
async fn a_broker_without_a_key_refuses_encryption_and_cannot_open_sealed_payloads() {
    // Arrange
    let pg = postgres::fresh_installed_database().await;
    let keyed = TestBroker::start_on(pg.clone(), &[KEY]).await;
    let keyless = TestBroker::start_on(pg, &[]).await;

    // Act
    let (refused, body) = keyless
        .post(
            "/api/v1/configure",
            &json!({"queue": "nokey", "options": {"encryptionEnabled": true}}),
        )
        .await;
    configure(&keyed, "sealed", json!({"encryptionEnabled": true})).await;
    keyed
        .push("sealed", "Default", &[json!({"pin": 1234})])
        .await;
    let (status, error) = keyless.get("/api/v1/pop/queue/sealed?autoAck=true").await;

    // Assert
    assert_eq!(refused, StatusCode::BAD_REQUEST);
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("QUEEN_ENCRYPTION_KEY"));
    let exists: i64 = keyless
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM queen.queues WHERE name = 'nokey'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(exists, 0, "a refused configure created the queue");
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(error["error"].is_string(), "{error}");
    keyed.stop().await;
    keyless.stop().await;
}

/// A client-compressed (flag 8) push into an encrypted queue is stored sealed, not as the
/// client's plaintext bytes, and a framed pop of it answers JSON with the payloads opened
/// (clients fail on a framed answer carrying encrypted frames).
#[actix_rt::test]
async fn binary_pushes_into_an_encrypted_queue_are_sealed_and_framed_pops_answer_json() {
    use crate::support::qpb1::{compress_frames, framed, Frame};
    // Arrange
    let b = TestBroker::start_with(&[KEY]).await;
    configure(&b, "vault8", json!({"encryptionEnabled": true})).await;
    let frames: Vec<Frame> = (0..3)
        .map(|i| Frame::new(&format!("t{i}"), &format!(r#"{{"pin":"9876-{i}"}}"#)))
        .collect();
    let z = compress_frames(&frames);

    // Act
    let (pushed, body) = b
        .post_raw(
            "/api/v1/push",
            "application/x-queen-push",
            framed(&[("vault8", "Default", 3, &z)]),
        )
        .await;
    let response = b
        .http
        .get(b.url("/api/v1/pop/queue/vault8?batch=10&frames=true&autoAck=true"))
        .send()
        .await
        .unwrap();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let popped: serde_json::Value = response.json().await.unwrap();

    // Assert
    assert!(pushed.is_success(), "{body}");
    assert!(
        !stored_bytes(&b, "vault8")
            .await
            .windows(4)
            .any(|w| w == b"9876"),
        "the client's plaintext group was stored as sent"
    );
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let got = payloads(popped["messages"].as_array().unwrap());
    let want: Vec<_> = (0..3)
        .map(|i| json!({"pin": format!("9876-{i}")}))
        .collect();
    assert_eq!(got, want);
    b.stop().await;
}
