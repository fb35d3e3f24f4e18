//! The two calls clients send most, one `get` and one unconditional `put`, each as one plain
//! statement instead of a pass through `queen.kv_apply_v1`'s loop, with the answer written
//! here rather than built by PostgreSQL: the database reads or writes the row and nothing
//! else, which is the part of the work that cannot scale out. The answers carry the fields
//! and formats that function gives for the same op (its `to_char` timestamp format, the
//! stored value's own JSON text), so a client cannot tell the paths apart;
//! `tests/broker/kv/` runs every op through both (single calls here, batches there).
//! Why: a single get through the PL/pgSQL function cost PostgreSQL about three times a
//! plain select (`queen-bench kv`, README "Key/value").
//!
//! The statements are written here beside their one caller, as the push path's single
//! append is (`db/push/single_append.rs`): they are the hot path's, and a SQL function
//! around them would put back the call overhead they remove.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use tracing::instrument;

use super::kv::{failed, KvApplyError};
use super::PgConn;
use crate::domain::kv::{KvBatch, KvOpKind};

/// One get: the live row (an expired one is invisible), the value as its stored JSON text.
const GET: &str = "\
SELECT k.value::text, k.version, k.expires_at, k.updated_at
  FROM queen.kv k
 WHERE k.tenant = $1 AND k.namespace = $2 AND k.key = $3
   AND (k.expires_at IS NULL OR k.expires_at > clock_timestamp())";

/// One put without `expect`: the row written whatever it held (expired or not), with the
/// next version. `$5` NULL: forever.
const PUT: &str = "\
INSERT INTO queen.kv AS k (tenant, namespace, key, value, version, expires_at, updated_at)
VALUES ($1, $2, $3, $4, nextval('queen.kv_version'),
        clock_timestamp() + make_interval(secs => $5), clock_timestamp())
ON CONFLICT (tenant, namespace, key) DO UPDATE
   SET value = EXCLUDED.value, version = nextval('queen.kv_version'),
       expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at
RETURNING k.value::text, k.version";

/// `{"results": [one]}`, the shape of every KV answer.
#[derive(Serialize)]
struct Answer<T: Serialize> {
    results: [T; 1],
}

/// A get's result, with `kv_apply_v1`'s fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Got<'a> {
    found: bool,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
}

/// A put's result, with `kv_apply_v1`'s fields.
#[derive(Serialize)]
struct Put<'a> {
    applied: bool,
    key: &'a str,
    value: &'a RawValue,
    version: i64,
}

/// Answers a one-op batch this path serves (`None`: the batch goes to `kv_apply_v1`). On the
/// Citus layout the put is left to `kv_apply_v1`: Citus refuses the sequence call in the
/// statement's `DO UPDATE SET` on the distributed `queen.kv`.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "kv_single"))]
pub async fn apply(
    conn: &mut PgConn,
    tenant: &str,
    batch: &KvBatch,
) -> Option<Result<String, KvApplyError>> {
    let [op] = batch.ops.as_slice() else {
        return None;
    };
    let (ns, key) = (op.ns.as_str(), op.key.as_str());
    Some(match &op.kind {
        KvOpKind::Get => match run(conn, "kv_get", GET, &[&tenant, &ns, &key]).await {
            Ok(row) => got(key, row.as_ref()),
            Err(e) => Err(e),
        },
        KvOpKind::Put {
            value,
            ttl,
            expect: None,
        } if !op.required && !conn.distributed() => {
            let ttl = ttl.map(|s| s as f64);
            let value: &Value = value;
            match run(conn, "kv_put", PUT, &[&tenant, &ns, &key, value, &ttl]).await {
                Ok(Some(row)) => put(key, &row),
                Ok(None) => Err(KvApplyError::Unreadable("kv_put answered no row")),
                Err(e) => Err(e),
            }
        }
        _ => return None,
    })
}

/// Runs one statement in its own transaction, splitting its failures as
/// [`KvApplyError`] does.
async fn run(
    conn: &mut PgConn,
    op: &'static str,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, KvApplyError> {
    let st = conn
        .statement(op, sql)
        .await
        .map_err(KvApplyError::NotApplied)?;
    let answer = conn.client().query_opt(&st, params).await;
    answer.map_err(|source| failed(conn, op, source))
}

fn got(key: &str, row: Option<&Row>) -> Result<String, KvApplyError> {
    let Some(row) = row else {
        return Ok(render(Got {
            found: false,
            key,
            value: None,
            version: None,
            expires_at: None,
            updated_at: None,
        }));
    };
    let text: &str = row.get(0);
    let value = raw(text)?;
    let expires: Option<DateTime<Utc>> = row.get(2);
    let updated: DateTime<Utc> = row.get(3);
    Ok(render(Got {
        found: true,
        key,
        value: Some(value),
        version: Some(row.get(1)),
        expires_at: Some(expires.as_ref().map(stamp)),
        updated_at: Some(stamp(&updated)),
    }))
}

fn put(key: &str, row: &Row) -> Result<String, KvApplyError> {
    let text: &str = row.get(0);
    Ok(render(Put {
        applied: true,
        key,
        value: raw(text)?,
        version: row.get(1),
    }))
}

/// The stored value's JSON text, as PostgreSQL printed the jsonb.
fn raw(text: &str) -> Result<&RawValue, KvApplyError> {
    serde_json::from_str(text)
        .map_err(|_| KvApplyError::Unreadable("a stored value is not JSON text"))
}

fn render<T: Serialize>(result: T) -> String {
    let answer = Answer { results: [result] };
    // A struct of strings, numbers and parsed JSON always serialises.
    serde_json::to_string(&answer).unwrap_or_default()
}

/// `kv_apply_v1`'s timestamp format, `to_char(... 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`:
/// milliseconds, cut rather than rounded, as `to_char`'s `MS` does.
fn stamp(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn timestamps_keep_milliseconds_cut_like_to_char() {
        let t = Utc.timestamp_micros(1_700_000_000_123_999).unwrap();
        assert_eq!(stamp(&t), "2023-11-14T22:13:20.123Z");
    }
}
