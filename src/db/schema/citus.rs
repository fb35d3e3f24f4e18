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
//! - Hash-distributed by `partition_id`, all co-located with [`ANCHOR`]: the tables
//!   written per message or per partition, [`BY_PARTITION`].
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
    "queen.log_partitions",
    "queen.consumer_groups_metadata",
    "queen.system_state",
    "queen.sweeper_lease",
];

/// The table whose shards the other partition-keyed tables are co-located with.
pub const ANCHOR: &str = "queen.log_segments";

/// Tables distributed by `partition_id`, co-located with [`ANCHOR`] (which comes first), so
/// one partition's rows of all of them sit on one worker and a delegated function touches
/// only that worker.
pub const BY_PARTITION: &[&str] = &[
    "queen.log_segments",
    "queen.log_consumers",
    "queen.dedup",
    "queen.dead_letters",
];

/// Tables distributed by another column, each in a co-location group of its own.
pub const BY_TENANT: &[(&str, &str)] = &[("queen.kv", "tenant")];

/// Functions delegated to the worker that holds their partition: (name in schema `queen`,
/// the argument holding the partition id).
pub const DELEGATED: &[(&str, &str)] = &[("log_pop_v3", "p_pid"), ("log_ack_v2", "p_pid")];

/// Shards per distributed table: Citus's default, written down so every table (and a
/// rebalance) sees the same number.
const SHARD_COUNT: i32 = 32;

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
    for table in BY_PARTITION {
        if !placed(client, table, "h", "s").await? {
            steps.push(Step::ByPartition(table));
        }
    }
    for (table, column) in BY_TENANT {
        if !placed(client, table, "h", "s").await? {
            steps.push(Step::ByColumn(table, column));
        }
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
    /// `create_distributed_table` by `partition_id`, co-located with [`ANCHOR`].
    ByPartition(&'static str),
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
            Step::ByPartition(table) => format!("citus: distribute {table} by partition_id"),
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
    let steps = pending(client).await?;
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    client
        .batch_execute("SET citus.enable_unsafe_triggers = on")
        .await
        .map_err(failed("citus"))?;
    let mut done = Vec::new();
    for step in steps {
        let name = step.name();
        run(client, step).await.map_err(failed(&name))?;
        info!(step = %name, "citus layout");
        done.push(name);
    }
    client
        .batch_execute("RESET citus.enable_unsafe_triggers")
        .await
        .map_err(failed("citus"))?;
    Ok(done)
}

/// One step's statement.
async fn run(client: &Client, step: Step) -> Result<(), tokio_postgres::Error> {
    match step {
        Step::Reference(table) => {
            client
                .execute(
                    "SELECT create_reference_table($1::text::regclass)",
                    &[&table],
                )
                .await?;
        }
        Step::ByPartition(table) => {
            if table == ANCHOR {
                client
                    .execute(
                        "SELECT create_distributed_table($1::text::regclass, 'partition_id',
                             shard_count := $2, colocate_with := 'none')",
                        &[&table, &SHARD_COUNT],
                    )
                    .await?;
            } else {
                client
                    .execute(
                        "SELECT create_distributed_table($1::text::regclass, 'partition_id',
                             colocate_with := $2)",
                        &[&table, &ANCHOR],
                    )
                    .await?;
            }
        }
        Step::ByColumn(table, column) => {
            client
                .execute(
                    "SELECT create_distributed_table($1::text::regclass, $2,
                         shard_count := $3, colocate_with := 'none')",
                    &[&table, &column, &SHARD_COUNT],
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
