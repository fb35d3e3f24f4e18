//! `/api/v1/ephemeral/*`, the eight routes of ephemeral queues: [`routes`] checks each
//! call into a `domain::ephemeral::Call`, [`dispatch`] runs it on the queue's owner node
//! (this one, or a peer over the mesh) and answers what the engine answered. Every
//! failure is the `{error, reason, detail}` envelope; the one 404 is depth's
//! `ephemeral_queue_not_found`. README "Ephemeral queues" lists the choices the contract
//! left open.

pub mod dispatch;
pub mod routes;
