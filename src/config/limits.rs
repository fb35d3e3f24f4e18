//! The limits section of the config: what one tenant may create and ask for (queues,
//! partitions per queue, consumer groups, the pop batch and the long-poll deadline).
//!
//! Every tenant gets the same limits; `0` means no limit, the default, so a single-tenant
//! deployment sees no change. Enforcing them is the database's job for what is created
//! (`sql/functions/tenant_limit_v1.sql`, told the limits per connection by `db::pool`) and the pop
//! handler's for what a request asks; this file only reads the settings.

use std::time::Duration;

use super::{ConfigError, Vars};

/// Limits per tenant (each `None` when unlimited).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsConfig {
    /// `QUEEN_TENANT_MAX_QUEUES`: queues one tenant may own.
    pub max_queues: Option<u32>,
    /// `QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE`: named partitions one queue may have (its
    /// `Default` partition, which configure creates, is always allowed).
    pub max_partitions_per_queue: Option<u32>,
    /// `QUEEN_TENANT_MAX_CONSUMER_GROUPS`: distinct consumer groups (queue mode not
    /// counted) one tenant may subscribe across its queues.
    pub max_consumer_groups: Option<u32>,
    /// `QUEEN_TENANT_MAX_POP_BATCH`: the largest `batch` a pop may ask for.
    pub max_pop_batch: Option<u32>,
    /// `QUEEN_TENANT_MAX_POP_TIMEOUT_MS`: the longest long-poll `timeout` a pop may ask for.
    pub max_pop_timeout: Option<Duration>,
}

impl LimitsConfig {
    /// The creation limits as the session settings `sql/functions/tenant_limit_v1.sql` reads
    /// (only the limits that are set; an unset one means no limit there).
    pub fn session_settings(&self) -> Vec<(&'static str, u32)> {
        [
            ("queen.max_queues", self.max_queues),
            ("queen.max_partitions", self.max_partitions_per_queue),
            ("queen.max_groups", self.max_consumer_groups),
        ]
        .into_iter()
        .filter_map(|(name, limit)| limit.map(|n| (name, n)))
        .collect()
    }
}

/// Reads the limits section.
pub(super) fn limits_config(vars: &Vars) -> Result<LimitsConfig, ConfigError> {
    const RULE: &str = "a whole number (0: no limit)";
    let count = |name: &'static str| -> Result<Option<u32>, ConfigError> {
        let n: u32 = vars.parse(name, 0, RULE)?;
        Ok((n > 0).then_some(n))
    };
    let timeout_ms: u64 = vars.parse("QUEEN_TENANT_MAX_POP_TIMEOUT_MS", 0, RULE)?;
    Ok(LimitsConfig {
        max_queues: count("QUEEN_TENANT_MAX_QUEUES")?,
        max_partitions_per_queue: count("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE")?,
        max_consumer_groups: count("QUEEN_TENANT_MAX_CONSUMER_GROUPS")?,
        max_pop_batch: count("QUEEN_TENANT_MAX_POP_BATCH")?,
        max_pop_timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn limits_are_off_by_default_and_zero_means_none() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.limits, LimitsConfig::default());
        assert!(config.limits.session_settings().is_empty());
        let config = Config::from_vars([
            ("QUEEN_TENANT_MAX_QUEUES", "3"),
            ("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE", "0"),
            ("QUEEN_TENANT_MAX_POP_TIMEOUT_MS", "2500"),
        ])
        .unwrap();
        assert_eq!(config.limits.max_queues, Some(3));
        assert_eq!(config.limits.max_partitions_per_queue, None);
        assert_eq!(
            config.limits.max_pop_timeout,
            Some(Duration::from_millis(2500))
        );
        assert_eq!(config.limits.session_settings(), [("queen.max_queues", 3)]);
        let err = Config::from_vars([("QUEEN_TENANT_MAX_POP_BATCH", "-1")]).unwrap_err();
        assert!(
            err.to_string().contains("QUEEN_TENANT_MAX_POP_BATCH"),
            "{err}"
        );
    }
}
