//! The opaque id of an ephemeral message: the broker incarnation that holds it, the ring
//! (one per queue partition, numbered afresh each time one is created) and the message's
//! place in that ring. An ack naming another incarnation answers `stale`: it cannot be a
//! message this process holds, whatever its numbers say.

use std::fmt;

/// Where a delivered message lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageId {
    /// Random per engine start (per process, per ownership).
    pub incarnation: u64,
    /// The ring, unique within the incarnation.
    pub ring: u64,
    /// The message's sequence number in its ring.
    pub seq: u64,
}

impl MessageId {
    /// Reads an id this broker wrote; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let mut next = || u64::from_str_radix(parts.next()?, 16).ok();
        let id = MessageId {
            incarnation: next()?,
            ring: next()?,
            seq: next()?,
        };
        (text.split('.').count() == 3).then_some(id)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:016x}.{:x}.{:x}",
            self.incarnation, self.ring, self.seq
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_round_trips_and_junk_does_not_parse() {
        let id = MessageId {
            incarnation: u64::MAX - 3,
            ring: 7,
            seq: 1 << 40,
        };
        assert_eq!(MessageId::parse(&id.to_string()), Some(id));
        for junk in ["", "1.2", "1.2.3.4", "x.1.2", "1..2"] {
            assert_eq!(MessageId::parse(junk), None, "{junk}");
        }
    }
}
