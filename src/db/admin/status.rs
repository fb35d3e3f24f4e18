//! Status and analytics: the wrappers of `queen.queue_metrics_v1`, `queen.status_v1`,
//! `queen.status_queues_v1`, `queen.status_queue_v1` and `queen.status_analytics_v1`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio_postgres::types::ToSql;
use tracing::instrument;

use super::json_call;
use crate::db::{DbError, PgConn};

/// One queue's gauges.
#[derive(Debug, Clone)]
pub struct QueueMetrics {
    /// The queue's tenant.
    pub tenant: String,
    /// Queue name.
    pub queue: String,
    /// Messages the queue-mode cursor has not passed.
    pub depth: i64,
    /// Age in seconds of the oldest of them.
    pub lag_seconds: f64,
    /// Messages appended in the window.
    pub throughput: i64,
}

/// Every queue's depth, lag and throughput over `window_seconds`, all tenants
/// (`queen.queue_metrics_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "queue_metrics_v1"))]
pub async fn queue_metrics(
    conn: &mut PgConn,
    window_seconds: i32,
) -> Result<Vec<QueueMetrics>, DbError> {
    const OP: &str = "queue_metrics_v1";
    let st = conn
        .statement(
            OP,
            "SELECT tenant, queue_name, depth, lag_seconds, throughput \
             FROM queen.queue_metrics_v1(NULL, $1) ORDER BY tenant, queue_name",
        )
        .await?;
    let rows = conn.client().query(&st, &[&window_seconds]).await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(rows
        .iter()
        .map(|r| QueueMetrics {
            tenant: r.get(0),
            queue: r.get(1),
            depth: r.get(2),
            lag_seconds: r.get(3),
            throughput: r.get(4),
        })
        .collect())
}

/// The filters of the status endpoints.
#[derive(Debug, Clone)]
pub struct Window<'a> {
    /// Window start.
    pub from: DateTime<Utc>,
    /// Window end.
    pub to: DateTime<Utc>,
    /// Queue name.
    pub queue: Option<&'a str>,
    /// Namespace.
    pub namespace: Option<&'a str>,
    /// Task.
    pub task: Option<&'a str>,
}

/// Totals over the matching queues (`queen.status_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "status_v1"))]
pub async fn status(conn: &mut PgConn, tenant: &str, w: &Window<'_>) -> Result<Value, DbError> {
    let sql = "SELECT queen.status_v1($1, $2, $3, $4, $5, $6)";
    let params: [&(dyn ToSql + Sync); 6] =
        [&tenant, &w.from, &w.to, &w.queue, &w.namespace, &w.task];
    Ok(json_call(conn, "status_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}

/// A page of per-queue status (`queen.status_queues_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "status_queues_v1"))]
pub async fn queues(
    conn: &mut PgConn,
    tenant: &str,
    w: &Window<'_>,
    limit: i32,
    offset: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.status_queues_v1($1, $2, $3, $4, $5, $6, $7)";
    let params: [&(dyn ToSql + Sync); 7] = [
        &tenant,
        &w.from,
        &w.to,
        &w.namespace,
        &w.task,
        &limit,
        &offset,
    ];
    Ok(json_call(conn, "status_queues_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}

/// One queue's status with its partitions, `None` when unknown (`queen.status_queue_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "status_queue_v1"))]
pub async fn queue(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    w: &Window<'_>,
) -> Result<Option<Value>, DbError> {
    let sql = "SELECT queen.status_queue_v1($1, $2, $3, $4)";
    let params: [&(dyn ToSql + Sync); 4] = [&tenant, &queue, &w.from, &w.to];
    json_call(conn, "status_queue_v1", sql, &params).await
}

/// Pushed and dead-lettered messages per time bucket (`queen.status_analytics_v1`);
/// `interval` is one of hour, day, week, month.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "status_analytics_v1"))]
pub async fn analytics(
    conn: &mut PgConn,
    tenant: &str,
    interval: &str,
    w: &Window<'_>,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.status_analytics_v1($1, $2, $3, $4, $5, $6, $7)";
    let params: [&(dyn ToSql + Sync); 7] = [
        &tenant,
        &interval,
        &w.from,
        &w.to,
        &w.queue,
        &w.namespace,
        &w.task,
    ];
    Ok(json_call(conn, "status_analytics_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}

/// Every tenant's consumer groups with their lag (`queen.consumer_groups_v1`, called per
/// tenant inside one statement), each object stamped with its `tenant`, and every tenant's
/// dead letters held (`queen.resources_overview_v1`): what the operator's metrics scrape
/// shows of all tenants. Answers (groups array, `{tenant: dead letters}`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "every_tenant_groups"))]
pub async fn every_tenant_groups(conn: &mut PgConn) -> Result<(Value, Value), DbError> {
    const OP: &str = "every_tenant_groups";
    let st = conn
        .statement(
            OP,
            "WITH tenants AS (SELECT DISTINCT q.tenant FROM queen.queues q)
             SELECT coalesce((SELECT jsonb_agg(g || jsonb_build_object('tenant', t.tenant))
                              FROM tenants t
                              CROSS JOIN LATERAL jsonb_array_elements(
                                  coalesce(queen.consumer_groups_v1(t.tenant), '[]'::jsonb)) g),
                             '[]'::jsonb),
                    coalesce((SELECT jsonb_object_agg(t.tenant,
                                  coalesce((queen.resources_overview_v1(t.tenant)
                                            -> 'messages' ->> 'deadLetter')::bigint, 0))
                              FROM tenants t), '{}'::jsonb)",
        )
        .await?;
    let row = conn.client().query_one(&st, &[]).await;
    let row = row.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok((row.get(0), row.get(1)))
}
