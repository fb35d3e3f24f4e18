//! The Citus layout: where each table and hot function lives when the database is a Citus
//! coordinator (docs/scale-out.md says why each is placed as it is).
//!
//! Not a migration: plain PostgreSQL has no `create_distributed_table`, and migrations are
//! the same everywhere. The installer runs this step after the migrations and the function
//! files, under the same advisory lock, when `QUEEN_CITUS=true` asks for it (the
//! database must have the `citus` extension). Every statement is guarded by Citus's own catalog
//! (`pg_dist_partition`, `pg_dist_object`), so a start that finds the layout complete
//! reads those and changes nothing, and a database laid out by hand, or half laid out by
//! a start that died, is completed rather than refused.
//!
//! - Reference tables (a copy on every node): the small metadata every node's functions
//!   read, [`REFERENCE_TABLES`].
//! - Hash-distributed by partition id, all co-located with [`ANCHOR`]: the tables
//!   written per message or per partition, [`BY_PARTITION`], among them the partitions'
//!   counters (`queen.log_partitions`, by `id`); their names are the reference table
//!   `queen.log_partition_names` (078_partition_directory.sql). Citus distributes no table
//!   another local table refers to, so the foreign keys to `queen.log_partitions` are
//!   dropped before and added again after ([`FOREIGN_KEYS`]), and its (queue, name) key,
//!   which Citus cannot keep, is left to the directory.
//! - Distributed by tenant in a group of its own: the key/value store, [`BY_TENANT`].
//! - The tables left out (`queen.message_traces`, `queen.message_trace_names`, the two
//!   history tables) stay on the coordinator; Citus adds the traces to its metadata as
//!   local tables by itself, because of their foreign key to a reference table.
//! - Delegated functions, [`DELEGATED`]: distributed by their partition id argument with
//!   `force_delegation`, so a call runs on the worker holding the partition's shard as one
//!   round trip, inside the broker's transactions too.

use tokio_postgres::Client;
use tracing::info;

use super::history::failed;
use crate::db::DbError;

/// Tables copied to every node: small, read by every node's functions, written rarely.
pub const REFERENCE_TABLES: &[&str] = &[
    "queen.queues",
    "queen.log_partition_names",
    "queen.consumer_groups_metadata",
    "queen.system_state",
    "queen.sweeper_lease",
];

/// The table whose shards the other partition-keyed tables are co-located with.
pub const ANCHOR: &str = "queen.log_segments";

/// Tables distributed by their partition id column, co-located with [`ANCHOR`] (which
/// comes first, then the partitions the others refer to), so one partition's rows of all
/// of them sit on one worker and a delegated function touches only that worker.
pub const BY_PARTITION: &[(&str, &str)] = &[
    ("queen.log_segments", "partition_id"),
    ("queen.log_partitions", "id"),
    ("queen.log_consumers", "partition_id"),
    ("queen.dedup", "partition_id"),
    ("queen.dead_letters", "partition_id"),
];

/// The partitions' table: its counters are distributed, its names are the directory.
const PARTITIONS: &str = "queen.log_partitions";

/// The foreign keys on the layout, by (table, constraint name, definition): dropped before
/// [`PARTITIONS`] is distributed when they refer to it (Citus distributes no table a
/// local table refers to) and added (again) after every table is placed. A trace refers to
/// the directory, a reference table, since the traces stay on the coordinator.
pub const FOREIGN_KEYS: &[(&str, &str, &str)] = &[
    (
        "queen.log_partitions",
        "log_partitions_id_fkey",
        "FOREIGN KEY (id) REFERENCES queen.log_partition_names (id) ON DELETE CASCADE",
    ),
    (
        "queen.log_consumers",
        "log_consumers_partition_id_fkey",
        "FOREIGN KEY (partition_id) REFERENCES queen.log_partitions (id) ON DELETE CASCADE",
    ),
    (
        "queen.dedup",
        "dedup_partition_id_fkey",
        "FOREIGN KEY (partition_id) REFERENCES queen.log_partitions (id) ON DELETE CASCADE",
    ),
    (
        "queen.dead_letters",
        "dead_letters_partition_id_fkey",
        "FOREIGN KEY (partition_id) REFERENCES queen.log_partitions (id) ON DELETE CASCADE",
    ),
    (
        "queen.message_traces",
        "message_traces_partition_id_fkey",
        "FOREIGN KEY (partition_id) REFERENCES queen.log_partition_names (id) \
         ON DELETE CASCADE",
    ),
];

/// The (queue, name) key of [`PARTITIONS`] on plain PostgreSQL, dropped on the layout.
const PARTITIONS_NAME_KEY: &str = "log_partitions_queue_id_name_key";

/// Tables distributed by another column, each in a co-location group of its own.
pub const BY_TENANT: &[(&str, &str)] = &[("queen.kv", "tenant")];

/// Functions delegated to the worker that holds their partition: (name in schema `queen`,
/// the argument holding the partition id).
pub const DELEGATED: &[(&str, &str)] = &[
    ("log_pop_v3", "p_pid"),
    ("log_ack_v2", "p_pid"),
    ("log_ack_v3", "p_pid"),
    ("log_push_at_v1", "p_pid"),
    ("log_pop_at_v1", "p_pid"),
];

/// Shards per distributed table: the database's `citus.shard_count` (Citus's default 32;
/// an operator sets it with `ALTER DATABASE .. SET citus.shard_count`), read once per
/// layout and given to every table explicitly, so the co-located tables and the `kv`
/// table get the same number even if the setting changes between two of their steps.
async fn shard_count(client: &Client) -> Result<i32, tokio_postgres::Error> {
    let row = client
        .query_one("SELECT current_setting('citus.shard_count')::integer", &[])
        .await?;
    Ok(row.get(0))
}

/// Whether this start lays the schema out for Citus: `setting` is `QUEEN_CITUS`. Only
/// `Some(true)` does, and on a database without the extension it is an error. Unset keeps
/// plain tables even on Citus: the layout does not serve every path yet (docs/scale-out.md),
/// so it is opted into, never found.
pub async fn wanted(client: &Client, setting: Option<bool>) -> Result<bool, DbError> {
    if setting != Some(true) {
        return Ok(false);
    }
    let present = extension_present(client).await?;
    match (setting, present) {
        (Some(true), false) => Err(DbError::CitusMissing),
        _ => Ok(present),
    }
}

/// Whether the database has the `citus` extension.
async fn extension_present(client: &Client) -> Result<bool, DbError> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')",
            &[],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0))
}

/// Whether the schema is laid out for Citus: the database has the extension and
/// [`ANCHOR`] is distributed. Read once at start, after the installer (by whichever node
/// laid it out), so a broker started without `QUEEN_CITUS` on a laid-out database still
/// takes the statements the layout needs.
pub async fn laid_out(client: &Client) -> Result<bool, DbError> {
    let present = extension_present(client).await?;
    if !present {
        return Ok(false);
    }
    placed(client, ANCHOR, "h", "s").await
}

/// The layout steps still to do, in the order [`apply`] runs them (empty: laid out).
pub async fn pending(client: &Client) -> Result<Vec<Step>, DbError> {
    let mut steps = Vec::new();
    for table in REFERENCE_TABLES {
        if !placed(client, table, "n", "t").await? {
            steps.push(Step::Reference(table));
        }
    }
    for (table, column) in BY_PARTITION {
        if !placed(client, table, "h", "s").await? {
            steps.push(Step::ByPartition(table, column));
        }
    }
    for (table, column) in BY_TENANT {
        if !placed(client, table, "h", "s").await? {
            steps.push(Step::ByColumn(table, column));
        }
    }
    let mut keys_missing = !steps.is_empty();
    for (table, name, definition) in FOREIGN_KEYS {
        keys_missing |= !foreign_key(client, table, name, definition).await?;
    }
    if keys_missing {
        steps.push(Step::ForeignKeys);
    }
    for (function, argument) in DELEGATED {
        if !delegated(client, function).await? {
            steps.push(Step::Delegate(function, argument));
        }
    }
    Ok(steps)
}

/// One statement of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `create_reference_table` of the table.
    Reference(&'static str),
    /// `create_distributed_table` by the partition id column, co-located with [`ANCHOR`];
    /// for [`PARTITIONS`] first the directory filled from it, the foreign keys that refer
    /// to it and its (queue, name) key dropped.
    ByPartition(&'static str, &'static str),
    /// The [`FOREIGN_KEYS`] missing (or referring elsewhere), added.
    ForeignKeys,
    /// `create_distributed_table` by the given column, in a co-location group of its own.
    ByColumn(&'static str, &'static str),
    /// `create_distributed_function` by the given argument, with `force_delegation`.
    Delegate(&'static str, &'static str),
}

impl Step {
    /// What the step is called in the installer's answer and its errors.
    pub fn name(&self) -> String {
        match self {
            Step::Reference(table) => format!("citus: reference {table}"),
            Step::ByPartition(table, column) => format!("citus: distribute {table} by {column}"),
            Step::ForeignKeys => "citus: foreign keys".to_string(),
            Step::ByColumn(table, column) => format!("citus: distribute {table} by {column}"),
            Step::Delegate(function, _) => format!("citus: delegate queen.{function}"),
        }
    }
}

/// Under the schema lock, after the function files: runs every pending step, each in its
/// own transaction (Citus copies a table's rows to its shards as it distributes it), with
/// `citus.enable_unsafe_triggers` on so the tables' triggers go to the shards with them.
/// Returns the steps' names.
pub async fn apply(client: &Client) -> Result<Vec<String>, DbError> {
    let mut done = Vec::new();
    if placed(client, PARTITIONS, "n", "t").await? {
        // Laid out before the directory, with the partitions a reference table: Citus turns
        // no reference table into a distributed one, so it and every table joined to it by
        // a foreign key go back to plain tables, and the steps below lay them out again.
        let name = format!("citus: undistribute {PARTITIONS} (a reference table)");
        client
            .execute(
                "SELECT undistribute_table($1::text::regclass, cascade_via_foreign_keys := true)",
                &[&PARTITIONS],
            )
            .await
            .map_err(failed(&name))?;
        info!(step = %name, "citus layout");
        done.push(name);
    }
    let steps = pending(client).await?;
    if steps.is_empty() {
        return Ok(done);
    }
    client
        .batch_execute("SET citus.enable_unsafe_triggers = on")
        .await
        .map_err(failed("citus"))?;
    let shards = shard_count(client).await.map_err(failed("citus"))?;
    for step in steps {
        let name = step.name();
        run(client, step, shards).await.map_err(failed(&name))?;
        info!(step = %name, "citus layout");
        done.push(name);
    }
    client
        .batch_execute("RESET citus.enable_unsafe_triggers")
        .await
        .map_err(failed("citus"))?;
    Ok(done)
}

/// One step's statement; a distributed table gets `shards` shards.
async fn run(client: &Client, step: Step, shards: i32) -> Result<(), tokio_postgres::Error> {
    match step {
        Step::Reference(table) => {
            client
                .execute(
                    "SELECT create_reference_table($1::text::regclass)",
                    &[&table],
                )
                .await?;
        }
        Step::ByPartition(table, column) => {
            if table == ANCHOR {
                client
                    .execute(
                        "SELECT create_distributed_table($1::text::regclass, $2,
                             shard_count := $3, colocate_with := 'none')",
                        &[&table, &column, &shards],
                    )
                    .await?;
            } else {
                if table == PARTITIONS {
                    detach_partitions(client).await?;
                }
                client
                    .execute(
                        "SELECT create_distributed_table($1::text::regclass, $2,
                             colocate_with := $3)",
                        &[&table, &column, &ANCHOR],
                    )
                    .await?;
            }
        }
        Step::ForeignKeys => {
            for (table, name, definition) in FOREIGN_KEYS {
                if foreign_key(client, table, name, definition)
                    .await
                    .is_ok_and(|ok| ok)
                {
                    continue;
                }
                // One transaction each, one connection per node: Citus adds a foreign key
                // to a reference table only so.
                client
                    .batch_execute(&format!(
                        "ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}"
                    ))
                    .await?;
                client
                    .batch_execute("SET citus.multi_shard_modify_mode TO 'sequential'")
                    .await?;
                client
                    .batch_execute(&format!(
                        "ALTER TABLE {table} ADD CONSTRAINT {name} {definition}"
                    ))
                    .await?;
                client
                    .batch_execute("RESET citus.multi_shard_modify_mode")
                    .await?;
            }
        }
        Step::ByColumn(table, column) => {
            client
                .execute(
                    "SELECT create_distributed_table($1::text::regclass, $2,
                         shard_count := $3, colocate_with := 'none')",
                    &[&table, &column, &shards],
                )
                .await?;
        }
        Step::Delegate(function, argument) => {
            client
                .execute(
                    "SELECT create_distributed_function(p.oid::regprocedure, $2,
                         colocate_with := $3, force_delegation := true)
                     FROM pg_proc p
                     WHERE p.pronamespace = 'queen'::regnamespace AND p.proname = $1",
                    &[&function, &argument, &ANCHOR],
                )
                .await?;
        }
    }
    Ok(())
}

/// Before [`PARTITIONS`] is distributed: the directory made complete from it (the rows an
/// older release's node added without one, see 078_partition_directory.sql), and the
/// foreign keys that refer to it and its (queue, name) key dropped (the directory keeps
/// that key; [`FOREIGN_KEYS`] come back after).
async fn detach_partitions(client: &Client) -> Result<(), tokio_postgres::Error> {
    // Read out first: Citus joins no plain table with the directory once that is a
    // reference table.
    let rows = client
        .query("SELECT id, queue_id, name FROM queen.log_partitions", &[])
        .await?;
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let queues: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
    let names: Vec<String> = rows.iter().map(|r| r.get(2)).collect();
    client
        .execute(
            "DELETE FROM queen.log_partition_names WHERE id <> ALL ($1::bigint[])",
            &[&ids],
        )
        .await?;
    client
        .execute(
            "INSERT INTO queen.log_partition_names (id, queue_id, name)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
             ON CONFLICT DO NOTHING",
            &[&ids, &queues, &names],
        )
        .await?;
    for (table, name, _) in FOREIGN_KEYS {
        client
            .batch_execute(&format!(
                "ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}"
            ))
            .await?;
    }
    client
        .batch_execute(&format!(
            "ALTER TABLE {PARTITIONS} DROP CONSTRAINT IF EXISTS {PARTITIONS_NAME_KEY}"
        ))
        .await
}

/// Whether `table` has the foreign key `name` with this definition (as
/// `pg_get_constraintdef` spells it, whitespace and the schema `queen.` aside).
async fn foreign_key(
    client: &Client,
    table: &str,
    name: &str,
    definition: &str,
) -> Result<bool, DbError> {
    let row = client
        .query_opt(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
             WHERE c.conrelid = to_regclass($1) AND c.conname = $2 AND c.contype = 'f'",
            &[&table, &name],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?;
    let words = |s: &str| {
        s.replace("queen.", "")
            .split_whitespace()
            .collect::<String>()
    };
    Ok(row.is_some_and(|r| words(r.get(0)) == words(definition)))
}

/// Whether Citus holds the table with this partition method (`n` none, `h` hash) and
/// replication model (`t` a reference table's, `s` a distributed table's).
async fn placed(client: &Client, table: &str, method: &str, model: &str) -> Result<bool, DbError> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_dist_partition
                            WHERE logicalrelid = to_regclass($1)
                              AND partmethod::text = $2 AND repmodel::text = $3)",
            &[&table, &method, &model],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0))
}

/// Whether the function is distributed by an argument (delegated).
async fn delegated(client: &Client, function: &str) -> Result<bool, DbError> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_dist_object o JOIN pg_proc p ON p.oid = o.objid
                            WHERE o.classid = 'pg_proc'::regclass
                              AND p.pronamespace = 'queen'::regnamespace AND p.proname = $1
                              AND o.distribution_argument_index IS NOT NULL
                              AND o.force_delegation)",
            &[&function],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0))
}
