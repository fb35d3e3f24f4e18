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
-- candidate scan (queen.log_pop_wildcard_bin_v2) looks at every partition again.
--
-- A live lease is never broken: the group's rows on the queue are locked and, when any of
-- them holds an unexpired lease, nothing changes and one row comes back with refused =
-- true. Expired leases are cleared with all per-lease state: the batch, acked_ahead, the
-- attempt and failure counters, and retry_at. Clearing retry_at means a group moved past a
-- message that keeps failing gets its new position at once, not after the retryDelay its
-- last failed ack set.
--
-- Every statement on a cursor or a segment names one partition by id, in loops over the
-- queue's partitions (one statement per partition): on the Citus layout each is a
-- single-shard statement (Citus refuses a FOR UPDATE over several shards and plans no
-- correlated subquery with LIMIT over the segments). On the layout the broker runs it
-- with citus.multi_shard_modify_mode sequential (src/db/admin/groups.rs), since it writes
-- the subscription, a reference table, after reading the partitions over every shard.
--
-- Rows: one per partition moved (refused = false), by partition name; one row of NULLs
-- (refused = false) when the queue has no partition; none when the queue does not exist.
-- A group new to the tenant is checked against its consumer-group limit before any cursor
-- is created (queen.tenant_group_admit_v1; over it SQLSTATE QLIMT).
-- Locks: the group's cursor rows on the queue (FOR UPDATE, in partition id order) and its
-- metadata row, to the end of the caller's transaction; the limit's advisory lock when a
-- limit is set. No notifications.
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
    v_leased integer := 0;
    v_now    timestamptz := now();
    v_pid    bigint;
    v_name   text;
    v_last   bigint;
    v_new    bigint;
    v_moved  boolean := false;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;

    FOR v_pid IN
        SELECT p.id FROM queen.log_partitions p WHERE p.queue_id = v_qid ORDER BY p.id
    LOOP
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = v_pid AND c.consumer_group = p_group
        FOR UPDATE;
        IF EXISTS (SELECT 1 FROM queen.log_consumers c
                   WHERE c.partition_id = v_pid AND c.consumer_group = p_group
                     AND c.worker_id IS NOT NULL AND c.lease_expires_at > v_now) THEN
            v_leased := v_leased + 1;
        END IF;
    END LOOP;
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
    -- Missing cursors are created below: the consumer-group limit first.
    PERFORM queen.tenant_group_admit_v1(v_qid, NULL, p_group);

    FOR v_pid, v_name, v_last IN
        SELECT p.id, p.name, p.last_offset FROM queen.log_partitions p
        WHERE p.queue_id = v_qid ORDER BY p.name
    LOOP
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (v_pid, p_group, -1)
        ON CONFLICT DO NOTHING;
        v_new := NULL;
        IF p_timestamp IS NOT NULL THEN
            SELECT s.base_offset - 1 INTO v_new FROM queen.log_segments s
            WHERE s.partition_id = v_pid AND s.created_at >= p_timestamp
            ORDER BY s.base_offset LIMIT 1;
        END IF;
        v_new := coalesce(v_new, v_last);
        UPDATE queen.log_consumers c SET
            committed = v_new,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            attempt_count = 0, attempt_offset = NULL,
            failed_offset = NULL, failed_count = 0, retry_at = NULL
        WHERE c.partition_id = v_pid AND c.consumer_group = p_group
          -- A row a concurrent first pop created and leased after the check above.
          AND (c.worker_id IS NULL OR c.lease_expires_at <= v_now);
        IF FOUND THEN
            v_moved := true;
            RETURN QUERY SELECT false, v_pid, v_name, v_last, v_new;
        END IF;
    END LOOP;
    IF NOT v_moved THEN
        -- A queue without partitions (a pop provisioned it before any push): nothing moved.
        RETURN QUERY SELECT false, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
    END IF;
END;
$$;
