//! Where a call runs: on the queue's owner node ([`super::owner`] over the mesh members).
//! A call that arrives on another node is forwarded to the owner over the mesh and its
//! answer relayed; the owner runs it on its engine ([`super::run`]). Before either, the
//! engine follows the membership: queues this node no longer owns are dropped (their new
//! owner starts them empty), so a queue that comes back later does not bring old contents.

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use super::owner::owner;
use super::run::{self, Env};
use crate::broker::Broker;
use crate::domain::ephemeral::{Answer, Call};
use crate::mesh::calls::ForwardError;
use crate::mesh::message::EphemeralCall;

/// How often the engine looks at the mesh members between calls.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// How long a forwarded call other than a waiting pop may take.
const FORWARD_WAIT: Duration = Duration::from_secs(5);

/// The engine's environment on this node.
pub fn env(broker: &Broker) -> Env<'_> {
    Env {
        engine: &broker.ephemeral,
        db: &broker.db,
        draining: &broker.draining,
        node: broker.mesh.node_id(),
    }
}

/// How long a `queues` listing waits for each other node's held queues.
const LIST_WAIT: Duration = Duration::from_secs(2);

/// `GET /api/v1/ephemeral/queues` for `tenant`: the declarations and the queues every node
/// holds (each node holds the queues it owns), asked of the other members at once. A node
/// that does not answer within [`LIST_WAIT`] is named in the answer's `unanswered`.
pub async fn list(broker: &Broker, tenant: &str) -> Answer {
    let members = broker.mesh.members();
    let me = broker.mesh.node_id();
    broker.ephemeral.follow(&members, me);
    let others = members.iter().filter(|node| node.as_str() != me);
    let asked = others.map(|node| async move {
        let answer = broker
            .mesh
            .forward(node, tenant, Call::Held, LIST_WAIT)
            .await;
        let rows = answer
            .ok()
            .filter(|a| a.status == 200)
            .and_then(|a| serde_json::from_str::<Vec<serde_json::Value>>(&a.body).ok());
        (node.clone(), rows)
    });
    let mut held = run::held(&broker.ephemeral, tenant, me);
    let mut unanswered = Vec::new();
    for (node, rows) in futures_util::future::join_all(asked).await {
        match rows {
            Some(rows) => held.extend(rows),
            None => unanswered.push(node),
        }
    }
    run::queues(&env(broker), tenant, held, unanswered).await
}

/// Runs `call` for `tenant` on the queue's owner node and answers what it answered.
pub async fn serve(broker: &Broker, tenant: &str, call: Call) -> Answer {
    let members = broker.mesh.members();
    let me = broker.mesh.node_id();
    broker.ephemeral.follow(&members, me);
    let to = owner(&members, tenant, call.queue()).unwrap_or(me);
    if to == me {
        return run::run(&env(broker), tenant, call).await;
    }
    broker.ephemeral.counters.forwarding(&call);
    let wait = match &call {
        Call::Pop(pop) => Duration::from_millis(pop.wait_ms) + FORWARD_WAIT,
        _ => FORWARD_WAIT,
    };
    match broker.mesh.forward(to, tenant, call, wait).await {
        Ok(answer) => answer,
        Err(ForwardError::TooLarge) => Answer::error(
            413,
            "too_large",
            "mesh_frame",
            "the call is larger than a mesh frame (4 MiB) and its queue is owned by another \
             node; nothing was changed",
        ),
        Err(error) => {
            warn!(owner = to, error = %error, "ephemeral call not forwarded");
            Answer::error(
                503,
                "owner_unreachable",
                "mesh",
                format!("{error}; retry after the Retry-After seconds"),
            )
        }
    }
}

/// Follows the mesh members between calls too, so a node that owned a queue, lost it to a
/// node that joined, and gets it back when that node leaves, does not bring back contents
/// from before (a membership change shorter than [`FOLLOW_EVERY`] with no call in it can
/// still go unseen). Ends when the broker is dropped.
pub fn spawn_follower(broker: &Arc<Broker>) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(broker);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FOLLOW_EVERY);
        loop {
            tick.tick().await;
            let Some(broker) = weak.upgrade() else { return };
            let members = broker.mesh.members();
            broker.ephemeral.follow(&members, broker.mesh.node_id());
        }
    })
}

/// Runs a call another node forwarded here and sends it the answer.
pub async fn serve_forwarded(broker: Arc<Broker>, forwarded: EphemeralCall) {
    let members = broker.mesh.members();
    broker.ephemeral.follow(&members, broker.mesh.node_id());
    let answer = run::run(&env(&broker), &forwarded.tenant, forwarded.call).await;
    let sent = broker
        .mesh
        .reply(&forwarded.from, forwarded.request, answer);
    if sent == Err(ForwardError::TooLarge) {
        // A pop's answer past a mesh frame: its messages stay leased and come back at the
        // lease's end (an autoAck pop's are lost, as at a crash).
        let answer = Answer::error(
            413,
            "too_large",
            "mesh_frame",
            "the answer is larger than a mesh frame (4 MiB): pop a smaller batch",
        );
        let _ = broker
            .mesh
            .reply(&forwarded.from, forwarded.request, answer);
    } else if let Err(error) = sent {
        warn!(peer = %forwarded.from, error = %error, "ephemeral answer not sent back");
    }
}
