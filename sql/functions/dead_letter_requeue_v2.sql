-- queen.dead_letter_requeue_v2(p_tenant, p_partition_id, p_transaction_id,
--                              p_new_transaction_id, p_message_id, p_blob, p_codec,
--                              p_producer)
--   -> (queue_name, partition_name, base_offset, removed, retried_offset), one row or none
--
-- Retries a dead-lettered message: appends a copy of it to its partition as a new message
-- under its own transaction id, and leaves the original where it is. The log stays
-- append-only and every message keeps one name: were the copy appended under the original
-- id, that id would name two offsets, and an ack by (partition, transaction id) from a
-- group that has not yet passed the original could land on the copy.
--
-- p_blob is a one-frame segment the broker built from the dead letter's copy of the
-- payload, under the new message id p_message_id and the new transaction id
-- p_new_transaction_id (the broker derives it from the original's, see
-- src/http/admin/dlq.rs). In one transaction this function:
--   * locks the partition row (FOR NO KEY UPDATE, as a push does: appends to one partition
--     are serialised and offsets stay dense);
--   * deletes every dead letter of (partition, p_transaction_id), one per consumer group
--     that filed it: the copy is delivered to every group, as any push is;
--   * appends the copy as one segment after last_offset, its txn_keys_hi/txn_keys_lo
--     holding queen.txn_key(p_new_transaction_id) as queen.log_push_v3 stores a key,
--     created_at never before the previous segment's, and bumps last_offset and
--     last_write_at.
-- The original's offset, segment and stored ids are not touched. No dedup check: the new id
-- is fresh (it holds a new UUIDv7). The brokers' dedup windows learn the segment as they
-- learn any other writer's (queen.log_push_v3 answers stale and hands it over). Not counted
-- against maxSize: a retry is an operator's act on a message the queue already held.
-- That is also why it appends itself instead of calling queen.log_push_v3: the push would
-- refuse a full queue, and with maxSize it takes the queue's advisory lock before the
-- partition row, where this function must lock the row first (to find the dead letters).
--
-- Returns one row on success: the names, the copy's offset, the number of dead letters
-- removed and retried_offset, the original's offset (the lowest removed). No row when the
-- partition is not the tenant's or no dead letter matches (a concurrent retry won).
-- Locks: the partition row to the end of the caller's transaction. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letter_requeue_v2(
    p_tenant             text,
    p_partition_id       bigint,
    p_transaction_id     text,
    p_new_transaction_id text,
    p_message_id         uuid,
    p_blob               bytea,
    p_codec              smallint,
    p_producer           text
) RETURNS TABLE (
    queue_name     text,
    partition_name text,
    base_offset    bigint,
    removed        integer,
    retried_offset bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue     text;
    v_partition text;
    v_last      bigint;
    v_removed   integer;
    v_retried   bigint;
    v_prev_at   timestamptz;
    v_created   timestamptz;
    v_key       bigint := queen.txn_key(p_new_transaction_id);
BEGIN
    SELECT q.name, p.name, p.last_offset INTO v_queue, v_partition, v_last
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant
    FOR NO KEY UPDATE OF p;
    IF v_queue IS NULL THEN
        RETURN;
    END IF;

    WITH gone AS (
        DELETE FROM queen.dead_letters d
        WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
        RETURNING d.message_offset
    )
    SELECT count(*)::integer, min(g.message_offset) INTO v_removed, v_retried FROM gone g;
    IF v_removed = 0 THEN
        RETURN;
    END IF;

    -- created_at must never go backwards within a partition (as in log_push_v3).
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = p_partition_id
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(clock_timestamp(), v_prev_at);

    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_keys_hi, txn_keys_lo)
    VALUES
        (p_partition_id, v_last + 1, v_last + 1, 1, v_created, p_codec, p_producer, p_blob,
         -- hi: the key's upper 32 bits; lo: its low 16 bits as a signed int2 (the XOR and
         -- subtraction sign-extend them), as queen.segment_txn_keys reads them back.
         ARRAY[(v_key >> 16)::integer],
         ARRAY[(((v_key & 65535) # 32768) - 32768)::smallint]);

    UPDATE queen.log_partitions p
    SET last_offset = v_last + 1,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = p_partition_id;

    RETURN QUERY SELECT v_queue, v_partition, v_last + 1, v_removed, v_retried;
END;
$$;
