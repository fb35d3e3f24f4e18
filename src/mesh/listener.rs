//! The mesh port: accepts peers' connections, challenges them, and hands the hints of
//! those that pass to the node's [`Inbox`].
//!
//! Everything arriving here is untrusted. A frame that is oversized, not msgpack, out of
//! turn, from another cluster or without a valid proof is dropped and counted; the ones
//! that break the stream (oversized, bad handshake) also close the connection, and so does,
//! with a shared secret, the first frame whose tag fails (`super::sealed`). Nothing a peer
//! sends can panic the node or reach PostgreSQL.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::timeout;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};
use tracing::{debug, info, warn};

use super::message::MeshMessage;
use super::peer::HANDSHAKE_TIMEOUT;
use super::sealed::{frame_key, Opener};
use super::{auth, frame, Counters, Inbox, Shared};

/// Inbound connections served at once. A cluster has a handful of peers; the bound keeps
/// a flood of junk connections from costing more than this many small tasks.
const MAX_INBOUND: usize = 256;
/// A dialler pings every second; one silent for this long is gone (half-open socket).
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Accepts until the task is aborted; aborting it also ends every connection it serves.
pub(crate) async fn run(shared: Arc<Shared>, listener: TcpListener, inbox: Arc<dyn Inbox>) {
    let mut connections = JoinSet::new();
    let slots = Arc::new(Semaphore::new(MAX_INBOUND));
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                warn!(error = %error, "mesh accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            debug!(peer = %remote, "mesh connection refused: too many inbound connections");
            continue;
        };
        connections.spawn(serve(shared.clone(), stream, remote, inbox.clone(), slot));
    }
}

/// Why a dialler's handshake was refused.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("mesh dialler sent no hello in time")]
    Timeout,
    #[error("mesh dialler hung up before its hello")]
    Closed,
    #[error("mesh dialler sent an unreadable hello")]
    Unreadable,
    #[error("mesh dialler did not start with a hello")]
    NotHello,
    #[error("mesh dialler belongs to another cluster")]
    ForeignCluster,
    #[error("mesh dialler's proof does not match the shared secret")]
    BadProof,
}

async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    remote: SocketAddr,
    inbox: Arc<dyn Inbox>,
    _slot: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    let mut reader = frame::reader(read);
    let mut writer = frame::writer(write);
    let config = &shared.config;
    let nonce = *uuid::Uuid::new_v4().as_bytes();
    let challenge = MeshMessage::Challenge {
        cluster: config.cluster_name.clone(),
        node_id: config.node_id.clone(),
        instance: shared.instance,
        nonce,
    };
    if !matches!(
        timeout(HANDSHAKE_TIMEOUT, writer.send(frame::encode(&challenge))).await,
        Ok(Ok(()))
    ) {
        return;
    }
    let (node_id, dialler_nonce) = match hello(&shared, &mut reader, &nonce).await {
        Ok(hello) => hello,
        Err(refusal) => {
            if !matches!(refusal, Refusal::Closed) {
                Counters::bump(&shared.counters.frames_dropped);
                Counters::bump(&shared.counters.handshakes_refused);
                warn!(peer = %remote, error = %refusal, "mesh handshake refused");
            }
            return;
        }
    };
    if !matches!(
        timeout(
            HANDSHAKE_TIMEOUT,
            writer.send(frame::encode(&MeshMessage::Welcome))
        )
        .await,
        Ok(Ok(()))
    ) {
        return;
    }
    debug!(peer = %remote, node_id = %node_id, "mesh dialler accepted");
    reader
        .decoder_mut()
        .set_max_frame_length(frame::MAX_CALL_FRAME_BYTES);
    shared
        .counters
        .inbound_connections
        .fetch_add(1, Ordering::Relaxed);
    let mut opener = Opener::new(frame_key(
        config.secret.as_ref(),
        &nonce,
        &dialler_nonce,
        &node_id,
    ));
    receive(
        &shared,
        &mut reader,
        &mut opener,
        &node_id,
        inbox.as_ref(),
        remote,
    )
    .await;
    shared
        .counters
        .inbound_connections
        .fetch_sub(1, Ordering::Relaxed);
    info!(peer = %remote, node_id = %node_id, "mesh dialler left");
}

/// Reads the dialler's hello and checks its cluster and proof; its node id and nonce on
/// success.
async fn hello(
    shared: &Shared,
    reader: &mut FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    nonce: &[u8; 16],
) -> Result<(String, [u8; 16]), Refusal> {
    let bytes = match timeout(HANDSHAKE_TIMEOUT, reader.next()).await {
        Err(_) => return Err(Refusal::Timeout),
        Ok(None) => return Err(Refusal::Closed),
        Ok(Some(Err(_))) => return Err(Refusal::Unreadable),
        Ok(Some(Ok(bytes))) => bytes,
    };
    let Ok(MeshMessage::Hello {
        cluster,
        node_id,
        proof,
        nonce: dialler_nonce,
    }) = frame::decode(&bytes)
    else {
        return Err(if frame::decode(&bytes).is_ok() {
            Refusal::NotHello
        } else {
            Refusal::Unreadable
        });
    };
    if cluster != shared.config.cluster_name {
        return Err(Refusal::ForeignCluster);
    }
    if !auth::verify(shared.config.secret.as_ref(), nonce, &node_id, &proof) {
        return Err(Refusal::BadProof);
    }
    Ok((node_id, dialler_nonce))
}

/// Hands hints to the inbox until the dialler leaves, goes quiet, breaks the stream, or
/// sends a frame whose tag fails (with a secret: someone else's frame, or a replay).
async fn receive(
    shared: &Shared,
    reader: &mut FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    opener: &mut Opener,
    node_id: &str,
    inbox: &dyn Inbox,
    remote: SocketAddr,
) {
    let counters = &shared.counters;
    loop {
        let bytes = match timeout(IDLE_TIMEOUT, reader.next()).await {
            Err(_) => {
                debug!(peer = %remote, node_id, "mesh dialler went quiet");
                return;
            }
            Ok(None) => return,
            Ok(Some(Err(error))) => {
                // An oversized length prefix: the stream cannot be resynchronised.
                if error.kind() == std::io::ErrorKind::InvalidData {
                    Counters::bump(&counters.frames_dropped);
                    warn!(peer = %remote, node_id, error = %error, "mesh frame dropped");
                }
                return;
            }
            Ok(Some(Ok(bytes))) => bytes,
        };
        let Some(payload) = opener.open(&bytes) else {
            Counters::bump(&counters.frames_dropped);
            warn!(peer = %remote, node_id, "mesh frame failed authentication; closing");
            return;
        };
        match frame::decode(payload) {
            Ok(MeshMessage::Ping) => {}
            Ok(
                message @ (MeshMessage::PushLanded(_)
                | MeshMessage::AckReleased(_)
                | MeshMessage::ConfigChanged { .. }
                | MeshMessage::MaintenanceChanged { .. }
                | MeshMessage::EphemeralCall(_)
                | MeshMessage::EphemeralReply(_)),
            ) => {
                if inbox.deliver(node_id, message) {
                    Counters::bump(&counters.hints_received);
                } else {
                    Counters::bump(&counters.frames_dropped);
                    debug!(peer = %remote, node_id, "mesh hint with invalid names dropped");
                }
            }
            Ok(_) => {
                Counters::bump(&counters.frames_dropped);
                debug!(peer = %remote, node_id, "mesh handshake message out of turn dropped");
            }
            Err(error) => {
                Counters::bump(&counters.frames_dropped);
                debug!(peer = %remote, node_id, error = %error, "mesh frame dropped");
            }
        }
    }
}
