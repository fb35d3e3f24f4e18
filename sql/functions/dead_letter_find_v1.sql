-- queen.dead_letter_find_v1(p_tenant, p_partition_id, p_transaction_id)
--   -> SETOF queen.dead_letter_row
--
-- The dead letters of one message of the tenant, one per consumer group that filed it,
-- oldest failure first, in the row type queen.dead_letters_list_v2 answers (total is the
-- number of rows here). No rows when the partition is not the tenant's or nothing matches.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letter_find_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS SETOF queen.dead_letter_row LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT d.id, d.partition_id, q.name, p.name, d.consumer_group, d.message_offset,
           d.transaction_id, d.error_message, d.retry_count, d.failed_at, d.created_at,
           d.segment_base, d.codec, d.producer, d.blob, count(*) OVER ()
    FROM queen.dead_letters d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.tenant = p_tenant AND d.partition_id = p_partition_id
      AND d.transaction_id = p_transaction_id
    ORDER BY d.failed_at, d.id;
END;
$$;
