//! A parked pop costs the broker at most 4 KiB of heap, its connection included (README,
//! "Parked long-polls"; the broker's share is under 4 KB), and the connection it parked
//! on serves what comes after its wake.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::live_heap::{blocks_by_size, growth, live_bytes};
use crate::raw_http::{get, post, RawConn};
use crate::support::fixtures::wait_parked;
use crate::support::TestBroker;
use crate::MEASURING;

/// Pops parked at once, eight per group as in `queen-bench parked`'s default.
const POPS: usize = 400;
/// Groups the pops are spread over (round robin), each on one of [`QUEUES`] queues.
const GROUPS: usize = 50;
const QUEUES: usize = 10;
/// Most heap bytes a parked pop may hold, with its connection (both ends: the client's
/// socket is counted too) and its share of its group's actor. Measured 3,758 in a debug
/// build once the pop routes' method guard and the router's four-segment list went
/// (`PARKED_HEAP_SITES=1` prints where the rest comes from, `sites.rs`); 3,966-4,145
/// once a pop's steps were boxed apart from its wait;
/// 4,742 after the query map, the middleware layers, the
/// connection's shutdown future and its task's doubled connection future went; 6,556 in
/// a release build before that, 8,777 before the HTTP/2 states, the token check and the
/// answer were boxed, and over 26,000 with the dispatcher's buffers kept.
const MOST_PER_PARKED: isize = 4096;

fn parked_pop(queue: &str, group: &str) -> Vec<u8> {
    get(&format!(
        "/api/v1/pop/queue/{queue}?consumerGroup={group}&wait=true&autoAck=true&timeout=600000"
    ))
}

fn address(b: &TestBroker) -> SocketAddr {
    b.base
        .trim_start_matches("http://")
        .parse()
        .expect("the broker's address")
}

/// Four hundred pops parked over fifty groups hold at most 4 KiB of heap each; a pop that
/// parked and was woken answers its message, and its connection then serves a pipelined
/// push of 20,000 bytes and the pop behind it.
#[actix_rt::test]
async fn a_parked_pop_holds_at_most_4_kib_and_its_connection_serves_after_its_wake() {
    // Arrange
    let _alone = MEASURING.lock().await;
    let b = TestBroker::start().await;
    let addr = address(&b);
    b.push("warm", "p", &[json!(1)]).await;
    assert_eq!(
        b.pop_messages("/api/v1/pop/queue/warm?autoAck=true")
            .await
            .len(),
        1
    );
    let mut woken = RawConn::connect(addr).await;
    woken.send(&parked_pop("wake-me", "solo")).await;
    wait_parked(&b, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (before, sizes_before) = (live_bytes(), blocks_by_size());
    crate::sites::start();

    // Act
    let mut parked = Vec::with_capacity(POPS);
    for i in 0..POPS {
        let group = i % GROUPS;
        let mut conn = RawConn::connect(addr).await;
        conn.send(&parked_pop(
            &format!("pq{}", group % QUEUES),
            &format!("g{group}"),
        ))
        .await;
        parked.push(conn);
    }
    wait_parked(&b, POPS as i64 + 1).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let per_parked = (live_bytes() - before) / POPS as isize;
    let grown = growth(&sizes_before, &blocks_by_size(), POPS);
    eprintln!("{}", crate::sites::report(POPS));
    eprintln!("a parked pop holds {per_parked} heap bytes, grown:\n{grown}");
    b.push("wake-me", "p", &[json!("wake")]).await;
    let answer = woken.answer().await;

    // Assert
    assert!(
        per_parked <= MOST_PER_PARKED,
        "a parked pop holds {per_parked} heap bytes (at most {MOST_PER_PARKED}):\n{grown}"
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    let delivered: Value = serde_json::from_slice(&answer.body).expect("a JSON answer");
    assert_eq!(
        delivered["messages"][0]["data"],
        json!("wake"),
        "{delivered}"
    );
    let pad = "x".repeat(20_000);
    let push =
        json!({"items": [{"queue": "after-wake", "partition": "p", "payload": {"pad": pad}}]});
    let mut both = post(
        "/api/v1/push",
        "",
        "application/json",
        push.to_string().as_bytes(),
    );
    both.extend_from_slice(&get("/api/v1/pop/queue/after-wake?autoAck=true"));
    woken.send(&both).await;
    let pushed = woken.answer().await;
    assert!(
        pushed.status < 300,
        "push answered {}: {}",
        pushed.status,
        pushed.text()
    );
    let popped = woken.answer().await;
    assert_eq!(popped.status, 200, "{}", popped.text());
    let popped: Value = serde_json::from_slice(&popped.body).expect("a JSON answer");
    assert_eq!(popped["messages"][0]["data"]["pad"], json!(pad));
    drop(parked);
    b.stop().await;
}
