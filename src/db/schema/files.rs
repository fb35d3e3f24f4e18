//! The `sql/` files the binary embeds: the versioned migrations and the function files.

use sha2::{Digest, Sha256};

use super::statements;

/// One embedded `sql/` file.
#[derive(Debug, Clone, Copy)]
pub struct SqlFile {
    /// The file's name, `064_baseline.sql` or `log_pop_v3.sql`.
    pub file: &'static str,
    /// Its text.
    pub sql: &'static str,
}

impl SqlFile {
    /// The SHA-256 of the text, in hex: what the history tables record, so a node can tell
    /// an applied file from a changed one without reading the database's definitions.
    pub fn checksum(&self) -> String {
        Sha256::digest(self.sql.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The file's statements in order, which the installer sends one per query: a Citus
    /// coordinator refuses DDL on a distributed table that arrives with other statements in
    /// one query ([`statements`] says why).
    pub fn statements(&self) -> Vec<&'static str> {
        statements::split(self.sql)
    }

    /// The name without `.sql`: a migration's `064_baseline`, a function's `log_pop_v3`.
    pub fn stem(&self) -> &'static str {
        self.file.trim_end_matches(".sql")
    }

    /// A migration's number, from the digits before its first `_` (0 when there are none,
    /// which a unit test rules out).
    pub fn version(&self) -> i32 {
        self.stem()
            .split_once('_')
            .and_then(|(number, _)| number.parse().ok())
            .unwrap_or(0)
    }
}

/// The newest migration this broker ships: the level it records beside the function files
/// it applies (see [`super::functions`]).
pub fn newest() -> i32 {
    MIGRATIONS.iter().map(SqlFile::version).max().unwrap_or(0)
}

/// Adds one `sql/migrations/` file to [`MIGRATIONS`]: `migration!("066_name.sql")`.
macro_rules! migration {
    ($file:literal) => {
        SqlFile {
            file: $file,
            sql: include_str!(concat!("../../../sql/migrations/", $file)),
        }
    };
}

/// Adds one `sql/functions/` file to [`FUNCTIONS`]: `function!("log_pop_v3.sql")`.
macro_rules! function {
    ($file:literal) => {
        SqlFile {
            file: $file,
            sql: include_str!(concat!("../../../sql/functions/", $file)),
        }
    };
}

/// `sql/migrations/`, in the order they are applied: tables, indexes, backfills, drops.
/// Applied once each and never edited; a new one is one line here.
pub const MIGRATIONS: &[SqlFile] = &[
    migration!("064_baseline.sql"),
    migration!("065_drop_unused_functions.sql"),
    migration!("066_group_last_seen.sql"),
    migration!("067_kv.sql"),
    migration!("068_tier3_views.sql"),
    migration!("069_timers.sql"),
    migration!("070_streams.sql"),
    migration!("071_ephemeral.sql"),
    migration!("072_citus_layout.sql"),
    migration!("073_drop_release_old_functions.sql"),
    migration!("076_drop_pop_wrapper_and_dlq_list_v1.sql"),
    migration!("077_one_tenant_limit_guard.sql"),
    migration!("078_partition_directory.sql"),
    migration!("079_release_mark_listings_plpgsql.sql"),
    migration!("080_log_pop_args.sql"),
    migration!("082_release_mark_group_limit_admit.sql"),
    migration!("083_drop_pop_entry_points_v1.sql"),
    migration!("085_release_mark_has_pending_plpgsql.sql"),
    migration!("086_answer_row_types.sql"),
    migration!("087_release_mark_reference_lock_order.sql"),
    migration!("088_release_mark_maintenance_plpgsql.sql"),
    migration!("089_release_mark_idle_sweep_directory.sql"),
    migration!("090_release_mark_citus_claims_wait.sql"),
];

/// `sql/functions/`, one file per live SQL function (and the trigger that calls it, for a
/// trigger function): re-applied whenever its text changes. A new one is one line here.
pub const FUNCTIONS: &[SqlFile] = &[
    function!("configure_queue_v1.sql"),
    function!("consumer_group_delete_v1.sql"),
    function!("consumer_group_detail_v1.sql"),
    function!("consumer_group_lags_v1.sql"),
    function!("consumer_group_seek_v1.sql"),
    function!("consumer_group_seen_v1.sql"),
    function!("consumer_group_subscription_v1.sql"),
    function!("consumer_groups_lagging_v1.sql"),
    function!("consumer_groups_v1.sql"),
    function!("dead_letter_find_v1.sql"),
    function!("dead_letter_requeue_v2.sql"),
    function!("dead_letters_count_v1.sql"),
    function!("dead_letters_list_v2.sql"),
    function!("ephemeral_declaration_v1.sql"),
    function!("ephemeral_declarations_v1.sql"),
    function!("ephemeral_declare_v1.sql"),
    function!("ephemeral_forget_v1.sql"),
    function!("get_maintenance_v1.sql"),
    function!("get_maintenance_v2.sql"),
    function!("kv_apply_v1.sql"),
    function!("lease_holders_v1.sql"),
    function!("lease_partition.sql"),
    function!("lease_require_v2.sql"),
    function!("lock_slots_v1.sql"),
    function!("locks_apply_v1.sql"),
    function!("log_ack_v2.sql"),
    function!("log_ack_v3.sql"),
    function!("log_dead_letter_span_v1.sql"),
    function!("log_fetch_v1.sql"),
    function!("log_find_offset_v1.sql"),
    function!("log_has_pending_v1.sql"),
    function!("log_lease_extend_v2.sql"),
    function!("log_partition_ensure_v1.sql"),
    function!("log_partition_resolve_v1.sql"),
    function!("log_partitions_delete_segments_v1.sql"),
    function!("log_pending_partitions_v1.sql"),
    function!("log_pop_at_v1.sql"),
    function!("log_pop_discover_wire_v2.sql"),
    function!("log_pop_list_v2.sql"),
    function!("log_pop_options_v1.sql"),
    function!("log_pop_specific_v2.sql"),
    function!("log_pop_v3.sql"),
    function!("log_pop_wildcard_bin_v2.sql"),
    function!("log_push_at_v1.sql"),
    function!("log_push_v3.sql"),
    function!("log_register_group_at_v1.sql"),
    function!("log_render_failed_v1.sql"),
    function!("log_resolve_offsets_v2.sql"),
    function!("log_seed_cursor_v1.sql"),
    function!("message_get_v1.sql"),
    function!("message_segment_lock_v1.sql"),
    function!("message_segment_rewrite_v1.sql"),
    function!("messages_list_v1.sql"),
    function!("partition_stats_v1.sql"),
    function!("partitions_changed_v1.sql"),
    function!("partitions_safe_time_v1.sql"),
    function!("queue_delete_v1.sql"),
    function!("queue_depth_v1.sql"),
    function!("queue_ensure_v1.sql"),
    function!("queue_metrics_v1.sql"),
    function!("resource_queue_v1.sql"),
    function!("resources_grouped_v1.sql"),
    function!("resources_kv_keys_v1.sql"),
    function!("resources_kv_v1.sql"),
    function!("resources_overview_v1.sql"),
    function!("resources_partitions_v1.sql"),
    function!("resources_queues_v1.sql"),
    function!("retention_idle_v1.sql"),
    function!("retention_kv_v1.sql"),
    function!("retention_rows_v1.sql"),
    function!("retention_segments_v2.sql"),
    function!("segment_txn_keys.sql"),
    function!("set_maintenance_v1.sql"),
    function!("set_push_maintenance_v1.sql"),
    function!("set_switch_v1.sql"),
    function!("status_analytics_v1.sql"),
    function!("status_queue_rows_v1.sql"),
    function!("status_queue_v1.sql"),
    function!("status_queues_v1.sql"),
    function!("status_v1.sql"),
    function!("streams_cycle_v1.sql"),
    function!("streams_register_v1.sql"),
    function!("streams_state_get_v1.sql"),
    function!("sweeper_lease_v1.sql"),
    function!("sweeper_release_v1.sql"),
    function!("tenant_group_admit_v1.sql"),
    function!("tenant_limit_check_v1.sql"),
    function!("tenant_limit_guard_v1.sql"),
    function!("tenant_limit_v1.sql"),
    function!("tenant_queues_v1.sql"),
    function!("timers_apply_v1.sql"),
    function!("timers_backoff_v1.sql"),
    function!("timers_claim_v1.sql"),
    function!("timers_next_due_v1.sql"),
    function!("timers_pending_v1.sql"),
    function!("trace_add_v1.sql"),
    function!("trace_names_v1.sql"),
    function!("traces_by_name_v1.sql"),
    function!("traces_for_message_v1.sql"),
    function!("txn_hash.sql"),
    function!("txn_key.sql"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of a folder's `.sql` files, sorted.
    fn on_disk(folder: &str) -> Vec<String> {
        let dir = format!("{}/sql/{folder}", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        names.sort();
        names
    }

    /// Whether a text holds a statement that creates a function.
    fn creates_a_function(sql: &str) -> usize {
        let lower = sql.to_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        words
            .windows(4)
            .filter(|w| {
                w[0] == "create"
                    && (w[1] == "function"
                        || (w[1] == "or" && w[2] == "replace" && w[3] == "function"))
            })
            .count()
    }

    #[test]
    fn every_sql_file_is_embedded_once_and_in_order() {
        let migrations: Vec<String> = MIGRATIONS.iter().map(|f| f.file.to_owned()).collect();
        assert_eq!(migrations, on_disk("migrations"));
        let functions: Vec<String> = FUNCTIONS.iter().map(|f| f.file.to_owned()).collect();
        assert_eq!(functions, on_disk("functions"));
        let top: Vec<String> = on_disk("");
        assert!(
            top.is_empty(),
            "sql/ holds files outside its two folders: {top:?}"
        );
    }

    #[test]
    fn migrations_have_rising_numbers_and_start_at_the_baseline() {
        let versions: Vec<i32> = MIGRATIONS.iter().map(SqlFile::version).collect();
        assert_eq!(versions[0], 64);
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        assert_eq!(newest(), *versions.last().unwrap());
    }

    #[test]
    fn no_migration_creates_a_function() {
        for m in MIGRATIONS {
            assert_eq!(
                creates_a_function(m.sql),
                0,
                "{} creates a function",
                m.file
            );
        }
    }

    #[test]
    fn each_function_file_creates_exactly_the_function_it_is_named_after() {
        for f in FUNCTIONS {
            assert_eq!(creates_a_function(f.sql), 1, "{}", f.file);
            let head = format!("create or replace function queen.{}(", f.stem());
            let flat: String = f
                .sql
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                flat.contains(&head) || flat.contains(&head.replace('(', " (")),
                "{} does not define queen.{}",
                f.file,
                f.stem()
            );
            assert!(
                f.sql.starts_with("--"),
                "{} opens without its header comment",
                f.file
            );
        }
    }

    #[test]
    fn a_checksum_follows_the_text() {
        let a = SqlFile {
            file: "x.sql",
            sql: "SELECT 1",
        };
        let b = SqlFile {
            file: "x.sql",
            sql: "SELECT 2",
        };
        assert_eq!(a.checksum().len(), 64);
        assert_eq!(a.checksum(), a.checksum());
        assert_ne!(a.checksum(), b.checksum());
    }
}
