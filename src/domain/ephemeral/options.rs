//! An ephemeral queue's declaration: the seven options of `configure`, checked, with the
//! defaults a queue gets when it is created implicitly by a push or a pop. The
//! declaration is the only part of an ephemeral queue PostgreSQL holds
//! (`sql/migrations/071_ephemeral.sql`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::inputs::EphemeralInputError;

/// What a push does when it would take a ring past its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Policy {
    /// Refuse the whole push: 429 with `Retry-After`, nothing stored.
    Reject,
    /// Drop the oldest messages until the push fits (a feed).
    DropOldest,
}

impl Policy {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Reject => "reject",
            Policy::DropOldest => "dropOldest",
        }
    }
}

/// `windowBuffer`: a waiting pop that found fewer than `count` messages waits up to `ms`
/// more for the batch to fatten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowBuffer {
    /// The longest extra wait, in milliseconds.
    pub ms: u64,
    /// The batch size that ends the extra wait early.
    pub count: u32,
}

/// A queue's bounds and delivery settings, per (queue, partition) ring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EphemeralOptions {
    /// Bytes one ring may hold (payload bytes plus a fixed cost per message).
    pub max_bytes: u64,
    /// Messages one ring may hold.
    pub max_length: u64,
    /// What a push past the bounds does.
    pub policy: Policy,
    /// Messages older than this are dropped; `None`: no age limit.
    pub ttl_seconds: Option<u64>,
    /// How long a delivered, unacked message stays leased before it is redelivered.
    pub lease_seconds: u64,
    /// Redeliveries a message gets before it is dropped and counted.
    pub retry_limit: u32,
    /// The waiting pop's batch window; `None`: answer as soon as anything is there.
    pub window_buffer: Option<WindowBuffer>,
}

/// The largest `maxLength`, `ttlSeconds` or `leaseSeconds` accepted: far past any use,
/// small enough that no arithmetic on it overflows.
const MAX_SETTING: u64 = 1 << 40;

impl Default for EphemeralOptions {
    fn default() -> Self {
        EphemeralOptions {
            max_bytes: 64 << 20,
            max_length: 100_000,
            policy: Policy::Reject,
            ttl_seconds: None,
            lease_seconds: 30,
            retry_limit: 3,
            window_buffer: None,
        }
    }
}

impl EphemeralOptions {
    /// The lease as a duration.
    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_seconds)
    }

    /// The age limit as a duration.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl_seconds.map(Duration::from_secs)
    }

    /// Checks a `configure` call's `options` object (wire or snake_case spellings, `null`
    /// meaning "the default"); an option given is kept, one left out takes its default.
    pub fn parse(options: Option<&Value>) -> Result<Self, EphemeralInputError> {
        let mut parsed = EphemeralOptions::default();
        let empty = Map::new();
        let map = match options {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(map)) => map,
            Some(_) => return Err(bad("options", "options must be an object")),
        };
        for (key, value) in map {
            if value.is_null() {
                continue;
            }
            match key.as_str() {
                "maxBytes" | "max_bytes" => parsed.max_bytes = whole(key, value, 1)?,
                "maxLength" | "max_length" => parsed.max_length = whole(key, value, 1)?,
                "policy" => parsed.policy = policy(value)?,
                "ttlSeconds" | "ttl_seconds" => {
                    let ttl = whole(key, value, 0)?;
                    parsed.ttl_seconds = (ttl > 0).then_some(ttl);
                }
                "leaseSeconds" | "lease_seconds" => parsed.lease_seconds = whole(key, value, 1)?,
                "retryLimit" | "retry_limit" => {
                    parsed.retry_limit = u32::try_from(whole(key, value, 0)?)
                        .map_err(|_| bad("options", "retryLimit is too large"))?
                }
                "windowBuffer" | "window_buffer" => parsed.window_buffer = window(value)?,
                other => {
                    return Err(bad(
                        "unknown_option",
                        format!(
                            "unknown option {other:?}; known: maxBytes, maxLength, policy, \
                             ttlSeconds, leaseSeconds, retryLimit, windowBuffer"
                        ),
                    ))
                }
            }
        }
        Ok(parsed)
    }

    /// The declaration as the wire and the declarations table spell it.
    pub fn to_json(&self) -> Value {
        json!({
            "maxBytes": self.max_bytes,
            "maxLength": self.max_length,
            "policy": self.policy.as_str(),
            "ttlSeconds": self.ttl_seconds,
            "leaseSeconds": self.lease_seconds,
            "retryLimit": self.retry_limit,
            "windowBuffer": self.window_buffer.map(|w| json!({"ms": w.ms, "count": w.count})),
        })
    }
}

fn bad(reason: &'static str, detail: impl Into<String>) -> EphemeralInputError {
    EphemeralInputError::new(reason, detail)
}

fn whole(key: &str, value: &Value, least: u64) -> Result<u64, EphemeralInputError> {
    match value.as_u64() {
        Some(n) if n >= least && n <= MAX_SETTING => Ok(n),
        _ => Err(bad(
            "options",
            format!("{key} must be a whole number from {least} to {MAX_SETTING}, not {value}"),
        )),
    }
}

fn policy(value: &Value) -> Result<Policy, EphemeralInputError> {
    match value.as_str() {
        Some("reject") => Ok(Policy::Reject),
        Some("dropOldest" | "drop_oldest" | "drop-oldest") => Ok(Policy::DropOldest),
        _ => Err(bad(
            "options",
            format!("policy must be \"reject\" or \"dropOldest\", not {value}"),
        )),
    }
}

fn window(value: &Value) -> Result<Option<WindowBuffer>, EphemeralInputError> {
    let Value::Object(map) = value else {
        return Err(bad(
            "options",
            "windowBuffer must be {\"ms\": n, \"count\": n}",
        ));
    };
    let ms = map
        .get("ms")
        .map_or(Ok(0), |v| whole("windowBuffer.ms", v, 0))?;
    let count = map
        .get("count")
        .map_or(Ok(0), |v| whole("windowBuffer.count", v, 0))?;
    if ms > 60_000 || count > 10_000 {
        return Err(bad(
            "options",
            "windowBuffer.ms is at most 60000 and windowBuffer.count at most 10000",
        ));
    }
    Ok((ms > 0 && count > 0).then_some(WindowBuffer {
        ms,
        count: count as u32,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse_and_nulls_keep_the_defaults() {
        let options = EphemeralOptions::parse(Some(&json!({
            "maxBytes": 100, "max_length": 5, "policy": "dropOldest",
            "ttl_seconds": 9, "leaseSeconds": null, "windowBuffer": {"ms": 10, "count": 4}
        })))
        .unwrap();
        assert_eq!(options.max_bytes, 100);
        assert_eq!(options.max_length, 5);
        assert_eq!(options.policy, Policy::DropOldest);
        assert_eq!(options.ttl_seconds, Some(9));
        assert_eq!(options.lease_seconds, 30);
        assert_eq!(
            options.window_buffer,
            Some(WindowBuffer { ms: 10, count: 4 })
        );
        let back = EphemeralOptions::parse(Some(&options.to_json())).unwrap();
        assert_eq!(back, options);
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        for options in [
            json!({"maxBytes": 0}),
            json!({"maxLength": -1}),
            json!({"policy": "sometimes"}),
            json!({"leaseSeconds": "5"}),
            json!({"nope": 1}),
            json!([1]),
        ] {
            assert!(
                EphemeralOptions::parse(Some(&options)).is_err(),
                "{options}"
            );
        }
    }
}
