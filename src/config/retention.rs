//! The retention section of the config: how often the cluster-wide sweeper runs, how much
//! it deletes per batch, the broker-wide retention defaults, and when idle state (group
//! actors, empty partitions, abandoned groups' cursors) is let go.

use std::time::Duration;

use super::{ConfigError, Vars};

/// Retention and housekeeping.
#[derive(Debug, Clone)]
pub struct RetentionConfig {
    /// `QUEEN_RETENTION_INTERVAL_MS`: how often a node tries to be the sweeper and, when it
    /// is, sweeps (default 30000: deleted data is at most about half a minute late).
    pub interval: Duration,
    /// `QUEEN_RETENTION_BATCH`: segments (or dead letters, traces, partitions, groups)
    /// deleted per transaction at most (default 1000: a batch stays a short transaction).
    pub batch: i32,
    /// `QUEEN_RETENTION_PAUSE_MS`: pause between two batches (default 100), so a long sweep
    /// leaves the database to traffic most of the time.
    pub pause: Duration,
    /// `QUEEN_RETENTION_SECS`: retention of queues whose `retentionSeconds` is 0 (default
    /// 0: kept forever).
    pub default_secs: i32,
    /// `QUEEN_COMPLETED_RETENTION_SECS`: completed retention of queues whose
    /// `completedRetentionSeconds` is 0 (default 0: kept forever).
    pub default_completed_secs: i32,
    /// `QUEEN_DEAD_LETTER_RETENTION_SECS`: dead letters older than this are deleted (default
    /// 1209600, 14 days; 0: forever).
    pub dead_letter_secs: i32,
    /// `QUEEN_TRACE_RETENTION_SECS`: message traces older than this are deleted (default
    /// 604800, 7 days; 0: forever).
    pub trace_secs: i32,
    /// `QUEEN_EMPTY_PARTITION_IDLE_SECS`: partitions without segments (nor dead letters,
    /// traces or a live lease) not written for this long are removed (default 0: never).
    pub empty_partition_secs: i32,
    /// `QUEEN_IDLE_GROUP_SECS`: a consumer group whose cursors in a queue were neither
    /// consumed nor leased for this long, and that was not seen waiting there (an empty
    /// pop, `log::pop`) for this long, is forgotten there, cursors and subscription;
    /// coming back, it starts as a new group (default 0: never, because with `all` it would
    /// receive the retained backlog again).
    pub idle_group_secs: i32,
    /// `QUEEN_GROUP_IDLE_STOP_MS`: a group actor with nothing parked, lent or scheduled
    /// stops after this long unused, and its memory is returned (default 120000).
    pub actor_idle_stop: Duration,
}

/// Reads the retention section.
pub(super) fn retention_config(vars: &Vars) -> Result<RetentionConfig, ConfigError> {
    let interval = vars.millis("QUEEN_RETENTION_INTERVAL_MS", 30_000)?;
    if interval.is_zero() {
        return Err(ConfigError::Invalid {
            name: "QUEEN_RETENTION_INTERVAL_MS",
            value: "0".to_owned(),
            rule: "a positive whole number of milliseconds",
        });
    }
    let actor_idle_stop = vars.millis("QUEEN_GROUP_IDLE_STOP_MS", 120_000)?;
    if actor_idle_stop.is_zero() {
        return Err(ConfigError::Invalid {
            name: "QUEEN_GROUP_IDLE_STOP_MS",
            value: "0".to_owned(),
            rule: "a positive whole number of milliseconds",
        });
    }
    Ok(RetentionConfig {
        interval,
        batch: vars.positive("QUEEN_RETENTION_BATCH", 1_000)?,
        pause: vars.millis("QUEEN_RETENTION_PAUSE_MS", 100)?,
        default_secs: secs(vars, "QUEEN_RETENTION_SECS", 0)?,
        default_completed_secs: secs(vars, "QUEEN_COMPLETED_RETENTION_SECS", 0)?,
        dead_letter_secs: secs(vars, "QUEEN_DEAD_LETTER_RETENTION_SECS", 14 * 86_400)?,
        trace_secs: secs(vars, "QUEEN_TRACE_RETENTION_SECS", 7 * 86_400)?,
        empty_partition_secs: secs(vars, "QUEEN_EMPTY_PARTITION_IDLE_SECS", 0)?,
        idle_group_secs: secs(vars, "QUEEN_IDLE_GROUP_SECS", 0)?,
        actor_idle_stop,
    })
}

/// Whole seconds that fit the SQL `integer` the functions take.
fn secs(vars: &Vars, name: &'static str, default: i32) -> Result<i32, ConfigError> {
    vars.parse(name, default, "whole seconds, 0 to 2147483647")
        .and_then(|s: i32| {
            if s < 0 {
                Err(ConfigError::Invalid {
                    name,
                    value: s.to_string(),
                    rule: "whole seconds, 0 to 2147483647",
                })
            } else {
                Ok(s)
            }
        })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::time::Duration;

    #[test]
    fn retention_defaults_keep_messages_forever_and_sweep_twice_a_minute() {
        let c = Config::from_vars(Vec::<(String, String)>::new())
            .unwrap()
            .retention;
        assert_eq!(c.interval, Duration::from_secs(30));
        assert_eq!((c.default_secs, c.default_completed_secs), (0, 0));
        assert_eq!(c.dead_letter_secs, 1_209_600);
        assert_eq!((c.empty_partition_secs, c.idle_group_secs), (0, 0));
    }

    #[test]
    fn a_negative_retention_or_a_zero_interval_is_refused_by_name() {
        let err = Config::from_vars([("QUEEN_RETENTION_SECS", "-1")]).unwrap_err();
        assert!(err.to_string().contains("QUEEN_RETENTION_SECS"), "{err}");
        let err = Config::from_vars([("QUEEN_RETENTION_INTERVAL_MS", "0")]).unwrap_err();
        assert!(
            err.to_string().contains("QUEEN_RETENTION_INTERVAL_MS"),
            "{err}"
        );
    }
}
