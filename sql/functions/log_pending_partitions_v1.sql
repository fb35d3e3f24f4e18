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
-- first pop must take the SQL path, queen.log_pop_wildcard_bin_v1, which seeds every
-- cursor) and the queue's deferral settings the broker caches. Random order, at most
-- p_limit rows; when the group is not registered or nothing is pending, one row with
-- partition_id NULL carries the queue-level columns. No row for an unknown queue.
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
) LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
               m.watermark, m.consumer_group IS NOT NULL AS registered
        FROM queen.queues q
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.queue_id = q.id AND m.consumer_group = p_group
        WHERE q.tenant = p_tenant AND q.name = p_queue
    ),
    pending AS (
        SELECT p.id, p.name,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at >= now()
                    THEN c.lease_expires_at
                    WHEN c.retry_at > now() THEN c.retry_at END AS lease_expires_at,
               CASE WHEN q.window_buffer > 0
                    THEN (SELECT s.created_at FROM queen.log_segments s
                          WHERE s.partition_id = p.id
                          ORDER BY s.base_offset DESC LIMIT 1)
                         + make_interval(secs => q.window_buffer) END AS window_ends_at
        FROM q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE q.registered
          AND p.last_write_at >= q.watermark - interval '2 minutes'
          AND p.last_offset > coalesce(c.committed, -1)
        ORDER BY random()
        LIMIT p_limit
    )
    SELECT q.registered, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
           pending.id, pending.name, pending.lease_expires_at, pending.window_ends_at
    FROM q LEFT JOIN pending ON true;
$$;
