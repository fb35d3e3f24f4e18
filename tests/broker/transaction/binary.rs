//! `QTB1`: the binary transaction body (a JSON head and `QPB1` flag-8 groups), applied like
//! its JSON equivalent, answered in the contract's result order, and refused whole (400,
//! nothing stored) when malformed.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{ack_op, segments_of};
use crate::support::qpb1::{compress_frames, Frame};
use crate::support::{payloads, TestBroker};

/// A `QTB1` body: magic, flags, the JSON head, then flag-8 groups.
fn qtb1(flags: u8, head: &[u8], groups: &[(&str, &str, &[Frame])]) -> Vec<u8> {
    let mut out = b"QTB1".to_vec();
    out.push(flags);
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (queue, partition, frames) in groups {
        for name in [queue, partition] {
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
        }
        let z = compress_frames(frames);
        out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
        out.extend_from_slice(&(z.len() as u32).to_le_bytes());
        out.extend_from_slice(&z);
    }
    out
}

async fn post(b: &TestBroker, body: Vec<u8>) -> (StatusCode, Value) {
    b.post_raw("/api/v1/transaction", "application/x-queen-push", body)
        .await
}

/// The head's ack and the groups' pushes commit together, and the results list the head's
/// operations first, then every pushed message in wire order.
#[actix_rt::test]
async fn a_binary_bundle_acks_and_pushes_together_with_head_results_first() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("qin", "Default", &[json!("work")]).await;
    let popped = b.pop_messages("/api/v1/pop/queue/qin").await;
    let head = json!({
        "operations": [ack_op(&popped[0], "completed")],
        "requiredLeases": [popped[0]["leaseId"]],
    });
    let frames = [
        Frame::new("o1", r#"{"out":1}"#),
        Frame::new("o2", r#"{"out":2}"#),
    ];

    // Act
    let (status, answer) = post(
        &b,
        qtb1(
            0,
            head.to_string().as_bytes(),
            &[("qout", "Default", &frames)],
        ),
    )
    .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["success"], json!(true), "{answer}");
    let kinds: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ack", "push", "push"]);
    assert_eq!(answer["results"][2]["transactionId"], "o2");
    let out = b
        .pop_messages("/api/v1/pop/queue/qout?batch=10&autoAck=true")
        .await;
    assert_eq!(payloads(&out), vec![json!({"out": 1}), json!({"out": 2})]);
    assert!(b
        .pop_messages("/api/v1/pop/queue/qin?autoAck=true")
        .await
        .is_empty());
    b.stop().await;
}

/// A refused ack in the head rolls back the groups' pushes; flag 2 answers totals.
#[actix_rt::test]
async fn a_binary_bundle_with_a_refused_ack_stores_nothing_and_flag_2_answers_totals() {
    // Arrange
    let b = TestBroker::start().await;
    let foreign = json!({
        "operations": [{"type": "ack", "transactionId": "nope", "partitionId": "999",
                        "leaseId": "not-a-lease", "status": "completed"}],
    });
    let frames = [Frame::new("r1", "1")];

    // Act
    let (refused_status, refused) = post(
        &b,
        qtb1(
            0,
            foreign.to_string().as_bytes(),
            &[("qrb", "Default", &frames)],
        ),
    )
    .await;
    let (_, totals) = post(
        &b,
        qtb1(
            2,
            b"",
            &[(
                "qrb",
                "Default",
                &[Frame::new("t1", "1"), Frame::new("t2", "2")],
            )],
        ),
    )
    .await;

    // Assert
    assert_eq!(refused_status, StatusCode::OK);
    assert_eq!(refused["success"], json!(false), "{refused}");
    assert_eq!(refused["failedIndex"], json!(0));
    assert_eq!(totals["success"], json!(true), "{totals}");
    assert_eq!(
        (totals["pushed"].clone(), totals["duplicate"].clone()),
        (json!(2), json!(0))
    );
    assert!(totals.get("results").is_none());
    let stored = b
        .pop_messages("/api/v1/pop/queue/qrb?batch=10&autoAck=true")
        .await;
    assert_eq!(
        payloads(&stored),
        vec![json!(1), json!(2)],
        "the refused bundle stored r1"
    );
    b.stop().await;
}

/// The head's `kv` rider runs in the bundle's transaction: its results follow the groups'
/// pushes (flag 2 keeps them beside the totals), and its lost `required` op, indexed after
/// every pushed message, stores none of them.
#[actix_rt::test]
async fn a_binary_bundles_head_carries_the_kv_rider() {
    // Arrange
    let b = TestBroker::start().await;
    let gate = json!({"kv": [{"op": "putIfAbsent", "ns": "bin", "key": "step", "value": 1,
                              "forever": true, "required": true}]});
    let frames = [Frame::new("k1", "1"), Frame::new("k2", "2")];

    // Act
    let (_, first) = post(
        &b,
        qtb1(
            2,
            gate.to_string().as_bytes(),
            &[("qkv", "Default", &frames)],
        ),
    )
    .await;
    let (_, again) = post(
        &b,
        qtb1(
            0,
            gate.to_string().as_bytes(),
            &[("qkv", "Default", &[Frame::new("k3", "3")])],
        ),
    )
    .await;

    // Assert
    assert_eq!(first["success"], json!(true), "{first}");
    assert_eq!(first["pushed"], json!(2), "{first}");
    assert_eq!(first["results"][0]["type"], json!("kv"), "{first}");
    assert_eq!(first["results"][0]["index"], json!(2), "{first}");
    assert_eq!(first["results"][0]["applied"], json!(true), "{first}");
    assert_eq!(again["success"], json!(false), "{again}");
    assert_eq!(again["reason"], json!("kv_precondition"), "{again}");
    assert_eq!(again["failedIndex"], json!(1), "{again}");
    let stored = b
        .pop_messages("/api/v1/pop/queue/qkv?batch=10&autoAck=true")
        .await;
    assert_eq!(payloads(&stored), vec![json!(1), json!(2)]);
    b.stop().await;
}

/// Truncated, lying or unknown-flag `QTB1` bodies answer 400 and store nothing.
#[actix_rt::test]
async fn malformed_binary_bundles_answer_400_and_store_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let good = qtb1(
        0,
        b"",
        &[("qbad", "Default", &[Frame::new("x", r#"{"a":1}"#)])],
    );
    let mut lying_head = good.clone();
    lying_head[5..9].copy_from_slice(&1_000_000u32.to_le_bytes());
    let mut bad_flag = good.clone();
    bad_flag[4] = 8;
    let mut cases = vec![lying_head, bad_flag, qtb1(0, b"{not json", &[])];
    cases.extend((4..good.len()).step_by(3).map(|cut| good[..cut].to_vec()));

    // Act + Assert
    for body in cases {
        let (status, answer) = post(&b, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer} for {body:?}");
        assert!(answer["error"].is_string());
    }
    assert_eq!(segments_of(&b, "qbad").await, 0);
    b.stop().await;
}
