-- queen.message_segment_rewrite_v1(p_partition_id, p_base_offset, p_transaction_id, p_blob,
--                                   p_codec) -> integer
--
-- The second half of a message erasure (see queen.message_segment_lock_v1, which must run
-- first in the same transaction): stores the rewritten blob and its codec in the segment
-- at p_base_offset of the partition, and deletes the message's dead letters (by
-- transaction id). Returns the number of dead letters deleted.
--
-- Locks: the updated segment row (already held) and the deleted dead letters.
-- No notifications.
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
