-- queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task)
--   -> (queue_id, name, namespace, task, partitions, total, pending, processing, completed,
--       dead_letter, pushed, dead_lettered, lag_seconds), one row per queue
--
-- The per-queue figures behind the status documents (queen.status_v1,
-- queen.status_queues_v1, queen.status_queue_v1), for the tenant's queues matching
-- p_queue, p_namespace and p_task (each ignored when NULL).
--
-- Every number comes from the tables. The message counts are queen.partition_stats_v1's,
-- summed over the queue's partitions (offsets and the queue-mode cursor). pushed is the
-- msg_count of segments created in [p_from, p_to], dead_lettered the dead letters with
-- failed_at in it, and lag_seconds queen.queue_metrics_v1's queue-mode lag. Nothing
-- records acks over time, so "consumed" is only known as the cursors' position now.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.status_queue_rows_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS TABLE (queue_id bigint, name text, namespace text, task text, partitions bigint,
               total bigint, pending bigint, processing bigint, completed bigint,
               dead_letter bigint, pushed bigint, dead_lettered bigint,
               lag_seconds double precision)
LANGUAGE sql STABLE AS $$
    WITH lags AS (SELECT m.queue_name, m.lag_seconds FROM queen.queue_metrics_v1(p_tenant, 60) m)
    SELECT q.id, q.name, q.namespace, q.task,
           count(s.partition_id), coalesce(sum(s.total), 0)::bigint,
           coalesce(sum(s.pending), 0)::bigint, coalesce(sum(s.processing), 0)::bigint,
           coalesce(sum(s.completed), 0)::bigint, coalesce(sum(s.dead_letter), 0)::bigint,
           coalesce((SELECT sum(g.msg_count) FROM queen.log_segments g
                     JOIN queen.log_partitions p ON p.id = g.partition_id
                     WHERE p.queue_id = q.id AND g.created_at BETWEEN p_from AND p_to), 0)::bigint,
           (SELECT count(*) FROM queen.dead_letters d
            JOIN queen.log_partitions p ON p.id = d.partition_id
            WHERE p.queue_id = q.id AND d.failed_at BETWEEN p_from AND p_to),
           coalesce((SELECT l.lag_seconds FROM lags l WHERE l.queue_name = q.name), 0)
    FROM queen.queues q
    LEFT JOIN queen.partition_stats_v1(p_tenant, p_queue) s ON s.queue_id = q.id
    WHERE q.tenant = p_tenant
      AND (p_queue IS NULL OR q.name = p_queue)
      AND (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task)
    GROUP BY q.id, q.name, q.namespace, q.task;
$$;
