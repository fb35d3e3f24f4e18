//! A pop's wait between two steps: for its group's wake gate, its deadline (or one backoff
//! interval) or the broker's drain, whichever comes first. What the group actor does with
//! its parked pops is the actor's (`actors::wake_gate`); this file only waits.
//!
//! A parked pop keeps this future for as long as it waits, minutes for a long-poll, so it
//! holds what the wait needs and nothing more: the gate's receiver, one timer, the drain's
//! registration and the parked count (README, "Parked long-polls"; tests/parked).

use std::future::{poll_fn, Future};
use std::sync::atomic::Ordering;
use std::task::Poll;

use super::{wait_interval, Pop, Wait};
use crate::metrics::Metrics;

impl Pop<'_> {
    /// Waits for a wake or one backoff interval (whichever comes first), holding nothing
    /// else. Returns true when woken, which resets the backoff. A pop parked by the group
    /// actor's plan (`until_woken`) has no backoff of its own: the actor wakes one of its
    /// parked pops when the group's reseed falls due, so it waits for a wake or its deadline.
    pub(super) fn park(&self, wait: Wait, attempt: u32) -> impl Future<Output = bool> + '_ {
        let Wait {
            mut gate,
            until_woken,
            seen_every,
        } = wait;
        let pause = self.time_left().map(|left| {
            let pause = if until_woken && gate.is_some() {
                left
            } else {
                wait_interval(attempt, &self.broker.config.pop).min(left)
            };
            // With the idle-group sweep on, a wait longer than the seen interval comes back
            // to write `last_seen_at` again (the pop's `seen`), so a group parked past the
            // idle limit is not forgotten while it waits. The deadline's timer is the same
            // timer.
            seen_every.map_or(pause, |every| pause.min(every))
        });
        async move {
            let Some(pause) = pause else {
                return false;
            };
            let _parked = Parked::count(&self.broker.metrics);
            let sleep = tokio::time::sleep(pause);
            // A stopping broker answers its parked pops now, not at their deadline.
            let drained = self.broker.draining.cancelled();
            tokio::pin!(sleep, drained);
            // One hand-written poll of the three, where `select!` over a `timeout` kept a
            // second copy of the gate and the pause beside its own state.
            poll_fn(|cx| {
                if let Some(gate) = gate.as_mut() {
                    if let Poll::Ready(sent) = std::pin::Pin::new(gate).poll(cx) {
                        // A gate whose actor stopped ends the wait too, as not woken.
                        return Poll::Ready(sent.is_ok());
                    }
                }
                if drained.as_mut().poll(cx).is_ready() || sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(false);
                }
                Poll::Pending
            })
            .await
        }
    }
}

/// Counts a parked pop for as long as it lives (a pop dropped mid-wait, when its client
/// left, is uncounted too).
struct Parked<'a>(&'a Metrics);

impl<'a> Parked<'a> {
    fn count(metrics: &'a Metrics) -> Self {
        metrics.parked.fetch_add(1, Ordering::Relaxed);
        Parked(metrics)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.parked.fetch_sub(1, Ordering::Relaxed);
    }
}
