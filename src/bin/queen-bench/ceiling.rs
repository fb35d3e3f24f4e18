//! The raw PostgreSQL ceiling of the push path: the tool itself frames and compresses each
//! batch exactly as the broker does (the broker's own segment code, zstd level 1) and
//! inserts the row straight into a copy of `queen.log_segments`, with no HTTP, no JSON
//! parsing, no partition lock and no procedure. The second variant also writes the one
//! `dedup` row per message the broker writes, for a like-for-like storage cost.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use tokio_postgres::{Client, Statement};
use uuid::Uuid;

use queen::segment::{NewFrame, SegmentBuilder};

use crate::baseline::SCHEMA;
use crate::pg;
use crate::system::Producer;
use crate::workload::Batch;

/// The broker's default segment compression level (`QUEEN_ZSTD_LEVEL`).
const ZSTD_LEVEL: i32 = 1;

/// Drops and creates the ceiling's copies of `log_segments` and `dedup` (no foreign keys:
/// there is no partition table to point at).
pub async fn create_tables(client: &Client) -> anyhow::Result<()> {
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {SCHEMA}.raw_segments, {SCHEMA}.raw_dedup;
             CREATE TABLE {SCHEMA}.raw_segments (
                 partition_id bigint      NOT NULL,
                 base_offset  bigint      NOT NULL,
                 end_offset   bigint      NOT NULL,
                 msg_count    integer     NOT NULL,
                 created_at   timestamptz NOT NULL,
                 codec        smallint    NOT NULL,
                 producer     text,
                 blob         bytea       NOT NULL,
                 PRIMARY KEY (partition_id, base_offset));
             ALTER TABLE {SCHEMA}.raw_segments ALTER COLUMN blob SET STORAGE EXTERNAL;
             CREATE TABLE {SCHEMA}.raw_dedup (
                 partition_id   bigint NOT NULL,
                 transaction_id text   NOT NULL,
                 message_offset bigint NOT NULL,
                 message_id     uuid   NOT NULL,
                 PRIMARY KEY (partition_id, transaction_id));"
        ))
        .await
        .context("creating the ceiling's tables")
}

/// Next free offset of each partition, shared by the ceiling's producers (the broker keeps
/// this in `log_partitions.last_offset` under a row lock; the ceiling skips that cost).
pub type Offsets = Arc<Vec<AtomicI64>>;

/// A fresh offset table for `partitions` partitions.
pub fn offsets(partitions: usize) -> Offsets {
    Arc::new((0..partitions).map(|_| AtomicI64::new(0)).collect())
}

/// Inserts one segment row per batch, with or without the dedup rows.
pub struct CeilingProducer {
    client: Client,
    insert: Statement,
    with_dedup: bool,
    offsets: Offsets,
}

impl CeilingProducer {
    /// A producer on its own connection.
    pub async fn connect(
        config: &tokio_postgres::Config,
        with_dedup: bool,
        offsets: Offsets,
    ) -> anyhow::Result<Self> {
        let client = pg::connect(config).await?;
        let segment = format!(
            "INSERT INTO {SCHEMA}.raw_segments
                 (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob)
             VALUES ($1::bigint, $2::bigint, $2::bigint + $3::integer - 1, $3::integer,
                     clock_timestamp(), $4::smallint, NULL, $5::bytea)"
        );
        let sql = if with_dedup {
            format!(
                "WITH s AS ({segment} RETURNING 1)
                 INSERT INTO {SCHEMA}.raw_dedup (partition_id, transaction_id, message_offset, message_id)
                 SELECT $1::bigint, t.txn, $2::bigint + t.ord - 1, t.mid
                 FROM unnest($6::text[], $7::uuid[]) WITH ORDINALITY AS t (txn, mid, ord)"
            )
        } else {
            segment
        };
        let insert = client.prepare(&sql).await?;
        Ok(Self {
            client,
            insert,
            with_dedup,
            offsets,
        })
    }
}

impl Producer for CeilingProducer {
    async fn push(&mut self, batch: &Batch) -> anyhow::Result<()> {
        let count = batch.messages.len() as i32;
        let ids: Vec<Uuid> = batch.messages.iter().map(|_| Uuid::now_v7()).collect();
        let txns: Vec<String> = batch
            .messages
            .iter()
            .map(|m| format!("t{}", m.seq))
            .collect();
        let mut builder = SegmentBuilder::new();
        for ((m, id), txn) in batch.messages.iter().zip(&ids).zip(&txns) {
            builder.push(&NewFrame {
                message_id: *id,
                trace_id: None,
                transaction_id: txn,
                producer: None,
                payload: m.json.as_bytes(),
            })?;
        }
        let blob = builder.finish(ZSTD_LEVEL)?;
        let base = self.offsets[batch.partition].fetch_add(i64::from(count), Ordering::Relaxed);
        let partition = batch.partition as i64 + 1;
        let codec = blob.codec.as_i16();
        if self.with_dedup {
            self.client
                .execute(
                    &self.insert,
                    &[&partition, &base, &count, &codec, &blob.bytes, &txns, &ids],
                )
                .await
        } else {
            self.client
                .execute(
                    &self.insert,
                    &[&partition, &base, &count, &codec, &blob.bytes],
                )
                .await
        }
        .context("ceiling insert")?;
        Ok(())
    }
}
