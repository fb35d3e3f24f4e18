//! Calls forwarded to the node that owns an ephemeral queue, and their replies. A
//! connection carries frames one way (the dialler sends), so a call goes out over this
//! node's connection to the owner and the reply comes back over the owner's connection to
//! this node; the request id pairs them. A call whose reply does not come in time, or
//! whose owner is not connected, fails here and the HTTP route answers 503 (the client
//! retries); nothing waits for ever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;

use super::frame::{self, MAX_CALL_FRAME_BYTES};
use super::message::{EphemeralCall, EphemeralReply, MeshMessage};
use super::sealed::TAG_BYTES;
use super::{Counters, Mesh};
use crate::domain::ephemeral::{Answer, Call};

/// The calls this node sent and waits on.
#[derive(Default)]
pub(crate) struct Pending {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
}

/// Why a forwarded call has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    /// The owner is not connected (or its queue of frames is full).
    #[error("the queue's owner node is not reachable over the mesh")]
    Unreachable,
    /// No reply in time (the owner went away meanwhile).
    #[error("the queue's owner node did not answer in time")]
    Timeout,
    /// The call does not fit in one mesh frame.
    #[error("the call is too large to forward to the queue's owner node")]
    TooLarge,
}

/// Forgets a pending call however its wait ends.
struct Forget<'a>(&'a Pending, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0
            .waiting
            .lock()
            .expect("mesh calls lock")
            .remove(&self.1);
    }
}

/// The most bytes of a forwarded call's frame before its tag.
const MAX_CALL_PAYLOAD: usize = MAX_CALL_FRAME_BYTES - TAG_BYTES;

impl Mesh {
    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.shared.config.node_id
    }

    /// The nodes that own ephemeral queues now: this one and every connected peer, by id.
    pub fn members(&self) -> Vec<String> {
        let mut members: Vec<String> = {
            let peers = self.shared.peers.lock().expect("mesh lock");
            peers.values().filter_map(|p| p.connected_node()).collect()
        };
        members.push(self.node_id().to_owned());
        members.sort();
        members.dedup();
        members
    }

    /// Sends `call` to node `to` and waits up to `wait` for its answer.
    pub async fn forward(
        &self,
        to: &str,
        tenant: &str,
        call: Call,
        wait: Duration,
    ) -> Result<Answer, ForwardError> {
        let pending = &self.shared.calls;
        let request = pending.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        pending
            .waiting
            .lock()
            .expect("mesh calls lock")
            .insert(request, sender);
        let _forget = Forget(pending, request);
        let message = MeshMessage::EphemeralCall(EphemeralCall {
            request,
            from: self.node_id().to_owned(),
            tenant: tenant.to_owned(),
            call,
        });
        self.send_to(to, &message)?;
        match tokio::time::timeout(wait, receiver).await {
            Ok(Ok(answer)) => Ok(answer),
            _ => Err(ForwardError::Timeout),
        }
    }

    /// Sends the answer of a call node `to` forwarded here.
    pub fn reply(&self, to: &str, request: u64, answer: Answer) -> Result<(), ForwardError> {
        self.send_to(
            to,
            &MeshMessage::EphemeralReply(EphemeralReply { request, answer }),
        )
    }

    /// Hands a reply to the call waiting on it (none: it gave up; the reply is dropped).
    pub fn replied(&self, reply: EphemeralReply) {
        let waiting = self
            .shared
            .calls
            .waiting
            .lock()
            .expect("mesh calls lock")
            .remove(&reply.request);
        if let Some(sender) = waiting {
            let _ = sender.send(reply.answer);
        }
    }

    fn send_to(&self, to: &str, message: &MeshMessage) -> Result<(), ForwardError> {
        let frame = frame::encode(message);
        if frame.len() > MAX_CALL_PAYLOAD {
            return Err(ForwardError::TooLarge);
        }
        let peers = self.shared.peers.lock().expect("mesh lock");
        let peer = peers
            .values()
            .find(|p| p.connected_node().as_deref() == Some(to))
            .ok_or(ForwardError::Unreachable)?;
        if peer.offer(frame) {
            Ok(())
        } else {
            Counters::bump(&self.shared.counters.hints_dropped);
            Err(ForwardError::Unreachable)
        }
    }
}
