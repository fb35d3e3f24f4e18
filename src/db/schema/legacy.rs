//! Databases that releases before the baseline built: migrations 001-064 applied one
//! file each and recorded by refinery in `queen.schema_migrations`.
//!
//! Such a database holds exactly the tables that `sql/migrations/064_baseline.sql` creates
//! (a test builds both and compares their catalogs), so it is recorded as at version 64
//! without running the baseline; later migrations and the function files then apply as on
//! any database. A database those releases built only part of (or one from before they
//! recorded anything) would need the files in between, which this release no longer ships:
//! it is refused, and a broker of the release that still shipped them brings it to 064
//! first. `queen.schema_migrations` is left as it is, so a node of the previous release
//! started during a rolling upgrade finds everything recorded and applies nothing.

use tokio_postgres::Client;

use super::files::{SqlFile, MIGRATIONS};
use super::history::exists;
use crate::db::DbError;

/// refinery's history table of the releases before the baseline.
pub const REFINERY_HISTORY: &str = "queen.schema_migrations";

/// The migrations those releases applied, as refinery recorded them (version, name): all
/// of them make a database the baseline's.
pub const BEFORE_BASELINE: &[(i32, &str)] = &[
    (1, "schema"),
    (2, "log_push"),
    (3, "log_pop"),
    (4, "log_pop_specific"),
    (5, "log_pop_wildcard"),
    (6, "log_pop_discover"),
    (7, "log_has_pending"),
    (8, "log_ack"),
    (9, "log_lease_extend"),
    (10, "configure_queue"),
    (11, "log_pop_list"),
    (12, "log_pending_partitions"),
    (13, "system_state"),
    (14, "group_conflation"),
    (15, "txn_hash"),
    (16, "log_push_v2"),
    (17, "log_ack_v2"),
    (18, "log_pop_v2"),
    (20, "lease_require"),
    (30, "consumer_group_lags"),
    (31, "consumer_group_delete"),
    (32, "consumer_group_subscription"),
    (33, "consumer_group_seek"),
    (34, "dead_letters"),
    (35, "dead_letter_requeue"),
    (36, "resource_stats"),
    (37, "resources"),
    (38, "queue_delete"),
    (39, "messages"),
    (40, "message_erase"),
    (41, "queue_metrics"),
    (42, "status"),
    (43, "traces"),
    (44, "retention"),
    (45, "dead_letter_requeue_v2"),
    (48, "log_render_failed"),
    (49, "retention_cursor_lock"),
    (50, "queue_options"),
    (51, "log_pop_v3"),
    (52, "log_ack_v2_options"),
    (53, "log_render_failed_options"),
    (54, "consumer_group_seek_retry_at"),
    (55, "push_maintenance"),
    (58, "segments_inline"),
    (60, "tenant_leases"),
    (61, "tenant_limits"),
    (62, "segments_without_foreign_key"),
    (63, "leases_named_by_partition"),
    (64, "txn_keys"),
];

/// What a refused database's owner does about it.
const UPGRADE_FIRST: &str =
    "start a broker of the release before the baseline (d5ce15b) on it once, then this one";

/// What the installer finds in a database with no history of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No queen tables: the migrations run from the baseline.
    Fresh,
    /// Every migration before the baseline recorded: the baseline is recorded, not run.
    AtBaseline,
}

/// Tells a fresh database from one at the baseline, and refuses anything else.
pub async fn inspect(client: &Client) -> Result<Found, DbError> {
    if exists(client, REFINERY_HISTORY).await? {
        let recorded: Vec<(i32, String)> = client
            .query(
                &format!("SELECT version, name FROM {REFINERY_HISTORY}"),
                &[],
            )
            .await
            .map_err(|e| DbError::query("schema", e))?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        let missing: Vec<String> = BEFORE_BASELINE
            .iter()
            .filter(|(v, n)| !recorded.iter().any(|(rv, rn)| rv == v && rn == n))
            .map(|(v, n)| format!("{v:03}_{n}"))
            .collect();
        return if missing.is_empty() {
            Ok(Found::AtBaseline)
        } else {
            Err(DbError::SchemaTooOld {
                found: format!(
                    "migrations {} are not applied; {UPGRADE_FIRST}",
                    missing.join(", ")
                ),
            })
        };
    }
    if exists(client, "queen.queues").await? {
        return Err(DbError::SchemaTooOld {
            found: format!(
                "queen tables without a migration history (a release from before versioned \
                 migrations); {UPGRADE_FIRST}"
            ),
        });
    }
    Ok(Found::Fresh)
}

/// The migration a database at the baseline is recorded as having applied.
pub fn baseline() -> &'static SqlFile {
    MIGRATIONS
        .first()
        .expect("the baseline is the first embedded migration")
}
