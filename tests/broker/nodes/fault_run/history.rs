//! What the fault run's clients did and saw, kept for the checker and written to a log: one
//! record per message pushed (with its answer), per message delivered (with what became of
//! its ack) and per request that failed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

/// Who reads the queue: queue mode or one of the two groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Domain {
    /// Queue mode: leased pops, acks, and push+ack bundles.
    Queue,
    /// Group `g1`: leased pops and acks.
    Leased,
    /// Group `g2`: autoAck pops (at most once by design).
    AutoAck,
}

impl Domain {
    /// Every domain, in table order.
    pub const ALL: [Domain; 3] = [Domain::Queue, Domain::Leased, Domain::AutoAck];

    /// The name printed in the table and the log.
    pub fn name(self) -> &'static str {
        match self {
            Domain::Queue => "queue",
            Domain::Leased => "g1 (leased)",
            Domain::AutoAck => "g2 (autoAck)",
        }
    }

    /// The pop query's extra parameters.
    pub fn query(self) -> &'static str {
        match self {
            Domain::Queue => "",
            Domain::Leased => "&consumerGroup=g1&subscriptionMode=all",
            Domain::AutoAck => "&consumerGroup=g2&subscriptionMode=all&autoAck=true",
        }
    }

    /// The `consumerGroup` of an ack.
    pub fn group(self) -> Value {
        match self {
            Domain::Queue => Value::Null,
            Domain::Leased => json!("g1"),
            Domain::AutoAck => json!("g2"),
        }
    }
}

/// How a push ended for one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Answered with this item status (`queued`, `duplicate`, `buffered`) at this moment.
    Stored(Instant, String),
    /// Refused for good (a bundle answered `success: false`, or a 4xx).
    Refused(String),
    /// Never answered (the client gave up, or a bundle's outcome is unknown).
    Unknown(String),
}

/// One message a client pushed, alone or in a bundle.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// Its transaction id (also its payload's `id`).
    pub id: String,
    /// Its partition name.
    pub partition: String,
    /// The node (index) every try went through.
    pub node: usize,
    /// When its first try was sent.
    pub first_sent: Instant,
    /// How it ended.
    pub answer: Answer,
    /// `push` or `bundle`.
    pub via: &'static str,
}

/// One message as one pop answered it.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// Who popped it.
    pub domain: Domain,
    /// Its transaction id.
    pub id: String,
    /// Its partition name.
    pub partition: String,
    /// Its offset in the partition.
    pub offset: i64,
    /// The pop's lease id (empty for autoAck).
    pub lease: String,
    /// The node (index) the pop went to.
    pub node: usize,
    /// When the pop was sent.
    pub pop_sent: Instant,
    /// When its answer arrived.
    pub received: Instant,
    /// When its ack (or bundle) was answered as applied; `None` when it failed, was not
    /// answered, or the pop was autoAck.
    pub acked: Option<Instant>,
}

/// Everything the run's clients recorded.
#[derive(Default)]
pub struct History {
    pushed: Mutex<Vec<Pushed>>,
    deliveries: Mutex<Vec<Delivery>>,
    failures: Mutex<BTreeMap<(&'static str, u16, String), usize>>,
    /// AutoAck pops with no usable answer: each may have consumed a batch nobody saw.
    pub auto_ack_pops_lost: Mutex<usize>,
}

impl History {
    /// Notes one pushed message.
    pub fn push(&self, record: Pushed) {
        self.pushed.lock().unwrap().push(record);
    }

    /// Notes deliveries.
    pub fn deliver(&self, records: impl IntoIterator<Item = Delivery>) {
        self.deliveries.lock().unwrap().extend(records);
    }

    /// Notes a failed request (status 0: no HTTP answer) with the error it answered.
    pub fn fail(&self, what: &'static str, status: u16, error: &str) {
        let key = (what, status, error.to_owned());
        *self.failures.lock().unwrap().entry(key).or_default() += 1;
    }

    /// A copy of the pushes so far.
    pub fn pushed(&self) -> Vec<Pushed> {
        self.pushed.lock().unwrap().clone()
    }

    /// A copy of the deliveries so far.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().unwrap().clone()
    }

    /// Failed requests by (what, status, error).
    pub fn failures(&self) -> BTreeMap<(&'static str, u16, String), usize> {
        self.failures.lock().unwrap().clone()
    }

    /// Writes every push and delivery as JSON lines (times in ms since `start`).
    pub fn write(&self, path: &Path, start: Instant) -> std::io::Result<()> {
        let ms = |t: Instant| t.saturating_duration_since(start).as_millis() as u64;
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for p in self.pushed.lock().unwrap().iter() {
            let answer = match &p.answer {
                Answer::Stored(at, status) => json!({ "stored": status, "at": ms(*at) }),
                Answer::Refused(why) => json!({ "refused": why }),
                Answer::Unknown(why) => json!({ "unknown": why }),
            };
            let line = json!({ "push": p.id, "partition": p.partition, "node": p.node,
                "via": p.via, "sent": ms(p.first_sent), "answer": answer });
            writeln!(out, "{line}")?;
        }
        for d in self.deliveries.lock().unwrap().iter() {
            let line = json!({ "delivery": d.id, "domain": d.domain.name(),
                "partition": d.partition, "offset": d.offset, "lease": d.lease, "node": d.node,
                "popSent": ms(d.pop_sent), "received": ms(d.received),
                "acked": d.acked.map(ms) });
            writeln!(out, "{line}")?;
        }
        out.flush()
    }
}
