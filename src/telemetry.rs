//! Tracing set-up: `RUST_LOG` filters (default `info`), text or JSON output, and the layer
//! that times SQL calls from their spans (`metrics::sql_spans`), filtered on its own so
//! `RUST_LOG` never turns the SQL histograms off.

use tracing_subscriber::filter::{filter_fn, FilterExt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::LogConfig;
use crate::metrics::sql_spans::{is_sql_span, SqlSpans};

/// Installs the global subscriber; a second call (tests) leaves the first in place.
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let output = if config.json {
        tracing_subscriber::fmt::layer().json().boxed()
    } else {
        tracing_subscriber::fmt::layer().boxed()
    };
    // The SQL wrappers' spans exist for the histograms: the output layer would format
    // their fields on every call (2 % of the broker's pop+ack profile) for context that
    // no event inside them needs.
    let output_filter = filter.and(filter_fn(|meta| !is_sql_span(meta)));
    let _ = tracing_subscriber::registry()
        .with(output.with_filter(output_filter))
        .with(SqlSpans.with_filter(filter_fn(is_sql_span)))
        .try_init();
}
