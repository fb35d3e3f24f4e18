//! The baseline: a plain PostgreSQL table of the broker's KV shape (`queen.kv`,
//! `sql/migrations/067_kv.sql`: `(tenant, namespace, key)` primary key, jsonb value, a
//! version from a sequence, expiry, update time, the same partial expiry index), driven
//! directly with one prepared statement per op: an upsert for put, a select of a live row
//! for get.

use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;
use tokio_postgres::{Client, Statement};

use super::http::TTL_SECONDS;
use crate::pg;

/// One client's connection and its prepared statements.
pub struct BaselineClient {
    client: Client,
    put: Statement,
    get: Statement,
}

/// The baseline's table, named for this run.
#[derive(Debug, Clone)]
pub struct BaselineTable {
    /// `queen_bench_kv_<pid>` in the connection's default schema.
    pub name: String,
}

impl BaselineTable {
    /// Creates the table (dropping one a crashed run of the same pid left).
    pub async fn create(admin: &Client) -> anyhow::Result<Self> {
        let name = format!("queen_bench_kv_{}", std::process::id());
        admin
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {name};
                 DROP SEQUENCE IF EXISTS {name}_version;
                 CREATE SEQUENCE {name}_version AS bigint;
                 CREATE TABLE {name} (
                     tenant     text        NOT NULL,
                     namespace  text        NOT NULL,
                     key        text        COLLATE \"C\" NOT NULL,
                     value      jsonb       NOT NULL,
                     version    bigint      NOT NULL,
                     expires_at timestamptz,
                     updated_at timestamptz NOT NULL DEFAULT now(),
                     PRIMARY KEY (tenant, namespace, key)
                 );
                 CREATE INDEX {name}_expires_idx ON {name} (expires_at)
                     WHERE expires_at IS NOT NULL;"
            ))
            .await
            .context("creating the baseline table")?;
        Ok(Self { name })
    }

    /// Drops the table and its sequence.
    pub async fn drop_all(&self, admin: &Client) -> anyhow::Result<()> {
        let name = &self.name;
        admin
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {name}; DROP SEQUENCE IF EXISTS {name}_version;"
            ))
            .await
            .context("dropping the baseline table")
    }

    /// Rows stored in `namespace`.
    pub async fn rows(&self, admin: &Client, namespace: &str) -> anyhow::Result<i64> {
        let sql = format!("SELECT count(*) FROM {} WHERE namespace = $1", self.name);
        Ok(admin.query_one(&sql, &[&namespace]).await?.get(0))
    }

    /// One connection per client, each with the two statements prepared.
    pub async fn clients(
        &self,
        config: &tokio_postgres::Config,
        n: u32,
    ) -> anyhow::Result<Vec<Arc<BaselineClient>>> {
        let name = &self.name;
        let put_sql = format!(
            "INSERT INTO {name} AS t (tenant, namespace, key, value, version, expires_at, updated_at)
             VALUES ($1, $2, $3, $4, nextval('{name}_version'),
                     clock_timestamp() + make_interval(secs => $5), clock_timestamp())
             ON CONFLICT (tenant, namespace, key) DO UPDATE
                SET value = excluded.value, version = excluded.version,
                    expires_at = excluded.expires_at, updated_at = excluded.updated_at
             RETURNING t.version"
        );
        let get_sql = format!(
            "SELECT value, version, expires_at, updated_at FROM {name}
             WHERE tenant = $1 AND namespace = $2 AND key = $3
               AND (expires_at IS NULL OR expires_at > clock_timestamp())"
        );
        let mut out = Vec::new();
        for _ in 0..n {
            let client = pg::connect(config).await?;
            let put = client.prepare(&put_sql).await?;
            let get = client.prepare(&get_sql).await?;
            out.push(Arc::new(BaselineClient { client, put, get }));
        }
        Ok(out)
    }
}

impl BaselineClient {
    /// Upserts one key; true when a row came back.
    pub async fn put(
        &self,
        tenant: &str,
        ns: &str,
        key: &str,
        value: &Value,
    ) -> anyhow::Result<bool> {
        let ttl = TTL_SECONDS as f64;
        let row = self
            .client
            .query_opt(&self.put, &[&tenant, &ns, &key, value, &ttl])
            .await?;
        Ok(row.is_some())
    }

    /// Reads one live key; true when found.
    pub async fn get(&self, tenant: &str, ns: &str, key: &str) -> anyhow::Result<bool> {
        let row = self
            .client
            .query_opt(&self.get, &[&tenant, &ns, &key])
            .await?;
        Ok(row.is_some())
    }
}
