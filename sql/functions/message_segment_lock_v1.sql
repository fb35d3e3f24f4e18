-- queen.message_segment_lock_v1(p_tenant, p_partition_id, p_transaction_id)
--   -> (message_offset, base_offset, codec, blob), one row or none
--
-- The first half of erasing one message's content (DELETE of a message). A log keeps dense
-- offsets, so a message cannot leave its segment; it is erased instead: its payload
-- becomes empty (rendered as `data: null`) while its frame stays, with the same id,
-- transaction id and offset, so a consumer holding it can still ack it; and its dead
-- letters go. The broker rewrites the segment blob; PostgreSQL only stores it, through
-- queen.message_segment_rewrite_v1 in the same transaction.
--
-- This call finds the message's offset by its transaction id (queen.log_find_offset_v1)
-- and returns it with its segment's base offset, codec and blob. No row when the message is
-- unknown or the partition is not the tenant's.
-- PL/pgSQL: the offset, the partition and the queue (a reference table on the Citus
-- layout) first, then the segment locked by its key (a single-shard statement there).
-- Citus refused the former LANGUAGE sql body (parameters, a join of reference and
-- distributed tables with FOR UPDATE). Same row and lock on PostgreSQL.
--
-- Locks: the segment row FOR UPDATE until the caller's transaction ends, so two erasures
-- of one segment queue. No notifications.
CREATE OR REPLACE FUNCTION queen.message_segment_lock_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (message_offset bigint, base_offset bigint, codec smallint, blob bytea)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_off  bigint;
    v_base bigint;
    v_qid  bigint;
BEGIN
    v_off := queen.log_find_offset_v1(p_partition_id, p_transaction_id);
    IF v_off IS NULL THEN
        RETURN;
    END IF;
    SELECT p.queue_id INTO v_qid FROM queen.log_partitions p WHERE p.id = p_partition_id;
    PERFORM 1 FROM queen.queues q WHERE q.id = v_qid AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT max(x.base_offset) INTO v_base FROM queen.log_segments x
    WHERE x.partition_id = p_partition_id AND x.base_offset <= v_off;
    RETURN QUERY
    SELECT v_off, s.base_offset, s.codec, s.blob
    FROM queen.log_segments s
    WHERE s.partition_id = p_partition_id AND s.base_offset = v_base
      AND s.end_offset >= v_off
    FOR UPDATE;
END;
$$;
