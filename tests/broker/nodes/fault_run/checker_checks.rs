//! The checker on small made-up histories: it must count what the fault run asserts on
//! (a lost message, a partition stored or delivered out of order) and tell an explained
//! duplicate from an unexplained one, or the run could pass whatever the brokers do.

use std::time::{Duration, Instant};

use super::checker::check;
use super::history::{Answer, Delivery, Domain, Pushed};

const LEASE: Duration = Duration::from_secs(3);

fn at(start: Instant, ms: u64) -> Instant {
    start + Duration::from_millis(ms)
}

/// A push of `id` through node 0, sent at `sent` ms and answered `status` at `answered`.
fn pushed(start: Instant, id: &str, sent: u64, answered: u64, status: &str) -> Pushed {
    Pushed {
        id: id.to_owned(),
        partition: "p0-0".to_owned(),
        node: 0,
        first_sent: at(start, sent),
        answer: Answer::Stored(at(start, answered), status.to_owned()),
        via: "push",
    }
}

/// A delivery to `domain` of `id` at `offset`, popped at `popped` ms, received 10 ms later,
/// acked 10 ms after that when `acked`.
fn delivered(
    start: Instant,
    domain: Domain,
    id: &str,
    offset: i64,
    popped: u64,
    acked: bool,
) -> Delivery {
    Delivery {
        domain,
        id: id.to_owned(),
        partition: "p0-0".to_owned(),
        offset,
        lease: "l".to_owned(),
        node: 0,
        pop_sent: at(start, popped),
        received: at(start, popped + 10),
        acked: (acked && domain != Domain::AutoAck).then(|| at(start, popped + 20)),
    }
}

/// `a` then `b` pushed and answered in turn, stored at offsets 0 and 1, each delivered once
/// in order to every reader: the history every case below changes in one way.
fn clean(start: Instant) -> (Vec<Pushed>, Vec<Delivery>) {
    let pushes = vec![
        pushed(start, "a", 0, 10, "queued"),
        pushed(start, "b", 20, 30, "queued"),
    ];
    let mut deliveries = Vec::new();
    for domain in Domain::ALL {
        deliveries.push(delivered(start, domain, "a", 0, 100, true));
        deliveries.push(delivered(start, domain, "b", 1, 200, true));
    }
    (pushes, deliveries)
}

#[test]
fn a_clean_history_has_no_finding() {
    let start = Instant::now();
    let (pushes, deliveries) = clean(start);

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(
        (v.lost(), v.order_violations(), v.stored_twice),
        (0, 0, 0),
        "{v:?}"
    );
    assert_eq!(v.answered_stored, 2);
}

#[test]
fn a_stored_message_one_group_never_got_is_lost() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    deliveries.retain(|d| !(d.domain == Domain::Leased && d.id == "b"));

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(v.lost(), 1, "{v:?}");
    assert_eq!(v.domains[&Domain::Leased].lost, 1);
}

#[test]
fn an_auto_ack_loss_is_explained_only_up_to_the_batches_of_its_lost_pops() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    deliveries.retain(|d| d.domain != Domain::AutoAck);

    let explained = check(&pushes, &deliveries, LEASE, 1, 2, &[], start);
    let unexplained = check(&pushes, &deliveries, LEASE, 1, 1, &[], start);

    assert_eq!(explained.lost(), 0, "{explained:?}");
    assert_eq!(explained.domains[&Domain::AutoAck].lost_to_auto_ack, 2);
    assert_eq!(unexplained.lost(), 2, "{unexplained:?}");
}

#[test]
fn a_message_stored_after_one_pushed_once_it_was_answered_breaks_the_stored_order() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    for d in &mut deliveries {
        d.offset = 1 - d.offset;
    }

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(v.stored_out_of_order, 1, "{v:?}");
}

#[test]
fn a_group_that_gets_an_earlier_offset_after_a_later_one_breaks_its_delivery_order() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    for d in deliveries.iter_mut().filter(|d| d.domain == Domain::Leased) {
        d.pop_sent = at(start, if d.id == "a" { 300 } else { 100 });
        d.received = d.pop_sent + Duration::from_millis(10);
    }

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(v.domains[&Domain::Leased].order_violations, 1, "{v:?}");
    assert_eq!(v.order_violations(), 1);
}

#[test]
fn a_duplicate_is_explained_by_a_failed_ack_before_it_and_by_nothing_else() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    // Queue mode: `a`'s first ack failed, then it came again.
    deliveries
        .iter_mut()
        .find(|d| d.domain == Domain::Queue && d.id == "a")
        .unwrap()
        .acked = None;
    deliveries.push(delivered(start, Domain::Queue, "a", 0, 4000, true));
    // g1: `b` acked, and still came again.
    deliveries.push(delivered(start, Domain::Leased, "b", 1, 4000, true));

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(v.domains[&Domain::Queue].duplicates_failed_ack, 1, "{v:?}");
    assert_eq!(v.domains[&Domain::Queue].duplicates_unexplained, 0);
    assert_eq!(v.domains[&Domain::Leased].duplicates_unexplained, 1);
}

#[test]
fn a_message_seen_at_two_offsets_was_stored_twice_which_no_failed_ack_explains() {
    let start = Instant::now();
    let (pushes, mut deliveries) = clean(start);
    deliveries
        .iter_mut()
        .find(|d| d.domain == Domain::Queue && d.id == "a")
        .unwrap()
        .acked = None;
    deliveries.push(delivered(start, Domain::Queue, "a", 2, 300, true));

    let v = check(&pushes, &deliveries, LEASE, 0, 10, &[], start);

    assert_eq!(v.stored_twice, 1, "{v:?}");
    assert_eq!(v.domains[&Domain::Queue].duplicates_unexplained, 1);
}
