-- queen.queue_metrics_v1(p_tenant, p_window_seconds) -> (tenant, queue_name, depth,
--   lag_seconds, throughput), one row per queue
--
-- Per-queue gauges for /metrics/prometheus and the status documents
-- (queen.status_queue_rows_v1 takes its lag). One row per queue of the tenant, of every
-- tenant when p_tenant is NULL:
--   depth        messages the queue-mode cursor has not passed (last_offset - committed,
--                summed over partitions; a queue never popped in queue mode counts all);
--   lag_seconds  the age of the oldest such message: now - created_at of the segment that
--                holds committed + 1, the largest over partitions; 0 when depth is 0;
--   throughput   messages appended in the last p_window_seconds: per partition,
--                last_offset minus the end offset of the newest segment created before the
--                window. A backward index walk over the window's segments only; partitions
--                not written in the window are skipped by last_write_at.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.queue_metrics_v1(p_tenant text, p_window_seconds integer)
RETURNS TABLE (
    tenant      text,
    queue_name  text,
    depth       bigint,
    lag_seconds double precision,
    throughput  bigint
) LANGUAGE sql STABLE AS $$
    SELECT q.tenant, q.name,
           coalesce(sum(greatest(p.last_offset - coalesce(c.committed, -1), 0)), 0)::bigint,
           coalesce(max(CASE WHEN o.created_at IS NULL THEN 0
                             ELSE greatest(extract(epoch FROM now() - o.created_at), 0)
                        END), 0)::double precision,
           coalesce(sum(w.appended), 0)::bigint
    FROM queen.queues q
    LEFT JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    LEFT JOIN LATERAL (
        SELECT s.created_at FROM queen.log_segments s
        WHERE s.partition_id = p.id
          AND p.last_offset > coalesce(c.committed, -1)
          AND s.base_offset <= coalesce(c.committed, -1) + 1
        ORDER BY s.base_offset DESC LIMIT 1
    ) o ON true
    LEFT JOIN LATERAL (
        SELECT p.last_offset - coalesce((
                   SELECT s.end_offset FROM queen.log_segments s
                   WHERE s.partition_id = p.id
                     AND s.created_at <= now() - make_interval(secs => p_window_seconds)
                   ORDER BY s.base_offset DESC LIMIT 1), -1) AS appended
        WHERE p.last_write_at >= date_trunc('second',
                                            now() - make_interval(secs => p_window_seconds))
    ) w ON true
    WHERE p_tenant IS NULL OR q.tenant = p_tenant
    GROUP BY q.tenant, q.name;
$$;
