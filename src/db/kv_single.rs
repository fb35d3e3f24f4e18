//! The two calls clients send most, one `get` and one unconditional `put`, each as one plain
//! statement instead of a pass through `queen.kv_apply_v1`'s loop. The answers are the
//! ones that function gives for the same op, byte for byte in shape (the same
//! `jsonb_build_object` fields and `to_char` formats), so a client cannot tell the paths
//! apart; `tests/broker/kv/` checks every op through both (single calls here, batches
//! there). Why: a single get through the PL/pgSQL function cost PostgreSQL about twice a
//! plain select (`queen-bench kv`, README "Key/value").
//!
//! The statements are written here beside their one caller, as the push path's single
//! append is (`db/push/single_append.rs`): they are the hot path's, and a SQL function
//! around them would put back the call overhead they remove.

use serde_json::Value;
use tracing::instrument;

use super::kv::{call_text, KvApplyError};
use super::PgConn;
use crate::domain::kv::{KvBatch, KvOpKind};

/// One get: the live row, or `found: false`. An expired row is invisible.
const GET: &str = "\
SELECT jsonb_build_object('results', jsonb_build_array(
         CASE WHEN k.version IS NULL THEN jsonb_build_object('found', false, 'key', $3::text)
         ELSE jsonb_build_object(
             'found', true, 'key', $3::text, 'value', k.value, 'version', k.version,
             'expiresAt', to_char(k.expires_at AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
             'updatedAt', to_char(k.updated_at AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')) END))::text
  FROM (SELECT 1) AS one
  LEFT JOIN queen.kv k
    ON k.tenant = $1 AND k.namespace = $2 AND k.key = $3::text
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
RETURNING jsonb_build_object('results', jsonb_build_array(jsonb_build_object(
    'applied', true, 'key', k.key, 'value', k.value, 'version', k.version)))::text";

/// Answers a one-op batch this path serves (`None`: the batch goes to `kv_apply_v1`).
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
        KvOpKind::Get => call_text(conn, "kv_get", GET, &[&tenant, &ns, &key]).await,
        KvOpKind::Put {
            value,
            ttl,
            expect: None,
        } if !op.required => {
            let ttl = ttl.map(|s| s as f64);
            let value: &Value = value;
            call_text(conn, "kv_put", PUT, &[&tenant, &ns, &key, value, &ttl]).await
        }
        _ => return None,
    })
}
