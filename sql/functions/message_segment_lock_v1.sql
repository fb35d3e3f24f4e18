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
-- Locks: the segment row FOR UPDATE until the caller's transaction ends, so two erasures
-- of one segment queue. No notifications.
CREATE OR REPLACE FUNCTION queen.message_segment_lock_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (message_offset bigint, base_offset bigint, codec smallint, blob bytea)
LANGUAGE sql VOLATILE AS $$
    SELECT d.message_offset, s.base_offset, s.codec, s.blob
    -- The message's offset by its transaction id (segments' keys or hashes, else legacy
    -- dedup rows): see queen.log_find_offset_v1.
    FROM (SELECT p_partition_id AS partition_id, p_transaction_id AS transaction_id,
                 queen.log_find_offset_v1(p_partition_id, p_transaction_id) AS message_offset) d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    JOIN queen.log_segments s
      ON s.partition_id = d.partition_id
     AND s.base_offset = (SELECT max(x.base_offset) FROM queen.log_segments x
                          WHERE x.partition_id = d.partition_id
                            AND x.base_offset <= d.message_offset)
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
      AND q.tenant = p_tenant AND s.end_offset >= d.message_offset
    FOR UPDATE OF s;
$$;
