//! Counting calls of one SQL function, to show how many round trips to PostgreSQL an HTTP
//! call costs: `pg_stat_statements` when the server loads it, else
//! `pg_stat_user_functions` with `track_functions = all` (set with `ALTER SYSTEM` and a
//! reload for the run, so the broker's open connections count too, and reset at the end).

use std::time::{Duration, Instant};

use tokio_postgres::Client;

/// A backend reports its function counts at most this long after its last transaction
/// (PostgreSQL's idle statistics flush, 10 s, plus a margin).
const FLUSH_DELAY: Duration = Duration::from_secs(11);

/// Where counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Statements,
    Functions { reset_at_end: bool },
}

/// Whether `track_functions` is `all` for this session.
async fn tracks_all(pg: &Client) -> bool {
    pg.query_one("SELECT current_setting('track_functions')", &[])
        .await
        .is_ok_and(|r| r.get::<_, String>(0) == "all")
}

/// Reads call counts of the broker's SQL functions.
pub struct Counter {
    source: Option<Source>,
}

impl Counter {
    /// Picks a source, turning function tracking on when it has to (and may).
    pub async fn start(pg: &Client) -> Self {
        let statements = pg
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')
                    AND current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'",
                &[],
            )
            .await
            .is_ok_and(|r| r.get::<_, bool>(0));
        if statements {
            return Self {
                source: Some(Source::Statements),
            };
        }
        if tracks_all(pg).await {
            return Self {
                source: Some(Source::Functions {
                    reset_at_end: false,
                }),
            };
        }
        // Two statements: ALTER SYSTEM may not run inside a (multi-statement) transaction.
        let set = match pg
            .batch_execute("ALTER SYSTEM SET track_functions = 'all'")
            .await
        {
            Ok(()) => pg.batch_execute("SELECT pg_reload_conf()").await,
            Err(e) => Err(e),
        };
        if let Err(e) = set {
            eprintln!(
                "queen-bench: cannot turn track_functions on ({e}): round trips are not counted"
            );
            return Self { source: None };
        }
        // Backends read the reloaded setting at their next command; give the signal time.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Self {
            source: tracks_all(pg)
                .await
                .then_some(Source::Functions { reset_at_end: true }),
        }
    }

    /// The name of the source, for the table.
    pub fn source_name(&self) -> Option<&'static str> {
        match self.source? {
            Source::Statements => Some("pg_stat_statements"),
            Source::Functions { .. } => Some("pg_stat_user_functions"),
        }
    }

    /// Calls of `queen.<function>` so far (None without a source). With `quiet_since`
    /// (the end of the last call of interest), first waits until every backend has
    /// reported what it did up to then, when the source needs that.
    pub async fn calls(
        &self,
        pg: &Client,
        function: &str,
        quiet_since: Option<Instant>,
    ) -> Option<i64> {
        let row = match self.source? {
            Source::Statements => {
                let pattern = format!("%{function}(%");
                pg.query_one(
                    "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
                      WHERE query LIKE $1",
                    &[&pattern],
                )
                .await
            }
            Source::Functions { .. } => {
                if let Some(since) = quiet_since {
                    tokio::time::sleep(FLUSH_DELAY.saturating_sub(since.elapsed())).await;
                }
                let _ = pg.batch_execute("SELECT pg_stat_clear_snapshot()").await;
                pg.query_one(
                    "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_user_functions
                      WHERE schemaname = 'queen' AND funcname = $1",
                    &[&function],
                )
                .await
            }
        };
        row.ok().map(|r| r.get(0))
    }

    /// Puts `track_functions` back when this counter changed it.
    pub async fn finish(&self, pg: &Client) {
        if self.source == Some(Source::Functions { reset_at_end: true })
            && pg
                .batch_execute("ALTER SYSTEM RESET track_functions")
                .await
                .is_ok()
        {
            let _ = pg.batch_execute("SELECT pg_reload_conf()").await;
        }
    }
}
