-- queen.message_get_v1(p_tenant, p_partition_id, p_transaction_id)
--   -> (queue_name, partition_name, namespace, task, priority, message_offset, created_at,
--       status, lease_expires_at, segment_base, codec, producer, blob, error_message,
--       retry_count, queue_config, consumer_groups), one row or none
--
-- One message of the tenant for the message detail endpoint, found by its transaction id
-- (queen.log_find_offset_v1). Returns the segment that holds it (the broker slices the
-- frame message_offset - segment_base out of the blob), its status relative to the
-- queue-mode cursor ('completed' at or below it, 'processing' inside a live queue-mode
-- lease, with that lease's expiry, else 'pending'), its latest dead letter's error_message
-- and retry_count, the queue's configuration as JSON, and every group's view of it:
-- [{consumerGroup, committed, status, leaseActive}]. No row when the message is unknown,
-- its segment is gone, or the partition is not the tenant's.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.message_get_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea,
    error_message    text,
    retry_count      integer,
    queue_config     jsonb,
    consumer_groups  jsonb
) LANGUAGE sql STABLE AS $$
    SELECT q.name, p.name, q.namespace, q.task, q.priority, d.message_offset, s.created_at,
           CASE WHEN d.message_offset <= coalesce(c.committed, -1) THEN 'completed'
                WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                     AND d.message_offset <= c.batch_end THEN 'processing'
                ELSE 'pending' END,
           CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                     AND d.message_offset > c.committed AND d.message_offset <= c.batch_end
                THEN c.lease_expires_at END,
           s.base_offset, s.codec, s.producer, s.blob,
           dl.error_message, dl.retry_count,
           to_jsonb(q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task' - 'created_at'
               - 'updated_at',
           coalesce((SELECT jsonb_agg(jsonb_build_object(
                         'consumerGroup', g.consumer_group,
                         'committed', g.committed,
                         'status', CASE WHEN d.message_offset <= g.committed THEN 'completed'
                                        WHEN g.worker_id IS NOT NULL
                                             AND g.lease_expires_at > now()
                                             AND d.message_offset <= g.batch_end
                                        THEN 'processing' ELSE 'pending' END,
                         'leaseActive', g.worker_id IS NOT NULL AND g.lease_expires_at > now())
                         ORDER BY g.consumer_group)
                     FROM queen.log_consumers g WHERE g.partition_id = p.id), '[]'::jsonb)
    -- The message's offset by its transaction id (segments' keys or hashes, else legacy
    -- dedup rows): see queen.log_find_offset_v1.
    FROM (SELECT p_partition_id AS partition_id, p_transaction_id AS transaction_id,
                 queen.log_find_offset_v1(p_partition_id, p_transaction_id) AS message_offset) d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    JOIN LATERAL (
        SELECT s.* FROM queen.log_segments s
        WHERE s.partition_id = d.partition_id AND s.base_offset <= d.message_offset
        ORDER BY s.base_offset DESC LIMIT 1
    ) s ON s.end_offset >= d.message_offset
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    LEFT JOIN LATERAL (
        SELECT x.error_message, x.retry_count FROM queen.dead_letters x
        WHERE x.partition_id = d.partition_id AND x.transaction_id = d.transaction_id
        ORDER BY x.failed_at DESC LIMIT 1
    ) dl ON true
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
      AND q.tenant = p_tenant;
$$;
