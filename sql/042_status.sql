-- 042_status: the dashboard documents of the status and analytics endpoints.
--
-- Every number comes from the tables: offsets and cursors (totals, pending, processing,
-- completed), segment rows (messages pushed in a window: the msg_count of segments whose
-- created_at falls in it) and dead letters (failed_at in the window). Nothing records acks
-- over time, so "consumed" is only known as the cursors' position now.
--
-- queen.status_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) -> jsonb
--   {window: {from, to}, queues, partitions, messages: {total, pending, processing,
--   completed, deadLetter}, pushed, pushedPerSecond, deadLettered}: totals over the matching
--   queues, and what happened in [p_from, p_to].
-- queen.status_queues_v1(p_tenant, p_from, p_to, p_namespace, p_task, p_limit, p_offset)
--   -> jsonb {queues: [{name, namespace, task, partitions, messages: {...}, pushed,
--   deadLettered, lagSeconds}], total}.
-- queen.status_queue_v1(p_tenant, p_queue, p_from, p_to) -> jsonb, the same entry plus
--   {partitions: [{name, messages: {...}, lastWriteAt}]}, or NULL for an unknown queue.
-- queen.status_analytics_v1(p_tenant, p_interval, p_from, p_to, p_queue, p_namespace,
--   p_task) -> jsonb {interval, from, to, buckets: [{bucket, pushed, deadLettered}]},
--   buckets by date_trunc(p_interval) (hour, day, week or month).
-- Read only; no locks, no notifications.

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

CREATE OR REPLACE FUNCTION queen.status_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'queues', count(*),
        'partitions', coalesce(sum(r.partitions), 0),
        'messages', jsonb_build_object(
            'total', coalesce(sum(r.total), 0), 'pending', coalesce(sum(r.pending), 0),
            'processing', coalesce(sum(r.processing), 0),
            'completed', coalesce(sum(r.completed), 0),
            'deadLetter', coalesce(sum(r.dead_letter), 0)),
        'pushed', coalesce(sum(r.pushed), 0),
        'pushedPerSecond', round(coalesce(sum(r.pushed), 0)
                                 / greatest(extract(epoch FROM p_to - p_from), 1), 3),
        'deadLettered', coalesce(sum(r.dead_lettered), 0))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) r;
$$;

CREATE OR REPLACE FUNCTION queen.status_queues_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_namespace text, p_task text,
    p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH rows AS (
        SELECT * FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, NULL, p_namespace,
                                                 p_task)
    ), page AS (
        SELECT * FROM rows ORDER BY name LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'name', r.name, 'namespace', r.namespace, 'task', r.task,
            'partitions', r.partitions,
            'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                           'processing', r.processing,
                                           'completed', r.completed,
                                           'deadLetter', r.dead_letter),
            'pushed', r.pushed, 'deadLettered', r.dead_lettered,
            'lagSeconds', round(r.lag_seconds::numeric, 3)) ORDER BY r.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM rows))
    FROM page r;
$$;

CREATE OR REPLACE FUNCTION queen.status_queue_v1(
    p_tenant text, p_queue text, p_from timestamptz, p_to timestamptz)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', r.name, 'namespace', r.namespace, 'task', r.task,
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                       'processing', r.processing, 'completed', r.completed,
                                       'deadLetter', r.dead_letter),
        'pushed', r.pushed, 'deadLettered', r.dead_lettered,
        'lagSeconds', round(r.lag_seconds::numeric, 3),
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'name', s.partition_name, 'lastWriteAt', s.last_write_at,
                'messages', jsonb_build_object('total', s.total, 'pending', s.pending,
                                               'processing', s.processing,
                                               'completed', s.completed,
                                               'deadLetter', s.dead_letter))
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, NULL, NULL) r;
$$;

CREATE OR REPLACE FUNCTION queen.status_analytics_v1(
    p_tenant text, p_interval text, p_from timestamptz, p_to timestamptz, p_queue text,
    p_namespace text, p_task text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
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
            LEFT JOIN dead de ON de.bucket = b.bucket), '[]'::jsonb));
$$;
