//! The pop answer's echoes: what the broker tells a client that asked for conflation or
//! autopilot (contract §2.3–2.4). A pop that asked for either always answers 200 with a
//! JSON body, even when empty, because the client reads the echo from it.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

/// Messages a pop claims when autopilot chooses the batch: large enough to amortise a
/// round trip, small enough that one slow consumer does not hold a big lease.
pub const AUTOPILOT_BATCH: u32 = 100;
/// Partitions a queue-wide pop claims when autopilot chooses: spreads one answer over a
/// few partitions without starving other consumers of the group.
pub const AUTOPILOT_PARTITIONS: u32 = 4;

/// What the answer must carry besides its messages.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Echo {
    /// `Some(stored policy)` when the request asked for conflation.
    pub conflation: Option<bool>,
    /// The knobs autopilot used, when the request asked for it.
    pub autopilot: Option<Autopilot>,
}

/// The autopilot echo: `{"partitions", "batch", "waitMs"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Autopilot {
    /// Partitions the pop could claim.
    pub partitions: u32,
    /// Message budget the pop used.
    pub batch: u32,
    /// Advised pause before the next non-waiting poll: the long-poll backoff cap after an
    /// empty answer (nothing was pending anywhere this pop could claim), 0 otherwise.
    pub wait_ms: u64,
}

impl Autopilot {
    /// The echo after an answer with `delivered` messages.
    pub fn advise(mut self, delivered: usize, idle_pause: Duration) -> Self {
        self.wait_ms = if delivered == 0 {
            u64::try_from(idle_pause.as_millis()).unwrap_or(u64::MAX)
        } else {
            0
        };
        self
    }
}

impl Echo {
    /// True when the answer must be a 200 with a body even when empty.
    pub fn needs_body(&self) -> bool {
        self.conflation.is_some() || self.autopilot.is_some()
    }

    /// Writes the echo keys as `,"key":value` pairs, for the inside of the answer object.
    pub fn write_keys(&self, out: &mut Vec<u8>) {
        match self.conflation {
            Some(true) => out.extend_from_slice(b",\"conflation\":true"),
            // The group's stored policy does not conflate: say so, and never claim it does.
            Some(false) => out.extend_from_slice(b",\"conflationConflict\":true"),
            None => {}
        }
        if let Some(autopilot) = &self.autopilot {
            out.extend_from_slice(b",\"autopilot\":");
            serde_json::to_writer(&mut *out, autopilot).expect("writing to a Vec cannot fail");
        }
    }

    /// The echo as the JSON object of a framed answer's own-keys section; empty (length 0)
    /// when there is nothing to echo.
    pub fn own_keys(&self) -> Vec<u8> {
        let mut keys = Vec::new();
        self.write_keys(&mut keys);
        if keys.is_empty() {
            return keys;
        }
        // write_keys writes `,"k":v` pairs: swap the leading comma for the brace.
        keys[0] = b'{';
        keys.push(b'}');
        keys
    }

    /// The whole body of an empty answer that carries the echo.
    pub fn empty_answer(&self, group: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"{\"success\":true,\"messages\":[],\"consumerGroup\":");
        serde_json::to_writer(&mut out, group).expect("writing to a Vec cannot fail");
        write!(out, ",\"partitionsClaimed\":0").expect("vec write");
        self.write_keys(&mut out);
        out.push(b'}');
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn parsed(echo: &Echo) -> Value {
        serde_json::from_slice(&echo.empty_answer("g")).unwrap()
    }

    #[test]
    fn a_conflating_group_echoes_conflation_and_a_conflict_omits_it() {
        let on = parsed(&Echo {
            conflation: Some(true),
            autopilot: None,
        });
        assert_eq!(on["conflation"], json!(true));
        assert!(on.get("conflationConflict").is_none());
        let conflict = parsed(&Echo {
            conflation: Some(false),
            autopilot: None,
        });
        assert_eq!(conflict["conflationConflict"], json!(true));
        assert!(conflict.get("conflation").is_none());
        assert_eq!(conflict["messages"], json!([]));
    }

    #[test]
    fn autopilot_advises_a_pause_only_after_an_empty_answer() {
        let knobs = Autopilot {
            partitions: 4,
            batch: 100,
            wait_ms: 0,
        };
        let idle = knobs.advise(0, Duration::from_millis(1000));
        let busy = knobs.advise(7, Duration::from_millis(1000));
        let echo = parsed(&Echo {
            conflation: None,
            autopilot: Some(idle),
        });
        assert_eq!(
            echo["autopilot"],
            json!({"partitions": 4, "batch": 100, "waitMs": 1000})
        );
        assert_eq!(busy.wait_ms, 0);
        assert!(!Echo::default().needs_body());
        assert!(Echo::default().own_keys().is_empty());
        let keys: Value = serde_json::from_slice(
            &Echo {
                conflation: Some(true),
                autopilot: Some(idle),
            }
            .own_keys(),
        )
        .unwrap();
        assert_eq!(keys["conflation"], json!(true));
        assert_eq!(keys["autopilot"]["waitMs"], json!(1000));
    }
}
