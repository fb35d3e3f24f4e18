//! The ephemeral section of the config: how many bytes of ephemeral queue contents this
//! node may hold in memory (`crate::ephemeral::budget`).

use super::{ConfigError, Vars};

/// Ephemeral queues' memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EphemeralConfig {
    /// `QUEEN_EPHEMERAL_MAX_BYTES`: the most ephemeral contents this node holds, every
    /// queue together (payload bytes plus a fixed cost per message); default 256 MiB.
    pub max_bytes: u64,
}

/// Reads the ephemeral section.
pub(super) fn ephemeral_config(vars: &Vars) -> Result<EphemeralConfig, ConfigError> {
    Ok(EphemeralConfig {
        max_bytes: vars.positive("QUEEN_EPHEMERAL_MAX_BYTES", 256u64 << 20)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn the_cap_has_a_default_and_refuses_zero() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.ephemeral.max_bytes, 256 << 20);
        let config = Config::from_vars([("QUEEN_EPHEMERAL_MAX_BYTES", "1000")]).unwrap();
        assert_eq!(config.ephemeral.max_bytes, 1000);
        assert!(Config::from_vars([("QUEEN_EPHEMERAL_MAX_BYTES", "0")]).is_err());
    }
}
