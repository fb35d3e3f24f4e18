-- queen.traces_for_message_v1(p_tenant, p_partition_id, p_transaction_id) -> jsonb
--
-- Every trace event recorded for one message of the tenant, oldest first: {traces: [{id,
-- event_type, data, consumer_group, worker_id, created_at, trace_names}]}; an empty array
-- when there are none.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.traces_for_message_v1(
    p_tenant text, p_partition_id bigint, p_transaction_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object('traces', coalesce(jsonb_agg(jsonb_build_object(
        'id', t.id::text, 'event_type', t.event_type, 'data', t.data,
        'consumer_group', t.consumer_group, 'worker_id', t.worker_id,
        'created_at', t.created_at,
        'trace_names', coalesce((SELECT jsonb_agg(n.name ORDER BY n.name)
                                 FROM queen.message_trace_names n WHERE n.trace_id = t.id),
                                '[]'::jsonb))
        ORDER BY t.created_at, t.id), '[]'::jsonb))
    FROM queen.message_traces t
    WHERE t.tenant = p_tenant AND t.partition_id = p_partition_id
      AND t.transaction_id = p_transaction_id
    );
END;
$$;
