//! A tracing layer that times SQL calls: every database wrapper opens a span tagged
//! `db.operation = "<sql function>"` (the style guide asks for it), so the span's life is
//! the call's time. On close the layer observes it in `queen_sql_duration_seconds`.
//!
//! Installed by `telemetry::init` with a per-layer filter that only lets such spans through,
//! so other spans cost it nothing and `RUST_LOG` does not turn the timing off.

use std::fmt;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::latency::latency;

/// The field naming the SQL function.
const FIELD: &str = "db.operation";

/// The layer.
#[derive(Debug, Default, Clone, Copy)]
pub struct SqlSpans;

/// Whether a callsite is a database wrapper's span (the layer's filter).
pub fn is_sql_span(meta: &Metadata<'_>) -> bool {
    meta.is_span() && meta.fields().field(FIELD).is_some()
}

/// Stored in the span: which function (recorded at creation or later), since when.
struct Started {
    function: Option<String>,
    at: Instant,
}

impl<S> Layer<S> for SqlSpans
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut visitor = Operation(None);
        attrs.record(&mut visitor);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Started {
                function: visitor.0,
                at: Instant::now(),
            });
        }
    }

    // A wrapper that picks its SQL function at run time records it after the span opened.
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut visitor = Operation(None);
        values.record(&mut visitor);
        let (Some(function), Some(span)) = (visitor.0, ctx.span(id)) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(started) = extensions.get_mut::<Started>() {
            started.function = Some(function);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let extensions = span.extensions();
        if let Some(Started {
            function: Some(function),
            at,
        }) = extensions.get::<Started>()
        {
            latency()
                .sql
                .with_label_values(&[function.as_str()])
                .observe(at.elapsed().as_secs_f64());
        }
    }
}

/// Reads the `db.operation` field, whether recorded as a string or through `Debug`.
struct Operation(Option<String>);

impl Visit for Operation {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == FIELD {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == FIELD {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn a_closed_database_span_is_observed_under_its_function_and_other_spans_are_not() {
        let subscriber =
            tracing_subscriber::registry().with(SqlSpans.with_filter(filter_fn(is_sql_span)));
        let function = "unit_test_sql_spans_v1";
        let before = latency()
            .sql
            .with_label_values(&[function])
            .get_sample_count();

        tracing::subscriber::with_default(subscriber, || {
            let sql =
                tracing::info_span!("call", db.system = "postgresql", db.operation = function);
            drop(sql.enter());
            drop(sql);
            drop(tracing::info_span!("unrelated", queue = "q"));
        });

        let after = latency()
            .sql
            .with_label_values(&[function])
            .get_sample_count();
        assert_eq!(after, before + 1);
    }

    #[test]
    fn a_function_recorded_after_the_span_opened_is_the_one_observed() {
        let subscriber =
            tracing_subscriber::registry().with(SqlSpans.with_filter(filter_fn(is_sql_span)));

        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("claim", db.operation = tracing::field::Empty);
            span.record("db.operation", "unit_test_recorded_v1");
        });

        let sql = latency().sql.with_label_values(&["unit_test_recorded_v1"]);
        assert_eq!(sql.get_sample_count(), 1);
    }
}
