//! The schema installer: a database of main as of d5ce15b (migrations 001-064 recorded by
//! refinery), with data, upgrades to the baseline layout without losing anything and ends
//! at the same schema as a fresh install; every function equals its `sql/functions/`
//! file; an older database is refused untouched; a start on an up-to-date database takes
//! no table lock; nodes starting together apply each file once; a function file another
//! release recorded at a newer level is left alone.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use queen::db::schema::{functions, SqlFile, FUNCTIONS, MIGRATIONS};

use crate::support::old_writers::{hashed_segment, legacy_segment};
use crate::support::{payloads, postgres, TestBroker};

/// Every `sql/` file of main at d5ce15b, concatenated in order, and refinery's history of
/// them, as that release's broker left a database.
const OLD_SCHEMA: &str = include_str!("upgrade/schema_d5ce15b.sql");

/// One line per column, relation, index, constraint, trigger, type and function of the
/// `queen` schema (the installer's own history tables left out), sorted: two databases
/// whose lines are equal have the same schema.
const DESCRIBE: &str = include_str!("upgrade/describe.sql");

/// Tables whose rows an upgrade must keep.
const TABLES: &[&str] = &[
    "queues",
    "log_partitions",
    "log_segments",
    "log_consumers",
    "consumer_groups_metadata",
    "dedup",
    "dead_letters",
    "message_traces",
    "system_state",
];

/// An old database with legacy and hashed segments, a cursor, a dead letter and a trace
/// upgrades: every row stays, messages pop from where the cursor was, transaction ids of
/// both kinds of segment still dedup, the baseline is recorded without running, the later
/// migrations and every function file are recorded once, and every function in the schema
/// is its file's.
#[actix_rt::test]
async fn a_database_of_main_d5ce15b_with_data_upgrades_and_loses_nothing() {
    // Arrange: that release's schema as its installer left it, and data in it.
    let (pg, sql) = old_database().await;
    let legacy_ids = legacy_segment(&sql, "up", "legacy", &["a", "b", "c"]).await;
    hashed_segment(&sql, "up", "p2", &["x0", "x1", "x2", "x3"]).await;
    sql.batch_execute(
        "INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
             SELECT 'g', id FROM queen.queues WHERE name = 'up';
         INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
             SELECT id, 'g', 1 FROM queen.log_partitions WHERE name = 'p2';
         INSERT INTO queen.dead_letters (partition_id, consumer_group, message_offset,
                 transaction_id, segment_base, codec, created_at, blob)
             SELECT s.partition_id, '__QUEUE_MODE__', 0, 'x0', 0, s.codec, s.created_at, s.blob
             FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
             WHERE p.name = 'p2';
         INSERT INTO queen.message_traces (tenant, partition_id, transaction_id,
                 consumer_group, event_type, data)
             SELECT '', id, 'x0', '__QUEUE_MODE__', 'info', '{\"step\":1}'
             FROM queen.log_partitions WHERE name = 'p2';",
    )
    .await
    .unwrap();
    let before = counts(&sql).await;

    // Act: a broker of this branch starts on it.
    let b = TestBroker::start_on(pg.clone(), &[]).await;

    // Assert: nothing lost, everything recorded once, the functions are the files'.
    assert_eq!(counts(&sql).await, before);
    let versions: Vec<i32> = sql
        .query(
            "SELECT version FROM queen.schema_versions ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let shipped: Vec<i32> = MIGRATIONS.iter().map(|m| m.version()).collect();
    assert_eq!(versions, shipped);
    assert_eq!(functions_recorded(&sql).await, FUNCTIONS.len() as i64);
    assert_functions_are_their_files(&sql).await;
    let group = b
        .pop_messages("/api/v1/pop/queue/up/partition/p2?batch=10&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&group), vec![json!("x2"), json!("x3")]);
    let legacy = b
        .pop_messages("/api/v1/pop/queue/up/partition/legacy?batch=10")
        .await;
    assert_eq!(payloads(&legacy), vec![json!("a"), json!("b"), json!("c")]);
    let acks = b.ack_all(&legacy, "completed", None).await;
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    let again_legacy = push_one(&b, "legacy", "b").await;
    assert_eq!(again_legacy["status"], "duplicate", "{again_legacy}");
    assert_eq!(again_legacy["messageId"], json!(legacy_ids[1].to_string()));
    let again_v2 = push_one(&b, "p2", "x1").await;
    assert_eq!(again_v2["status"], "duplicate", "{again_v2}");
    let (_, dlq) = b.get("/api/v1/dlq?queue=up").await;
    assert_eq!(dlq["total"], 1, "{dlq}");
    b.stop().await;
}

/// A fresh install (the baseline, the later migrations, the function files) and the
/// upgrade of a d5ce15b database end at the same schema, column for column, index for
/// index, function for function; and on the fresh one too every function is its file's.
#[actix_rt::test]
async fn a_fresh_install_and_an_upgraded_database_end_at_the_same_schema() {
    // Arrange
    let fresh = postgres::fresh_database().await;
    let (upgraded, _) = old_database().await;

    // Act
    TestBroker::start_on(fresh.clone(), &[]).await.stop().await;
    TestBroker::start_on(upgraded.clone(), &[])
        .await
        .stop()
        .await;

    // Assert
    let fresh_sql = connect(&fresh).await;
    let fresh_lines = describe(&fresh_sql).await;
    let upgraded_lines = describe(&connect(&upgraded).await).await;
    assert!(fresh_lines.len() > 100, "{fresh_lines:?}");
    let only_fresh: Vec<&String> = fresh_lines.difference(&upgraded_lines).collect();
    let only_upgraded: Vec<&String> = upgraded_lines.difference(&fresh_lines).collect();
    assert!(
        only_fresh.is_empty() && only_upgraded.is_empty(),
        "only in the fresh install: {only_fresh:#?}\nonly in the upgraded one: {only_upgraded:#?}"
    );
    assert_functions_are_their_files(&fresh_sql).await;
}

/// A database of a release older than d5ce15b (here: one whose history lacks 064) is
/// refused with an error that says what to do, and the start changes nothing in it.
#[actix_rt::test]
async fn a_database_older_than_the_baseline_is_refused_and_left_as_it_was() {
    // Arrange
    let (pg, sql) = old_database().await;
    sql.execute(
        "DELETE FROM queen.schema_migrations WHERE version = 64",
        &[],
    )
    .await
    .unwrap();
    let before = describe(&sql).await;

    // Act
    let started = TestBroker::try_start_on(pg.clone(), &[]).await;

    // Assert
    let error = started.err().expect("the start is refused");
    let chain = format!("{error:?}");
    assert!(
        chain.contains("SchemaTooOld") && chain.contains("064_txn_keys"),
        "{chain}"
    );
    assert_eq!(describe(&sql).await, before);
    let created: bool = sql
        .query_one(
            "SELECT to_regclass('queen.schema_versions') IS NOT NULL
                 OR to_regclass('queen.schema_functions') IS NOT NULL",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!created, "the refused start created history tables");
}

/// A database with queen tables and no migration history (a release from before versioned
/// migrations) is refused too, and nothing is created in it.
#[actix_rt::test]
async fn a_database_without_a_migration_history_is_refused() {
    // Arrange
    let (pg, sql) = old_database().await;
    sql.batch_execute("DROP TABLE queen.schema_migrations")
        .await
        .unwrap();
    let before = describe(&sql).await;

    // Act
    let started = TestBroker::try_start_on(pg.clone(), &[]).await;

    // Assert
    let chain = format!("{:?}", started.err().expect("the start is refused"));
    assert!(
        chain.contains("SchemaTooOld") && chain.contains("without a migration history"),
        "{chain}"
    );
    assert_eq!(describe(&sql).await, before);
}

/// A migration whose recorded checksum differs from the shipped file stops the start,
/// naming the file.
#[actix_rt::test]
async fn an_edited_migration_stops_the_start_naming_it() {
    // Arrange
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let sql = connect(&pg).await;
    let last = MIGRATIONS.last().unwrap();
    sql.execute(
        "UPDATE queen.schema_versions SET checksum = 'edited' WHERE version = $1",
        &[&last.version()],
    )
    .await
    .unwrap();

    // Act
    let started = TestBroker::try_start_on(pg.clone(), &[]).await;

    // Assert
    let chain = format!("{:?}", started.err().expect("the start fails"));
    assert!(
        chain.contains("SchemaEdited") && chain.contains(last.file),
        "{chain}"
    );
}

/// A function file recorded with another text is applied again at the next start; one
/// recorded by a broker whose migrations are newer (a newer release, during a rolling
/// upgrade) is left as that broker defined it.
#[actix_rt::test]
async fn a_changed_function_file_is_applied_again_unless_a_newer_release_recorded_it() {
    // Arrange: two functions whose definitions differ from their files, as another
    // release's would; one recorded at this release's level, one at a newer one.
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let sql = connect(&pg).await;
    let other = "CREATE OR REPLACE FUNCTION queen.get_maintenance_v1() RETURNS boolean
                 LANGUAGE sql AS $$ SELECT NULL::boolean $$;
                 CREATE OR REPLACE FUNCTION queen.sweeper_release_v1(p_holder text)
                 RETURNS void LANGUAGE sql AS $$ SELECT $$;";
    sql.batch_execute(other).await.unwrap();
    sql.batch_execute(
        "UPDATE queen.schema_functions SET checksum = 'other'
             WHERE file = 'get_maintenance_v1.sql';
         UPDATE queen.schema_functions SET checksum = 'newer', level = level + 1
             WHERE file = 'sweeper_release_v1.sql';",
    )
    .await
    .unwrap();
    let newer_before = definition(&sql, "sweeper_release_v1").await;

    // Act
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;

    // Assert
    let restored: String = sql
        .query_one(
            "SELECT checksum FROM queen.schema_functions WHERE file = 'get_maintenance_v1.sql'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let file = FUNCTIONS
        .iter()
        .find(|f| f.file == "get_maintenance_v1.sql")
        .unwrap();
    assert_eq!(restored, file.checksum());
    assert!(
        !definition(&sql, "get_maintenance_v1")
            .await
            .contains("NULL::boolean"),
        "the changed file was not applied again"
    );
    assert_eq!(definition(&sql, "sweeper_release_v1").await, newer_before);
}

/// A function file whose body does not parse fails the install naming the file, before
/// it or any other file of the batch is recorded: the bodies are checked once every
/// function exists, not at their first call.
#[actix_rt::test]
async fn a_function_body_that_does_not_parse_fails_the_install_naming_its_file() {
    // Arrange: an installed database, and two files of which one misses a semicolon
    // (PostgreSQL only finds that when it checks the body).
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let mut sql = connect(&pg).await;
    let fine = SqlFile {
        file: "fine_v1.sql",
        sql: "CREATE OR REPLACE FUNCTION queen.fine_v1() RETURNS integer
              LANGUAGE sql AS $$ SELECT queen.broken_v1() $$;",
    };
    let broken = SqlFile {
        file: "broken_v1.sql",
        sql: "CREATE OR REPLACE FUNCTION queen.broken_v1() RETURNS integer
              LANGUAGE plpgsql AS $$ BEGIN RETURN 1 END; $$;",
    };
    let recorded_before = functions_recorded(&sql).await;

    // Act
    let applied = functions::apply_files(&mut sql, &[&fine, &broken], false).await;

    // Assert
    let chain = format!("{:?}", applied.expect_err("the broken body is refused"));
    assert!(chain.contains("broken_v1.sql"), "{chain}");
    assert_eq!(functions_recorded(&sql).await, recorded_before);
    let created: i64 = sql
        .query_one(
            "SELECT count(*) FROM pg_proc WHERE proname IN ('fine_v1', 'broken_v1')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(created, 0, "a refused batch leaves no function behind");
}

/// A function file that answers the same columns in another form (`RETURNS TABLE` to
/// `RETURNS SETOF` a composite type of those columns, as migration 086's files do) replaces
/// the old definition, which `CREATE OR REPLACE` alone refuses; one that changes the
/// columns its callers read is refused, naming the file, and the old definition stays.
#[actix_rt::test]
async fn a_function_file_changing_its_result_form_replaces_it_unless_its_columns_change() {
    // Arrange: a function of the previous form, and two files replacing it.
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let mut sql = connect(&pg).await;
    sql.batch_execute(
        "CREATE TYPE queen.form_test_row AS (a integer, b text);
         CREATE FUNCTION queen.form_test_v1() RETURNS TABLE (a integer, b text)
         LANGUAGE sql AS $$ SELECT 1, 'table' $$;",
    )
    .await
    .unwrap();
    let same_columns = SqlFile {
        file: "form_test_v1.sql",
        sql: "CREATE OR REPLACE FUNCTION queen.form_test_v1() RETURNS SETOF queen.form_test_row
              LANGUAGE sql AS $$ SELECT 2, 'setof' $$;",
    };
    let other_columns = SqlFile {
        file: "form_test_v1.sql",
        sql: "CREATE OR REPLACE FUNCTION queen.form_test_v1() RETURNS TABLE (a integer, c text)
              LANGUAGE sql AS $$ SELECT 3, 'renamed' $$;",
    };
    // Act
    functions::apply_files(&mut sql, &[&same_columns], false)
        .await
        .expect("the same columns in another form replace the function");
    let replaced = form_test_answer(&sql).await;
    let refused = functions::apply_files(&mut sql, &[&other_columns], false).await;

    // Assert
    assert_eq!(replaced, (2, "setof".to_owned()));
    let chain = format!("{:?}", refused.expect_err("changed columns are refused"));
    assert!(
        chain.contains("SchemaResultChanged") && chain.contains("form_test_v1.sql"),
        "{chain}"
    );
    assert_eq!(
        form_test_answer(&sql).await,
        (2, "setof".to_owned()),
        "the old one stays"
    );
}

/// The one row of the test's `queen.form_test_v1()`.
async fn form_test_answer(sql: &tokio_postgres::Client) -> (i32, String) {
    let row = sql
        .query_one("SELECT a, b FROM queen.form_test_v1()", &[])
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// Every function file that attaches a trigger is applied again by the installer on a
/// started database (on Citus a laid-out one, where the triggers sit on distributed and
/// reference tables), as a release that edits one does at its start, and the triggers are
/// still there after it.
#[actix_rt::test]
async fn the_installer_applies_a_changed_trigger_file_again_on_a_started_database() {
    // Arrange
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let mut sql = connect(&pg).await;
    let trigger_files: Vec<&SqlFile> = FUNCTIONS
        .iter()
        .filter(|f| f.sql.contains("CREATE OR REPLACE TRIGGER"))
        .collect();
    assert!(trigger_files.len() >= 2, "{trigger_files:?}");
    let triggers_before = triggers(&sql).await;

    // Act
    let citus = crate::support::citus::layout();
    let applied = functions::apply_files(&mut sql, &trigger_files, citus).await;

    // Assert
    applied.expect("the trigger files apply again");
    assert_eq!(triggers(&sql).await, triggers_before);
    assert!(!triggers_before.is_empty());
}

/// The triggers of the `queen` schema's tables, as (table, trigger) names.
async fn triggers(sql: &tokio_postgres::Client) -> Vec<(String, String)> {
    sql.query(
        "SELECT c.relname::text, t.tgname::text FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'queen' AND NOT t.tgisinternal ORDER BY 1, 2",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// On an up-to-date database a start reads the history and nothing else: it starts while
/// another session holds an exclusive lock on the hottest tables, and records nothing
/// again.
#[actix_rt::test]
async fn a_start_on_an_up_to_date_database_takes_no_table_lock() {
    // Arrange: a migrated database, and a session holding the hottest tables.
    let pg = postgres::fresh_database().await;
    let first = TestBroker::start_on(pg.clone(), &[]).await;
    first.stop().await;
    let sql = connect(&pg).await;
    let history_before = history(&sql).await;
    let mut holder = connect(&pg).await;
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute(
        "LOCK TABLE queen.log_segments, queen.log_consumers, queen.queues IN ACCESS EXCLUSIVE MODE",
    )
    .await
    .unwrap();

    // Act
    let second = tokio::time::timeout(
        Duration::from_secs(20),
        TestBroker::try_start_on(pg.clone(), &[]),
    )
    .await;

    // Assert
    let second = second
        .expect("start does not wait for the table lock")
        .expect("broker starts");
    tx.rollback().await.unwrap();
    assert_eq!(history(&sql).await, history_before);
    second.stop().await;
}

/// A pending migration that needs a table another session holds gives up after the
/// migration `lock_timeout` (the start fails, naming the step, instead of queueing behind
/// the holder with live traffic queued behind it), records nothing, and applies at the
/// next start once the table is free.
#[actix_rt::test]
async fn a_pending_migration_blocked_by_a_held_table_gives_up_then_applies_later() {
    // Arrange: 065 (it comments a column of log_consumers) is pending again, and
    // log_consumers is held.
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let sql = connect(&pg).await;
    sql.execute("DELETE FROM queen.schema_versions WHERE version = 65", &[])
        .await
        .unwrap();
    let mut holder = connect(&pg).await;
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE queen.log_consumers IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    // Act
    let started = std::time::Instant::now();
    let blocked = tokio::time::timeout(
        Duration::from_secs(60),
        TestBroker::try_start_on(pg.clone(), &[]),
    )
    .await
    .expect("the start gives up by itself");
    let gave_up_after = started.elapsed();
    tx.rollback().await.unwrap();
    let later = TestBroker::try_start_on(pg.clone(), &[]).await;

    // Assert
    let error = blocked.err().expect("the blocked start fails");
    let chain = format!("{error:?}");
    assert!(
        (chain.contains("lock timeout") || chain.contains("55P03"))
            && chain.contains("065_drop_unused_functions.sql"),
        "{chain}"
    );
    assert!(gave_up_after >= Duration::from_secs(9), "{gave_up_after:?}");
    later.expect("the next start applies it").stop().await;
    let recorded: i64 = sql
        .query_one(
            "SELECT count(*) FROM queen.schema_versions WHERE version = 65",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, 1);
}

/// Several nodes starting at once on a fresh database: every one starts, and each file is
/// applied and recorded exactly once.
#[actix_rt::test]
async fn nodes_starting_together_apply_each_migration_once() {
    // Arrange
    let pg = postgres::fresh_database().await;

    // Act
    let starts =
        futures_util::future::join_all((0..3).map(|_| TestBroker::try_start_on(pg.clone(), &[])))
            .await;

    // Assert
    let sql = connect(&pg).await;
    let rows: Vec<(i32, i64)> = sql
        .query(
            "SELECT version, count(*) FROM queen.schema_versions GROUP BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows.len(), MIGRATIONS.len());
    assert!(rows.iter().all(|(_, n)| *n == 1), "{rows:?}");
    assert_eq!(functions_recorded(&sql).await, FUNCTIONS.len() as i64);
    for start in starts {
        start.expect("every node starts").stop().await;
    }
}

/// Every function of the `queen` schema is defined exactly as its `sql/functions/` file
/// defines it, and there is no function without a file: inside a transaction that is
/// rolled back, every file is applied once more, its body checked, and no definition (nor
/// trigger) changes.
async fn assert_functions_are_their_files(sql: &tokio_postgres::Client) {
    let in_schema: BTreeSet<String> = sql
        .query(
            "SELECT p.proname::text FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'queen'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let files: BTreeSet<String> = FUNCTIONS.iter().map(|f| f.stem().to_owned()).collect();
    assert_eq!(
        in_schema, files,
        "functions in the schema against function files"
    );
    let before = definitions(sql).await;
    sql.batch_execute("BEGIN; SET LOCAL check_function_bodies = on")
        .await
        .unwrap();
    if crate::support::citus::script().is_some() {
        // As the installer applies them there (src/db/schema/functions.rs): the files
        // that attach a trigger to a distributed or reference table need it on Citus.
        sql.batch_execute("SET LOCAL citus.enable_unsafe_triggers = on")
            .await
            .unwrap();
    }
    for file in FUNCTIONS {
        for statement in file.statements() {
            sql.batch_execute(statement)
                .await
                .unwrap_or_else(|e| panic!("{}: {e:?}", file.file));
        }
    }
    let after = definitions(sql).await;
    sql.batch_execute("ROLLBACK").await.unwrap();
    assert!(
        before == after,
        "definitions that differ from their files: {:#?}",
        before.symmetric_difference(&after).collect::<Vec<_>>()
    );
}

/// The definition of every function and trigger of the `queen` schema.
async fn definitions(sql: &tokio_postgres::Client) -> BTreeSet<String> {
    sql.query(
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'queen'
         UNION ALL
         SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'queen' AND NOT t.tgisinternal",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// One function's definition.
async fn definition(sql: &tokio_postgres::Client, name: &str) -> String {
    sql.query_one(
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'queen' AND p.proname = $1",
        &[&name],
    )
    .await
    .unwrap()
    .get(0)
}

/// The lines of [`DESCRIBE`].
async fn describe(sql: &tokio_postgres::Client) -> BTreeSet<String> {
    sql.query(DESCRIBE, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A new database as the broker of d5ce15b left it ([`OLD_SCHEMA`]), and a session on it.
async fn old_database() -> (tokio_postgres::Config, tokio_postgres::Client) {
    let pg = postgres::fresh_database().await;
    let sql = connect(&pg).await;
    sql.batch_execute(OLD_SCHEMA)
        .await
        .expect("old schema applies");
    (pg, sql)
}

async fn connect(pg: &tokio_postgres::Config) -> tokio_postgres::Client {
    let (client, connection) = pg.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn counts(sql: &tokio_postgres::Client) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for table in TABLES {
        let n: i64 = sql
            .query_one(&format!("SELECT count(*) FROM queen.{table}"), &[])
            .await
            .unwrap()
            .get(0);
        out.push(((*table).to_owned(), n));
    }
    out
}

async fn functions_recorded(sql: &tokio_postgres::Client) -> i64 {
    sql.query_one(
        "SELECT count(DISTINCT file) FROM queen.schema_functions",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Both history tables, as rows of text.
async fn history(sql: &tokio_postgres::Client) -> Vec<String> {
    sql.query(
        "SELECT version || ' ' || checksum || ' ' || applied_at FROM queen.schema_versions
         UNION ALL
         SELECT file || ' ' || checksum || ' ' || level || ' ' || applied_at
         FROM queen.schema_functions ORDER BY 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// One message pushed through the broker.
async fn push_one(b: &TestBroker, partition: &str, txn: &str) -> Value {
    let item =
        json!({"queue": "up", "partition": partition, "transactionId": txn, "payload": "again"});
    let (_, body) = b.post("/api/v1/push", &json!({ "items": [item] })).await;
    body[0].clone()
}
