//! One task per remote node: dial it, pass the handshake, send it this node's hints, and
//! dial again with backoff when the connection breaks.
//!
//! Hints reach the task through a bounded queue with `try_send`: a push never waits for a
//! peer. While a peer is down its hints are dropped and counted, not queued for later; a
//! peer that comes back catches up through its own reseed, as the design allows.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};
use tracing::{debug, info, warn};

use super::message::MeshMessage;
use super::sealed::{frame_key, Sealer};
use super::{auth, frame, Counters, Shared};

/// Hints waiting for one peer's socket. A burst beyond this is dropped: the peer's
/// reseed and backoff cover it.
const QUEUE_FRAMES: usize = 4096;
/// How long a dial may take on a LAN before the peer counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the handshake may take.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write may block: a peer that stops reading is dropped, not waited for.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// A quiet connection sends a ping this often, so a dead peer is noticed.
const PING_EVERY: Duration = Duration::from_secs(1);
/// Reconnect backoff: first retry, and the cap.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(5);
/// A connection that lived this long resets the backoff (one that dies at once does not).
const STABLE_AFTER: Duration = Duration::from_secs(2);

/// The registry's handle on one peer task.
pub(crate) struct PeerHandle {
    queue: mpsc::Sender<Bytes>,
    status: Arc<PeerStatus>,
    task: JoinHandle<()>,
}

/// What the task knows of its peer, readable from `/metrics`.
#[derive(Default)]
struct PeerStatus {
    connected: AtomicBool,
    myself: AtomicBool,
    node_id: Mutex<Option<String>>,
}

/// Why a dial did not give a usable connection.
#[derive(Debug, thiserror::Error)]
enum DialError {
    #[error("mesh peer unreachable")]
    Connect(#[source] std::io::Error),
    #[error("mesh peer did not answer in time")]
    Timeout,
    #[error("mesh peer closed the connection during the handshake")]
    Closed,
    #[error("mesh handshake broken")]
    Frame(#[from] frame::FrameError),
    #[error("mesh peer belongs to another cluster")]
    ForeignCluster { cluster: String },
    #[error("mesh peer broke the handshake protocol")]
    Protocol,
}

enum Dialled {
    Peer {
        reader: Box<FramedRead<OwnedReadHalf, LengthDelimitedCodec>>,
        writer: Box<FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>>,
        node_id: String,
        sealer: Sealer,
    },
    Myself,
}

impl PeerHandle {
    /// Starts the task for `addr`.
    pub(crate) fn start(shared: Arc<Shared>, addr: SocketAddr) -> Self {
        let (queue, receiver) = mpsc::channel(QUEUE_FRAMES);
        let status = Arc::new(PeerStatus::default());
        let task = tokio::spawn(run(shared, addr, status.clone(), receiver));
        PeerHandle {
            queue,
            status,
            task,
        }
    }

    /// Hands a frame to the peer without waiting. False when it was dropped (peer down or
    /// its queue full). A peer that turned out to be this node takes nothing and drops
    /// nothing.
    pub(crate) fn offer(&self, frame: Bytes) -> bool {
        if self.status.myself.load(Ordering::Relaxed) {
            return true;
        }
        self.status.connected.load(Ordering::Relaxed) && self.queue.try_send(frame).is_ok()
    }

    /// The peer's node id while it is connected (and not this node).
    pub(crate) fn connected_node(&self) -> Option<String> {
        if self.status.myself.load(Ordering::Relaxed)
            || !self.status.connected.load(Ordering::Relaxed)
        {
            return None;
        }
        self.status.node_id.lock().expect("peer lock").clone()
    }

    /// Ends the task and its connection.
    pub(crate) fn stop(self) {
        self.task.abort();
    }

    /// The peer as `/metrics` shows it.
    pub(crate) fn status_json(&self, addr: SocketAddr) -> Value {
        let node_id = self.status.node_id.lock().expect("peer lock").clone();
        json!({
            "addr": addr.to_string(),
            "nodeId": node_id,
            "connected": self.status.connected.load(Ordering::Relaxed),
            "self": self.status.myself.load(Ordering::Relaxed),
        })
    }
}

async fn run(
    shared: Arc<Shared>,
    addr: SocketAddr,
    status: Arc<PeerStatus>,
    mut queue: mpsc::Receiver<Bytes>,
) {
    let mut backoff = RECONNECT_MIN;
    let mut was_up = false;
    loop {
        match dial(&shared, addr).await {
            Ok(Dialled::Myself) => {
                debug!(peer = %addr, "mesh peer is this node; not dialling it again");
                status.myself.store(true, Ordering::Relaxed);
                return;
            }
            Ok(Dialled::Peer {
                reader,
                mut writer,
                node_id,
                mut sealer,
            }) => {
                info!(peer = %addr, node_id = %node_id, "mesh peer connected");
                writer
                    .encoder_mut()
                    .set_max_frame_length(frame::MAX_CALL_FRAME_BYTES);
                *status.node_id.lock().expect("peer lock") = Some(node_id.clone());
                status.connected.store(true, Ordering::Relaxed);
                let since = Instant::now();
                pump(&shared, &mut queue, *reader, &mut writer, &mut sealer).await;
                status.connected.store(false, Ordering::Relaxed);
                warn!(peer = %addr, node_id = %node_id, "mesh peer disconnected");
                was_up = true;
                if since.elapsed() >= STABLE_AFTER {
                    backoff = RECONNECT_MIN;
                }
            }
            Err(error) => {
                Counters::bump(&shared.counters.connect_failures);
                if was_up {
                    warn!(peer = %addr, error = %error, "mesh peer unreachable");
                    was_up = false;
                } else {
                    debug!(peer = %addr, error = %error, "mesh dial failed");
                }
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RECONNECT_MAX);
    }
}

async fn dial(shared: &Shared, addr: SocketAddr) -> Result<Dialled, DialError> {
    let stream = timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| DialError::Timeout)?
        .map_err(DialError::Connect)?;
    // Hints are tiny and latency is the point of the mesh.
    stream.set_nodelay(true).map_err(DialError::Connect)?;
    let (read, write) = stream.into_split();
    let mut reader = frame::reader(read);
    let mut writer = frame::writer(write);
    let config = &shared.config;

    let (cluster, node_id, instance, nonce) = match next_message(&mut reader).await? {
        MeshMessage::Challenge {
            cluster,
            node_id,
            instance,
            nonce,
        } => (cluster, node_id, instance, nonce),
        _ => return Err(DialError::Protocol),
    };
    if instance == shared.instance {
        return Ok(Dialled::Myself);
    }
    if cluster != config.cluster_name {
        return Err(DialError::ForeignCluster { cluster });
    }
    let own_nonce = *uuid::Uuid::new_v4().as_bytes();
    let hello = MeshMessage::Hello {
        cluster: config.cluster_name.clone(),
        node_id: config.node_id.clone(),
        proof: auth::prove(config.secret.as_ref(), &nonce, &config.node_id),
        nonce: own_nonce,
    };
    timeout(WRITE_TIMEOUT, writer.send(frame::encode(&hello)))
        .await
        .map_err(|_| DialError::Timeout)?
        .map_err(DialError::Connect)?;
    match next_message(&mut reader).await? {
        MeshMessage::Welcome => Ok(Dialled::Peer {
            reader: Box::new(reader),
            writer: Box::new(writer),
            node_id,
            sealer: Sealer::new(frame_key(
                config.secret.as_ref(),
                &nonce,
                &own_nonce,
                &config.node_id,
            )),
        }),
        _ => Err(DialError::Protocol),
    }
}

async fn next_message(
    reader: &mut FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
) -> Result<MeshMessage, DialError> {
    match timeout(HANDSHAKE_TIMEOUT, reader.next()).await {
        Err(_) => Err(DialError::Timeout),
        Ok(None) => Err(DialError::Closed),
        Ok(Some(Err(e))) => Err(DialError::Frame(frame::FrameError::Stream(e))),
        Ok(Some(Ok(bytes))) => Ok(frame::decode(&bytes)?),
    }
}

/// Sends queued hints (and pings when quiet) until the connection breaks or the task is
/// stopped. The acceptor never speaks after the handshake, so anything readable (data or
/// end of stream) means the connection is over.
async fn pump(
    shared: &Shared,
    queue: &mut mpsc::Receiver<Bytes>,
    mut reader: FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    writer: &mut FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    sealer: &mut Sealer,
) {
    let ping = frame::encode(&MeshMessage::Ping);
    let mut quiet = tokio::time::interval(PING_EVERY);
    quiet.reset();
    loop {
        tokio::select! {
            next = queue.recv() => {
                let Some(first) = next else { return };
                // Everything already queued goes out in one flush.
                let mut batch = vec![sealer.seal(&first)];
                while batch.len() < 64 {
                    match queue.try_recv() {
                        Ok(more) => batch.push(sealer.seal(&more)),
                        Err(_) => break,
                    }
                }
                let sent = batch.len() as u64;
                if !write_all(writer, batch).await {
                    return;
                }
                shared
                    .counters
                    .hints_sent
                    .fetch_add(sent, Ordering::Relaxed);
                quiet.reset();
            }
            _ = quiet.tick() => {
                if !write_all(writer, vec![sealer.seal(&ping)]).await {
                    return;
                }
            }
            _ = reader.next() => return,
        }
    }
}

async fn write_all(
    writer: &mut FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    frames: Vec<Bytes>,
) -> bool {
    let write = async {
        for frame in frames {
            writer.feed(frame).await?;
        }
        SinkExt::<Bytes>::flush(writer).await
    };
    matches!(timeout(WRITE_TIMEOUT, write).await, Ok(Ok(())))
}
