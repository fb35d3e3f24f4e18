-- queen.log_dead_letter_span_v1(p_pid, p_group, p_base, p_from, p_to, p_txn_prefix,
--                               p_error, p_retry_count) -> integer
--
-- Files offsets p_from .. p_to of the segment at base offset p_base of partition p_pid
-- (clamped to that segment) in queen.dead_letters for consumer group p_group, each with a
-- copy of the segment, the transaction id p_txn_prefix || offset, p_error and
-- p_retry_count. The real id is inside the blob, which SQL cannot read; the listing shows
-- this name and a retry takes it. One statement for the whole span. queen.log_pop_v3 calls
-- it for messages whose lease expired too often ('lease-expired:') and for expired
-- messages ('expired:').
--
-- PL/pgSQL: it runs inside functions delegated to a Citus worker, where a LANGUAGE sql
-- body that reads a distributed table with parameters is refused (docs/scale-out.md).
--
-- Returns the number of rows filed.
-- Locks: none beyond the inserted rows (and the foreign key's share lock on the partition
-- row). No notifications.
CREATE OR REPLACE FUNCTION queen.log_dead_letter_span_v1(
    p_pid         bigint,
    p_group       text,
    p_base        bigint,
    p_from        bigint,
    p_to          bigint,
    p_txn_prefix  text,
    p_error       text,
    p_retry_count integer
) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_filed integer;
BEGIN
    INSERT INTO queen.dead_letters
        (partition_id, consumer_group, message_offset, transaction_id, error_message,
         retry_count, segment_base, codec, producer, created_at, blob)
    SELECT s.partition_id, p_group, o, p_txn_prefix || o, p_error, p_retry_count,
           s.base_offset, s.codec, s.producer, s.created_at, s.blob
    FROM queen.log_segments s
    CROSS JOIN LATERAL generate_series(greatest(p_from, s.base_offset),
                                       least(p_to, s.end_offset)) AS o
    WHERE s.partition_id = p_pid AND s.base_offset = p_base;
    GET DIAGNOSTICS v_filed = ROW_COUNT;
    RETURN v_filed;
END;
$$;
