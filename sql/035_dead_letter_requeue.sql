-- 035_dead_letter_requeue: put a dead-lettered message back on its partition.
--
-- queen.dead_letter_requeue_v1(p_tenant, p_partition_id, p_transaction_id, p_message_id,
--                              p_blob, p_codec, p_producer)
--   Decision 9.6 of the wire contract: a retry appends the message again to its partition as
--   a new message (p_blob is a one-frame segment the broker built from the dead letter's
--   copy, under the new message id p_message_id and the same transaction id). In one
--   transaction it locks the partition row (FOR NO KEY UPDATE, as a push does), deletes
--   every dead letter of (partition, transaction id) (one per consumer group that filed it;
--   the new message is delivered to every group, as any push is), deletes the message's
--   dedup row so the transaction id now names the new offset, and appends through
--   queen.log_push_v1.
--   Rows: one (queue_name, partition_name, base_offset, removed) on success; none when the
--   partition is not the tenant's or no dead letter matches (a concurrent retry won).

CREATE OR REPLACE FUNCTION queen.dead_letter_requeue_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text,
    p_message_id     uuid,
    p_blob           bytea,
    p_codec          smallint,
    p_producer       text
) RETURNS TABLE (queue_name text, partition_name text, base_offset bigint, removed integer)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue     text;
    v_partition text;
    v_removed   integer;
    v_base      bigint;
BEGIN
    SELECT q.name, p.name INTO v_queue, v_partition
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant
    FOR NO KEY UPDATE OF p;
    IF v_queue IS NULL THEN
        RETURN;
    END IF;

    DELETE FROM queen.dead_letters d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    IF v_removed = 0 THEN
        RETURN;
    END IF;

    DELETE FROM queen.dedup d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;

    SELECT r.base_offset INTO v_base
    FROM queen.log_push_v1(p_tenant, v_queue, v_partition, ARRAY[p_transaction_id],
                           ARRAY[p_message_id], p_blob, p_codec, p_producer) r;

    RETURN QUERY SELECT v_queue, v_partition, v_base, v_removed;
END;
$$;
