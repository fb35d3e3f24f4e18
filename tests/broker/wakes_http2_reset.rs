//! HTTP/2 long-polls (h2c, served by default) whose client leaves: a pop parked as a stream
//! that its client resets, or whose whole connection goes away, stops parking at once and
//! claims nothing, so the next message reaches a consumer that is still there, exactly once
//! (with `autoAck` a pop answering into a gone stream would lose it). The h2 dispatcher's
//! patch in `vendor/actix-http/src/h2/dispatcher.rs` is what drops such a pop.
use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, counter, first_contact, wait_parked, TIMING};
use crate::support::h2c::{H2Request, H2c};
use crate::support::{eventually, TestBroker};

/// Re-polls and reseeds far away: only a push wakes a parked pop within a test.
const QUIET: &[(&str, &str)] = &[
    ("QUEEN_HOTLIST_RESEED_MS", "600000"),
    ("POP_WAIT_INITIAL_INTERVAL_MS", "10000"),
    ("POP_WAIT_MAX_INTERVAL_MS", "10000"),
];

/// An auto-acked long-poll of one message from the queue's default group.
fn parked_pop(b: &TestBroker, queue: &str) -> String {
    b.url(&format!(
        "/api/v1/pop/queue/{queue}?wait=true&timeout=30000&batch=1&autoAck=true"
    ))
}

/// How a consumer leaves its parked pop.
enum Leave {
    /// `RST_STREAM` on the pop's stream; the connection stays.
    ResetStream,
    /// The whole connection closes.
    CloseConnection,
}

/// Parks one h2c pop, lets its client leave, pushes one message: the pop is gone from the
/// broker's parked count, and a new pop gets the message, exactly once.
async fn a_pop_whose_client_left_claims_nothing(queue: &str, leave: Leave) {
    let _quiet = TIMING.lock().await;
    // Arrange: one pop parked as a stream of an h2c connection.
    let b = TestBroker::start_with(QUIET).await;
    configure(&b, queue, json!({})).await;
    first_contact(&b, queue, "__QUEUE_MODE__").await;
    let mut conn = H2c::connect(&b.base).await;
    let pop = conn.get(&parked_pop(&b, queue)).await;
    wait_parked(&b, 1).await;

    // Act: the client leaves, then one message is pushed.
    match leave {
        Leave::ResetStream => pop.reset(),
        Leave::CloseConnection => {
            conn.close();
            drop(pop);
        }
    }
    let unparked = eventually(Duration::from_secs(3), || async {
        (counter(&b, "/pops/parked").await == 0).then_some(())
    })
    .await;
    let (status, body) = b
        .post(
            "/api/v1/push",
            &json!({ "items": [{ "queue": queue, "payload": "for a consumer still there" }] }),
        )
        .await;
    assert!(status.is_success(), "push answered {status}: {body}");

    // Assert: the gone pop left the parked count; the message waits for the next pop, and
    // only that one.
    let next = format!("/api/v1/pop/queue/{queue}?wait=true&timeout=3000&autoAck=true");
    let got = b.pop_messages(&next).await;
    assert_eq!(
        got.len(),
        1,
        "the pushed message was not delivered: {got:?}"
    );
    assert_eq!(got[0]["data"], "for a consumer still there");
    let again = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?autoAck=true"))
        .await;
    assert!(again.is_empty(), "delivered twice: {again:?}");
    assert!(
        unparked.is_some(),
        "the pop whose client left is still parked"
    );
}

#[actix_rt::test]
async fn an_http2_pop_whose_stream_is_reset_claims_nothing() {
    a_pop_whose_client_left_claims_nothing("h2reset", Leave::ResetStream).await;
}

#[actix_rt::test]
async fn an_http2_pop_whose_connection_closes_claims_nothing() {
    a_pop_whose_client_left_claims_nothing("h2closed", Leave::CloseConnection).await;
}

const CONNECTIONS: usize = 4;
const STREAMS_EACH: usize = 30;

/// Many pops on a few h2c connections: a third of them reset, the streams of one whole
/// connection dropped with it, the rest woken by a push of one message per pop. Every
/// message reaches exactly one consumer still there, or waits for the drain: none lost,
/// none twice.
#[actix_rt::test]
async fn many_http2_pops_some_reset_some_closed_lose_no_message_and_deliver_none_twice() {
    let _quiet = TIMING.lock().await;
    // Arrange: CONNECTIONS × STREAMS_EACH pops parked over h2c.
    let queue = "h2many";
    let b = TestBroker::start_with(QUIET).await;
    configure(&b, queue, json!({})).await;
    first_contact(&b, queue, "__QUEUE_MODE__").await;
    let url = parked_pop(&b, queue);
    let mut conns = Vec::new();
    let mut pops: Vec<Vec<H2Request>> = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut conn = H2c::connect(&b.base).await;
        let mut streams = Vec::new();
        for _ in 0..STREAMS_EACH {
            streams.push(conn.get(&url).await);
        }
        conns.push(conn);
        pops.push(streams);
    }
    let total = CONNECTIONS * STREAMS_EACH;
    wait_parked(&b, total as i64).await;

    // Act: reset every third stream of the other connections (from tasks of their own, at
    // once), close the last connection, then push one message per pop to partitions of
    // their own, as pops of all connections wait.
    let closed = conns.pop().expect("a connection to close");
    drop(pops.pop());
    closed.close();
    let mut resets = Vec::new();
    let mut live = Vec::new();
    for (i, pop) in pops.into_iter().flatten().enumerate() {
        match i % 3 {
            0 => resets.push(tokio::spawn(async move { pop.reset() })),
            _ => live.push(pop),
        }
    }
    for reset in resets {
        reset.await.expect("reset task");
    }
    let unparked = eventually(Duration::from_secs(3), || async {
        (counter(&b, "/pops/parked").await == live.len() as i64).then_some(())
    })
    .await;
    let items: Vec<Value> = (0..total)
        .map(|i| json!({ "queue": queue, "partition": format!("p{i}"), "payload": i }))
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");

    // Assert: each live pop got one message; the drain finds the rest; together they are
    // every pushed message once.
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let live_count = live.len();
    for pop in live {
        let (status, body) = pop
            .answer
            .await
            .expect("pop task")
            .expect("a live pop is answered");
        assert_eq!(status, StatusCode::OK, "{body}");
        for m in body["messages"].as_array().cloned().unwrap_or_default() {
            *seen
                .entry(m["data"].as_u64().expect("a numeric payload"))
                .or_default() += 1;
        }
    }
    let drain = format!("/api/v1/pop/queue/{queue}?batch=100&autoAck=true");
    loop {
        let got = b.pop_messages(&drain).await;
        if got.is_empty() {
            break;
        }
        for m in got {
            *seen
                .entry(m["data"].as_u64().expect("a numeric payload"))
                .or_default() += 1;
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered twice: {twice:?}");
    let lost: Vec<u64> = (0..total as u64)
        .filter(|i| !seen.contains_key(i))
        .collect();
    assert!(lost.is_empty(), "{} messages lost: {lost:?}", lost.len());
    assert!(
        unparked.is_some(),
        "pops whose clients left stayed parked: {} parked after the wake, {live_count} live",
        counter(&b, "/pops/parked").await
    );
    drop(conns);
}
