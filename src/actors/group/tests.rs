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
    registry_reseeding_every(Duration::from_secs(600))
}

fn registry_reseeding_every(reseed_every: Duration) -> Arc<Registry> {
    Registry::new(
        Arbiter::current(),
        Arc::new(Metrics::default()),
        true,
        reseed_every,
        Duration::from_secs(600),
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

/// Plans the fresh actor's first pop (a reseed) and finishes it with partitions 1 and 2
/// pending (`truncated`: the reseed hit its limit).
async fn reseed_two(actor: &Addr<GroupActor>, truncated: bool) {
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
        truncated,
    });
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
    reseed_two(&actor, false).await;
    let ready = actor.send(Stats).await.expect("the actor is alive");
    assert_eq!((ready.ring, ready.lent), (2, 0), "{ready:?}");

    // Act
    plan_and_drop(&actor).await;

    // Assert
    let stats = actor.send(Stats).await.expect("the actor is alive");
    assert_eq!((stats.ring, stats.lent), (2, 0), "{stats:?}");
}

/// Reseeds `found` partitions (`truncated`: the reseed hit its limit), then lends every
/// one to a pop that claims it under a lease, so the ring is dry again; answers the plan
/// the next pop gets.
async fn plan_after_consuming_a_reseed(truncated: bool) -> PopPlan {
    let registry = registry();
    let actor = registry.group(&key());
    reseed_two(&actor, truncated).await;
    let PopPlan::Candidates { loan, .. } = actor.send(plan_pop()).await.expect("alive") else {
        panic!("the reseeded ring lends its partitions");
    };
    let lease_until = Some(Instant::now() + Duration::from_secs(60));
    let verdicts = loan
        .partitions()
        .iter()
        .map(|p| {
            let claimed = Verdict::Claimed {
                lease_until,
                pending_after: 0,
            };
            (p.id, claimed)
        })
        .collect();
    loan.check_in(verdicts);
    let dry = actor.send(Stats).await.expect("the actor is alive");
    assert_eq!((dry.ring, dry.lent), (0, 0), "{dry:?}");
    actor.send(plan_pop()).await.expect("the actor is alive")
}

/// A reseed cut at its limit means more partitions may be pending: once the ring runs dry
/// the next pop reseeds at once instead of waiting for the next periodic reseed (the
/// 10,000-partition benchmark's drain stood still for seconds each time 4,096 partitions
/// were consumed).
#[actix_rt::test]
async fn a_ring_from_a_truncated_reseed_is_reseeded_as_soon_as_it_runs_dry() {
    let plan = plan_after_consuming_a_reseed(true).await;

    assert!(matches!(plan, PopPlan::Reseed(_)), "{plan:?}");
}

/// A reseed that found everything pending leaves a dry ring to the periodic reseed.
#[actix_rt::test]
async fn a_ring_from_a_complete_reseed_waits_for_the_periodic_reseed() {
    let plan = plan_after_consuming_a_reseed(false).await;

    assert!(matches!(plan, PopPlan::Empty { .. }), "{plan:?}");
}

/// Parked pops keep no timer of their own: when the group's reseed falls due, the actor
/// wakes the longest-parked pop (which runs it) and leaves the others parked.
#[actix_rt::test]
async fn a_reseed_falling_due_wakes_one_parked_pop_to_run_it() {
    // Arrange: a first reseed that found nothing, then two parked pops.
    let registry = registry_reseeding_every(Duration::from_millis(300));
    let actor = registry.group(&key());
    let PopPlan::Reseed(ticket) = actor.send(plan_pop()).await.expect("the actor is alive") else {
        panic!("a fresh actor plans a reseed first");
    };
    ticket.finish(ReseedResult {
        registered: true,
        deferral: Deferral::default(),
        pending: vec![],
        truncated: false,
    });
    let park = || PlanPop {
        partitions: 1,
        park_if_empty: true,
    };
    let PopPlan::Empty {
        parked: Some(first),
    } = actor.send(park()).await.expect("alive")
    else {
        panic!("an empty ring parks the pop");
    };
    let PopPlan::Empty {
        parked: Some(mut second),
    } = actor.send(park()).await.expect("alive")
    else {
        panic!("an empty ring parks the pop");
    };

    // Act
    let woken = tokio::time::timeout(Duration::from_secs(3), first).await;

    // Assert
    assert!(
        matches!(woken, Ok(Ok(WakeSource::Reseed))),
        "the first parked pop was not woken for the reseed: {woken:?}"
    );
    assert!(second.try_recv().is_err(), "the second pop was woken too");
    let plan = actor.send(plan_pop()).await.expect("the actor is alive");
    assert!(matches!(plan, PopPlan::Reseed(_)), "{plan:?}");
}
