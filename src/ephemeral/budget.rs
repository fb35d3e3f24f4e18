//! The broker-wide byte budget of ephemeral contents (`QUEEN_EPHEMERAL_MAX_BYTES`): every
//! message held takes its cost from it at push and gives it back when it leaves (acked by
//! every group, dropped, expired, reset, deleted), so a flood of pushes is refused, or
//! drops old messages, before resident memory grows past the cap. The payloads' own
//! memory is bounded once more by the arena they live in ([`PayloadStore`]).

use std::sync::atomic::{AtomicU64, Ordering};

use super::store::PayloadStore;

/// The cap, what is taken of it, and the memory the payloads held live in.
#[derive(Debug)]
pub struct Budget {
    cap: u64,
    held: AtomicU64,
    store: PayloadStore,
}

impl Budget {
    /// A budget of `cap` bytes, its payloads in an arena of that size.
    pub fn new(cap: u64) -> Self {
        Budget {
            cap,
            held: AtomicU64::new(0),
            store: PayloadStore::new(cap),
        }
    }

    /// Where held payloads are copied to.
    pub fn store(&self) -> &PayloadStore {
        &self.store
    }

    /// Takes `bytes` if they fit under the cap; false (nothing taken) if not.
    pub fn take(&self, bytes: u64) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&total| total <= self.cap)
            })
            .is_ok()
    }

    /// Gives `bytes` back.
    pub fn give(&self, bytes: u64) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Acquire)
    }

    /// The cap.
    pub fn cap(&self) -> u64 {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_never_goes_past_its_cap() {
        let budget = Budget::new(10);
        assert!(budget.take(6));
        assert!(!budget.take(5));
        assert_eq!(budget.held(), 6);
        budget.give(6);
        assert!(budget.take(10));
    }
}
