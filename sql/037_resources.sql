-- 037_resources: the resources endpoints' documents, built from queen.partition_stats_v1.
--
-- queen.resources_overview_v1(p_tenant) -> jsonb {queues, partitions, namespaces, tasks,
--   consumerGroups, messages: {total, pending, processing, completed, deadLetter}}.
-- queen.resources_queues_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb {queues: [{id,
--   name, namespace, task, priority, createdAt, partitions, messages: {total, pending,
--   processing}}], total}; p_search matches a substring of the name (case-insensitive).
-- queen.resource_queue_v1(p_tenant, p_queue) -> jsonb {id, name, namespace, task, createdAt,
--   config, partitions: [{id, name, createdAt, stats: {total, pending, processing,
--   completed, failed, deadLetter}, oldestMessage, newestMessage}], totals}, or NULL when
--   the queue does not exist. `failed` is dead letters (this broker has no other failure
--   state).
-- queen.queue_depth_v1(p_tenant, p_queue, p_group) -> jsonb {queue, group, pending,
--   partitionsPending, conflation (false), effectivePending, partitions: [{partition,
--   pending}]}, or NULL for an unknown queue. With p_group: last_offset minus that group's
--   cursor (-1 where it has none). Without: the worst cursor (the one furthest behind) of
--   queue mode and every group; queue mode counts from -1 where it never popped, so a
--   partition only bus groups consumed still counts its messages as pending.
-- queen.resources_partitions_v1(p_tenant, p_queue, p_limit, p_offset) -> jsonb
--   {partitions: [{id, queue, name, lastOffset, lastWriteAt, createdAt, messages,
--   consumers: [{consumerGroup, committed, lag, leaseActive}]}], total} (decision 9.6).
-- queen.resources_namespaces_v1(p_tenant), queen.resources_tasks_v1(p_tenant) -> jsonb
--   {namespaces|tasks: [{namespace|task, queues, partitions, messages: {total, pending}}]};
--   queues without one are left out.
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.resources_overview_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues q WHERE q.tenant = p_tenant),
        'partitions', count(s.partition_id),
        'namespaces', (SELECT count(DISTINCT q.namespace) FROM queen.queues q
                       WHERE q.tenant = p_tenant),
        'tasks', (SELECT count(DISTINCT q.task) FROM queen.queues q WHERE q.tenant = p_tenant),
        'consumerGroups', (SELECT count(DISTINCT m.consumer_group)
                           FROM queen.consumer_groups_metadata m
                           JOIN queen.queues q ON q.id = m.queue_id
                           WHERE q.tenant = p_tenant),
        'messages', jsonb_build_object(
            'total', coalesce(sum(s.total), 0),
            'pending', coalesce(sum(s.pending), 0),
            'processing', coalesce(sum(s.processing), 0),
            'completed', coalesce(sum(s.completed), 0),
            'deadLetter', coalesce(sum(s.dead_letter), 0)))
    FROM queen.partition_stats_v1(p_tenant, NULL) s;
$$;

CREATE OR REPLACE FUNCTION queen.resources_queues_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT q.* FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_search IS NULL OR strpos(lower(q.name), lower(p_search)) > 0)
    ), page AS (
        SELECT m.* FROM matching m ORDER BY m.name LIMIT p_limit OFFSET p_offset
    ), stats AS (
        SELECT s.queue_id, count(*) AS partitions, sum(s.total) AS total,
               sum(s.pending) AS pending, sum(s.processing) AS processing
        FROM queen.partition_stats_v1(p_tenant, NULL) s
        WHERE s.queue_id IN (SELECT id FROM page)
        GROUP BY s.queue_id
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'id', p.id::text, 'name', p.name, 'namespace', p.namespace, 'task', p.task,
            'priority', p.priority, 'createdAt', p.created_at,
            'partitions', coalesce(st.partitions, 0),
            'messages', jsonb_build_object(
                'total', coalesce(st.total, 0),
                'pending', coalesce(st.pending, 0),
                'processing', coalesce(st.processing, 0)))
            ORDER BY p.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching))
    FROM page p LEFT JOIN stats st ON st.queue_id = p.id;
$$;

CREATE OR REPLACE FUNCTION queen.resource_queue_v1(p_tenant text, p_queue text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', q.id::text, 'name', q.name, 'namespace', q.namespace, 'task', q.task,
        'createdAt', q.created_at,
        'config', to_jsonb(q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task' - 'created_at',
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', s.partition_id::text, 'name', s.partition_name,
                'createdAt', s.created_at,
                'stats', jsonb_build_object(
                    'total', s.total, 'pending', s.pending, 'processing', s.processing,
                    'completed', s.completed, 'failed', s.dead_letter,
                    'deadLetter', s.dead_letter),
                'oldestMessage', s.oldest, 'newestMessage', s.newest)
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb),
        'totals', (
            SELECT jsonb_build_object(
                'total', coalesce(sum(s.total), 0), 'pending', coalesce(sum(s.pending), 0),
                'processing', coalesce(sum(s.processing), 0),
                'completed', coalesce(sum(s.completed), 0),
                'failed', coalesce(sum(s.dead_letter), 0),
                'deadLetter', coalesce(sum(s.dead_letter), 0))
            FROM queen.partition_stats_v1(p_tenant, p_queue) s))
    FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue;
$$;

CREATE OR REPLACE FUNCTION queen.queue_depth_v1(p_tenant text, p_queue text, p_group text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue
    ), parts AS (
        SELECT p.name,
               greatest(p.last_offset - coalesce(
                   CASE WHEN p_group IS NOT NULL THEN
                            (SELECT c.committed FROM queen.log_consumers c
                             WHERE c.partition_id = p.id AND c.consumer_group = p_group)
                        ELSE least(
                            coalesce((SELECT c.committed FROM queen.log_consumers c
                                      WHERE c.partition_id = p.id
                                        AND c.consumer_group = '__QUEUE_MODE__'), -1),
                            (SELECT min(c.committed) FROM queen.log_consumers c
                             WHERE c.partition_id = p.id)) END, -1), 0) AS pending
        FROM queen.log_partitions p JOIN q ON p.queue_id = q.id
    )
    SELECT jsonb_build_object(
        'queue', p_queue, 'group', p_group,
        'pending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitionsPending', (SELECT count(*) FROM parts WHERE pending > 0),
        'conflation', false,
        'effectivePending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitions', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                    'partition', name, 'pending', pending) ORDER BY name)
                                FROM parts), '[]'::jsonb))
    FROM q;
$$;

CREATE OR REPLACE FUNCTION queen.resources_partitions_v1(
    p_tenant text, p_queue text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT p.*, q.name AS queue_name
        FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
    ), page AS (
        SELECT m.* FROM matching m ORDER BY m.queue_name, m.name LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'partitions', coalesce(jsonb_agg(jsonb_build_object(
            'id', p.id::text, 'queue', p.queue_name, 'name', p.name,
            'lastOffset', p.last_offset, 'lastWriteAt', p.last_write_at,
            'createdAt', p.created_at, 'messages', p.last_offset + 1,
            'consumers', coalesce((
                SELECT jsonb_agg(jsonb_build_object(
                    'consumerGroup', c.consumer_group, 'committed', c.committed,
                    'lag', greatest(p.last_offset - c.committed, 0),
                    'leaseActive', c.worker_id IS NOT NULL AND c.lease_expires_at > now())
                    ORDER BY c.consumer_group)
                FROM queen.log_consumers c WHERE c.partition_id = p.id), '[]'::jsonb))
            ORDER BY p.queue_name, p.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching))
    FROM page p;
$$;

CREATE OR REPLACE FUNCTION queen.resources_namespaces_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('namespaces', coalesce(jsonb_agg(jsonb_build_object(
               'namespace', x.namespace, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.namespace), '[]'::jsonb))
    FROM (
        SELECT q.namespace, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.namespace IS NOT NULL
        GROUP BY q.namespace
    ) x;
$$;

CREATE OR REPLACE FUNCTION queen.resources_tasks_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('tasks', coalesce(jsonb_agg(jsonb_build_object(
               'task', x.task, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.task), '[]'::jsonb))
    FROM (
        SELECT q.task, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.task IS NOT NULL
        GROUP BY q.task
    ) x;
$$;
