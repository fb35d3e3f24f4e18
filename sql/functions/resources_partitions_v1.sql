-- queen.resources_partitions_v1(p_tenant, p_queue, p_limit, p_offset) -> jsonb
--
-- The tenant's partitions, of one queue when p_queue is not NULL, ordered by queue and
-- partition name and paged by p_limit/p_offset: {partitions: [{id, queue, name,
-- lastOffset, lastWriteAt, createdAt, messages (last_offset + 1), consumers:
-- [{consumerGroup, committed, lag, leaseActive}]}], total}, total counting every match.
-- lag is last_offset - committed per cursor row, never negative.
--
-- Read only: no locks. No notifications.
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
