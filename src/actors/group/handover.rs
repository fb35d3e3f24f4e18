//! What a plan hands a pop: lent partitions ([`Loan`]) and the one reseed in flight
//! ([`ReseedTicket`]).
//!
//! Both are made inside the actor's `PlanPop` handler and travel inside the reply, so no
//! moment exists in which the actor has given something away and nothing holds it: if the
//! pop fails, if its client leaves mid-claim, or if the reply is dropped before the pop
//! reads it (the client left while the request waited on the actor), dropping the
//! hand-over gives it back to the actor. What to do with SQL's answers is left to the pop.

use std::fmt;

use actix::Addr;

use super::{CheckIn, GroupActor, ReseedResult, Reseeded, Verdict};
use crate::actors::ring::PartitionRef;

/// Candidates lent by the actor. Settled with [`Loan::check_in`]; dropped unsettled, it
/// hands every partition back unused, so none leaves the ring.
pub struct Loan {
    actor: Addr<GroupActor>,
    partitions: Vec<PartitionRef>,
}

impl Loan {
    pub(super) fn new(actor: Addr<GroupActor>, partitions: Vec<PartitionRef>) -> Self {
        Loan { actor, partitions }
    }

    /// The lent partitions, in the order the pop should try them.
    pub fn partitions(&self) -> &[PartitionRef] {
        &self.partitions
    }

    /// Returns the partitions with SQL's verdicts (by partition id); ids not lent are
    /// ignored, and lent partitions without a verdict go back unused.
    pub fn check_in(mut self, verdicts: Vec<(i64, Verdict)>) {
        let mut lent = std::mem::take(&mut self.partitions);
        let mut returned = Vec::with_capacity(verdicts.len());
        for (id, verdict) in verdicts {
            if let Some(at) = lent.iter().position(|p| p.id == id) {
                returned.push((lent.remove(at), verdict));
            }
        }
        self.actor.do_send(CheckIn {
            verdicts: returned,
            unused: lent,
        });
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        if !self.partitions.is_empty() {
            self.actor.do_send(CheckIn {
                verdicts: Vec::new(),
                unused: std::mem::take(&mut self.partitions),
            });
        }
    }
}

impl fmt::Debug for Loan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loan")
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

/// The right to run the group's one reseed. Settled with [`ReseedTicket::finish`];
/// dropped unsettled (the reseed failed or never ran), it tells the actor so, and the next
/// pop reseeds.
pub struct ReseedTicket {
    actor: Option<Addr<GroupActor>>,
}

impl ReseedTicket {
    pub(super) fn new(actor: Addr<GroupActor>) -> Self {
        ReseedTicket { actor: Some(actor) }
    }

    /// Hands the reseed's result to the actor.
    pub fn finish(mut self, result: ReseedResult) {
        if let Some(actor) = self.actor.take() {
            actor.do_send(Reseeded(Some(result)));
        }
    }
}

impl Drop for ReseedTicket {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            actor.do_send(Reseeded(None));
        }
    }
}

impl fmt::Debug for ReseedTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReseedTicket").finish_non_exhaustive()
    }
}
