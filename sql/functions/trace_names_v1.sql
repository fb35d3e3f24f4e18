-- queen.trace_names_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb
--
-- The tenant's trace names: {trace_names: [{trace_name, trace_count, message_count,
-- last_seen}], total, pagination: {limit, offset}}, most recently seen first, paged by
-- p_limit/p_offset. message_count counts distinct (partition, transaction id) pairs.
-- p_search (NULL: all) matches a substring of the name, case-insensitive.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.trace_names_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
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
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset))
    );
END;
$$;
