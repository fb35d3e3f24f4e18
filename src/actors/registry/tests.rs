//! Where the registry starts a group actor: on the arbiter of the worker thread that asked
//! for it, or on its own arbiter for any other caller. Real actors and arbiters; no
//! database.

use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::Registry;
use crate::actors::group::GroupActor;
use crate::actors::GroupKey;
use crate::domain::{ConsumerGroup, QueueName, Tenant};
use crate::metrics::Metrics;

/// Asks an actor which thread handles its messages.
#[derive(Message)]
#[rtype(result = "ThreadId")]
struct HomeThread;

impl Handler<HomeThread> for GroupActor {
    type Result = MessageResult<HomeThread>;

    fn handle(&mut self, _: HomeThread, _: &mut Self::Context) -> Self::Result {
        MessageResult(thread::current().id())
    }
}

fn key(group: &str) -> GroupKey {
    GroupKey {
        tenant: Tenant::default_tenant(),
        queue: QueueName::parse("q".to_owned()).expect("a valid queue name"),
        group: ConsumerGroup::parse(Some(group)).expect("a valid group name"),
    }
}

/// The thread `arbiter` runs its tasks on.
async fn thread_of(arbiter: &ArbiterHandle) -> ThreadId {
    let (tx, rx) = oneshot::channel();
    arbiter.spawn(async move {
        let _ = tx.send(thread::current().id());
    });
    rx.await.expect("the arbiter runs")
}

#[actix_rt::test]
async fn a_group_actor_lives_on_the_worker_that_asked_for_it_and_elsewhere_on_the_registrys_arbiter(
) {
    // Arrange: the registry's own arbiter, and a worker arbiter that adopts its thread.
    let own = Arbiter::new();
    let long = Duration::from_secs(600);
    let registry = Registry::new(own.handle(), Arc::new(Metrics::default()), true, long, long);
    let worker = Arbiter::new();
    let (tx, rx) = oneshot::channel();
    let on_worker = registry.clone();
    worker.spawn(async move {
        on_worker.adopt_worker_thread();
        let _ = tx.send((on_worker.group(&key("w")), thread::current().id()));
    });
    let (from_worker, worker_thread) = rx.await.expect("the worker runs");

    // Act: this test's thread never adopted itself.
    let from_elsewhere = registry.group(&key("e"));

    // Assert
    let home = from_worker.send(HomeThread).await.expect("alive");
    assert_eq!(home, worker_thread);
    let home = from_elsewhere.send(HomeThread).await.expect("alive");
    assert_eq!(home, thread_of(&own.handle()).await);
    assert_ne!(home, thread::current().id());
    // The worker's actor is found again from any thread.
    assert_eq!(registry.group(&key("w")), from_worker);
}
