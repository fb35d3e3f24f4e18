-- queen.traces_by_name_v1(p_tenant, p_name, p_from, p_to, p_limit, p_offset) -> jsonb
--
-- The tenant's trace events filed under one name, newest first, recorded in [p_from, p_to]
-- (each bound ignored when NULL), paged by p_limit/p_offset: {traces: [{id,
-- transaction_id, partition_id, queue, partition, event_type, data, consumer_group,
-- worker_id, created_at, trace_names}], total, pagination: {limit, offset}}.
--
-- PL/pgSQL: the page of traces first (the trace tables stay on the coordinator on the
-- Citus layout), then each trace's partition and queue names by partition id. Citus
-- refused the former LANGUAGE sql body (parameters, a join of the coordinator's trace
-- table with the distributed partitions). Same document on PostgreSQL.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.traces_by_name_v1(
    p_tenant text, p_name text, p_from timestamptz, p_to timestamptz, p_limit integer,
    p_offset integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_total  bigint;
    v_traces jsonb := '[]'::jsonb;
    v_queue  text;
    v_qid    bigint;
    v_part   text;
    t        record;
BEGIN
    SELECT count(*) INTO v_total FROM queen.message_trace_names n
    WHERE n.tenant = p_tenant AND n.name = p_name
      AND (p_from IS NULL OR n.created_at >= p_from)
      AND (p_to IS NULL OR n.created_at <= p_to);
    FOR t IN
        SELECT tr.id, tr.transaction_id, tr.partition_id, tr.event_type, tr.data,
               tr.consumer_group, tr.worker_id, tr.created_at,
               (SELECT jsonb_agg(x.name ORDER BY x.name)
                FROM queen.message_trace_names x WHERE x.trace_id = tr.id) AS names
        FROM (SELECT n.trace_id, n.created_at FROM queen.message_trace_names n
              WHERE n.tenant = p_tenant AND n.name = p_name
                AND (p_from IS NULL OR n.created_at >= p_from)
                AND (p_to IS NULL OR n.created_at <= p_to)
              ORDER BY n.created_at DESC, n.trace_id DESC
              LIMIT p_limit OFFSET p_offset) pg
        JOIN queen.message_traces tr ON tr.id = pg.trace_id
        ORDER BY tr.created_at DESC, tr.id DESC
    LOOP
        v_queue := NULL;
        v_part := NULL;
        SELECT p.name, p.queue_id INTO v_part, v_qid
        FROM queen.log_partitions p WHERE p.id = t.partition_id;
        CONTINUE WHEN v_part IS NULL;
        SELECT q.name INTO v_queue FROM queen.queues q WHERE q.id = v_qid;
        v_traces := v_traces || jsonb_build_array(jsonb_build_object(
            'id', t.id::text, 'transaction_id', t.transaction_id,
            'partition_id', t.partition_id::text, 'queue', v_queue, 'partition', v_part,
            'event_type', t.event_type, 'data', t.data, 'consumer_group', t.consumer_group,
            'worker_id', t.worker_id, 'created_at', t.created_at,
            'trace_names', t.names));
    END LOOP;
    RETURN jsonb_build_object(
        'traces', v_traces,
        'total', v_total,
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
END;
$$;
