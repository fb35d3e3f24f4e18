-- queen.consumer_group_seek_v1(p_tenant, p_group, p_queue, p_timestamp)
--   -> (refused, partition_id, partition_name, last_offset, committed) rows
--
-- Moves a consumer group's cursors on one queue, for an operator. p_timestamp NULL seeks to
-- the end: every partition's cursor becomes its last_offset (nothing pending). Otherwise
-- each cursor becomes (base_offset - 1) of the partition's first segment created at or
-- after p_timestamp, or last_offset when there is none, so the next pop delivers from
-- there.
--
-- Cursor rows missing for the group are created (at -1, then moved), and the group's
-- durable subscription is registered when missing, so that its next pop is not a first
-- contact that would seed over the seek. Its empty-scan watermark is reset, so the SQL
-- candidate scan (queen.log_pop_wildcard_bin_v1) looks at every partition again.
--
-- A live lease is never broken: the group's rows on the queue are locked and, when any of
-- them holds an unexpired lease, nothing changes and one row comes back with refused =
-- true. Expired leases are cleared with all per-lease state: the batch, acked_ahead, the
-- attempt and failure counters, and retry_at. Clearing retry_at means a group moved past a
-- message that keeps failing gets its new position at once, not after the retryDelay its
-- last failed ack set.
--
-- Rows: one per partition moved (refused = false), by partition name; one row of NULLs
-- (refused = false) when the queue has no partition; none when the queue does not exist.
-- Locks: the group's cursor rows on the queue (FOR UPDATE, in partition order) and its
-- metadata row, to the end of the caller's transaction. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_seek_v1(
    p_tenant    text,
    p_group     text,
    p_queue     text,
    p_timestamp timestamptz
) RETURNS TABLE (
    refused        boolean,
    partition_id   bigint,
    partition_name text,
    last_offset    bigint,
    committed      bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_leased integer;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;

    SELECT count(*) FILTER (WHERE c.worker_id IS NOT NULL AND c.lease_expires_at > now())
    INTO v_leased
    FROM (SELECT c.worker_id, c.lease_expires_at
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
          WHERE p.queue_id = v_qid AND c.consumer_group = p_group
          ORDER BY c.partition_id
          FOR UPDATE OF c) c;
    IF v_leased > 0 THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
        RETURN;
    END IF;

    INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
    VALUES (p_group, v_qid)
    ON CONFLICT DO NOTHING;
    UPDATE queen.consumer_groups_metadata m
    SET watermark = '-infinity', watermark_checked_at = '-infinity'
    WHERE m.consumer_group = p_group AND m.queue_id = v_qid;

    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    SELECT p.id, p_group, -1 FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ON CONFLICT DO NOTHING;

    RETURN QUERY
    WITH target AS (
        SELECT p.id, p.name, p.last_offset,
               CASE WHEN p_timestamp IS NULL THEN p.last_offset
                    ELSE coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.created_at >= p_timestamp
                                   ORDER BY s.base_offset LIMIT 1),
                                  p.last_offset) END AS new_committed
        FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ), moved AS (
        UPDATE queen.log_consumers c SET
            committed = t.new_committed,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            attempt_count = 0, attempt_offset = NULL,
            failed_offset = NULL, failed_count = 0, retry_at = NULL
        FROM target t
        WHERE c.partition_id = t.id AND c.consumer_group = p_group
          -- A row a concurrent first pop created and leased after the check above.
          AND (c.worker_id IS NULL OR c.lease_expires_at <= now())
        RETURNING t.id, t.name, t.last_offset, t.new_committed
    )
    SELECT false, m.id, m.name, m.last_offset, m.new_committed FROM moved m ORDER BY m.name;
    IF NOT FOUND THEN
        -- A queue without partitions (a pop provisioned it before any push): nothing moved.
        RETURN QUERY SELECT false, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
    END IF;
END;
$$;
