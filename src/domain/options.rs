//! Queue options as `POST /api/v1/configure` carries them, validated.
//!
//! The client sends camelCase keys (always the nine defaults, plus whatever the user set).
//! Known keys become typed values; unknown keys are kept aside, stored and echoed, never
//! interpreted. A `null` value means "not given".

use serde_json::{Map, Value};

/// Why an option was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum OptionError {
    /// The `options` value is not a JSON object.
    #[error("options must be a JSON object")]
    NotAnObject,
    /// A number option that is not an integer in range.
    #[error("option {key} must be an integer between {min} and {max}")]
    BadInteger {
        /// The option's wire name.
        key: &'static str,
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// A switch that is not a boolean.
    #[error("option {key} must be a boolean")]
    BadBoolean {
        /// The option's wire name.
        key: &'static str,
    },
}

/// What kind of value an option holds, with its accepted range.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int { min: i64, max: i64 },
    Bool,
}

/// One day, as the upper bound of second-valued options that gate delivery.
const DAY_SECS: i64 = 86_400;
/// One year, as the upper bound of delay-like options.
const YEAR_SECS: i64 = 365 * DAY_SECS;
/// The largest value a PostgreSQL `integer` column holds (about 68 years in seconds): the
/// bound of retention-like options, which used to be 100 years and failed in SQL (a 500).
const INT_COLUMN_MAX: i64 = i32::MAX as i64;

/// (wire name, column name, kind) of every option the broker interprets.
const KNOWN: &[(&str, &str, Kind)] = &[
    (
        "leaseTime",
        "lease_time",
        Kind::Int {
            min: 1,
            max: DAY_SECS,
        },
    ),
    (
        "retryLimit",
        "retry_limit",
        Kind::Int {
            min: 0,
            max: 10_000,
        },
    ),
    (
        "priority",
        "priority",
        Kind::Int {
            min: -1_000_000,
            max: 1_000_000,
        },
    ),
    (
        "delayedProcessing",
        "delayed_processing",
        Kind::Int {
            min: 0,
            max: YEAR_SECS,
        },
    ),
    (
        "windowBuffer",
        "window_buffer",
        Kind::Int {
            min: 0,
            max: DAY_SECS,
        },
    ),
    (
        "maxSize",
        "max_size",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
    ),
    (
        "retentionSeconds",
        "retention_seconds",
        Kind::Int {
            min: 0,
            max: INT_COLUMN_MAX,
        },
    ),
    (
        "completedRetentionSeconds",
        "completed_retention_seconds",
        Kind::Int {
            min: 0,
            max: INT_COLUMN_MAX,
        },
    ),
    ("retentionEnabled", "retention_enabled", Kind::Bool),
    ("encryptionEnabled", "encryption_enabled", Kind::Bool),
    (
        "retryDelay",
        "retry_delay_ms",
        Kind::Int {
            min: 0,
            max: DAY_SECS * 1000,
        },
    ),
    ("deadLetterQueue", "dead_letter_queue", Kind::Bool),
    ("dlqAfterMaxRetries", "dlq_after_max_retries", Kind::Bool),
    (
        "maxWaitTimeSeconds",
        "max_wait_time_seconds",
        Kind::Int {
            min: 0,
            max: INT_COLUMN_MAX,
        },
    ),
    (
        "ttl",
        "ttl_seconds",
        Kind::Int {
            min: 0,
            max: INT_COLUMN_MAX,
        },
    ),
    (
        "dedupWindowSeconds",
        "dedup_window_seconds",
        Kind::Int {
            min: 0,
            max: 7 * DAY_SECS,
        },
    ),
    (
        "minPopWaitTime",
        "min_pop_wait_time",
        Kind::Int {
            min: 0,
            max: 60_000,
        },
    ),
];

/// Switches stored as NULL until a configure sets them, and on while they are: a queue that
/// configures nothing keeps dead letters, as it always did (`sql/migrations/064_baseline.sql`).
const ON_WHEN_UNSET: &[&str] = &["dead_letter_queue", "dlq_after_max_retries"];

/// Validated queue options, keyed by storage column, ready for `configure_queue_v1`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueOptions {
    columns: Map<String, Value>,
    extra: Map<String, Value>,
}

impl QueueOptions {
    /// Parses the `options` object of a configure request (`None`/`null`: no options).
    pub fn parse(value: Option<&Value>) -> Result<Self, OptionError> {
        let object = match value {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(o)) => o,
            Some(_) => return Err(OptionError::NotAnObject),
        };
        let mut options = Self::default();
        for (key, value) in object {
            if value.is_null() {
                continue;
            }
            let Some((wire, column, kind)) = KNOWN.iter().find(|(w, _, _)| w == key) else {
                options.extra.insert(key.clone(), value.clone());
                continue;
            };
            let typed = match *kind {
                Kind::Int { min, max } => {
                    let n = value
                        .as_i64()
                        .or_else(|| {
                            value
                                .as_f64()
                                .filter(|f| f.fract() == 0.0)
                                .map(|f| f as i64)
                        })
                        .filter(|n| (min..=max).contains(n))
                        .ok_or(OptionError::BadInteger {
                            key: wire,
                            min,
                            max,
                        })?;
                    Value::from(n)
                }
                Kind::Bool => Value::Bool(
                    value
                        .as_bool()
                        .ok_or(OptionError::BadBoolean { key: wire })?,
                ),
            };
            options.columns.insert((*column).to_owned(), typed);
        }
        Ok(options)
    }

    /// The value given for a storage column, if the request set it (the comparison of
    /// `super::option_changes` with the stored row).
    pub fn column(&self, column: &str) -> Option<&Value> {
        self.columns.get(column)
    }

    /// The JSON handed to `queen.configure_queue_v1`: columns plus `extra`.
    pub fn to_sql_json(&self) -> Value {
        let mut out = self.columns.clone();
        out.insert("extra".to_owned(), Value::Object(self.extra.clone()));
        Value::Object(out)
    }

    /// Renders a stored queue row (as `configure_queue_v1` returns it) with wire names. A
    /// dead-letter switch never set is stored as NULL and echoed as what it does: `true`.
    pub fn row_to_wire(row: &Value) -> Value {
        let mut out = Map::new();
        for (wire, column, _) in KNOWN {
            if let Some(v) = row.get(*column) {
                let v = match v {
                    Value::Null if ON_WHEN_UNSET.contains(column) => Value::Bool(true),
                    v => v.clone(),
                };
                out.insert((*wire).to_owned(), v);
            }
        }
        if let Some(Value::Object(extra)) = row.get("extra_options") {
            for (k, v) in extra {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_client_defaults_parse_into_columns_and_unknown_keys_are_kept_aside() {
        let options = QueueOptions::parse(Some(&json!({
            "leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0,
            "windowBuffer": 0, "maxSize": 0, "retentionSeconds": 0,
            "completedRetentionSeconds": 0, "encryptionEnabled": false, "shiny": "x",
            "ttl": null
        })))
        .unwrap();
        let sql = options.to_sql_json();
        assert_eq!(sql["lease_time"], json!(300));
        assert_eq!(sql["encryption_enabled"], json!(false));
        assert_eq!(sql["extra"], json!({"shiny": "x"}));
        assert!(sql.get("ttl_seconds").is_none());
    }

    #[test]
    fn dead_letter_switches_never_set_are_echoed_as_on() {
        let wire = QueueOptions::row_to_wire(&json!({
            "dead_letter_queue": null, "dlq_after_max_retries": false, "ttl_seconds": 0
        }));
        assert_eq!(wire["deadLetterQueue"], json!(true));
        assert_eq!(wire["dlqAfterMaxRetries"], json!(false));
        assert_eq!(wire["ttl"], json!(0));
    }

    #[test]
    fn out_of_range_or_mistyped_options_are_refused() {
        assert!(QueueOptions::parse(Some(&json!({"leaseTime": 0}))).is_err());
        assert!(QueueOptions::parse(Some(&json!({"retryLimit": -1}))).is_err());
        assert!(QueueOptions::parse(Some(&json!({"windowBuffer": "5"}))).is_err());
        assert!(QueueOptions::parse(Some(&json!({"encryptionEnabled": 1}))).is_err());
        assert!(QueueOptions::parse(Some(&json!([1]))).is_err());
    }
}
