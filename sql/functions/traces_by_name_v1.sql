-- queen.traces_by_name_v1(p_tenant, p_name, p_from, p_to, p_limit, p_offset) -> jsonb
--
-- The tenant's trace events filed under one name, newest first, recorded in [p_from, p_to]
-- (each bound ignored when NULL), paged by p_limit/p_offset: {traces: [{id,
-- transaction_id, partition_id, queue, partition, event_type, data, consumer_group,
-- worker_id, created_at, trace_names}], total, pagination: {limit, offset}}.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.traces_by_name_v1(
    p_tenant text, p_name text, p_from timestamptz, p_to timestamptz, p_limit integer,
    p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT n.trace_id, n.created_at FROM queen.message_trace_names n
        WHERE n.tenant = p_tenant AND n.name = p_name
          AND (p_from IS NULL OR n.created_at >= p_from)
          AND (p_to IS NULL OR n.created_at <= p_to)
    ), page AS (
        SELECT m.trace_id FROM matching m
        ORDER BY m.created_at DESC, m.trace_id DESC LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'traces', coalesce((SELECT jsonb_agg(jsonb_build_object(
            'id', t.id::text, 'transaction_id', t.transaction_id,
            'partition_id', t.partition_id::text, 'queue', q.name, 'partition', p.name,
            'event_type', t.event_type, 'data', t.data, 'consumer_group', t.consumer_group,
            'worker_id', t.worker_id, 'created_at', t.created_at,
            'trace_names', (SELECT jsonb_agg(n.name ORDER BY n.name)
                            FROM queen.message_trace_names n WHERE n.trace_id = t.id))
            ORDER BY t.created_at DESC, t.id DESC)
            FROM page pg
            JOIN queen.message_traces t ON t.id = pg.trace_id
            JOIN queen.log_partitions p ON p.id = t.partition_id
            JOIN queen.queues q ON q.id = p.queue_id), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching),
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
$$;
