//! The two refusals told apart, and a database failure: an acquire whose free-looking slot
//! is taken by a writer that commits while the acquire waits on it answers `contended`
//! (not `held`) with the winner among the holders; a call the database refuses answers 503
//! with `Retry-After` and nothing of it applied, and its resend is granted.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{acquire, get, one, permit_rows, token};
use crate::support::{eventually, TestBroker};

#[actix_rt::test]
async fn a_slot_won_by_a_concurrent_writer_answers_contended() {
    let b = TestBroker::start().await;
    one(&b, acquire("probe", "me", 30)).await;
    let mut writer = b.sql().await;
    let watcher = b.sql().await;
    let tx = writer.transaction().await.expect("begin");
    // Another acquirer's insert of slot 0, not yet committed: invisible to the look.
    tx.execute(
        "INSERT INTO queen.kv (tenant, namespace, key, value, version, expires_at) \
         SELECT tenant, namespace, 'c#0', '{\"owner\": \"elsewhere\"}', \
                nextval('queen.kv_version'), now() + interval '1 hour' \
           FROM queen.kv WHERE key = 'probe#0'",
        &[],
    )
    .await
    .expect("insert the rival permit");

    let (answer, ()) = futures_util::future::join(one(&b, acquire("c", "me", 30)), async {
        // Commit once the acquire waits on the rival row.
        let waiting = eventually(Duration::from_secs(10), || async {
            let n: i64 = watcher
                .query_one(&lock_waiters_sql(), &[])
                .await
                .expect("pg_stat_activity")
                .get(0);
            (n > 0).then_some(())
        })
        .await;
        assert!(waiting.is_some(), "the acquire never waited on the rival");
        tx.commit().await.expect("commit the rival");
    })
    .await;

    assert_eq!(
        answer,
        json!({"acquired": false, "reason": "contended",
               "holders": [{"slot": 0, "owner": "elsewhere"}]})
    );
    assert_eq!(one(&b, acquire("c", "you", 30)).await["reason"], "held");
}

#[actix_rt::test]
async fn a_call_the_database_refuses_answers_503_and_applies_nothing() {
    let b = TestBroker::start().await;
    let sql = b.sql().await;
    // The second acquire's write fails inside the statement, after the first one's ran.
    sql.batch_execute(
        "ALTER TABLE queen.kv ADD CONSTRAINT refuse_poison CHECK (key <> 'poison#0')",
    )
    .await
    .expect("add the constraint");
    let call = json!({"operations": [acquire("fine", "me", 30), acquire("poison", "me", 30)]});
    let response = b
        .http
        .post(b.url("/api/v1/locks"))
        .json(&call)
        .send()
        .await
        .expect("reaches the broker");
    let status = response.status();
    let retry_after = response.headers().get("retry-after").cloned();
    let body: serde_json::Value = response.json().await.expect("a JSON body");

    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(
        retry_after.as_ref().and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(body["error"], "unavailable", "{body}");
    assert!(
        permit_rows(&b).await.is_empty(),
        "the first acquire was undone"
    );

    sql.batch_execute("ALTER TABLE queen.kv DROP CONSTRAINT refuse_poison")
        .await
        .expect("drop the constraint");
    let (status, resent) = b.post("/api/v1/locks", &call).await;
    assert_eq!(status, StatusCode::OK, "{resent}");
    assert!(token(&resent["results"][0]) > 0 && token(&resent["results"][1]) > 0);
    assert_eq!(one(&b, get("fine")).await["held"], true);
}

/// Counts the backends of this test's database waiting for a lock in the acquire. On the
/// Citus layout the acquire's insert waits on the worker that holds the tenant's `kv`
/// shard, running the shard's statement rather than the broker's call:
/// `citus_stat_activity` shows it beside the coordinator's backends, and any lock waiter
/// of the database is the acquire (the rival only holds).
fn lock_waiters_sql() -> String {
    let (view, call) = if crate::support::citus::layout() {
        ("citus_stat_activity", "")
    } else {
        ("pg_stat_activity", " AND query LIKE '%locks_apply_v1%'")
    };
    format!(
        "SELECT count(*) FROM {view} WHERE datname = current_database() \
         AND wait_event_type = 'Lock'{call}"
    )
}
