//! A pop's wait between two steps: for its group's wake gate or its deadline (or one backoff
//! interval), whichever comes first. What the group actor does with its parked pops is the
//! actor's (`actors::wake_gate`); this file only waits.
//!
//! A parked pop keeps this future for as long as it waits, minutes for a long-poll, so it
//! holds what the wait needs and nothing more: the gate's receiver, one timer and the
//! parked count (README, "Parked long-polls"; tests/parked). A draining broker ends the
//! waits through the gates: every group actor lets go of its parked pops' gates
//! (`Registry::drain_started`), so a parked pop keeps no registration with the drain token
//! (a waiter node of about 70 bytes each); a wait with no gate (a discovery pop's backoff)
//! sees the drain when its interval ends, within `POP_WAIT_MAX_INTERVAL_MS`.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use tokio::time::Sleep;

use super::{wait_interval, Pop, Wait};
use crate::actors::wake_gate::WakeSource;
use crate::metrics::Metrics;

impl Pop<'_> {
    /// Waits for a wake or one backoff interval (whichever comes first), holding nothing
    /// else. Returns true when woken, which resets the backoff. A pop parked by the group
    /// actor's plan (`until_woken`) has no backoff of its own: the actor wakes one of its
    /// parked pops when the group's reseed falls due, so it waits for a wake or its deadline.
    pub(super) fn park(&self, wait: Wait, attempt: u32) -> impl Future<Output = bool> + '_ {
        let Wait {
            gate,
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
            // One pinned place for the two, polled by hand: `select!` over a `timeout`
            // kept a second copy of the gate and the pause beside its own state.
            let mut waiting = std::pin::pin!(Waiting {
                gate,
                sleep: tokio::time::sleep(pause),
            });
            poll_fn(|cx| waiting.as_mut().poll_woken(cx)).await
        }
    }
}

pin_project! {
    /// What a parked pop waits on, in one pinned place.
    struct Waiting {
        gate: Option<oneshot::Receiver<WakeSource>>,
        #[pin]
        sleep: Sleep,
    }
}

impl Waiting {
    /// Ready with true when the gate opened; with false when the actor dropped the gate
    /// (a stopped actor, or a draining broker) or the pause is over.
    fn poll_woken(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.project();
        if let Some(gate) = this.gate.as_mut() {
            if let Poll::Ready(sent) = Pin::new(gate).poll(cx) {
                return Poll::Ready(sent.is_ok());
            }
        }
        if this.sleep.poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        Poll::Pending
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
