//! A push's new partitions on the Citus layout, created before its transaction.
//!
//! There the partitions' directory (`queen.log_partition_names`) and `queen.queues` are
//! reference tables, and a write to a reference table holds Citus's lock on that table's
//! shard until the transaction ends. A push that created its partitions inside its own
//! transaction held the directory's lock through every append of that transaction, each
//! a round trip to a worker, then the two-phase commit: a push creating 30 partitions
//! held it for seconds, and every first pop and every other push creating a partition
//! queued behind it (docs/scale-out.md). So a push whose partitions this node has not
//! seen yet creates them first, each in a short transaction of its own
//! (`queen.log_partition_resolve_v1`, the call the append's own resolve makes), and its
//! transaction then only reads the directory.
//!
//! A partition created this way stays when the push then fails (a `maxSize`, a lost
//! connection): it is empty, as a partition whose messages retention removed, and the
//! idle sweep deletes it like one. On plain PostgreSQL nothing here runs: the directory
//! is a plain table there, whose inserted rows lock nothing another push needs.

use std::collections::{BTreeSet, HashSet};
use std::sync::Mutex;

use super::window::WindowKey;
use crate::db::push::create_partitions;
use crate::db::{DbError, PgConn};
use crate::domain::{PartitionName, QueueName, Tenant};

/// The partitions this node has seen created, so that only a push naming a new one pays the
/// round trip of [`KnownPartitions::create_missing`]. A partition deleted since (a queue delete, the idle
/// sweep) is created again by the append's own resolve, inside its transaction: correct,
/// only not short.
pub struct KnownPartitions {
    known: Mutex<HashSet<WindowKey>>,
    max_entries: usize,
}

/// How many partitions a node remembers: about 100 B each, so 10 MB at the most.
const MAX_KNOWN: usize = 100_000;

impl Default for KnownPartitions {
    fn default() -> Self {
        Self::new(MAX_KNOWN)
    }
}

impl KnownPartitions {
    /// None known; past `max_entries` the set starts over (one extra round trip for each
    /// partition pushed to again).
    pub fn new(max_entries: usize) -> Self {
        Self {
            known: Mutex::new(HashSet::new()),
            max_entries: max_entries.max(1),
        }
    }

    /// Which of `partitions` this node has not seen created, each once, in (queue,
    /// partition) order.
    fn unknown<'a>(
        &self,
        tenant: &Tenant,
        partitions: impl Iterator<Item = (&'a QueueName, &'a PartitionName)>,
    ) -> Vec<(&'a QueueName, &'a PartitionName)> {
        let known = self.lock();
        let unknown: BTreeSet<_> = partitions
            .filter(|(queue, partition)| !known.contains(&WindowKey::new(tenant, queue, partition)))
            .collect();
        unknown.into_iter().collect()
    }

    /// Records `partitions` as created.
    fn learn(&self, tenant: &Tenant, partitions: &[(&QueueName, &PartitionName)]) {
        let mut known = self.lock();
        if known.len() + partitions.len() > self.max_entries {
            known.clear();
        }
        for (queue, partition) in partitions {
            known.insert(WindowKey::new(tenant, queue, partition));
        }
    }

    /// How many partitions are known now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// On the Citus layout, creates those of `partitions` (in (queue, partition) order, each
    /// once) that this node has not seen yet, each committed on its own, and learns them;
    /// `default_window_secs` is the dedup window of queues that set none. Called before the
    /// push's transaction begins. Does nothing on plain PostgreSQL.
    pub(super) async fn create_missing<'a>(
        &self,
        conn: &mut PgConn,
        tenant: &Tenant,
        partitions: impl Iterator<Item = (&'a QueueName, &'a PartitionName)>,
        default_window_secs: i32,
    ) -> Result<(), DbError> {
        if !conn.distributed() {
            return Ok(());
        }
        let missing = self.unknown(tenant, partitions);
        if missing.is_empty() {
            return Ok(());
        }
        let names: Vec<(&str, &str)> = missing
            .iter()
            .map(|(queue, partition)| (queue.as_str(), partition.as_str()))
            .collect();
        create_partitions(conn, tenant.as_str(), &names, default_window_secs).await?;
        self.learn(tenant, &missing);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<WindowKey>> {
        // A panic while holding the lock leaves only a cache behind: keep using it.
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)]) -> Vec<(QueueName, PartitionName)> {
        pairs
            .iter()
            .map(|(q, p)| {
                (
                    QueueName::parse(*q).expect("a valid queue name"),
                    PartitionName::parse(*p).expect("a valid partition name"),
                )
            })
            .collect()
    }

    #[test]
    fn only_partitions_not_learned_are_unknown_each_once_and_per_tenant() {
        let known = KnownPartitions::new(100);
        let a = Tenant::default_tenant();
        let b = Tenant::parse("other").expect("a valid tenant");
        let pairs = names(&[("q", "p1"), ("q", "p2")]);
        let first = pairs[..1].iter().map(|(q, p)| (q, p)).collect::<Vec<_>>();
        known.learn(&a, &first);

        let twice = pairs.iter().chain(&pairs).map(|(q, p)| (q, p));
        let unknown = known.unknown(&a, twice);
        assert_eq!(unknown.len(), 1, "p2 once, though named twice");
        assert_eq!(unknown[0].1.as_str(), "p2");
        assert_eq!(
            known.unknown(&b, pairs.iter().map(|(q, p)| (q, p))).len(),
            2
        );
    }

    #[test]
    fn a_full_set_starts_over_instead_of_growing() {
        let known = KnownPartitions::new(2);
        let pairs = names(&[("q", "p1"), ("q", "p2"), ("q", "p3")]);
        let tenant = Tenant::default_tenant();
        for (q, p) in &pairs {
            known.learn(&tenant, &[(q, p)]);
        }
        assert_eq!(
            known.len(),
            1,
            "the third partition cleared the two before it"
        );
        assert_eq!(
            known
                .unknown(&tenant, pairs.iter().map(|(q, p)| (q, p)))
                .len(),
            2
        );
    }
}
