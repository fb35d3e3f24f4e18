//! The lease book: what this node's claims leased, kept until the ack that releases it.
//!
//! A consumer usually acks through the node that served its pop (one HTTP connection, or a
//! load balancer that keeps it). That node's claim already returned the delivered
//! messages' transaction-id keys with their segments, so its ack need not ask SQL to
//! read and compare them again: when the acked items are exactly the booked ones, the
//! known-lease statement only checks that the lease is still the one granted
//! ([`crate::db::ack::leased_span`]). An ack through another node, or one the book no
//! longer holds, takes the statements that prove everything in SQL, exactly as before.
//!
//! The book is a hint, never the truth: a stale or evicted entry only sends an ack down
//! the longer path. It is bounded by the keys it holds and forgets a lease once its
//! expiry has passed.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::db::ack::LeasedSpan;

/// Most keys (one per leased message) the book holds at once: 8 MB of keys. When full,
/// the oldest leases are forgotten first.
pub const MAX_BOOKED_MESSAGES: usize = 1 << 20;

/// Which lease, for whom: an entry answers only the tenant and group its claim was for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    tenant: String,
    group: String,
    partition_id: i64,
}

#[derive(Debug)]
struct Entry {
    holder: Holder,
    span: LeasedSpan,
    seq: u64,
}

#[derive(Debug, Default)]
struct Inner {
    by_lease: HashMap<String, Entry>,
    /// Leases in booking order with their expiry, for eviction; an entry taken or replaced
    /// since leaves a stale item here, recognised by its sequence number.
    order: VecDeque<(String, u64, Instant)>,
    held: usize,
    next_seq: u64,
}

/// What this node's single-partition claims leased, by lease id.
#[derive(Debug)]
pub struct LeaseBook {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl Default for LeaseBook {
    fn default() -> Self {
        Self::with_capacity(MAX_BOOKED_MESSAGES)
    }
}

impl LeaseBook {
    /// A book holding at most `capacity` keys.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    /// Books what a claim under `lease` leased from one partition for `tenant`'s `group`,
    /// until `lease_for` from now.
    pub fn record(
        &self,
        tenant: &str,
        group: &str,
        partition_id: i64,
        lease: &str,
        span: LeasedSpan,
        lease_for: Duration,
    ) {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.forget_expired(now);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.held += span.sorted_keys.len();
        let entry = Entry {
            holder: Holder {
                tenant: tenant.to_owned(),
                group: group.to_owned(),
                partition_id,
            },
            span,
            seq,
        };
        if let Some(old) = inner.by_lease.insert(lease.to_owned(), entry) {
            inner.held -= old.span.sorted_keys.len();
        }
        inner
            .order
            .push_back((lease.to_owned(), seq, now + lease_for));
        while inner.held > self.capacity {
            if !inner.forget_oldest() {
                break;
            }
        }
    }

    /// Takes the span `lease` leased from `partition_id` for `tenant`'s `group`, if this
    /// node booked it and its lease has not expired. An entry of another holder stays.
    pub fn take(
        &self,
        tenant: &str,
        group: &str,
        partition_id: i64,
        lease: &str,
    ) -> Option<LeasedSpan> {
        let mut inner = self.lock();
        inner.forget_expired(Instant::now());
        let entry = inner.by_lease.get(lease)?;
        let holder = &entry.holder;
        if holder.partition_id != partition_id || holder.tenant != tenant || holder.group != group {
            return None;
        }
        let entry = inner.by_lease.remove(lease)?;
        inner.held -= entry.span.sorted_keys.len();
        inner.compact();
        Some(entry.span)
    }

    /// Leases booked and not yet taken or forgotten.
    pub fn len(&self) -> usize {
        self.lock().by_lease.len()
    }

    /// True when the book holds no lease.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The book holds hints only: a panic elsewhere while it was locked leaves nothing
        // that could mislead an ack (every entry is checked by SQL before it counts).
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    /// Forgets leases, oldest first, whose expiry has passed.
    fn forget_expired(&mut self, now: Instant) {
        while self
            .order
            .front()
            .is_some_and(|(_, _, until)| *until <= now)
        {
            self.forget_oldest();
        }
    }

    /// Drops the order's items of leases taken since, once they outnumber the live ones,
    /// so a book whose leases are all acked stays small however long the leases are.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.by_lease.len() + 1024 {
            let by_lease = &self.by_lease;
            self.order
                .retain(|(lease, seq, _)| by_lease.get(lease).is_some_and(|e| e.seq == *seq));
        }
    }

    /// Forgets the oldest booking still in the order; false when there is none.
    fn forget_oldest(&mut self) -> bool {
        let Some((lease, seq, _)) = self.order.pop_front() else {
            return false;
        };
        if self.by_lease.get(&lease).is_some_and(|e| e.seq == seq) {
            if let Some(entry) = self.by_lease.remove(&lease) {
                self.held -= entry.span.sorted_keys.len();
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::LeaseBook;
    use crate::db::ack::LeasedSpan;

    fn span(floor: i64, n: i64) -> LeasedSpan {
        LeasedSpan::of(floor, floor + n, (1..=n).collect(), "q", "p").expect("distinct")
    }

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn a_booked_lease_is_taken_once_and_only_by_its_holder() {
        let book = LeaseBook::default();
        book.record("t", "g", 7, "L1", span(9, 3), LONG);
        assert!(book.take("other", "g", 7, "L1").is_none());
        assert!(book.take("t", "h", 7, "L1").is_none());
        assert!(book.take("t", "g", 8, "L1").is_none());
        assert_eq!(book.take("t", "g", 7, "L1"), Some(span(9, 3)));
        assert!(book.take("t", "g", 7, "L1").is_none());
        assert!(book.is_empty());
    }

    #[test]
    fn an_expired_lease_is_forgotten() {
        let book = LeaseBook::default();
        book.record("t", "g", 7, "L1", span(0, 2), Duration::ZERO);
        assert!(book.take("t", "g", 7, "L1").is_none());
        assert!(book.is_empty());
    }

    #[test]
    fn a_full_book_forgets_its_oldest_leases_first() {
        let book = LeaseBook::with_capacity(10);
        book.record("t", "g", 1, "A", span(0, 4), LONG);
        book.record("t", "g", 2, "B", span(0, 4), LONG);
        book.record("t", "g", 3, "C", span(0, 4), LONG);
        assert_eq!(book.len(), 2);
        assert!(book.take("t", "g", 1, "A").is_none());
        assert!(book.take("t", "g", 2, "B").is_some());
        assert!(book.take("t", "g", 3, "C").is_some());
    }

    #[test]
    fn taken_leases_leave_no_trail_behind() {
        let book = LeaseBook::default();
        for i in 0..10_000 {
            let lease = format!("L{i}");
            book.record("t", "g", i, &lease, span(0, 1), LONG);
            assert!(book.take("t", "g", i, &lease).is_some());
        }
        assert!(book.lock().order.len() <= 1024 + 1);
    }
}
