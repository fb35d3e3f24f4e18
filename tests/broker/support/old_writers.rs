//! Segments written the way brokers of earlier versions wrote them: through the SQL
//! function those brokers call where it is still installed, or as plain rows where the
//! function is gone but its rows may still be stored.

use queen::segment::{txn_hash, NewFrame, SegmentBlob, SegmentBuilder};
use uuid::Uuid;

/// One segment as brokers from before transaction-id hashes stored it: no hashes or keys
/// on the segment, a legacy `queen.dedup` row per message (what their `log_push_v1` wrote;
/// the function is gone, the rows it left are still read). Plain statements, so it works
/// on every schema since; answers the message ids.
pub async fn legacy_segment(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
    txns: &[&str],
) -> Vec<Uuid> {
    let ids: Vec<Uuid> = txns.iter().map(|_| Uuid::now_v7()).collect();
    let (blob, _) = segment(txns, &ids);
    let txn_ids: Vec<String> = txns.iter().map(|t| (*t).to_owned()).collect();
    let (pid, last) = append_row(sql, queue, partition, &blob, None).await;
    sql.execute(
        "INSERT INTO queen.dedup (partition_id, transaction_id, message_offset, message_id)
         SELECT $1, t.txn, $2 + t.ord, t.mid
         FROM unnest($3::text[], $4::uuid[]) WITH ORDINALITY AS t (txn, mid, ord)",
        &[&pid, &last, &txn_ids, &ids],
    )
    .await
    .expect("legacy dedup rows");
    ids
}

/// One segment as brokers of the release before 48-bit keys stored it: the 64-bit hash of
/// every message's transaction id in `txn_hashes` (what their `log_push_v2` wrote; the
/// function is gone, the segments it wrote are still read). Plain statements, so it works
/// on every schema since; answers the message ids.
pub async fn hashed_segment(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
    txns: &[&str],
) -> Vec<Uuid> {
    let ids: Vec<Uuid> = txns.iter().map(|_| Uuid::now_v7()).collect();
    let (blob, hashes) = segment(txns, &ids);
    append_row(sql, queue, partition, &blob, Some(&hashes)).await;
    ids
}

/// Appends `blob` as one segment row after the partition's last offset (creating the
/// queue and partition rows when missing), with `hashes` as its `txn_hashes`, created_at
/// never before the previous segment's; bumps last_offset and last_write_at. Answers the
/// partition id and its last offset before the append.
async fn append_row(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
    blob: &SegmentBlob,
    hashes: Option<&[i64]>,
) -> (i64, i64) {
    sql.execute(
        "INSERT INTO queen.queues (tenant, name) VALUES ('', $1) ON CONFLICT DO NOTHING",
        &[&queue],
    )
    .await
    .expect("old writer's queue");
    let (pid, last) = old_writers_partition(sql, queue, partition).await;
    let count = i64::from(blob.count);
    sql.execute(
        "INSERT INTO queen.log_segments
             (partition_id, base_offset, end_offset, msg_count, created_at, codec, blob,
              txn_hashes)
         SELECT $1, $2::bigint + 1, $2::bigint + $3::bigint, $3::bigint::integer,
                GREATEST(clock_timestamp(), (SELECT max(s.created_at) FROM queen.log_segments s
                                             WHERE s.partition_id = $1)),
                $4, $5, $6",
        &[
            &pid,
            &last,
            &count,
            &blob.codec.as_i16(),
            &blob.bytes,
            &hashes,
        ],
    )
    .await
    .expect("old writer's segment");
    sql.execute(
        "UPDATE queen.log_partitions
         SET last_offset = $2::bigint + $3::bigint, last_write_at = date_trunc('second', now())
         WHERE id = $1",
        &[&pid, &last, &count],
    )
    .await
    .expect("old writer's partition offset");
    (pid, last)
}

/// A segment whose payloads are the transaction ids as JSON strings, and the ids' hashes.
pub fn segment(txns: &[&str], ids: &[Uuid]) -> (SegmentBlob, Vec<i64>) {
    let payloads: Vec<String> = txns.iter().map(|t| format!("\"{t}\"")).collect();
    let mut builder = SegmentBuilder::new();
    for ((txn, id), payload) in txns.iter().zip(ids).zip(&payloads) {
        builder
            .push(&NewFrame {
                message_id: *id,
                trace_id: None,
                transaction_id: txn,
                producer: None,
                payload: payload.as_bytes(),
            })
            .unwrap();
    }
    let hashes = txns.iter().map(|t| txn_hash(t)).collect();
    (builder.finish(1).unwrap(), hashes)
}

/// The partition an old writer appends to, created when missing: `(id, last_offset)`. On
/// the Citus layout through `queen.log_partition_ensure_v1` (the directory holds the
/// (queue, name) key there, which `queen.log_partitions` lost), unless the schema is one
/// from before that function (a d5ce15b database, plain tables even on Citus); otherwise
/// as an old release inserted it.
async fn old_writers_partition(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
) -> (i64, i64) {
    let ensure: bool = sql
        .query_one(
            "SELECT to_regprocedure('queen.log_partition_ensure_v1(bigint,text)') IS NOT NULL",
            &[],
        )
        .await
        .expect("look for log_partition_ensure_v1")
        .get(0);
    if crate::support::citus::layout() && ensure {
        let pid: i64 = sql
            .query_one(
                "SELECT queen.log_partition_ensure_v1(q.id, $2) FROM queen.queues q
                 WHERE q.tenant = '' AND q.name = $1",
                &[&queue, &partition],
            )
            .await
            .expect("old writer's partition")
            .get(0);
        let last: i64 = sql
            .query_one(
                "SELECT last_offset FROM queen.log_partitions WHERE id = $1",
                &[&pid],
            )
            .await
            .expect("old writer's partition counters")
            .get(0);
        return (pid, last);
    }
    let row = sql
        .query_one(
            "INSERT INTO queen.log_partitions (queue_id, name)
             SELECT id, $2 FROM queen.queues WHERE tenant = '' AND name = $1
             ON CONFLICT (queue_id, name) DO UPDATE SET name = excluded.name
             RETURNING id, last_offset",
            &[&queue, &partition],
        )
        .await
        .expect("old writer's partition");
    (row.get(0), row.get(1))
}
