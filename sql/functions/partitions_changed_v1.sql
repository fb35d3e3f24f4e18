-- queen.partitions_changed_v1(p_tenant, p_queue, p_since, p_after, p_limit)
--   -> (partition_id, partition_name, last_offset, log_start, last_write_at) rows
--
-- One page of POST /api/v1/partitions/changed: the tenant's queue p_queue's partitions
-- whose last_write_at >= p_since (every partition when p_since is NULL), with a name after
-- p_after (from the first when NULL), by name, at most p_limit + 1 rows (the extra row
-- tells the broker another page follows). Names never change, so a pass paged by name
-- never skips or repeats a partition, whatever is written meanwhile. Columns:
--   last_offset   the newest message's offset, -1 when none (fetch's high watermark - 1);
--   log_start     fetch's logStartOffset: the first stored segment's base_offset, else
--                 last_offset + 1;
--   last_write_at when the partition was last pushed to, truncated to the second.
-- No row at all: the tenant has no such queue. One row with partition_id NULL: the queue
-- exists and this page is empty.
--
-- The caller takes the page's safeTime from queen.partitions_safe_time_v1 first, in a
-- statement of its own (that file holds the argument why no write is skipped).
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.partitions_changed_v1(
    p_tenant text,
    p_queue  text,
    p_since  timestamptz,
    p_after  text,
    p_limit  integer
) RETURNS TABLE (
    partition_id   bigint,
    partition_name text,
    last_offset    bigint,
    log_start      bigint,
    last_write_at  timestamptz
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
    v_any boolean := false;
    r     record;
BEGIN
    -- PL/pgSQL, the queue first, then the page of partitions, then each one's first
    -- segment by partition id: on the Citus layout a parameterized LANGUAGE sql body over
    -- distributed tables is refused, and so is the LATERAL page with its correlated
    -- subquery over the segments.
    SELECT q.id INTO v_qid FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT lp.id, lp.name, lp.last_offset, lp.last_write_at
        FROM queen.log_partitions lp
        WHERE lp.queue_id = v_qid
          AND (p_after IS NULL OR lp.name > p_after)
          AND (p_since IS NULL OR lp.last_write_at >= p_since)
        ORDER BY lp.name
        LIMIT p_limit + 1
    LOOP
        v_any := true;
        partition_id := r.id;
        partition_name := r.name;
        last_offset := r.last_offset;
        last_write_at := r.last_write_at;
        log_start := NULL;
        SELECT s.base_offset INTO log_start FROM queen.log_segments s
        WHERE s.partition_id = r.id ORDER BY s.base_offset LIMIT 1;
        log_start := coalesce(log_start, r.last_offset + 1);
        RETURN NEXT;
    END LOOP;
    IF NOT v_any THEN
        -- The empty page's one row: no partition was read, so every column is NULL.
        RETURN NEXT;
    END IF;
END;
$$;
