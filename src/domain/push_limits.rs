//! What one push request may hold and create: a number of messages and a number of distinct
//! (queue, partition) pairs. The decoders count as they read, so a body over a cap is refused
//! before it costs more memory, and nothing of it is stored.
//!
//! The caps exist because a message is cheap on the wire (5 bytes in a `QPB1` body) but each
//! one becomes an item, an outcome and an answer in the broker, and each new partition a row
//! and a lock in the push's transaction.

use std::collections::HashSet;

use super::{PartitionName, QueueName};

/// The caps of one push request (`QUEEN_MAX_PUSH_MESSAGES`, `QUEEN_MAX_PUSH_PARTITIONS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushLimits {
    /// Messages one request may push.
    pub max_messages: usize,
    /// Distinct (queue, partition) pairs one request may push to, and so create at most.
    pub max_partitions: usize,
}

impl PushLimits {
    /// The defaults: far above the batches this project's clients and load tool send (100
    /// and less), and a known cost: one push of 100,000 five-byte messages (a 500 KB
    /// `QPB1` body) raised a release broker's peak RSS by about 170 MB, where 838,860 of
    /// them, with no cap, raised it by 570 MB.
    pub const DEFAULT: PushLimits = PushLimits {
        max_messages: 100_000,
        max_partitions: 1_000,
    };
}

/// Why a push was refused by its caps (a 400 naming the setting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// More messages than `max_messages`.
    #[error("a push may hold at most {max} messages (QUEEN_MAX_PUSH_MESSAGES)")]
    Messages {
        /// The cap.
        max: usize,
    },
    /// More distinct partitions than `max_partitions`.
    #[error(
        "a push may reach at most {max} distinct queue partitions (QUEEN_MAX_PUSH_PARTITIONS)"
    )]
    Partitions {
        /// The cap.
        max: usize,
    },
}

/// Counts one request's messages and distinct partitions against its [`PushLimits`].
#[derive(Debug)]
pub struct PushTally {
    limits: PushLimits,
    messages: usize,
    partitions: HashSet<(QueueName, PartitionName)>,
}

impl PushTally {
    /// An empty tally.
    pub fn new(limits: PushLimits) -> Self {
        PushTally {
            limits,
            messages: 0,
            partitions: HashSet::new(),
        }
    }

    /// Counts `n` more messages.
    pub fn messages(&mut self, n: usize) -> Result<(), LimitError> {
        self.messages = self.messages.saturating_add(n);
        if self.messages > self.limits.max_messages {
            return Err(LimitError::Messages {
                max: self.limits.max_messages,
            });
        }
        Ok(())
    }

    /// Counts a partition (a clone of shared names: no copy of the text).
    pub fn partition(
        &mut self,
        queue: &QueueName,
        partition: &PartitionName,
    ) -> Result<(), LimitError> {
        if self.partitions.len() < self.limits.max_partitions {
            self.partitions.insert((queue.clone(), partition.clone()));
            return Ok(());
        }
        if self
            .partitions
            .contains(&(queue.clone(), partition.clone()))
        {
            return Ok(());
        }
        Err(LimitError::Partitions {
            max: self.limits.max_partitions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(q: &str, p: &str) -> (QueueName, PartitionName) {
        (
            QueueName::parse(q).unwrap(),
            PartitionName::parse(p).unwrap(),
        )
    }

    #[test]
    fn a_tally_refuses_the_first_message_and_the_first_new_partition_over_the_caps() {
        let mut tally = PushTally::new(PushLimits {
            max_messages: 3,
            max_partitions: 2,
        });
        assert!(tally.messages(3).is_ok());
        assert_eq!(tally.messages(1), Err(LimitError::Messages { max: 3 }));
        let (q, a) = names("q", "a");
        let (_, b) = names("q", "b");
        let (_, c) = names("q", "c");
        assert!(tally.partition(&q, &a).is_ok());
        assert!(tally.partition(&q, &b).is_ok());
        assert!(tally.partition(&q, &a).is_ok(), "a known partition is free");
        assert_eq!(
            tally.partition(&q, &c),
            Err(LimitError::Partitions { max: 2 })
        );
    }
}
