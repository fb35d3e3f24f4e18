//! The pop ceilings of a tenant (`QUEEN_TENANT_MAX_POP_BATCH`,
//! `QUEEN_TENANT_MAX_POP_TIMEOUT_MS`): a pop that asks for more is a 403 `tenant_limit`
//! that pops nothing; a pop that asks for nothing gets the default lowered to the ceiling,
//! since the client did not ask for more than it may have.

use std::time::Duration;

use crate::config::LimitsConfig;
use crate::http::error::ApiError;
use crate::log::pop::PopRequest;

/// The default batch and long-poll deadline, each lowered to its ceiling.
pub fn defaults(limits: &LimitsConfig, batch: u64, timeout: Duration) -> (u64, Duration) {
    let batch = limits
        .max_pop_batch
        .map_or(batch, |max| batch.min(u64::from(max)));
    let timeout = limits
        .max_pop_timeout
        .map_or(timeout, |max| timeout.min(max));
    (batch, timeout)
}

/// Refuses a pop over a ceiling.
pub fn check(limits: &LimitsConfig, request: &PopRequest) -> Result<(), ApiError> {
    if let Some(max) = limits.max_pop_batch.filter(|max| request.batch > *max) {
        return Err(ApiError::TenantLimit(format!(
            "batch {} is over the tenant limit of {max} (QUEEN_TENANT_MAX_POP_BATCH)",
            request.batch
        )));
    }
    if let Some(max) = limits.max_pop_timeout.filter(|max| request.timeout > *max) {
        return Err(ApiError::TenantLimit(format!(
            "timeout {} ms is over the tenant limit of {} ms (QUEEN_TENANT_MAX_POP_TIMEOUT_MS)",
            request.timeout.as_millis(),
            max.as_millis()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_lowered_to_the_ceilings_and_left_alone_without_them() {
        let none = LimitsConfig::default();
        let second = Duration::from_secs(1);
        assert_eq!(defaults(&none, 200, 30 * second), (200, 30 * second));
        let tight = LimitsConfig {
            max_pop_batch: Some(50),
            max_pop_timeout: Some(5 * second),
            ..LimitsConfig::default()
        };
        assert_eq!(defaults(&tight, 200, 30 * second), (50, 5 * second));
        assert_eq!(defaults(&tight, 10, second), (10, second));
    }
}
