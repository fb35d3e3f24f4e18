-- 040_message_erase: delete one message's content.
--
-- A log keeps dense offsets, so a message cannot leave its segment; DELETE of a message
-- erases it instead: its payload becomes empty (rendered as `data: null`), its frame stays
-- (same id, transaction id and offset, so a consumer holding it can still ack it), and its
-- dead letters go. The broker rewrites the segment blob; PostgreSQL only stores it.
--
-- queen.message_segment_lock_v1(p_tenant, p_partition_id, p_transaction_id)
--   The message's offset and its segment (base_offset, codec, blob), the segment row locked
--   FOR UPDATE until the caller's transaction ends, so two erasures of one segment queue.
--   No row when the message is unknown.
-- queen.message_segment_rewrite_v1(p_partition_id, p_base_offset, p_transaction_id, p_blob,
--                                   p_codec)
--   Stores the rewritten blob (and its codec) and deletes the message's dead letters;
--   returns the number of dead letters deleted. Call in the same transaction as the lock.

CREATE OR REPLACE FUNCTION queen.message_segment_lock_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (message_offset bigint, base_offset bigint, codec smallint, blob bytea)
LANGUAGE sql VOLATILE AS $$
    SELECT d.message_offset, s.base_offset, s.codec, s.blob
    -- The message's offset by its transaction id (segments' txn_hashes, else legacy
    -- dedup rows): see 015_txn_hash.
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

CREATE OR REPLACE FUNCTION queen.message_segment_rewrite_v1(
    p_partition_id   bigint,
    p_base_offset    bigint,
    p_transaction_id text,
    p_blob           bytea,
    p_codec          smallint
) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_dead integer;
BEGIN
    UPDATE queen.log_segments s SET blob = p_blob, codec = p_codec
    WHERE s.partition_id = p_partition_id AND s.base_offset = p_base_offset;
    DELETE FROM queen.dead_letters d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;
    GET DIAGNOSTICS v_dead = ROW_COUNT;
    RETURN v_dead;
END;
$$;
