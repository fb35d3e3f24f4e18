//! Actors: one [`group::GroupActor`] per (tenant, queue, consumer group), found through the
//! [`registry::Registry`], which lists their addresses in a [`directory::Directory`] (an
//! actor crosses itself out there when it stops, so it never needs the registry).
//!
//! A group actor owns that group's hot-list [`ring`], its revisit [`wheel`] and its
//! [`wake_gate`]. Pushes (local, and later peer hints) feed the ring and open the gate; a
//! pop asks the actor for a plan, does the database work itself, and checks every lent
//! candidate back in. The actors never touch the database.

pub mod directory;
pub mod group;
pub mod heap_return;
pub mod registry;
pub mod ring;
pub mod wake_gate;
pub mod wheel;

use crate::domain::{ConsumerGroup, QueueName, Tenant};

/// The identity of a group actor; the tenant is part of every in-memory key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The queue's tenant.
    pub tenant: Tenant,
    /// The queue.
    pub queue: QueueName,
    /// The consumer group (`__QUEUE_MODE__` for queue mode).
    pub group: ConsumerGroup,
}
