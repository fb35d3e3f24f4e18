-- queen.status_analytics_v1(p_tenant, p_interval, p_from, p_to, p_queue, p_namespace,
--                           p_task) -> jsonb
--
-- The analytics document: {interval, from, to, buckets: [{bucket, pushed, deadLettered}]},
-- buckets by date_trunc(p_interval) (hour, day, week or month), oldest first, only buckets
-- with something in them. pushed sums the msg_count of segments created in [p_from, p_to],
-- deadLettered counts dead letters failed then, over the tenant's queues matching
-- p_queue, p_namespace and p_task (each ignored when NULL). Where the numbers come from:
-- see queen.status_queue_rows_v1.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.status_analytics_v1(
    p_tenant text, p_interval text, p_from timestamptz, p_to timestamptz, p_queue text,
    p_namespace text, p_task text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    WITH qs AS (
        SELECT q.id FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
    ), pushed AS (
        SELECT date_trunc(p_interval, g.created_at) AS bucket, sum(g.msg_count) AS n
        FROM queen.log_segments g
        JOIN queen.log_partitions p ON p.id = g.partition_id
        WHERE p.queue_id IN (SELECT id FROM qs) AND g.created_at BETWEEN p_from AND p_to
        GROUP BY 1
    ), dead AS (
        SELECT date_trunc(p_interval, d.failed_at) AS bucket, count(*) AS n
        FROM queen.dead_letters d
        JOIN queen.log_partitions p ON p.id = d.partition_id
        WHERE p.queue_id IN (SELECT id FROM qs) AND d.failed_at BETWEEN p_from AND p_to
        GROUP BY 1
    )
    SELECT jsonb_build_object(
        'interval', p_interval, 'from', p_from, 'to', p_to,
        'buckets', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'bucket', b.bucket, 'pushed', coalesce(pu.n, 0),
                'deadLettered', coalesce(de.n, 0)) ORDER BY b.bucket)
            FROM (SELECT bucket FROM pushed UNION SELECT bucket FROM dead) b
            LEFT JOIN pushed pu ON pu.bucket = b.bucket
            LEFT JOIN dead de ON de.bucket = b.bucket), '[]'::jsonb))
    );
END;
$$;
