//! Tracing set-up: `RUST_LOG` filters (default `info`), text or JSON output.

use tracing_subscriber::EnvFilter;

use crate::config::LogConfig;

/// Installs the global subscriber; a second call (tests) leaves the first in place.
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = if config.json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
