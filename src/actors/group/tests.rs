//! The actor's accounting when a plan's reply never reaches the pop that asked: the pop
//! was dropped (its client left) after the actor handled `PlanPop` but before the reply
//! was read. Real actors on the test's own arbiter; no database.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::actors::registry::Registry;
use crate::domain::{ConsumerGroup, QueueName, Tenant};

fn registry() -> Arc<Registry> {
    let long = Duration::from_secs(600);
    Registry::new(
        Arbiter::current(),
        Arc::new(Metrics::default()),
        true,
        long,
        long,
    )
}

fn key() -> GroupKey {
    GroupKey {
        tenant: Tenant::default_tenant(),
        queue: QueueName::parse("q".to_owned()).expect("a valid queue name"),
        group: ConsumerGroup::parse(Some("g")).expect("a valid group name"),
    }
}

fn plan_pop() -> PlanPop {
    PlanPop {
        partitions: 1,
        park_if_empty: false,
    }
}

/// Sends `PlanPop`, lets the actor handle it (its mailbox is FIFO, so a later `Stats` is
/// answered after it), then drops the request with the reply inside, as a pop whose client
/// left at that moment does.
async fn plan_and_drop(actor: &Addr<GroupActor>) {
    let asked = actor.send(plan_pop());
    actor.send(Stats).await.expect("the actor is alive");
    drop(asked);
}

/// A reseed plan whose reply is dropped does not leave the actor reseeding forever.
#[actix_rt::test]
async fn a_dropped_reseed_plan_leaves_the_actor_free_to_reseed_again() {
    // Arrange
    let registry = registry();
    let actor = registry.group(&key());

    // Act
    plan_and_drop(&actor).await;

    // Assert
    let stats = actor.send(Stats).await.expect("the actor is alive");
    assert!(!stats.reseeding, "the dropped reseed plan is still pending");
    let again = actor.send(plan_pop()).await.expect("the actor is alive");
    assert!(matches!(again, PopPlan::Reseed(_)), "{again:?}");
}

/// Lent partitions whose plan's reply is dropped go back to the ring.
#[actix_rt::test]
async fn a_dropped_candidates_plan_returns_its_partitions_to_the_ring() {
    // Arrange: a reseed found two partitions.
    let registry = registry();
    let actor = registry.group(&key());
    let found = |id: i64| PendingRef {
        partition: PartitionRef {
            id,
            name: format!("p{id}").into(),
        },
        lease_until: None,
        window_until: None,
    };
    let PopPlan::Reseed(ticket) = actor.send(plan_pop()).await.expect("the actor is alive") else {
        panic!("a fresh actor plans a reseed first");
    };
    ticket.finish(ReseedResult {
        registered: true,
        deferral: Deferral::default(),
        pending: vec![found(1), found(2)],
    });
    let ready = actor.send(Stats).await.expect("the actor is alive");
    assert_eq!((ready.ring, ready.lent), (2, 0), "{ready:?}");

    // Act
    plan_and_drop(&actor).await;

    // Assert
    let stats = actor.send(Stats).await.expect("the actor is alive");
    assert_eq!((stats.ring, stats.lent), (2, 0), "{stats:?}");
}
