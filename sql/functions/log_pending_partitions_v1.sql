-- queen.log_pending_partitions_v1(p_tenant, p_queue, p_group, p_limit)
--   -> (registered, window_buffer, delayed_processing, min_pop_wait_time, partition_id,
--       partition_name, lease_expires_at, window_ends_at) rows
--
-- The hot-list reseed: partitions of the queue that may hold messages for the group, that
-- is written since the group's empty-scan watermark minus two minutes and either without a
-- cursor yet or ahead of it. Partitions under a live lease are included with their lease
-- expiry, and partitions held back by retryDelay with their retry_at in the same column, so
-- the broker can schedule revisits. On a windowBuffer queue each carries window_ends_at,
-- the end of its quiet period (the newest segment's created_at + window_buffer).
--
-- Also answers whether the group has met the queue at all (registered = false means the
-- first pop must take the SQL path, queen.log_pop_wildcard_bin_v2, which seeds every
-- cursor) and the queue's deferral settings the broker caches. Random order, at most
-- p_limit rows; when the group is not registered or nothing is pending, one row with
-- partition_id NULL carries the queue-level columns. No row for an unknown queue.
--
-- PL/pgSQL, the queue first, then the partitions, then each one's newest segment: on the
-- Citus layout a LANGUAGE sql body that reads the distributed tables with parameters, or
-- a correlated subquery over them, is refused (docs/scale-out.md).
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_pending_partitions_v1(
    p_tenant text,
    p_queue  text,
    p_group  text,
    p_limit  integer
) RETURNS TABLE (
    registered         boolean,
    window_buffer      integer,
    delayed_processing integer,
    min_pop_wait_time  integer,
    partition_id       bigint,
    partition_name     text,
    lease_expires_at   timestamptz,
    window_ends_at     timestamptz
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_q     record;
    v_found boolean := false;
    r       record;
BEGIN
    SELECT q.id, q.window_buffer, q.delayed_processing, q.min_pop_wait_time, m.watermark,
           m.consumer_group IS NOT NULL AS registered
    INTO v_q
    FROM queen.queues q
    LEFT JOIN queen.consumer_groups_metadata m
      ON m.queue_id = q.id AND m.consumer_group = p_group
    WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    registered := v_q.registered;
    window_buffer := v_q.window_buffer;
    delayed_processing := v_q.delayed_processing;
    min_pop_wait_time := v_q.min_pop_wait_time;
    IF v_q.registered THEN
        FOR r IN
            SELECT p.id, p.name,
                   CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at >= now()
                        THEN c.lease_expires_at
                        WHEN c.retry_at > now() THEN c.retry_at END AS lease_expires_at
            FROM queen.log_partitions p
            LEFT JOIN queen.log_consumers c
              ON c.partition_id = p.id AND c.consumer_group = p_group
            WHERE p.queue_id = v_q.id
              AND p.last_write_at >= v_q.watermark - interval '2 minutes'
              AND p.last_offset > coalesce(c.committed, -1)
            ORDER BY random()
            LIMIT p_limit
        LOOP
            v_found := true;
            partition_id := r.id;
            partition_name := r.name;
            lease_expires_at := r.lease_expires_at;
            window_ends_at := NULL;
            IF v_q.window_buffer > 0 THEN
                -- Its own statement, one partition: Citus plans no correlated subquery
                -- over the distributed segments in the scan above.
                SELECT s.created_at + make_interval(secs => v_q.window_buffer)
                INTO window_ends_at
                FROM queen.log_segments s
                WHERE s.partition_id = r.id
                ORDER BY s.base_offset DESC LIMIT 1;
            END IF;
            RETURN NEXT;
        END LOOP;
    END IF;
    IF NOT v_found THEN
        -- The queue's settings alone: no partition was read, so its columns are NULL.
        RETURN NEXT;
    END IF;
END;
$$;
