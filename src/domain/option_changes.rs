//! Which changes to an existing queue's options let its data go sooner or be refused: the
//! ones `POST /api/v1/configure` leaves to the `admin` role (`src/http/configure.rs`), as
//! Kafka keeps AlterConfigs and RabbitMQ its configure permission apart from writing.
//!
//! Creating a queue with any options, and every change that keeps data as long or longer,
//! stays with `read-write`. This file only compares values; the stored row and the caller's
//! role are the handler's business.

use serde_json::Value;

use super::QueueOptions;

/// The broker-wide settings that a queue's `0` (or unset) options fall back to.
#[derive(Debug, Clone, Copy)]
pub struct OptionDefaults {
    /// `QUEEN_RETENTION_SECS` (0: forever).
    pub retention_secs: i32,
    /// `QUEEN_COMPLETED_RETENTION_SECS` (0: forever).
    pub completed_retention_secs: i32,
    /// `QUEEN_DEDUP_WINDOW_SECS` (0: no dedup).
    pub dedup_window_secs: i32,
}

/// A change that needs `admin`: the option's wire name and why it loses data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedChange {
    /// The option's wire name (`retentionSeconds`, ...).
    pub option: &'static str,
    /// What the change does, for the refusal's text.
    pub effect: &'static str,
}

/// How an option's value keeps data, to compare a stored value with a requested one.
enum Guard {
    /// A span of seconds or a count where 0 means "no limit": a smaller positive value, or
    /// any positive value where there was none, loses data.
    ZeroIsUnlimited,
    /// Like [`Guard::ZeroIsUnlimited`], but 0 falls back to a broker-wide default first.
    ZeroIsDefault(fn(&OptionDefaults) -> i32),
    /// A window where bigger keeps more and NULL takes a broker-wide default.
    NullIsDefault(fn(&OptionDefaults) -> i32),
    /// A switch NULL or true keeps dead letters; turning it false drops them.
    OnWhenUnset,
}

/// (wire name, column, guard, effect): every option whose change can lose data.
const GUARDED: &[(&str, &str, Guard, &str)] = &[
    (
        "retentionSeconds",
        "retention_seconds",
        Guard::ZeroIsDefault(|d| d.retention_secs),
        "deletes messages sooner",
    ),
    (
        "completedRetentionSeconds",
        "completed_retention_seconds",
        Guard::ZeroIsDefault(|d| d.completed_retention_secs),
        "deletes consumed messages sooner",
    ),
    (
        "ttl",
        "ttl_seconds",
        Guard::ZeroIsUnlimited,
        "expires messages sooner",
    ),
    (
        "maxWaitTimeSeconds",
        "max_wait_time_seconds",
        Guard::ZeroIsUnlimited,
        "expires waiting messages sooner",
    ),
    (
        "maxSize",
        "max_size",
        Guard::ZeroIsUnlimited,
        "refuses pushes sooner",
    ),
    (
        "dedupWindowSeconds",
        "dedup_window_seconds",
        Guard::NullIsDefault(|d| d.dedup_window_secs),
        "stores retried pushes again sooner",
    ),
    (
        "deadLetterQueue",
        "dead_letter_queue",
        Guard::OnWhenUnset,
        "drops dead letters instead of keeping them",
    ),
    (
        "dlqAfterMaxRetries",
        "dlq_after_max_retries",
        Guard::OnWhenUnset,
        "skips messages whose retries are spent instead of keeping them",
    ),
];

/// The first requested option that would let an existing queue's data go sooner or be
/// refused, compared with its stored row (`queen.queues` as JSON, column names); `None`
/// when every change keeps data at least as long.
pub fn guarded_change(
    stored: &Value,
    requested: &QueueOptions,
    defaults: &OptionDefaults,
) -> Option<GuardedChange> {
    GUARDED.iter().find_map(|(option, column, guard, effect)| {
        let new = requested.column(column)?;
        let old = stored.get(*column).unwrap_or(&Value::Null);
        loses_data(guard, old, new, defaults).then_some(GuardedChange { option, effect })
    })
}

fn loses_data(guard: &Guard, old: &Value, new: &Value, defaults: &OptionDefaults) -> bool {
    let limit = |v: &Value, fallback: i64| match v.as_i64().unwrap_or(0) {
        0 => fallback,
        n => n,
    };
    match guard {
        Guard::ZeroIsUnlimited => tighter(limit(old, 0), limit(new, 0)),
        Guard::ZeroIsDefault(default) => {
            let fallback = i64::from(default(defaults));
            tighter(limit(old, fallback), limit(new, fallback))
        }
        Guard::NullIsDefault(default) => {
            let fallback = i64::from(default(defaults));
            let window = |v: &Value| v.as_i64().unwrap_or(fallback);
            window(new) < window(old)
        }
        Guard::OnWhenUnset => old.as_bool() != Some(false) && new.as_bool() == Some(false),
    }
}

/// Whether limit `new` keeps less than `old`, where 0 means no limit.
fn tighter(old: i64, new: i64) -> bool {
    new > 0 && (old == 0 || new < old)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DEFAULTS: OptionDefaults = OptionDefaults {
        retention_secs: 0,
        completed_retention_secs: 600,
        dedup_window_secs: 300,
    };

    fn change(stored: Value, requested: Value) -> Option<&'static str> {
        let requested = QueueOptions::parse(Some(&requested)).unwrap();
        guarded_change(&stored, &requested, &DEFAULTS).map(|c| c.option)
    }

    #[test]
    fn shorter_limits_need_admin_and_longer_or_equal_ones_do_not() {
        let row = json!({"retention_seconds": 3600, "ttl_seconds": 0, "max_size": 100,
                         "dedup_window_seconds": null, "completed_retention_seconds": 0});
        assert_eq!(
            change(row.clone(), json!({"retentionSeconds": 1})),
            Some("retentionSeconds")
        );
        assert_eq!(change(row.clone(), json!({"retentionSeconds": 7200})), None);
        assert_eq!(change(row.clone(), json!({"retentionSeconds": 0})), None);
        assert_eq!(change(row.clone(), json!({"ttl": 60})), Some("ttl"));
        assert_eq!(change(row.clone(), json!({"maxSize": 99})), Some("maxSize"));
        assert_eq!(change(row.clone(), json!({"maxSize": 0})), None);
        assert_eq!(
            change(row.clone(), json!({"dedupWindowSeconds": 0})),
            Some("dedupWindowSeconds")
        );
        assert_eq!(
            change(row.clone(), json!({"dedupWindowSeconds": 300})),
            None
        );
        // 0 takes the broker's 600 s: 900 would keep consumed messages longer, 60 not.
        assert_eq!(
            change(row.clone(), json!({"completedRetentionSeconds": 60})),
            Some("completedRetentionSeconds")
        );
        assert_eq!(change(row, json!({"completedRetentionSeconds": 900})), None);
    }

    #[test]
    fn turning_dead_letters_off_needs_admin_and_on_does_not() {
        let unset = json!({"dead_letter_queue": null, "dlq_after_max_retries": false});
        assert_eq!(
            change(unset.clone(), json!({"deadLetterQueue": false})),
            Some("deadLetterQueue")
        );
        assert_eq!(
            change(unset.clone(), json!({"dlqAfterMaxRetries": false})),
            None
        );
        assert_eq!(change(unset, json!({"dlqAfterMaxRetries": true})), None);
    }

    #[test]
    fn options_that_keep_data_are_free_to_change() {
        let row = json!({"lease_time": 60, "retry_limit": 3, "priority": 0});
        let requested = json!({"leaseTime": 5, "retryLimit": 9, "priority": 4,
                               "delayedProcessing": 10, "encryptionEnabled": true});
        assert_eq!(change(row, requested), None);
    }
}
