//! Segments written the way brokers of earlier versions wrote them, through the SQL
//! functions those brokers call (which stay installed for rolling upgrades).

use queen::segment::{txn_hash, NewFrame, SegmentBlob, SegmentBuilder};
use uuid::Uuid;

/// One segment through the push from before transaction-id hashes (`log_push_v1`, which
/// writes a dedup row per message); answers the message ids.
pub async fn old_push_v1(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
    txns: &[&str],
) -> Vec<Uuid> {
    let ids: Vec<Uuid> = txns.iter().map(|_| Uuid::now_v7()).collect();
    let (blob, _) = segment(txns, &ids);
    let txn_ids: Vec<String> = txns.iter().map(|t| (*t).to_owned()).collect();
    sql.execute(
        "SELECT * FROM queen.log_push_v1('', $1, $2, $3, $4, $5, $6, NULL)",
        &[
            &queue,
            &partition,
            &txn_ids,
            &ids,
            &blob.bytes,
            &blob.codec.as_i16(),
        ],
    )
    .await
    .expect("old log_push_v1 appends");
    ids
}

/// One segment through the push that stores 64-bit hashes (`log_push_v2`), after
/// `known_last` (the partition's last offset, `None` for a new partition); answers the
/// message ids. Panics when the function answered stale instead of appending.
pub async fn old_push_v2(
    sql: &tokio_postgres::Client,
    queue: &str,
    partition: &str,
    known_last: Option<i64>,
    txns: &[&str],
) -> Vec<Uuid> {
    let ids: Vec<Uuid> = txns.iter().map(|_| Uuid::now_v7()).collect();
    let (blob, hashes) = segment(txns, &ids);
    let row = sql
        .query_one(
            "SELECT stale FROM queen.log_push_v2('', $1, $2, $3, 300, $4, $5, $6, $7, NULL)",
            &[
                &queue,
                &partition,
                &known_last,
                &vec![blob.count as i32],
                &vec![blob.codec.as_i16()],
                &vec![blob.bytes.clone()],
                &hashes,
            ],
        )
        .await
        .expect("old log_push_v2 appends");
    assert_eq!(
        row.get::<_, Option<bool>>(0),
        Some(false),
        "log_push_v2 appended"
    );
    ids
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
