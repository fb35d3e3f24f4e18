//! A third party on the path between two nodes: a relay the dialler connects through,
//! which passes the real handshake and frames along and then slips in a frame of its own.
//! With a mesh secret the receiver drops that frame, counts it and closes the connection;
//! without one the same frame is delivered as a hint (what the per-frame tags prevent).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use queen::mesh::frame;
use queen::mesh::message::{MeshMessage, PushHint};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::support::fixtures::counter;
use crate::support::{eventually, postgres, TestBroker};

/// With a shared secret, an injected frame is dropped and counted, never delivered, and
/// the poisoned connection is closed (the dialler connects again).
#[actix_rt::test]
async fn with_a_secret_a_frame_injected_after_the_handshake_is_dropped_and_the_connection_closed() {
    let (delivered, dropped, reconnected) = inject(Some("shared-secret")).await;
    assert_eq!(delivered, 0, "the injected hint reached the node");
    assert!(dropped >= 1, "the injected frame was not counted");
    assert!(reconnected, "the dialler did not connect again");
}

/// Without a secret the same injection is taken as a hint: the control for the test above.
#[actix_rt::test]
async fn without_a_secret_a_frame_injected_after_the_handshake_is_delivered() {
    let (delivered, dropped, _) = inject(None).await;
    assert_eq!((delivered, dropped), (1, 0));
}

/// Runs a dialler `a` through a relay to `b`, injects one push hint into the relayed
/// stream once `a` is connected, and answers (hints `b` took, frames `b` dropped, whether
/// `a` connected again afterwards).
async fn inject(secret: Option<&str>) -> (i64, i64, bool) {
    // Arrange: b listens; a's only peer is the relay in front of b.
    let pg = postgres::fresh_installed_database().await;
    let mut vars_b: Vec<(&str, &str)> = vec![("QUEEN_NODE_ID", "b")];
    let mut vars_a: Vec<(&str, &str)> = vec![("QUEEN_NODE_ID", "a")];
    if let Some(secret) = secret {
        vars_b.push(("QUEEN_MESH_SECRET", secret));
        vars_a.push(("QUEEN_MESH_SECRET", secret));
    }
    let b = TestBroker::start_on(pg.clone(), &vars_b).await;
    let relay = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the relay");
    let relay_addr = relay.local_addr().expect("relay address").to_string();
    let (inject_tx, inject_rx) = mpsc::channel::<Bytes>(4);
    let accepted = Arc::new(AtomicUsize::new(0));
    let relay_task = tokio::spawn(run_relay(relay, b.mesh, inject_rx, accepted.clone()));
    vars_a.push(("QUEEN_PEERS", relay_addr.as_str()));
    let a = TestBroker::start_on(pg, &vars_a).await;
    let up = eventually(Duration::from_secs(10), || async {
        (counter(&a, "/mesh/peersConnected").await == 1).then_some(())
    })
    .await;
    assert!(up.is_some(), "a never connected through the relay");
    let received_before = counter(&b, "/mesh/hintsReceived").await;
    let dropped_before = counter(&b, "/mesh/framesDropped").await;

    // Act: one forged hint, framed like a real one, into a's stream to b.
    let forged = frame::encode(&MeshMessage::PushLanded(PushHint {
        tenant: String::new(),
        queue: "injected".into(),
        partition_id: 1,
        partition: "Default".into(),
        last_offset: 0,
        messages: 1,
    }));
    inject_tx
        .send(forged)
        .await
        .expect("the relay takes the frame");

    // Assert (by the callers): what b made of it.
    let settled = eventually(Duration::from_secs(10), || async {
        let received = counter(&b, "/mesh/hintsReceived").await - received_before;
        let dropped = counter(&b, "/mesh/framesDropped").await - dropped_before;
        (received + dropped > 0).then_some((received, dropped))
    })
    .await
    .unwrap_or((0, 0));
    let reconnected = eventually(Duration::from_secs(10), || async {
        (accepted.load(Ordering::SeqCst) >= 2 && counter(&a, "/mesh/peersConnected").await == 1)
            .then_some(())
    })
    .await
    .is_some();
    relay_task.abort();
    a.stop().await;
    b.stop().await;
    (settled.0, settled.1, reconnected)
}

/// Accepts dialler connections (counting them) and relays each to `target`: frames from
/// the dialler go through one by one, and the first connection also carries whatever
/// arrives on `inject`; the other direction is copied as bytes.
async fn run_relay(
    listener: TcpListener,
    target: SocketAddr,
    inject: mpsc::Receiver<Bytes>,
    accepted: Arc<AtomicUsize>,
) {
    let mut inject = Some(inject);
    loop {
        let Ok((dialler, _)) = listener.accept().await else {
            return;
        };
        let Ok(upstream) = TcpStream::connect(target).await else {
            continue;
        };
        accepted.fetch_add(1, Ordering::SeqCst);
        let (dialler_read, mut dialler_write) = dialler.into_split();
        let (mut upstream_read, upstream_write) = upstream.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut upstream_read, &mut dialler_write).await;
        });
        let mut from_dialler = frame::reader(dialler_read);
        let mut to_target = frame::writer(upstream_write);
        let mut inject = inject.take();
        tokio::spawn(async move {
            loop {
                let forged = async {
                    match inject.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                };
                let next = tokio::select! {
                    relayed = from_dialler.next() => match relayed {
                        Some(Ok(bytes)) => bytes.freeze(),
                        _ => return,
                    },
                    Some(forged) = forged => forged,
                };
                if to_target.send(next).await.is_err() {
                    return;
                }
            }
        });
    }
}
