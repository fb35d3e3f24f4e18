//! The peer mesh between two brokers on one database: a push on one wakes a consumer
//! parked on the other, a node recognises itself in its peer list, and junk, foreign or
//! unauthenticated peers are refused and counted without disturbing the pair.
//!
//! These run the brokers in-process for speed and direct access; `nodes` runs separate
//! processes for the behaviour that needs them (kills, restarts).

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use queen::mesh::frame;
use queen::mesh::message::{MeshMessage, PushHint};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::fixtures::{
    configure, counter, first_contact, metrics, spawn_get, wait_parked, TIMING,
};
use crate::support::{eventually, free_port, payloads, postgres, TestBroker};

/// Settings under which only a mesh hint can wake a parked pop quickly: no reseed for ten
/// minutes and a five-second backoff.
const HINT_ONLY: [(&str, &str); 3] = [
    ("QUEEN_HOTLIST_RESEED_MS", "600000"),
    ("POP_WAIT_INITIAL_INTERVAL_MS", "5000"),
    ("POP_WAIT_MAX_INTERVAL_MS", "5000"),
];

/// How the two brokers of a pair find each other.
#[derive(Clone, Copy, PartialEq)]
enum Peering {
    /// No peers at all: the mesh is cut.
    Cut,
    /// `QUEEN_PEERS` lists both addresses (each node's own included).
    List,
    /// `QUEEN_PEER_DNS` names the other node as `localhost:port`.
    Dns,
}

/// Two brokers on one database, each given `extra` settings; peered when `peered`.
async fn pair(peered: bool, extra_a: &[(&str, &str)], extra_b: &[(&str, &str)]) -> [TestBroker; 2] {
    let peering = if peered { Peering::List } else { Peering::Cut };
    pair_by(peering, extra_a, extra_b).await
}

/// Both brokers of [`pair_by`] on fresh mesh ports; the first is stopped if the second
/// fails to start.
async fn start_pair(
    pg: &tokio_postgres::Config,
    peering: Peering,
    extra_a: &[(&str, &str)],
    extra_b: &[(&str, &str)],
) -> Result<Vec<TestBroker>, queen::app::StartupError> {
    let ports = [free_port(), free_port()];
    let peers = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let names = [
        format!("localhost:{}", ports[1]),
        format!("localhost:{}", ports[0]),
    ];
    let mut brokers: Vec<TestBroker> = Vec::new();
    for (i, extra) in [extra_a, extra_b].into_iter().enumerate() {
        let port = ports[i].to_string();
        let node = ["a", "b"][i];
        let mut vars: Vec<(&str, &str)> = HINT_ONLY.to_vec();
        vars.extend([("QUEEN_MESH_PORT", port.as_str()), ("QUEEN_NODE_ID", node)]);
        match peering {
            Peering::Cut => {}
            Peering::List => vars.push(("QUEEN_PEERS", peers.as_str())),
            Peering::Dns => vars.extend([
                ("QUEEN_PEER_DNS", names[i].as_str()),
                ("QUEEN_PEER_DNS_REFRESH_MS", "200"),
            ]),
        }
        vars.extend_from_slice(extra);
        match TestBroker::try_start_on(pg.clone(), &vars).await {
            Ok(broker) => brokers.push(broker),
            Err(e) => {
                for started in brokers {
                    started.stop().await;
                }
                return Err(e);
            }
        }
    }
    Ok(brokers)
}

/// Two brokers on one database, found by `peering`, each given `extra` settings.
async fn pair_by(
    peering: Peering,
    extra_a: &[(&str, &str)],
    extra_b: &[(&str, &str)],
) -> [TestBroker; 2] {
    let pg = postgres::fresh_installed_database().await;
    // A chosen port can be taken by another test before the broker binds it: choose again.
    let mut attempt = 0;
    let mut brokers = loop {
        attempt += 1;
        match start_pair(&pg, peering, extra_a, extra_b).await {
            Ok(brokers) => break brokers,
            Err(e) if attempt < 5 => eprintln!("pair start failed ({e}); new ports"),
            Err(e) => panic!("pair start failed {attempt} times: {e}"),
        }
    };
    let b = brokers.pop().expect("two brokers");
    let a = brokers.pop().expect("two brokers");
    [a, b]
}

/// Waits until `b` sees `n` connected peers.
async fn connected(b: &TestBroker, n: i64) -> bool {
    eventually(Duration::from_secs(10), || async {
        (counter(b, "/mesh/peersConnected").await == n).then_some(())
    })
    .await
    .is_some()
}

/// A consumer parked on one broker is woken by a push through its peer, through the
/// mesh, in well under the reseed and backoff that would otherwise find it.
#[actix_rt::test]
async fn a_push_on_one_broker_wakes_a_consumer_parked_on_its_peer() {
    let _quiet = TIMING.lock().await;
    // Arrange: a listens on every interface, so its own loopback address in the peer list
    // is not recognisable by address: the handshake has to find it out.
    let [a, b] = pair(
        true,
        &[
            ("QUEEN_MESH_BIND_ADDR", "0.0.0.0"),
            ("QUEEN_MESH_INSECURE", "1"),
        ],
        &[],
    )
    .await;
    assert!(
        connected(&a, 1).await && connected(&b, 1).await,
        "the pair never connected"
    );
    configure(&a, "relay", json!({})).await;
    first_contact(&b, "relay", "__QUEUE_MODE__").await;
    let mut latencies = Vec::new();

    for round in 0..10 {
        // Act
        let pop = spawn_get(
            &b,
            "/api/v1/pop/queue/relay?autoAck=true&wait=true&timeout=10000",
        );
        wait_parked(&b, 1).await;
        let sent = Instant::now();
        a.push("relay", &format!("p{}", round % 3), &[json!(round)])
            .await;
        let answer = pop.await.expect("pop task");

        // Assert (per round)
        assert_eq!(payloads(&answer.messages()), vec![json!(round)]);
        latencies.push(answer.at.saturating_duration_since(sent));
    }

    // Assert: without the hint the next look would be 5 s (backoff) to 10 min (reseed) away.
    latencies.sort();
    eprintln!("cross-node wake latencies: {latencies:?}");
    assert!(
        latencies[5] < Duration::from_millis(100) && latencies[9] < Duration::from_millis(1000),
        "cross-node wakes too slow: {latencies:?}"
    );
    assert!(counter(&b, "/wakes/peer").await >= 10);
    assert!(counter(&b, "/mesh/hintsReceived").await >= 10);
    let (status, text) = b.get("/metrics/prometheus").await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let received = text
        .as_str()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("queen_mesh_hints_total{outcome=\"received\"} "))
        })
        .and_then(|l| l.split(' ').nth(1)?.parse::<u64>().ok());
    assert!(received >= Some(10), "scrape: {text}");
    assert!(counter(&a, "/mesh/hintsSent").await >= 10);
    // a dialled its own address once, recognised itself, and does not count itself.
    let peers = metrics(&a).await["mesh"]["peers"].clone();
    let selves: Vec<&Value> = peers
        .as_array()
        .expect("peers list")
        .iter()
        .filter(|p| p["self"] == json!(true))
        .collect();
    assert_eq!(selves.len(), 1, "{}", metrics(&a).await["mesh"]);
    a.stop().await;
    b.stop().await;
}

/// Without peers the same push does not wake the other broker's parked consumer: it is
/// the mesh, not a re-poll, that makes the test above fast.
#[actix_rt::test]
async fn without_the_mesh_a_push_on_one_broker_does_not_wake_its_peer_within_two_seconds() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let [a, b] = pair(false, &[], &[]).await;
    configure(&a, "unrelayed", json!({})).await;
    first_contact(&b, "unrelayed", "__QUEUE_MODE__").await;

    // Act
    let pop = spawn_get(
        &b,
        "/api/v1/pop/queue/unrelayed?autoAck=true&wait=true&timeout=2000",
    );
    wait_parked(&b, 1).await;
    a.push("unrelayed", "Default", &[json!("late")]).await;
    let answer = pop.await.expect("pop task");

    // Assert: the pop ran to its deadline empty; the message is still there for later.
    assert!(answer.messages().is_empty(), "woken without a mesh");
    assert_eq!(counter(&b, "/mesh/peersConnected").await, 0);
    let later = a
        .pop_messages("/api/v1/pop/queue/unrelayed?autoAck=true")
        .await;
    assert_eq!(payloads(&later), vec![json!("late")]);
    a.stop().await;
    b.stop().await;
}

/// Peers found through a DNS name connect and relay pushes like listed ones.
#[actix_rt::test]
async fn peers_found_by_dns_name_connect_and_relay_pushes() {
    // Arrange
    let [a, b] = pair_by(Peering::Dns, &[], &[]).await;
    assert!(
        connected(&a, 1).await && connected(&b, 1).await,
        "never connected by name"
    );
    configure(&a, "named", json!({})).await;
    first_contact(&b, "named", "__QUEUE_MODE__").await;

    // Act
    let pop = spawn_get(
        &b,
        "/api/v1/pop/queue/named?autoAck=true&wait=true&timeout=10000",
    );
    wait_parked(&b, 1).await;
    let sent = Instant::now();
    a.push("named", "Default", &[json!("by name")]).await;
    let answer = pop.await.expect("pop task");

    // Assert: 5 s backoff and no reseed: only the hint answers this fast.
    assert_eq!(payloads(&answer.messages()), vec![json!("by name")]);
    assert!(answer.at.saturating_duration_since(sent) < Duration::from_secs(2));
    assert!(counter(&b, "/wakes/peer").await >= 1);
    a.stop().await;
    b.stop().await;
}

/// Peers with different secrets, or of different clusters, never connect; the refused
/// handshakes are counted.
#[actix_rt::test]
async fn peers_with_the_wrong_secret_or_another_cluster_name_are_refused() {
    // Arrange + Act
    let [a, b] = pair(
        true,
        &[("QUEEN_MESH_SECRET", "alpha")],
        &[("QUEEN_MESH_SECRET", "beta")],
    )
    .await;
    let refused = eventually(Duration::from_secs(10), || async {
        (counter(&a, "/mesh/handshakesRefused").await >= 1
            && counter(&b, "/mesh/handshakesRefused").await >= 1)
            .then_some(())
    })
    .await;
    let [c, d] = pair(
        true,
        &[("QUEEN_CLUSTER_NAME", "east")],
        &[("QUEEN_CLUSTER_NAME", "west")],
    )
    .await;
    let failed = eventually(Duration::from_secs(10), || async {
        (counter(&c, "/mesh/connectFailures").await >= 1
            && counter(&d, "/mesh/connectFailures").await >= 1)
            .then_some(())
    })
    .await;

    // Assert
    assert!(refused.is_some(), "wrong secrets were not refused");
    assert!(failed.is_some(), "foreign clusters were not refused");
    for broker in [&a, &b, &c, &d] {
        assert_eq!(counter(broker, "/mesh/peersConnected").await, 0);
    }
    // The same secret on both sides does connect.
    let [e, f] = pair(
        true,
        &[("QUEEN_MESH_SECRET", "same")],
        &[("QUEEN_MESH_SECRET", "same")],
    )
    .await;
    assert!(connected(&e, 1).await && connected(&f, 1).await);
    for broker in [a, b, c, d, e, f] {
        broker.stop().await;
    }
}

/// Junk on the mesh port (random bytes, a lying length, a junk frame after a valid
/// handshake, a hint naming an impossible queue, a message kind from a newer node) is
/// dropped and counted; the broker keeps serving and its peer's hints still wake it.
#[actix_rt::test]
async fn junk_on_the_mesh_port_is_dropped_and_counted_and_the_pair_keeps_working() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let [a, b] = pair(true, &[], &[]).await;
    assert!(connected(&a, 1).await && connected(&b, 1).await);
    configure(&a, "sturdy", json!({})).await;
    first_contact(&b, "sturdy", "__QUEUE_MODE__").await;
    let dropped_before = counter(&b, "/mesh/framesDropped").await;

    // Act: four kinds of junk at b's mesh port.
    junk(b.mesh, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    junk(b.mesh, &u32::MAX.to_be_bytes()).await;
    junk(b.mesh, &[0, 0, 0, 4, 0xc1, 0xc1, 0xc1, 0xc1]).await;
    let _ = TcpStream::connect(b.mesh).await.expect("connect"); // connect and close
    let mut impostor = handshake(b.mesh).await;
    impostor
        .send(frame::encode(&MeshMessage::Ping))
        .await
        .expect("ping");
    impostor
        .send(bytes::Bytes::from_static(&[0xc1, 0xc1]))
        .await
        .expect("junk frame");
    impostor
        .send(frame::encode(&MeshMessage::PushLanded(PushHint {
            tenant: String::new(),
            queue: "no/such?queue".into(),
            partition_id: 1,
            partition: "Default".into(),
            last_offset: 0,
            messages: 1,
        })))
        .await
        .expect("bad hint");
    impostor
        .send(bytes::Bytes::from(
            rmp_serde::to_vec(&FromANewerNode::SomethingNew { what: 7 }).expect("encode"),
        ))
        .await
        .expect("unknown kind");

    // Assert: every junk counted (the connect-and-close is not junk, the ping is fine).
    let counted = eventually(Duration::from_secs(10), || async {
        let dropped = counter(&b, "/mesh/framesDropped").await - dropped_before;
        (dropped >= 6).then_some(dropped)
    })
    .await;
    assert_eq!(counted, Some(6), "junk frames dropped");
    assert!(connected(&b, 1).await);
    let pop = spawn_get(
        &b,
        "/api/v1/pop/queue/sturdy?autoAck=true&wait=true&timeout=10000",
    );
    wait_parked(&b, 1).await;
    let sent = Instant::now();
    a.push("sturdy", "Default", &[json!("still here")]).await;
    let answer = pop.await.expect("pop task");
    assert_eq!(payloads(&answer.messages()), vec![json!("still here")]);
    assert!(answer.at.saturating_duration_since(sent) < Duration::from_secs(2));
    let (status, _) = b.get("/health").await;
    assert!(status.is_success());
    drop(impostor);
    a.stop().await;
    b.stop().await;
}

/// A message kind this node's [`MeshMessage`] does not have, encoded as kinds are (by
/// name), as a newer node would send it.
#[derive(serde::Serialize)]
enum FromANewerNode {
    SomethingNew { what: u32 },
}

/// Writes raw bytes to a mesh port after reading its challenge, then hangs up.
async fn junk(addr: std::net::SocketAddr, bytes: &[u8]) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let (read, mut write) = stream.split();
    let mut reader = frame::reader(read);
    let _challenge = reader.next().await;
    write.write_all(bytes).await.expect("write junk");
    // The broker hangs up on junk; wait for that rather than racing it.
    let _ = tokio::time::timeout(Duration::from_secs(5), reader.next()).await;
}

/// A dialler that passes the handshake of a cluster without a secret.
async fn handshake(
    addr: std::net::SocketAddr,
) -> tokio_util::codec::FramedWrite<
    tokio::net::tcp::OwnedWriteHalf,
    tokio_util::codec::LengthDelimitedCodec,
> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (read, write) = stream.into_split();
    let mut reader = frame::reader(read);
    let mut writer = frame::writer(write);
    let challenge = reader.next().await.expect("challenge").expect("frame");
    assert!(matches!(
        frame::decode(&challenge),
        Ok(MeshMessage::Challenge { .. })
    ));
    let hello = MeshMessage::Hello {
        cluster: "queen".into(),
        node_id: "impostor".into(),
        proof: Vec::new(),
        nonce: [0; 16],
    };
    writer.send(frame::encode(&hello)).await.expect("hello");
    let welcome = reader.next().await.expect("welcome").expect("frame");
    assert_eq!(frame::decode(&welcome).ok(), Some(MeshMessage::Welcome));
    writer
}
