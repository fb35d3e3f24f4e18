//! Pop's visibility gates and waits: windowBuffer, delayedProcessing, the empty-partition
//! cursor seal, and long-polling.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure_confirmed, consumer_row, offsets};
use crate::support::{eventually, payloads, TestBroker};

/// windowBuffer holds a partition while it keeps receiving messages, then delivers them together.
#[actix_rt::test]
async fn window_buffer_holds_a_partition_until_it_has_been_quiet_for_the_window() {
    // Arrange
    let b = TestBroker::start().await;
    configure_confirmed(&b, "window", json!({ "windowBuffer": 1 })).await;
    b.push("window", "Default", &[json!("w0")]).await;
    let right_after_first = b.pop_messages("/api/v1/pop/queue/window").await;
    // Spacing the pushes is the point of the test, not a wait for something.
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.push("window", "Default", &[json!("w1")]).await;
    let last_push = Instant::now();
    let right_after_second = b.pop_messages("/api/v1/pop/queue/window").await;

    // Act
    let delivered = eventually(Duration::from_secs(5), || async {
        let m = b.pop_messages("/api/v1/pop/queue/window").await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("delivered once the partition went quiet");
    let quiet_for = last_push.elapsed();

    // Assert
    assert!(right_after_first.is_empty(), "{right_after_first:?}");
    assert!(right_after_second.is_empty(), "{right_after_second:?}");
    assert_eq!(payloads(&delivered), vec![json!("w0"), json!("w1")]);
    assert!(
        quiet_for >= Duration::from_millis(900),
        "delivered {quiet_for:?} after the last push, inside the 1 s window"
    );
}

/// delayedProcessing hides each message until it is old enough, oldest first.
#[actix_rt::test]
async fn delayed_processing_holds_each_message_until_it_is_old_enough() {
    // Arrange
    let b = TestBroker::start().await;
    configure_confirmed(&b, "delayed", json!({ "delayedProcessing": 1 })).await;
    b.push("delayed", "Default", &[json!("d0")]).await;
    let first_pushed = Instant::now();
    let right_away = b.pop_messages("/api/v1/pop/queue/delayed").await;
    // Spacing the pushes is the point of the test, not a wait for something.
    tokio::time::sleep(Duration::from_millis(600)).await;
    b.push("delayed", "Default", &[json!("d1")]).await;
    let second_pushed = Instant::now();

    // Act
    let poll = || async {
        let m = b.pop_messages("/api/v1/pop/queue/delayed").await;
        (!m.is_empty()).then_some(m)
    };
    let first = eventually(Duration::from_secs(5), poll)
        .await
        .expect("the first message became visible");
    let first_age = first_pushed.elapsed();
    b.ack_all(&first, "completed", None).await;
    let second = eventually(Duration::from_secs(5), poll)
        .await
        .expect("the second message became visible");
    let second_age = second_pushed.elapsed();

    // Assert
    assert!(right_away.is_empty(), "{right_away:?}");
    assert_eq!(payloads(&first), vec![json!("d0")], "only d0 is old enough");
    assert!(first_age >= Duration::from_millis(900), "{first_age:?}");
    assert_eq!(payloads(&second), vec![json!("d1")]);
    assert!(second_age >= Duration::from_millis(900), "{second_age:?}");
}

/// A partition whose segments are all gone seals the cursor at its last offset, both for a
/// group that already knew the partition and for a group seeing it for the first time.
#[actix_rt::test]
async fn a_partition_whose_segments_are_gone_seals_the_cursor_at_its_last_offset() {
    // Arrange: queue mode has popped before the push, group g has not.
    let b = TestBroker::start().await;
    let first_contact = b.pop_messages("/api/v1/pop/queue/seal").await;
    assert!(first_contact.is_empty());
    let answers = b
        .push("seal", "P", &(0..5).map(|n| json!(n)).collect::<Vec<_>>())
        .await;
    let pid: i64 = answers[0]["partitionId"].as_str().unwrap().parse().unwrap();
    let sql = b.sql().await;
    sql.execute(
        "DELETE FROM queen.log_segments WHERE partition_id = $1",
        &[&pid],
    )
    .await
    .unwrap();

    // Act
    let (known_status, known_body) = b.get("/api/v1/pop/queue/seal").await;
    let (new_status, new_body) = b.get("/api/v1/pop/queue/seal?consumerGroup=g").await;

    // Assert
    assert_eq!(known_status, StatusCode::NO_CONTENT, "{known_body}");
    assert_eq!(new_status, StatusCode::NO_CONTENT, "{new_body}");
    let last_offset: i64 = sql
        .query_one(
            "SELECT last_offset FROM queen.log_partitions WHERE id = $1",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(last_offset, 4);
    for group in ["__QUEUE_MODE__", "g"] {
        let (committed, worker) = consumer_row(&b, pid, group).await;
        assert_eq!(committed, last_offset, "{group}");
        assert_eq!(worker, None, "{group}: a seal is not a claim");
    }
    b.push("seal", "P", &[json!("after")]).await;
    let after = b.pop_messages("/api/v1/pop/queue/seal").await;
    assert_eq!(payloads(&after), vec![json!("after")]);
    assert_eq!(offsets(&after), vec![5]);
}

/// A waiting pop receives a message pushed while it waits, well before its timeout.
#[actix_rt::test]
async fn a_waiting_pop_receives_a_message_pushed_while_it_waits() {
    // Arrange
    let b = TestBroker::start().await;
    configure_confirmed(&b, "longpoll", json!({})).await;
    let started = Instant::now();

    // Act
    let ((status, body, answered_after), _) = tokio::join!(
        async {
            let (status, body) = b
                .get("/api/v1/pop/queue/longpoll?wait=true&timeout=10000")
                .await;
            (status, body, started.elapsed())
        },
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            b.push("longpoll", "Default", &[json!("hello")]).await
        }
    );

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        payloads(body["messages"].as_array().unwrap()),
        vec![json!("hello")]
    );
    assert!(
        answered_after >= Duration::from_millis(300),
        "{answered_after:?}"
    );
    assert!(
        answered_after < Duration::from_secs(3),
        "answered only after {answered_after:?}"
    );
}

/// A waiting pop on an empty queue answers 204 after roughly its timeout.
#[actix_rt::test]
async fn a_waiting_pop_on_an_empty_queue_answers_204_after_its_timeout() {
    // Arrange
    let b = TestBroker::start().await;
    configure_confirmed(&b, "longpoll-empty", json!({})).await;
    let started = Instant::now();

    // Act
    let (status, body) = b
        .get("/api/v1/pop/queue/longpoll-empty?wait=true&timeout=500")
        .await;
    let elapsed = started.elapsed();

    // Assert
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(body, Value::Null);
    assert!(elapsed >= Duration::from_millis(450), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}
