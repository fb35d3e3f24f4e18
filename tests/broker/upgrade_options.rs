//! The upgrade of the delivery options (`sql/050_queue_options.sql`): on a database of
//! main as of 8f894d1, whose queues hold the defaults that were stored but never honoured
//! (ttl 3600 s, retryDelay 1000 ms, both dead-letter switches false), those become "off"
//! and "not set", so an old backlog is still delivered; other values a queue set are kept
//! and honoured from then on. A stored `false` cannot be told from the old default, and
//! switched nothing off: it becomes "not set" (dead letters kept), as it behaved.

use serde_json::json;

use crate::support::{payloads, postgres, TestBroker};

/// Every `sql/` file of main at 8f894d1, concatenated in order (as `upgrade.rs` uses it).
const OLD_SCHEMA: &str = include_str!("upgrade/schema_8f894d1.sql");

/// A queue row's delivery options: name, ttl, retryDelay, the two dead-letter switches.
type Options = (String, i32, i32, Option<bool>, Option<bool>);

/// An old queue with the old defaults keeps delivering a two-hour-old message (no ttl of
/// 3600 s appears from nowhere) and stores the options as off; an old queue that set its
/// own values keeps them, except a `false` switch, which never did anything.
#[actix_rt::test]
async fn old_never_honoured_defaults_become_off_and_explicit_values_are_kept() {
    // Arrange: main's schema, two queues, an old message in the one with defaults.
    let pg = postgres::fresh_database().await;
    let (sql, conn) = pg
        .connect(tokio_postgres::NoTls)
        .await
        .expect("test database");
    tokio::spawn(conn);
    sql.batch_execute(OLD_SCHEMA)
        .await
        .expect("old schema applies");
    sql.batch_execute(
        "CREATE TABLE queen.schema_files (file text PRIMARY KEY, checksum text NOT NULL,
             applied_at timestamptz NOT NULL);
         INSERT INTO queen.queues (tenant, name) VALUES ('', 'old-defaults');
         INSERT INTO queen.queues (tenant, name, ttl_seconds, retry_delay_ms,
                 dead_letter_queue, dlq_after_max_retries)
             VALUES ('', 'old-explicit', 60, 250, true, false);",
    )
    .await
    .unwrap();

    // Act: a broker of this branch starts on it; a message is pushed and aged two hours.
    let b = TestBroker::start_on(pg.clone(), &[]).await;
    b.push("old-defaults", "Default", &[json!("two hours old")])
        .await;
    sql.batch_execute("UPDATE queen.log_segments SET created_at = now() - interval '2 hours'")
        .await
        .unwrap();
    let got = b
        .pop_messages("/api/v1/pop/queue/old-defaults?batch=10")
        .await;
    let rows = sql
        .query(
            "SELECT name, ttl_seconds, retry_delay_ms, dead_letter_queue, dlq_after_max_retries
             FROM queen.queues ORDER BY name",
            &[],
        )
        .await
        .unwrap();

    // Assert
    assert_eq!(payloads(&got), vec![json!("two hours old")]);
    let rows: Vec<Options> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("old-defaults".to_owned(), 0, 0, None, None),
            ("old-explicit".to_owned(), 60, 250, Some(true), None),
        ]
    );
    b.stop().await;
}
