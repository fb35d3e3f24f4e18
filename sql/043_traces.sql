-- 043_traces: message traces, the events consumers record about a message.
--
-- Tables: queen.message_traces, one row per recorded event, keyed to its partition (deleted
-- with it) and to the message by transaction id; queen.message_trace_names, the names an
-- event was filed under (several per event), for the by-name lookups.
--
-- queen.trace_add_v1(p_tenant, p_partition_id, p_transaction_id, p_group, p_names,
--                    p_event_type, p_data, p_worker) -> bigint
--   Stores one event and its names; returns its id, or NULL when the partition is not the
--   tenant's (nothing stored). Takes the partition row's FOR KEY SHARE lock (foreign key).
-- queen.traces_for_message_v1(p_tenant, p_partition_id, p_transaction_id) -> jsonb
--   {traces: [{id, event_type, data, consumer_group, worker_id, created_at, trace_names}]},
--   oldest first.
-- queen.traces_by_name_v1(p_tenant, p_name, p_from, p_to, p_limit, p_offset) -> jsonb
--   {traces: [... plus transaction_id, partition_id, queue, partition], total,
--   pagination: {limit, offset}}, newest first.
-- queen.trace_names_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb
--   {trace_names: [{trace_name, trace_count, message_count, last_seen}], total,
--   pagination: {limit, offset}}, most recently seen first; p_search matches a substring.
-- No notifications.

CREATE TABLE IF NOT EXISTS queen.message_traces (
    id             bigserial   PRIMARY KEY,
    tenant         text        NOT NULL,
    partition_id   bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    transaction_id text        NOT NULL,
    consumer_group text        NOT NULL,
    event_type     text        NOT NULL,
    data           jsonb       NOT NULL,
    worker_id      text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS message_traces_message_idx
    ON queen.message_traces (partition_id, transaction_id, created_at);

CREATE TABLE IF NOT EXISTS queen.message_trace_names (
    trace_id   bigint      NOT NULL REFERENCES queen.message_traces (id) ON DELETE CASCADE,
    tenant     text        NOT NULL,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (trace_id, name)
);
CREATE INDEX IF NOT EXISTS message_trace_names_name_idx
    ON queen.message_trace_names (tenant, name, created_at);

CREATE OR REPLACE FUNCTION queen.trace_add_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text,
    p_group          text,
    p_names          text[],
    p_event_type     text,
    p_data           jsonb,
    p_worker         text
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_id bigint;
    v_at timestamptz;
BEGIN
    PERFORM 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO queen.message_traces
        (tenant, partition_id, transaction_id, consumer_group, event_type, data, worker_id)
    VALUES (p_tenant, p_partition_id, p_transaction_id, p_group, p_event_type, p_data, p_worker)
    RETURNING id, created_at INTO v_id, v_at;
    INSERT INTO queen.message_trace_names (trace_id, tenant, name, created_at)
    SELECT DISTINCT v_id, p_tenant, n, v_at FROM unnest(coalesce(p_names, '{}')) n
    ON CONFLICT DO NOTHING;
    RETURN v_id;
END;
$$;

CREATE OR REPLACE FUNCTION queen.traces_for_message_v1(
    p_tenant text, p_partition_id bigint, p_transaction_id text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
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
      AND t.transaction_id = p_transaction_id;
$$;

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

CREATE OR REPLACE FUNCTION queen.trace_names_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH names AS (
        SELECT n.name, count(*) AS traces,
               count(DISTINCT (t.partition_id, t.transaction_id)) AS messages,
               max(n.created_at) AS last_seen
        FROM queen.message_trace_names n
        JOIN queen.message_traces t ON t.id = n.trace_id
        WHERE n.tenant = p_tenant
          AND (p_search IS NULL OR strpos(lower(n.name), lower(p_search)) > 0)
        GROUP BY n.name
    )
    SELECT jsonb_build_object(
        'trace_names', coalesce((SELECT jsonb_agg(jsonb_build_object(
            'trace_name', x.name, 'trace_count', x.traces, 'message_count', x.messages,
            'last_seen', x.last_seen) ORDER BY x.last_seen DESC, x.name)
            FROM (SELECT * FROM names ORDER BY last_seen DESC, name
                  LIMIT p_limit OFFSET p_offset) x), '[]'::jsonb),
        'total', (SELECT count(*) FROM names),
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
$$;
