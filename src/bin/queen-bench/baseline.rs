//! The baseline: the queue people write themselves on PostgreSQL. One row per message
//! (the shape of pgmq: `msg_id`, `read_ct`, `enqueued_at`, visibility time `vt`, a jsonb
//! `message`); enqueue is one multi-row INSERT per batch; dequeue claims the oldest visible
//! rows with `FOR UPDATE SKIP LOCKED` and pushes their visibility timeout forward; ack
//! deletes them. Consumer groups are one such table per group, and an enqueue writes the
//! message into each (in one transaction), which is how this design fans out.
//!
//! Partitions mean nothing to it: the partition index is not stored and claims ignore it
//! (it also gives no per-partition ordering, which the broker does).

use std::time::Duration;

use anyhow::Context;
use tokio_postgres::{Client, Statement};

use crate::pg;
use crate::system::{Consumer, Delivery, Producer};
use crate::workload::{Batch, Stamp};

/// The schema the tool owns for its own tables (dropped and recreated by each run).
pub const SCHEMA: &str = "queen_bench";

/// The visibility timeout of a claim: the broker's default lease.
const VISIBILITY_SECS: i32 = 60;

/// Shortest sleep after an empty claim (a polling consumer's usual interval is 100 ms).
const IDLE_SLEEP: Duration = Duration::from_millis(100);

fn table(group: usize) -> String {
    format!("{SCHEMA}.q_{group}")
}

/// Drops and creates the baseline's tables (one per consumer group).
pub async fn create_tables(client: &Client, groups: usize) -> anyhow::Result<()> {
    for g in 0..groups {
        let t = table(g);
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {t};
                 CREATE TABLE {t} (
                     msg_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                     read_ct     integer     NOT NULL DEFAULT 0,
                     enqueued_at timestamptz NOT NULL DEFAULT now(),
                     vt          timestamptz NOT NULL DEFAULT now(),
                     message     jsonb       NOT NULL);
                 CREATE INDEX ON {t} (vt);"
            ))
            .await
            .with_context(|| format!("creating {t}"))?;
    }
    Ok(())
}

/// Enqueues batches into every group's table.
pub struct BaselineProducer {
    client: Client,
    inserts: Vec<Statement>,
    rows: Vec<String>,
}

impl BaselineProducer {
    /// A producer on its own connection.
    pub async fn connect(config: &tokio_postgres::Config, groups: usize) -> anyhow::Result<Self> {
        let client = pg::connect(config).await?;
        let mut inserts = Vec::new();
        for g in 0..groups {
            inserts.push(
                client
                    .prepare(&format!(
                        "INSERT INTO {} (message) SELECT m::jsonb FROM unnest($1::text[]) AS m",
                        table(g)
                    ))
                    .await?,
            );
        }
        Ok(Self {
            client,
            inserts,
            rows: Vec::new(),
        })
    }
}

impl Producer for BaselineProducer {
    async fn push(&mut self, batch: &Batch) -> anyhow::Result<()> {
        self.rows.clear();
        self.rows
            .extend(batch.messages.iter().map(|m| m.json.clone()));
        if self.inserts.len() == 1 {
            // Autocommit: one statement, one transaction, as a one-queue app does it.
            self.client
                .execute(&self.inserts[0], &[&self.rows])
                .await
                .context("baseline enqueue")?;
            return Ok(());
        }
        let tx = self.client.transaction().await?;
        for insert in &self.inserts {
            tx.execute(insert, &[&self.rows])
                .await
                .context("baseline enqueue")?;
        }
        tx.commit().await.context("baseline enqueue commit")?;
        Ok(())
    }
}

/// Claims with SKIP LOCKED, then deletes what it claimed.
pub struct BaselineConsumer {
    client: Client,
    group: usize,
    batch: i64,
    claim: Statement,
    delete: Statement,
    idle_sleep: Duration,
}

impl BaselineConsumer {
    /// A consumer of `group`'s table on its own connection.
    pub async fn connect(
        config: &tokio_postgres::Config,
        group: usize,
        batch: u32,
        longest_idle: Duration,
    ) -> anyhow::Result<Self> {
        let client = pg::connect(config).await?;
        let t = table(group);
        let claim = client
            .prepare(&format!(
                "WITH cte AS (
                     SELECT msg_id FROM {t}
                     WHERE vt <= clock_timestamp()
                     ORDER BY msg_id
                     LIMIT $1
                     FOR UPDATE SKIP LOCKED)
                 UPDATE {t} m
                 SET vt = clock_timestamp() + make_interval(secs => {VISIBILITY_SECS}),
                     read_ct = m.read_ct + 1
                 FROM cte WHERE m.msg_id = cte.msg_id
                 RETURNING m.msg_id, m.message::text"
            ))
            .await?;
        let delete = client
            .prepare(&format!("DELETE FROM {t} WHERE msg_id = ANY($1)"))
            .await?;
        Ok(Self {
            client,
            group,
            batch: i64::from(batch),
            claim,
            delete,
            idle_sleep: IDLE_SLEEP.min(longest_idle),
        })
    }
}

impl Consumer for BaselineConsumer {
    fn group(&self) -> usize {
        self.group
    }

    async fn pop_ack(&mut self, wait: bool) -> anyhow::Result<Vec<Delivery>> {
        let rows = self
            .client
            .query(&self.claim, &[&self.batch])
            .await
            .context("baseline claim")?;
        if rows.is_empty() {
            if wait {
                tokio::time::sleep(self.idle_sleep).await;
            }
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            ids.push(row.get::<_, i64>(0));
            let stamp: Stamp = serde_json::from_str(row.get::<_, &str>(1))?;
            out.push(Delivery {
                seq: stamp.seq,
                sent_us: stamp.ts,
            });
        }
        let deleted = self
            .client
            .execute(&self.delete, &[&ids])
            .await
            .context("baseline delete")?;
        anyhow::ensure!(
            deleted == ids.len() as u64,
            "baseline ack deleted {deleted} of {} claimed rows",
            ids.len()
        );
        Ok(out)
    }
}
