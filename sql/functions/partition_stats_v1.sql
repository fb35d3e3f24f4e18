-- queen.partition_stats_v1(p_tenant, p_queue) -> one row per partition
--
-- Per-partition message counts, the source of the resources and status documents
-- (queen.resources_overview_v1, queen.resources_queues_v1, queen.resources_namespaces_v1,
-- queen.resources_tasks_v1, queen.resource_queue_v1, queen.status_queue_rows_v1 and
-- queen.status_queue_v1). One row per partition of the tenant,
-- of one queue when p_queue is not NULL. Offsets are dense from 0, so a partition has held
-- last_offset + 1 messages. Counts are relative to the queue-mode cursor (consumer group
-- __QUEUE_MODE__; -1 when it never popped):
--   total       last_offset + 1, every message ever appended;
--   completed   committed + 1, messages queue mode is done with (acked or dead-lettered);
--   processing  messages inside a live queue-mode lease (committed, batch_end];
--   pending     total - completed - processing, waiting for a queue-mode consumer;
--   dead_letter dead letters filed for the partition by any group;
--   oldest/newest created_at of the partition's first and last stored segment.
-- Consumer groups other than queue mode do not change these counts.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.partition_stats_v1(p_tenant text, p_queue text)
RETURNS TABLE (
    queue_id       bigint,
    queue_name     text,
    partition_id   bigint,
    partition_name text,
    created_at     timestamptz,
    last_offset    bigint,
    last_write_at  timestamptz,
    total          bigint,
    completed      bigint,
    processing     bigint,
    pending        bigint,
    dead_letter    bigint,
    oldest         timestamptz,
    newest         timestamptz
) LANGUAGE sql STABLE AS $$
    SELECT q.id, q.name, p.id, p.name, p.created_at, p.last_offset, p.last_write_at,
           p.last_offset + 1,
           least(coalesce(c.committed, -1), p.last_offset) + 1,
           x.processing,
           p.last_offset - least(coalesce(c.committed, -1), p.last_offset) - x.processing,
           (SELECT count(*) FROM queen.dead_letters d WHERE d.partition_id = p.id),
           (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
            ORDER BY s.base_offset LIMIT 1),
           (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
            ORDER BY s.base_offset DESC LIMIT 1)
    FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (
        SELECT CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN greatest(least(c.batch_end, p.last_offset) - c.committed, 0)
                    ELSE 0 END AS processing
    ) x
    WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue);
$$;
