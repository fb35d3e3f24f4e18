//! A bundle turned into steps: leases deduplicated, lent to acks without their own, and
//! consecutive acks of one consumer group batched, each step knowing its first slot in
//! the flat result index space.

use super::{Bundle, Operation};
use crate::domain::ConsumerGroup;
use crate::domain::PushItem;
use crate::log::ack::Ack;

/// The bundle with leases resolved: what each step does and where its slots start.
pub(super) struct Plan {
    /// What to run, in order.
    pub(super) steps: Vec<Step>,
    /// The distinct required leases, sorted.
    pub(super) leases: Vec<String>,
    /// Slots of the flat index space taken by the operations.
    pub(super) slots: usize,
}

/// One step of a plan.
pub(super) enum Step {
    /// One push operation, its items from slot `first` on.
    Push { first: usize, items: Vec<PushItem> },
    /// Consecutive acks of one consumer group: applied together, as one `/ack/batch`.
    Acks {
        first: usize,
        group: ConsumerGroup,
        acks: Vec<Ack>,
    },
}

impl Plan {
    /// Resolves borrowed leases and batches consecutive acks of one group.
    pub(super) fn new(bundle: &Bundle) -> Self {
        let mut leases: Vec<String> = bundle
            .required_leases
            .iter()
            .filter(|l| !l.is_empty())
            .cloned()
            .collect();
        leases.sort();
        leases.dedup();
        // Borrowing only from a single named lease: with several, which one an ack belongs
        // to would be a guess.
        let borrowed = match leases.as_slice() {
            [only] => only.clone(),
            _ => String::new(),
        };
        let mut steps: Vec<Step> = Vec::new();
        let mut slots = 0;
        for op in &bundle.operations {
            match op {
                Operation::Push(items) => {
                    steps.push(Step::Push {
                        first: slots,
                        items: items.clone(),
                    });
                    slots += items.len();
                }
                Operation::Ack(a) => {
                    let mut ack = a.ack.clone();
                    if ack.lease_id.is_empty() {
                        ack.lease_id.clone_from(&borrowed);
                    }
                    match steps.last_mut() {
                        Some(Step::Acks { group, acks, .. }) if *group == a.group => {
                            acks.push(ack);
                        }
                        _ => steps.push(Step::Acks {
                            first: slots,
                            group: a.group.clone(),
                            acks: vec![ack],
                        }),
                    }
                    slots += 1;
                }
            }
        }
        Plan {
            steps,
            leases,
            slots,
        }
    }

    /// The first ack slot fenced by `lease`, to name in a failed fence.
    pub(super) fn first_slot_of(&self, lease: &str) -> Option<usize> {
        self.steps.iter().find_map(|step| match step {
            Step::Acks { first, acks, .. } => acks
                .iter()
                .position(|a| a.lease_id == lease)
                .map(|k| first + k),
            Step::Push { .. } => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{PartitionName, QueueName};
    use crate::log::transaction::BundleAck;

    fn item() -> PushItem {
        PushItem {
            queue: QueueName::parse("q".to_owned()).unwrap(),
            partition: PartitionName::default_partition(),
            payload: b"1".to_vec(),
            transaction_id: None,
            trace_id: None,
            producer: None,
        }
    }

    fn ack(lease: &str, group: &ConsumerGroup) -> Operation {
        Operation::Ack(BundleAck {
            group: group.clone(),
            ack: Ack {
                partition_id: 1,
                transaction_id: "t".to_owned(),
                status: "completed".to_owned(),
                error: None,
                lease_id: lease.to_owned(),
            },
        })
    }

    fn lease_of(step: &Step, k: usize) -> &str {
        match step {
            Step::Acks { acks, .. } => &acks[k].lease_id,
            Step::Push { .. } => panic!("not an ack step"),
        }
    }

    #[test]
    fn an_ack_without_a_lease_borrows_the_only_required_lease_and_keeps_its_own() {
        let queue = ConsumerGroup::queue_mode();
        let plan = Plan::new(&Bundle {
            operations: vec![ack("", &queue), ack("mine", &queue)],
            required_leases: vec!["only".to_owned(), "only".to_owned()],
            ..Bundle::default()
        });
        assert_eq!(plan.leases, vec!["only".to_owned()]);
        assert_eq!(lease_of(&plan.steps[0], 0), "only");
        assert_eq!(lease_of(&plan.steps[0], 1), "mine");
    }

    #[test]
    fn an_ack_without_a_lease_borrows_nothing_when_two_leases_are_required() {
        let queue = ConsumerGroup::queue_mode();
        let plan = Plan::new(&Bundle {
            operations: vec![ack("", &queue)],
            required_leases: vec!["a".to_owned(), "b".to_owned()],
            ..Bundle::default()
        });
        assert_eq!(lease_of(&plan.steps[0], 0), "");
    }

    #[test]
    fn slots_count_pushed_items_and_acks_in_order_and_batch_only_adjacent_acks() {
        let queue = ConsumerGroup::queue_mode();
        let other = ConsumerGroup::parse(Some("g")).unwrap();
        let plan = Plan::new(&Bundle {
            operations: vec![
                ack("l", &queue),
                Operation::Push(vec![item(), item()]),
                ack("l", &queue),
                ack("l", &queue),
                ack("l", &other),
            ],
            required_leases: Vec::new(),
            ..Bundle::default()
        });
        let firsts: Vec<usize> = plan
            .steps
            .iter()
            .map(|s| match s {
                Step::Push { first, .. } | Step::Acks { first, .. } => *first,
            })
            .collect();
        assert_eq!(firsts, vec![0, 1, 3, 5]);
        assert_eq!(plan.slots, 6);
        assert_eq!(plan.first_slot_of("l"), Some(0));
        assert_eq!(plan.first_slot_of("x"), None);
    }
}
