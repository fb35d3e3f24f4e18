-- queen.messages_list_v1(p_tenant, p_queue, p_partition, p_namespace, p_task, p_status,
--                        p_from, p_to, p_limit, p_offset)
--   -> (partition_id, queue_name, partition_name, namespace, task, priority,
--       message_offset, created_at, status, bus_status, lease_expires_at, segment_base,
--       codec, producer, blob) rows
--
-- The messages endpoint's listing. A message is (partition, offset): offsets are dense per
-- partition and a segment row covers base_offset .. end_offset, so PostgreSQL lists
-- messages from segment rows with generate_series and never opens a blob; the broker reads
-- ids, payloads and transaction ids out of the blobs.
--
-- Messages come newest first (segment created_at DESC, partition id, offset DESC),
-- filtered by queue, partition, namespace and task (each ignored when NULL), segment
-- created_at in [p_from, p_to], and status (NULL: any), paged by p_limit/p_offset. Status
-- is relative to the queue-mode cursor: 'completed' at or below it, 'processing' inside a
-- live queue-mode lease (lease_expires_at then set), 'pending' otherwise. bus_status is
-- 'completed' when every other group's cursor has passed the message, 'pending' when one
-- has not, NULL when there is no other group. At most p_offset + p_limit segments are
-- expanded: segments are pre-filtered by status range, so each holds at least one
-- matching message. The blob (with codec and producer) comes only on the first row of
-- each segment, NULL on the others.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.messages_list_v1(
    p_tenant    text,
    p_queue     text,
    p_partition text,
    p_namespace text,
    p_task      text,
    p_status    text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer
) RETURNS TABLE (
    partition_id     bigint,
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    bus_status       text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea
) LANGUAGE sql STABLE AS $$
    WITH parts AS (
        SELECT p.id, p.name, q.name AS qname, q.namespace, q.task, q.priority,
               coalesce(c.committed, -1) AS committed,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN c.batch_end END AS lease_end,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN c.lease_expires_at END AS lease_expires_at,
               (SELECT min(b.committed) FROM queen.log_consumers b
                WHERE b.partition_id = p.id AND b.consumer_group <> '__QUEUE_MODE__') AS bus_min
        FROM queen.queues q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
        WHERE q.tenant = p_tenant
          AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_partition IS NULL OR p.name = p_partition)
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
    ), segs AS (
        SELECT s.partition_id, s.base_offset, s.end_offset, s.created_at, pa.name, pa.qname,
               pa.namespace, pa.task, pa.priority, pa.committed, pa.lease_end,
               pa.lease_expires_at, pa.bus_min
        FROM parts pa
        JOIN queen.log_segments s ON s.partition_id = pa.id
        WHERE (p_from IS NULL OR s.created_at >= p_from)
          AND (p_to IS NULL OR s.created_at <= p_to)
          AND (p_status IS NULL
               OR (p_status = 'completed' AND s.base_offset <= pa.committed)
               OR (p_status = 'processing' AND pa.lease_end IS NOT NULL
                   AND s.end_offset > pa.committed AND s.base_offset <= pa.lease_end)
               OR (p_status = 'pending'
                   AND s.end_offset > coalesce(pa.lease_end, pa.committed)))
        ORDER BY s.created_at DESC, s.partition_id, s.base_offset DESC
        LIMIT p_limit + p_offset
    ), msgs AS (
        SELECT sg.*, o.off,
               CASE WHEN o.off <= sg.committed THEN 'completed'
                    WHEN sg.lease_end IS NOT NULL AND o.off <= sg.lease_end THEN 'processing'
                    ELSE 'pending' END AS st
        FROM segs sg
        CROSS JOIN LATERAL generate_series(sg.end_offset, sg.base_offset, -1) AS o (off)
    ), page AS (
        SELECT m.* FROM msgs m
        WHERE p_status IS NULL OR m.st = p_status
        ORDER BY m.created_at DESC, m.partition_id, m.off DESC
        LIMIT p_limit OFFSET p_offset
    ), numbered AS (
        SELECT pg.*, row_number() OVER (PARTITION BY pg.partition_id, pg.base_offset) AS rn
        FROM page pg
    )
    SELECT n.partition_id, n.qname, n.name, n.namespace, n.task, n.priority, n.off,
           n.created_at, n.st,
           CASE WHEN n.bus_min IS NULL THEN NULL
                WHEN n.off <= n.bus_min THEN 'completed' ELSE 'pending' END,
           CASE WHEN n.st = 'processing' THEN n.lease_expires_at END,
           n.base_offset,
           CASE WHEN n.rn = 1 THEN s.codec END,
           CASE WHEN n.rn = 1 THEN s.producer END,
           CASE WHEN n.rn = 1 THEN s.blob END
    FROM numbered n
    JOIN queen.log_segments s
      ON s.partition_id = n.partition_id AND s.base_offset = n.base_offset
    ORDER BY n.created_at DESC, n.partition_id, n.off DESC;
$$;
